"""A consumer that stalled is not a broker that lost: NO_LOSS violations the broker can still answer for.

A message the broker stored in its consumer's queue but the harness's consumer never pulled (a
rebalance that left a queue unassigned, a pull loop that gave up after a restart) looks, from the
deliveries alone, like a loss. The runner therefore reads, after the run's consumers stopped (a
graceful stop commits their offsets), each group's ``consumeStats``: per queue of the group's
topics and its ``%RETRY%`` topic, the committed offset and the broker's max offset
(:data:`reference.contract.CONSUME_STATS_SOURCE` snapshots). Their difference, the *lag*, is what
the broker holds and the group never consumed.

The rule, per group and per queue a missing message waits in (the NO_LOSS violation's
``queue_topic``, and for a first attempt the ``queue_id`` and ``broker`` its send stored it in: a
retry may wait in any queue of its retry topic): when the lag of those queues covers every message
the judging found missing there (``missing <= lag``), none of them is certainly lost: each could be
one the broker holds and the consumer owning that queue never pulled. They become *undecided* ("the
consumer stalled"), never violations and never a pass. A lag in another queue, another topic or
another group excuses nothing; when more are missing than those queues hold, at least
``missing - lag`` are lost whichever they are: the violations stand, and say what the broker still
held. A group with no such snapshot (a system that cannot read consume stats) is judged on the
deliveries alone, as before. A message every attempt of which its plan owes was delivered
(:data:`reports.rows.DELIVERED`: what is missing is the DLQ entry the broker owes after the last
``LATER``) is never excused by a lag.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from hourglass.reference import stalls as rule
from hourglass.reference.network import LOG_RESOLUTION_MS
from hourglass.reference.contract import CONSUME_STATS_SOURCE, parse_queue_key
from hourglass.reference.windows import cluster_outages
from hourglass.reports.rows import ACKED_FIELD, DELIVERED, REVIVE_FIELD, SEND_BACK_FAILED_FIELD

INVARIANT = "NO_LOSS"
#: queues named in a reason, at most
QUEUES_NAMED = 4


@dataclass(frozen=True)
class Lag:
    """One group's unconsumed messages at the end: total, and per queue (key, committed, max)."""

    group: str
    total: int
    queues: tuple[tuple[str, int, int], ...]

    def describe(self) -> str:
        named = ", ".join(f"{topic} queue {qid} (consumed to {c}, stored to {m})"
                          for (topic, _, qid), c, m in ((parse_queue_key(k), c, m) for k, c, m in self.queues[:QUEUES_NAMED]))
        more = f" and {len(self.queues) - QUEUES_NAMED} more queues" if len(self.queues) > QUEUES_NAMED else ""
        return f"{self.total} stored messages group {self.group} never consumed: {named}{more}"


def lags(unkeyed: Iterable[Mapping]) -> dict[str, Lag]:
    """Each group's lag from its last ``consumeStats`` snapshot (groups without one are absent)."""
    last: dict[str, Mapping] = {}
    for e in sorted((e for e in unkeyed if e.get("type") == "snapshot" and e.get("source") == CONSUME_STATS_SOURCE
                     and e.get("group")), key=lambda e: e["ts_ms"]):
        last[e["group"]] = e
    out = {}
    for group, snap in last.items():
        committed, stored = snap.get("offsets") or {}, snap.get("max_offsets") or {}
        queues = tuple(sorted((k, int(committed.get(k, 0)), int(m)) for k, m in stored.items() if int(m) > int(committed.get(k, 0))))
        out[group] = Lag(group, sum(m - c for _, c, m in queues), queues)
    return out


def _queues_of(v: Mapping, lag: Lag) -> tuple[tuple[str, int, int], ...]:
    """The queues of ``lag`` the missing message of violation ``v`` may wait in (see the module docstring)."""
    topic, qid, broker = v.get("queue_topic"), v.get("queue_id"), v.get("broker")
    out = []
    for q in lag.queues:
        t, b, i = parse_queue_key(q[0])
        if (topic is None or t == topic) and (qid is None or i == qid) and (broker is None or b == broker):
            out.append(q)
    return tuple(out)


def reclassify(violations: list[dict], pending: list[dict], by_group: Mapping[str, Lag]) -> tuple[list[dict], list[dict]]:
    """``violations`` and ``pending`` of one run with the NO_LOSS violations the broker may still
    hold in the queues they wait in moved to pending (see the module docstring); the others' details
    say what it held."""
    if not by_group:
        return violations, pending
    lost: dict[tuple, list[dict]] = {}  # (the group's lag's name, the queues the rows may wait in) -> rows
    keep, moved = [], list(pending)
    for v in violations:
        if v.get("invariant") != INVARIANT or v.get("accepted") or v.get(DELIVERED):
            keep.append(v)
            continue
        group = v.get("group") or None
        lag = by_group.get(group) if group is not None else _one(by_group)
        lost.setdefault((lag.group, _queues_of(v, lag)) if lag is not None else (None, ()), []).append(v)
    for (name, queues), rows in lost.items():
        held = Lag(name, sum(m - c for _, c, m in queues), queues) if queues else None
        if held is None or held.total == 0:
            keep.extend(rows)
            continue
        if len(rows) <= held.total:
            reason = (f"never delivered, but the broker still held {held.describe()}: "
                      f"the consumer stalled, so whether the broker lost it is undecided")
            moved.extend({"invariant": INVARIANT, "key": v["key"], "attempt": v.get("attempt"), "detail": reason} for v in rows)
        else:
            note = f" ({len(rows)} missing, but the broker held only {held.describe()})"
            keep.extend(dict(v, detail=str(v.get("detail", "")) + note) for v in rows)
    return keep, moved


def _one(by_group: Mapping[str, Lag]) -> Lag | None:
    """A violation without a group: the groups' lags summed (any of them could hold it)."""
    queues = tuple(q for lag in by_group.values() for q in lag.queues)
    return Lag("/".join(sorted(by_group)), sum(lag.total for lag in by_group.values()), queues) if by_group else None


# --- the host's stalls (reference.stalls): a late attempt the machine explains is undecided -----
TIMING_INVARIANT = "ON_TIME"
#: ``cause`` of a pending row the host's stalls explain (verdict.json counts them apart: the matrix
#: never reports them as a difference between versions)
HOST_STALL_CAUSE = "host"


def host_cpus(run: Mapping) -> int:
    """How many CPUs the run's host had (run.json ``host``; 1 for a run that did not say: the
    strictest reading of its pressure figures)."""
    return int((run.get("host") or {}).get(rule.HOST_CPUS) or 1)


def _late_args(v: Mapping, run: Mapping) -> dict:
    """What :func:`reference.stalls.explain` takes of violation ``v`` (its due time, its path,
    whether it is a local re-consume, its anchor: when its copy was put) on ``run``'s host."""
    from hourglass.reports.judge_events import LOCAL_RECONSUME

    return {"earliest_ms": int(v["earliest_ms"]) if v.get("earliest_ms") is not None else int(v["latest_ms"]),
            "local": LOCAL_RECONSUME in str(v.get("detail") or ""), "cpus": host_cpus(run), "path": v.get("path"),
            "put_ms": int(v["anchor_ms"]) if v.get("anchor_ms") is not None else None}


def _explain_late(v: Mapping, recorded: list[Mapping], arrived_ms: int, run: Mapping,
                  watched_until_ms: int | None = None) -> tuple[bool, str]:
    """:func:`reference.stalls.explain_late` for violation ``v`` arrived at ``arrived_ms``, on ``run``'s host."""
    a = _late_args(v, run)
    return rule.explain_late(recorded, a.pop("earliest_ms"), int(v["latest_ms"]), arrived_ms, int(run.get("started_ms") or 0),
                             watched_until_ms=watched_until_ms, **a)


def held_into_outage(v: Mapping, recorded: list[Mapping], outages: list, run: Mapping) -> str | None:
    """Why a level-delayed attempt that arrived after a broker outage is undecided, or None: the
    recorded stalls on its path (:func:`reference.stalls.explain`, bounded by them) could have held
    it past its deadline into an outage that began before it was delivered; an attempt due in an
    outage is re-put after the restart (``reference.windows.window``: ready + the schedule
    service's first delay + slack), and it arrived by then. Seen beside the load generator: a
    kill -9 0.7 s after the deadline of 18 copies 0.7 s late so far, with 3.5 s of the broker's
    stalls on their path; they came 0.3 s after the restart."""
    from hourglass.reference.profile import FIRST_DELAY_MS
    from hourglass.reference.windows import window

    latest, observed = int(v["latest_ms"]), int(v["observed_ms"])
    after = [o for o in outages if latest < o.down_ms < observed]  # what the model's window did not widen for
    if v.get("path") != rule.SCHEDULE or not after:
        return None
    a = _late_args(v, run)
    held = latest + rule.explain(recorded, a.pop("earliest_ms"), observed, **a).explained_ms
    slack = int((run.get("profile") or {}).get("slack_ms") or 0)
    w = window(latest, latest, held, after, FIRST_DELAY_MS, slack)
    if w.latest_ms is None or w.latest_ms <= held or observed > w.latest_ms:
        return None
    return (f"arrived {observed - latest} ms after its window closed: the stalls recorded on its path could have held it "
            f"{held - latest} ms past its deadline, into {w.widened_by}, after which it was due by the restart "
            f"(+{(w.latest_ms - int(run.get('started_ms') or 0)) / 1000:.1f} s): whether the broker was late is undecided")


def host_reclassify(violations: list[dict], pending: list[dict], unkeyed: Iterable[Mapping], run: Mapping
                    ) -> tuple[list[dict], list[dict]]:
    """``violations`` and ``pending`` of one run with the ON_TIME violations the recorded stalls on
    their path explain moved to pending (:func:`reference.stalls.explain_late`); the others say how
    late they were and how much of it the stalls explain, or that the host was not observed."""
    late = [v for v in violations if v.get("invariant") == TIMING_INVARIANT and not v.get("accepted")
            and v.get("latest_ms") is not None and v.get("observed_ms") is not None]
    if not late or (run.get("host") or {}).get(rule.HOST_VIRTUAL):  # no host stall reaches virtual time
        return violations, pending
    why_not = rule.not_observed(run.get("host"))
    unkeyed = list(unkeyed)
    recorded = sorted((e for e in unkeyed if e.get("type") == "stall"), key=lambda e: e["from_ms"])
    watched_until = (run.get("host") or {}).get(rule.HOST_WATCHED_UNTIL)
    outages = cluster_outages([e for e in unkeyed if e.get("type") == "fault"])
    late_ids = {id(v) for v in late}
    keep = [v for v in violations if id(v) not in late_ids]
    moved = list(pending)
    for v in late:
        if why_not:
            keep.append(dict(v, detail=f"{v.get('detail') or ''} (the broker's host was not observed: {why_not})"))
            continue
        covered, reason = _explain_late(v, recorded, int(v["observed_ms"]), run, watched_until)
        into = None if covered else held_into_outage(v, recorded, outages, run)
        if covered or into:
            moved.append(_by_host(v, into or reason))
        else:
            keep.append(dict(v, detail=f"{v.get('detail') or ''}; {reason}"))
    return keep, moved


def late_beyond_end_reclassify(violations: list[dict], pending: list[dict], unkeyed: Iterable[Mapping], run: Mapping
                               ) -> tuple[list[dict], list[dict]]:
    """``violations`` and ``pending`` with the NO_LOSS violations of a message whose window closed
    before the run's end by no more than the recorded stalls on its path explain of the time from
    its due time to the end (:func:`reference.stalls.explain_late` with the end as its arrival)
    moved to pending: on a starved broker it may simply be late beyond the end, so whether it was
    lost is undecided; beyond that the loss stands. The same message's missing DLQ entry
    (DLQ_ROUTING "found 0") follows it."""
    host = run.get("host") or {}
    ended = run.get("ended_ms")
    if host.get(rule.HOST_VIRTUAL) or rule.not_observed(host) or not ended:
        return violations, pending
    recorded = sorted((e for e in unkeyed if e.get("type") == "stall"), key=lambda e: e["from_ms"])
    if not recorded:
        return violations, pending
    keep, moved = [], list(pending)
    for v in violations:
        if v.get("invariant") == INVARIANT and not v.get("accepted") and v.get("latest_ms") is not None:
            covered, why = _explain_late(v, recorded, int(ended), run)
            if covered:
                reason = ("never delivered by the run's end, which came "
                          + why.removeprefix("arrived ").replace("whether the broker was late", "whether the broker lost it"))
                moved.append(_by_host(v, reason))
                continue
        keep.append(v)
    return keep, moved


def undelivered_entry_reclassify(violations: list[dict], pending: list[dict]) -> tuple[list[dict], list[dict]]:
    """``violations`` and ``pending`` with each DLQ_ROUTING violation of a missing entry
    (``observed_ms`` None) of a message whose missing delivery is undecided (a NO_LOSS row in
    ``pending``: its consumer lagged, or stalls made it late beyond the run's end) moved to pending
    for that reason: an entry is owed only once the attempt that sends it there was delivered (seen
    under a starved broker: a batch consumer that started 75 s into its run pulled none of its
    messages, the DLQ entry of the one whose first answer was LATER:-1 was judged missing)."""
    undelivered = {p["key"]: p for p in pending if p.get("invariant") == INVARIANT}
    keep, moved = [], list(pending)
    for v in violations:
        p = undelivered.get(v.get("key"))
        if v.get("invariant") == "DLQ_ROUTING" and v.get("observed_ms") is None and not v.get("accepted") and p is not None:
            moved.append({"invariant": v["invariant"], "key": v["key"], "attempt": v.get("attempt"),
                          "detail": f"the attempt that owes the entry was never delivered, and whether the broker lost it is "
                                    f"undecided: {p.get('detail')}", **({"cause": p["cause"]} if p.get("cause") else {})})
        else:
            keep.append(v)
    return keep, moved


def resent_reclassify(violations: list[dict], pending: list[dict], unkeyed: Iterable[Mapping], run: Mapping,
                      invariant: str | None = None) -> tuple[list[dict], list[dict]]:
    """``violations`` and ``pending`` with the violations (:data:`reference.stalls.RESENT_INVARIANTS`)
    of a message whose own send-back the client logged failed (:data:`SEND_BACK_FAILED_FIELD`, set by
    the judging from that message's LATERs) while a stall on the broker's path was recorded moved to
    pending (:func:`reference.stalls.explain_resent`): the client's re-sends of that message explain
    them, and the host's stall explains the failure. Another message of the group is never excused.
    ``invariant``: only that one's violations (its unit's rule), else all three."""
    from hourglass.reference.network import SEND_BACK_FAILS_AFTER_MS

    if (run.get("host") or {}).get(rule.HOST_VIRTUAL) or rule.not_observed(run.get("host")):
        return violations, pending
    if not any(v.get(SEND_BACK_FAILED_FIELD) is not None for v in violations):
        return violations, pending
    recorded = [e for e in unkeyed if e.get("type") == "stall"]
    keep, moved = [], list(pending)
    for v in violations:
        failed = v.get(SEND_BACK_FAILED_FIELD)
        covered, why = False, ""
        if failed is not None and not v.get("accepted") and v.get("invariant") in rule.RESENT_INVARIANTS \
                and invariant in (None, v.get("invariant")):
            covered, why = rule.explain_resent(recorded, int(failed), SEND_BACK_FAILS_AFTER_MS + LOG_RESOLUTION_MS,
                                               host_cpus(run))
        if covered:
            moved.append(_by_host(v, why))
        else:
            keep.append(v)
    return keep, moved


def held_ack_reclassify(violations: list[dict], pending: list[dict], unkeyed: Iterable[Mapping], run: Mapping
                        ) -> tuple[list[dict], list[dict]]:
    """``violations`` and ``pending`` with the RETRY_SCHEDULE violations of a POP copy revived after
    its OK (:data:`ACKED_FIELD`, :data:`REVIVE_FIELD`, set by the judging) moved to pending where the
    recorded stalls on the broker's POP path held its ack past the checkpoint's due time
    (:func:`reference.stalls.explain_held_ack`); the others say how much of that time they explain."""
    return _held_reclassify(
        violations, pending, unkeyed, run, lambda v: v.get(ACKED_FIELD) is not None and v.get(REVIVE_FIELD) is not None,
        lambda v, recorded: rule.explain_held_ack(recorded, int(v[ACKED_FIELD]), int(v[REVIVE_FIELD]),
                                                  int(run.get("started_ms") or 0), host_cpus(run)))


def held_offset_reclassify(violations: list[dict], pending: list[dict], unkeyed: Iterable[Mapping], run: Mapping
                           ) -> tuple[list[dict], list[dict]]:
    """``violations`` and ``pending`` with the OFFSET_PERSISTENCE violations of a persist that left
    one entry uncovered (``reports.offsets``' :data:`~reports.offsets.UNCOVERED_FIELD`,
    :data:`~reports.offsets.LAST_REPUT_FIELD`) moved to pending where the recorded stalls on the
    schedule path held the offset's move from that entry's put to the persist
    (:func:`reference.stalls.explain_held_offset`); the others say how much of that time they explain.
    An unkeyed violation: its pending row keeps the violation's detail (which level, which persist)."""
    from hourglass.reports.offsets import LAST_REPUT_FIELD, UNCOVERED_FIELD

    def explain(v, recorded):
        covered, why = rule.explain_held_offset(recorded, int(v[UNCOVERED_FIELD]), int(v[LAST_REPUT_FIELD]),
                                                int(v["observed_ms"]), int(run.get("started_ms") or 0), host_cpus(run))
        return covered, f"{v.get('detail') or ''}; {why}" if covered else why

    return _held_reclassify(violations, pending, unkeyed, run, lambda v: v.get(LAST_REPUT_FIELD) is not None, explain)


def _held_reclassify(violations: list[dict], pending: list[dict], unkeyed: Iterable[Mapping], run: Mapping,
                     applies, explain) -> tuple[list[dict], list[dict]]:
    """The violations ``applies`` picks (none accepted by a baseline) moved to pending where
    ``explain(violation, recorded stalls)`` says the stalls held the broker, the others with its
    reason appended; nothing moves in virtual time or on a host the run did not observe."""
    held = [v for v in violations if applies(v) and not v.get("accepted")]
    if not held or (run.get("host") or {}).get(rule.HOST_VIRTUAL) or rule.not_observed(run.get("host")):
        return violations, pending
    recorded = [e for e in unkeyed if e.get("type") == "stall"]
    held_ids = {id(v) for v in held}
    keep, moved = [v for v in violations if id(v) not in held_ids], list(pending)
    for v in held:
        covered, why = explain(v, recorded)
        if covered:
            moved.append(_by_host(v, why))
        else:
            keep.append(dict(v, detail=f"{v.get('detail') or ''}; {why}"))
    return keep, moved


def _by_host(violation: Mapping, reason: str) -> dict:
    """The pending row of a violation the host's recorded stalls explain (``cause`` host)."""
    return {"invariant": violation["invariant"], "key": violation["key"], "attempt": violation.get("attempt"),
            "detail": reason, "cause": HOST_STALL_CAUSE}


def host_summary(run: Mapping, unkeyed: Iterable[Mapping]) -> dict:
    """verdict.json ``host``: what the harness observed of the machine (run.json ``host``) and the
    stalls it recorded, per series (source and subject): how many, their total and the largest."""
    host = dict(run.get("host") or {})
    why_not = rule.not_observed(run.get("host"))
    if why_not:
        host[rule.HOST_NOT_OBSERVED] = why_not
    series: dict[str, dict] = {}
    for e in unkeyed:
        if e.get("type") != "stall":
            continue
        s = series.setdefault(f"{e['source']} {e.get('subject') or ''}".strip(), {"stalls": 0, "stalled_ms": 0, "largest_ms": 0})
        s["stalls"] += 1
        s["stalled_ms"] += int(e["stalled_ms"])
        s["largest_ms"] = max(s["largest_ms"], int(e["stalled_ms"]))
    if series:
        host["stalls"] = dict(sorted(series.items()))
    return host
