"""OFFSET_PERSISTENCE: the schedule offsets read from ``snapshot`` events around the broker's
stops and starts, judged once per run by the rules of :mod:`reference.persistence`.

Snapshots and faults are unkeyed: every bucket holds them, and the driver judges them once per
run from the unkeyed rows bucket 0 hands over (kind ``u``), the same on the whole-run and the
bucketed path. Only the re-puts a start rule needs (stored copies of a delay level between a start
and the first in-memory reading after it) come from the deliveries: each bucket counts its own
(kind ``rp``), the driver sums them.

Which readings are compared (``moment`` when the snapshot has one, else the times relative to
the broker's ``fault`` events; an ambiguous reading is left out, never guessed):

- graceful ``stop`` at S: the last in-memory reading (``brokerStatus``) at or before S, after the
  broker's last ``ready`` before S (``moment`` not ``after_stop``), against the first persisted
  reading (``delayOffset.json``) after S and before the next ``start`` (``moment`` ``after_stop``;
  without one, strictly after S).
- ``ready`` R of a ``start`` St that follows a ``stop``/``kill`` E: the last persisted reading
  after E and at or before St (``moment`` ``after_stop``; without one, strictly after E), against
  the first in-memory reading at or after R and before the next stop or kill (``moment`` not
  ``after_stop``), with the re-puts of its level stored in [St, that reading].

Levels missing from either reading are not judged; a run without such pairs (no stop/start, no
snapshots, the external runtime without ``brokerStatus``) checks nothing: ``not judged``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from hourglass.reference.cluster import snapshot_target
from hourglass.reference.contract import BROKER_TARGETS, MEMORY_SOURCE, PERSISTED_SOURCE
from hourglass.reference.stored_copy import stored_copy_key
from hourglass.reference.persistence import (FLUSH_COVERS_MARGIN_MS, flush_applies, flush_covers_reputs, persisted_after_graceful_stop,
                                   resumed_after_start)
from hourglass.reference.contract import FLUSH_MOMENT, SEND_BACK_FAILED
from hourglass.reference.clock import CLOCK_ACTIONS

#: the start of a flush check's window: every re-put before the persist counts (schedule-queue
#: entries, each once; :func:`count_reputs`)
FLUSH_WINDOW_FROM = -(2**62)

INVARIANT = "OFFSET_PERSISTENCE"


@dataclass(frozen=True)
class OffsetCheck:
    rule: str  # "stop" (persisted by a graceful stop), "start" (resumed after a start), "flush" (a persist covers the re-puts before it)
    fault_ms: int  # the stop, or the start
    first: Mapping  # the earlier snapshot: in memory before the stop / persisted before the start
    second: Mapping  # the later one: persisted after the stop / in memory after the ready
    ready_ms: int | None = None  # rule "start": its ready
    target: str = BROKER_TARGETS[0]  # which broker process (reference.cluster)

    @property
    def window(self) -> tuple[int, int] | None:
        """Rule ``start``: the re-puts counted between the start and the in-memory reading; rule
        ``flush``: the entries re-put before the persist (less the margin)."""
        if self.rule == "flush":
            return FLUSH_WINDOW_FROM, self.second["ts_ms"] - FLUSH_COVERS_MARGIN_MS
        return (self.fault_ms, self.second["ts_ms"]) if self.rule == "start" else None


def _is(snap: Mapping, source: str) -> bool:
    return snap.get("source") == source and isinstance(snap.get("offsets"), Mapping)


def plan(unkeyed: Iterable[Mapping], profile: Mapping | None = None) -> list[OffsetCheck]:
    """The pairs of readings the run allows to compare (see the module docstring), per broker
    process (``reference.cluster``: a snapshot's ``target``, a fault's ``target``); with the run's
    ``profile``, each persist the harness saw (``moment`` ``flush``) against the re-puts before it,
    where :func:`reference.persistence.flush_applies`."""
    events = list(unkeyed)
    checks = [c for t in BROKER_TARGETS for c in _plan(events, t)]
    faults = [e for e in events if e.get("type") == "fault"]
    if profile is not None and flush_applies(profile.get("cluster"), bool(profile.get("schedule_async_deliver")),
                                             any(e.get("action") in CLOCK_ACTIONS for e in faults),
                                             any(e.get("action") == SEND_BACK_FAILED for e in faults)):
        checks += [OffsetCheck("flush", e["ts_ms"], e, e) for e in sorted(events, key=lambda e: e["ts_ms"])
                   if e.get("type") == "snapshot" and e.get("moment") == FLUSH_MOMENT and _is(e, PERSISTED_SOURCE)]
    return checks


def _plan(events: list[Mapping], target: str) -> list[OffsetCheck]:
    faults = sorted(((e["ts_ms"], e["action"]) for e in events
                     if e.get("type") == "fault" and e.get("target") == target), key=lambda f: f[0])
    if not faults:
        return []
    snaps = sorted((e for e in events if e.get("type") == "snapshot" and snapshot_target(e) == target),
                   key=lambda e: e["ts_ms"])
    memory = [s for s in snaps if _is(s, MEMORY_SOURCE) and s.get("moment") != "after_stop"]
    persisted = [s for s in snaps if _is(s, PERSISTED_SOURCE)]
    checks: list[OffsetCheck] = []
    for i, (ts, action) in enumerate(faults):
        later = faults[i + 1:]
        if action == "stop":
            since = max((t for t, a in faults[:i] if a == "ready"), default=None)
            before = [s for s in memory if s["ts_ms"] <= ts and (since is None or s["ts_ms"] >= since)
                      and s.get("moment") in (None, "before_stop", "after_ready", "run_start")]
            next_start = next((t for t, a in later if a == "start"), None)
            after = [s for s in persisted if (s["ts_ms"] >= ts if s.get("moment") == "after_stop"
                                              else s.get("moment") is None and s["ts_ms"] > ts)
                     and (next_start is None or s["ts_ms"] <= next_start)]
            if before and after:
                checks.append(OffsetCheck("stop", ts, before[-1], after[0], target=target))
        elif action == "start":
            end = max((t for t, a in faults[:i] if a in ("stop", "kill")), default=None)
            ready = next((t for t, a in later if a == "ready"), None)
            if end is None or ready is None:
                continue
            nxt = [t for t, a in later if a in ("stop", "kill", "start") and t >= ready]
            until = nxt[0] if nxt else None
            before = [s for s in persisted if s["ts_ms"] <= ts and (
                s["ts_ms"] >= end if s.get("moment") == "after_stop" else s.get("moment") is None and s["ts_ms"] > end)]
            after = [s for s in memory if s["ts_ms"] >= ready and (until is None or s["ts_ms"] <= until)
                     and s.get("moment") in (None, "after_ready", "before_stop", "run_end")]
            if before and after:
                checks.append(OffsetCheck("start", ts, before[-1], after[0], ready, target))
    return checks


def count_reputs(windows: list[tuple[int, int]], deliveries: Iterable[Mapping], level_of) -> dict[tuple[int, int], dict[int, int]]:
    """Stored copies re-put by each delay level in each window (inclusive), each copy once:
    ``level_of(delivery)`` says the level its attempt waited at (0: none)."""
    return {w: {lv: n for lv, (n, _) in per.items()} for w, per in tally_reputs(windows, deliveries, level_of).items()}


def tally_reputs(windows: list[tuple[int, int]], deliveries: Iterable[Mapping], level_of
                 ) -> dict[tuple[int, int], dict[int, tuple[int, int]]]:
    """:func:`count_reputs` with the store time of the last copy counted: per window, per level,
    (count, last store ms) — both add up over buckets (a sum, a max)."""
    out: dict[tuple[int, int], dict[int, tuple[int, int]]] = {w: {} for w in windows}
    seen: set = set()
    entries: set = set()
    for d in sorted(deliveries, key=lambda d: (d["store_ms"], d.get("reconsume_times", 0))):
        store = d["store_ms"]
        hits = [w for w in windows if w[0] <= store <= w[1]]
        copy = stored_copy_key(d)
        if not hits or copy in seen:
            continue
        seen.add(copy)
        level = level_of(d)
        if not level:
            continue
        # a flush window counts schedule-queue entries, each once (a re-put repeated after a kill is
        # the same entry): attempt 0 is the message's, a retry the group's send-back
        entry = (d["key"],) if not d.get("reconsume_times") else (d["key"], d.get("group"), d["reconsume_times"])
        first = entry not in entries
        entries.add(entry)
        for w in hits:
            if first or w[0] != FLUSH_WINDOW_FROM:
                n, last = out[w].get(level, (0, store))
                out[w][level] = (n + 1, max(last, store))
    return out


#: a flush violation's fields for its undecided rule (reports.stalls.held_offset_reclassify): how many
#: entries its persist left uncovered, and the store time of the last one re-put before it
UNCOVERED_FIELD, LAST_REPUT_FIELD = "uncovered", "last_reput_ms"


def judge(checks: list[OffsetCheck], reputs: Mapping[tuple[int, int], Mapping[int, int]],
          last: Mapping[tuple[int, int], Mapping[int, int]] | None = None) -> tuple[int, list[dict]]:
    """(checked, violations) of OFFSET_PERSISTENCE: one check per (pair of readings, level in both).
    ``last``: per window and level, the store time of the last copy counted (:func:`tally_reputs`),
    which a flush violation carries for its undecided rule."""
    checked, violations = 0, []
    for c in checks:
        first = {int(k): v for k, v in c.first["offsets"].items() if v is not None}
        second = {int(k): v for k, v in c.second["offsets"].items() if v is not None}
        for level in sorted(set(first) & set(second)):
            checked += 1
            if c.rule == "flush":
                n = dict(reputs.get(c.window, {})).get(level, 0)
                why = flush_covers_reputs(second[level], n)
                where = f"{c.target} persisted its offsets at {c.fault_ms}"
            elif c.rule == "stop":
                why = persisted_after_graceful_stop(first[level], second[level])
                where = (f"in memory {first[level]} at {c.first['ts_ms']} ({c.first.get('moment') or 'before the stop'}), "
                         f"persisted {second[level]} at {c.second['ts_ms']} ({c.second.get('moment') or 'after the stop'}), "
                         f"{c.target} stop at {c.fault_ms}")
            else:
                max_offsets = c.second.get("max_offsets") or {}
                mx = max_offsets.get(str(level), max_offsets.get(level))
                n = dict(reputs.get(c.window, {})).get(level, 0)
                why = resumed_after_start(first[level], mx, second[level], n)
                where = (f"persisted {first[level]} at {c.first['ts_ms']} ({c.first.get('moment') or 'before the start'}), "
                         f"in memory {second[level]} at {c.second['ts_ms']} ({c.second.get('moment') or 'after the ready'}; "
                         f"schedule queue max {mx if mx is not None else 'not read'}), {c.target} start at {c.fault_ms}, "
                         f"ready at {c.ready_ms}, {n} re-put(s) of the level observed in between")
            if why:
                v = {"invariant": INVARIANT, "key": None, "level": level,
                     "anchor_ms": c.first["ts_ms"], "observed_ms": c.second["ts_ms"],
                     "cause": {"stop": "graceful stop", "start": "restart", "flush": "persist"}[c.rule],
                     "detail": f"delay level {level}: {why}; {where}"}
                reput_ms = dict((last or {}).get(c.window, {})).get(level)
                if c.rule == "flush" and reput_ms is not None:
                    v.update({UNCOVERED_FIELD: n - second[level], LAST_REPUT_FIELD: int(reput_ms)})
                violations.append(v)
    return checked, violations
