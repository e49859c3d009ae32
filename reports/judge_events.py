"""The event-at-a-time judge: one bucket of messages, observed events (dicts) against the model's
expected attempts. The reference path; :mod:`reports.judge_columnar` gives the same judgements
from columns and hands it every key that is not plain.

Runs on the executors, once per (run, bucket of keys): the events of those keys are grouped with
the run's faults, :func:`reference.expected.build_expected_rows` says what must happen, and each
invariant's unit (:mod:`reports.invariants`) compares, attempt by attempt and then message by
message. Nothing here decides what is due: windows, levels, topics and final states come from the
model, duplicate rulings from :func:`reference.expected.rule_duplicate`, a stored copy's identity
from :mod:`reference.stored_copy`. LEVEL_ORDER spans keys, so this module only emits each delayed
message's first attempt for the Spark window in :mod:`reports.level_order`.

Output rows: :data:`reports.rows.OUTPUT_SCHEMA` (``v``, ``c``, ``p``, ``s``, ``plot``, ``lo``).
"""

from __future__ import annotations

import json
from collections import defaultdict

from hourglass.reference import expected as model
from hourglass.reference.broadcast import DROPPED
from hourglass.reference.clock import on_true_clock
from hourglass.reference.contract import CONSUMER_TARGET, SEND_BACK_FAILED
from hourglass.reference.network import LOG_RESOLUTION_MS, send_back_failures
from hourglass.reference.persistence import level_order_kept
from hourglass.reference.pop import NOT_ACKED
from hourglass.reference.profile import profile_from_run
from hourglass.reference.retry import DLQ_READ_MS
from hourglass.reference.stalls import RESENT_INVARIANTS
from hourglass.reference.stored_copy import same_stored_copy, stored_copy_key
from hourglass.reports.invariants import UNITS
from hourglass.reports.invariants.base import LOCAL_RECONSUME, Attempt, Message, path_of, x
from hourglass.reports.queue_order import qo_row
from hourglass.reports.rows import EXPECTED_COL, SEND_BACK_FAILED_FIELD, TOPIC_GROUP_KEY, Judgements

__all__ = ["LOCAL_RECONSUME", "UNKNOWN_NEVER_RETURNED", "crash_faults", "judge_bucket", "judge_keys", "stored_copies"]

_COL = EXPECTED_COL

#: LEVEL_ORDER: the return time given an UNKNOWN send (after every birth: it bounds no other store)
UNKNOWN_NEVER_RETURNED = 2**62


def judge_bucket(run: dict, events: list[dict], ended_ms: int | None, timeline_bin_ms: int, bucket: int = 0) -> list[tuple]:
    """All judgements of the keys in ``events`` (plus the run's faults and snapshots), one event at
    a time: the reference path. :func:`reports.judge_columnar.judge_table` gives the same judgements
    from columns. CRASH answers count as consumer faults (:func:`crash_faults`)."""
    out = Judgements(run["run_id"], bucket)
    events = on_true_clock(events)  # reference.clock: store times judged as true times
    events = events + crash_faults(e for e in events if e["type"] == "deliver")
    rows = model.build_expected_rows(run, events)
    judge_keys(out, run, rows, events, ended_ms, timeline_bin_ms, timeline=True)
    sends = {e["key"]: e for e in events if e["type"] == "send"}
    delivered = {(e["key"], e["group"], e["reconsume_times"]) for e in events
                 if e["type"] == "deliver" and e["key"] != TOPIC_GROUP_KEY}
    keys = {k for k, _, _ in delivered}
    out.emit("s", {"messages": len(sends), "attempts": len(delivered),
                   "recovered": sum(1 for k, s in sends.items() if s["status"] == "UNKNOWN" and k in keys)})
    out.emit("c", dict(out.checked))
    out.emit_plot()
    return out.rows


def crash_faults(deliveries) -> list[dict]:
    """The CRASH answers among ``deliveries`` as the consumer faults they are (a crash the plan
    injected: :func:`reference.expected.rule_duplicate` allows what one allows)."""
    return [{"type": "fault", "ts_ms": d["ts_ms"], "action": "crash", "target": CONSUMER_TARGET, "group": d["group"], "key": d["key"]}
            for d in deliveries if d["outcome"] == "CRASH"]


def _by_type(events: list[dict]) -> tuple[dict, dict, dict, list]:
    """Sends by key, deliveries by (key, group, attempt), DLQ entries by (key, group), faults."""
    sends: dict[str, dict] = {}
    delivered: dict[tuple, list[dict]] = defaultdict(list)
    dlqs: dict[tuple, list[dict]] = defaultdict(list)
    faults = []
    for e in events:
        t = e["type"]
        if t == "send":
            sends[e["key"]] = e
        elif t == "deliver" and e["key"] != TOPIC_GROUP_KEY:
            delivered[(e["key"], e["group"], e["reconsume_times"])].append(e)
        elif t == "dlq":
            dlqs[(e["key"], e["group"])].append(e)
        elif t == "fault":
            faults.append(e)
    return sends, delivered, dlqs, faults


def judge_keys(out: Judgements, run: dict, rows: list[tuple], events: list[dict], ended_ms: int | None, timeline_bin_ms: int,
               timeline: bool) -> None:
    """Judge the keys of ``events`` (dicts) against the model's ``rows`` for them."""
    exp = {(r[_COL["key"]], r[_COL["group"]] or "", r[_COL["attempt"]]): r for r in rows}
    first_row = len(out.rows)
    sends, delivered, dlqs, faults = _by_type(events)
    started_ms = int(run.get("started_ms") or 0)
    popping = {g for g, _ in profile_from_run(run).pop_groups}
    attempts = {}
    for k, ds in delivered.items():
        ds.sort(key=lambda d: d["ts_ms"])
        # what leads to the next attempt: a LATER; in a POP group a CRASH too (nobody acked the copy:
        # the broker revives it as the next attempt, reference.pop.pop_outcome)
        moves_on = NOT_ACKED if k[1] in popping else ("LATER",)
        attempts[k] = (ds, next((d for d in ds if d["outcome"] in moves_on), None))
    firsts: dict[str, tuple] = {}
    for (key, group, attempt), (ds, _) in attempts.items():
        a = _attempt(run, faults, key, group, attempt, ds, attempts.get((key, group, attempt - 1)),
                     exp.get((key, group, attempt)), sends.get(key), timeline_bin_ms)
        for unit in UNITS:
            unit.attempt(out, a)
        if timeline:
            for d in ds:
                out.plot["timeline"][((d["ts_ms"] - started_ms) // timeline_bin_ms, d["outcome"])] += 1
        if attempt == 0 and a.row is not None and (x(a.row, "level") or 0) > 0:
            copy = min(ds, key=lambda d: d["store_ms"])  # the earliest-stored copy's re-put
            if key not in firsts or copy["store_ms"] < firsts[key][1]:
                firsts[key] = (x(a.row, "level"), copy["store_ms"], copy.get("broker"))
    if not level_order_kept(profile_from_run(run).schedule_async_deliver):
        firsts = {}  # asynchronous delivery keeps no order within a level: LEVEL_ORDER not exercised
    for key, (level, store, broker) in firsts.items():
        s = sends[key]
        # an UNKNOWN send's return says nothing of its store (it may be stored after: a paused or
        # partitioned broker, reference.network): it never "returned" before another's birth
        returned = s["ts_ms"] if s["status"] != "UNKNOWN" else UNKNOWN_NEVER_RETURNED
        out.rows.append((out.run_id, out.bucket, "lo", key, level, store, returned, s.get("born_ms", s["ts_ms"]), broker))
    _queue_order_rows(out, run, exp, delivered)
    _messages(out, exp, attempts, dlqs, ended_ms, sends, run, crashed_unrestarted(attempts, faults))
    _send_backs_failed(out, first_row, attempts, faults)


def _send_backs_failed(out: Judgements, first_row: int, attempts: dict, faults: list[dict]) -> None:
    """Each violation (from ``first_row`` on) that a client's re-sends can cause
    (``reference.stalls.RESENT_INVARIANTS``) of a message whose own send-back the client logged
    failed before the violation was observed — a failure of one of its LATERs' send-backs
    (``reference.network.send_back_failures``: its group, its key where the line named one) — carries
    when (:data:`reports.rows.SEND_BACK_FAILED_FIELD`): ``reports.stalls.resent_reclassify`` weighs it."""
    if not any(f.get("action") == SEND_BACK_FAILED for f in faults):
        return
    failed_at = send_back_failures(faults)
    laters: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)  # (ts, attempt) of each LATER
    for (key, group, attempt), (ds, _) in attempts.items():
        laters[(key, group)].extend((d["ts_ms"], attempt) for d in ds if d["outcome"] == "LATER")
    for i in range(first_row, len(out.rows)):
        row = out.rows[i]
        if row[2] != "v":
            continue
        v = json.loads(row[8])
        if v["invariant"] not in RESENT_INVARIANTS:
            continue
        seen = v.get("observed_ms")
        found = [t for ts, attempt in laters.get((v["key"], v.get("group") or ""), ())
                 if (t := failed_at(ts, v.get("group"), v["key"], attempt)) is not None
                 and (seen is None or t - LOG_RESOLUTION_MS <= seen)]
        if found:
            out.rows[i] = row[:8] + (json.dumps(dict(v, **{SEND_BACK_FAILED_FIELD: max(found)})),)


def _queue_order_rows(out: Judgements, run: dict, exp: dict, delivered: dict) -> None:
    """QUEUE_ORDER spans keys: each (message, orderly group)'s ``qo`` row (:func:`reports.queue_order.qo_row`)."""
    orderly = {g for g, _ in profile_from_run(run).orderly_groups}
    if not orderly:
        return
    per_message: dict[tuple, list[dict]] = defaultdict(list)
    for (key, group, _), ds in delivered.items():
        if group in orderly:
            per_message[(key, group)].extend(ds)
    finals = {(k, g): (a, r[_COL["final_state"]]) for (k, g, a), r in exp.items() if r[_COL["final"]]}
    for (key, group), ds in per_message.items():
        final_attempt, final_state = finals.get((key, group), (None, None))
        row = qo_row(out.run_id, out.bucket, key, group, ds, final_attempt, final_state)
        if row is not None:
            out.rows.append(row)


def stored_copies(ds: list[dict]) -> list[list[dict]]:
    """The deliveries of one attempt (in time order) grouped by stored copy
    (:func:`reference.stored_copy.stored_copy_key`), the copies in the order they were stored: the
    first is the attempt's (its time), the others are duplicates only."""
    by_key: dict[tuple, list[dict]] = {}
    for d in ds:
        by_key.setdefault(stored_copy_key(d), []).append(d)
    copies = list(by_key.values())
    if len(copies) > 1:
        copies.sort(key=lambda c: (c[0]["store_ms"], c[0]["ts_ms"]))
    return copies


def _attempt(run, faults, key, group, attempt, ds, prev, row, send, timeline_bin_ms: int) -> Attempt:
    """One delivered attempt as the units see it: timed by the first delivery of its earliest-stored
    copy, or, a local re-consume of the copy the previous LATER answered, by its delivery."""
    copies = stored_copies(ds)
    first = copies[0][0]
    local = attempt >= 1 and prev is not None and prev[1] is not None and same_stored_copy(prev[1], first)
    return Attempt(run, faults, key, group, attempt, ds, copies, prev, row, send, local,
                   first["ts_ms"] if local else first["store_ms"], timeline_bin_ms)


def _pending_reason(latest_ms: int | None, ended_ms: int | None, answered_ms: int | None = None,
                    dlq_read_ms: int | None = None, crashed_ms: int | None = None) -> str:
    if crashed_ms is not None:
        return (f"its consumer died with it (CRASH) at {crashed_ms} and no consumer of its group was up again before "
                f"the harness stopped watching: its redelivery could not be seen")
    if answered_ms is not None:
        return (f"its last attempt was answered at {answered_ms}, after the DLQ was read at {dlq_read_ms} (the run's "
                f"end): its entry could not be seen")
    if ended_ms is None:
        return ("not final when the harness stopped observing (the run was interrupted)"
                + (f"; its window closes at {latest_ms}" if latest_ms is not None else ""))
    if latest_ms is None:
        return "its window has no end: the broker was not ready again"
    return f"its window closes at {latest_ms}, after the run ended at {ended_ms}"


def crashed_unrestarted(attempts: dict, faults: list[dict]) -> dict[tuple, int]:
    """(key, group) -> when: the messages whose last delivery was answered ``CRASH`` (its consumer
    died with it) and no consumer of that group started after it in what was recorded. Its
    redelivery comes only once a consumer of the group is up again, which the harness never saw: a
    shared run's consumers deliver on after its end until the batch tears the system down (seen
    beside the load generator: consumer-redelivery's consumer, 152 s in starting, got its first
    message 10.5 s after the send and the run's end, crashed with it, and was torn down)."""
    last: dict[tuple, dict] = {}
    for (key, group, _attempt), (ds, _) in attempts.items():
        for d in ds:
            if (key, group) not in last or d["ts_ms"] >= last[(key, group)]["ts_ms"]:
                last[(key, group)] = d
    starts: dict[str, list[int]] = defaultdict(list)
    for f in faults:
        if f.get("action") == "start" and f.get("target") == CONSUMER_TARGET and f.get("group"):
            starts[f["group"]].append(int(f["ts_ms"]))
    return {mg: d["ts_ms"] for mg, d in last.items()
            if d["outcome"] == "CRASH" and not any(t > d["ts_ms"] for t in starts.get(mg[1], ()))}


def _messages(out: Judgements, exp, attempts, dlqs, ended_ms: int | None, sends: dict | None = None,
              run: dict | None = None, crashed: dict[tuple, int] | None = None) -> None:
    """Each (message, group) at the end, to every unit (NO_LOSS, DLQ_ROUTING, a refused send's
    INTEGRITY), and the messages still pending at the end. ``ended_ms`` None: the run was
    interrupted, so nothing is judged on an absence (pending instead); a message its consumer
    crashed with, never up again (``crashed``: :func:`crashed_unrestarted`), is pending too."""
    plans: dict[tuple, list] = defaultdict(list)
    for (key, group, _attempt), row in exp.items():
        plans[(key, group)].append(row)
    seen: dict[tuple, set[int]] = defaultdict(set)
    consumed: set[tuple] = set()
    read_ms = (run or {}).get(DLQ_READ_MS) if ended_ms is not None else None
    answered: dict[tuple, int] = {}  # a DLQ entry owed by an answer after the DLQ was read: pending
    for (key, group, attempt), (ds, later) in attempts.items():
        seen[(key, group)].add(attempt)
        if any(d["outcome"] == "OK" for d in ds):
            consumed.add((key, group))
        elif later is not None and (key, group, attempt) in exp and x(exp[(key, group, attempt)], "final") \
                and x(exp[(key, group, attempt)], "final_state") == DROPPED:
            # reference.broadcast: a broadcast instance's LATER is its message's end; reference.pop: a
            # remoting POP consumer acks the copy after its last attempt unseen
            consumed.add((key, group))
    for mg in set(plans) | set(dlqs):
        m = _message(mg, plans.get(mg, ()), dlqs.get(mg, []), mg in consumed, seen.get(mg, set()), ended_ms)
        if m.pending is False and m.missing is None and not m.consumed and not m.dlqs and m.final_state == "DLQ" \
                and read_ms is not None and m.final_attempt is not None:
            later = attempts.get((mg[0], mg[1], m.final_attempt), (None, None))[1]
            if later is not None and later["ts_ms"] > read_ms:
                m.pending, answered[mg] = True, later["ts_ms"]
        if not m.pending and not m.consumed and not m.dlqs and mg in (crashed or {}):
            m.pending = True
        m.send = (sends or {}).get(mg[0])
        if m.missing is not None and run is not None:
            m.path = path_of(run, mg[1], x(m.missing, "attempt"), m.missing)
        if m.pending and m.status in ("SEND_OK", "UNKNOWN"):
            out.emit("p", {"invariant": "DLQ_ROUTING" if m.final_state == "DLQ" else "NO_LOSS", "key": m.key,
                           "attempt": x(m.missing, "attempt") if m.missing is not None else m.final_attempt,
                           "detail": _pending_reason(x(m.missing, "latest_ms"), ended_ms, answered.get(mg), read_ms,
                                                     (crashed or {}).get(mg))})
        for unit in UNITS:
            unit.message(out, m)


def _message(mg: tuple, rows, dlqs: list[dict], consumed: bool, got: set[int], ended_ms: int | None) -> Message:
    """One (message, group) as the units see it: which planned attempt is missing, and whether it
    is still pending (nothing reached yet, and its window is open at the end or the run was interrupted)."""
    key, group = mg
    m = Message(key, group, list(rows), dlqs, consumed, got, ended_ms)
    if rows:
        m.status, m.final_state, m.rejection = x(rows[0], "send_status"), x(rows[0], "final_state"), x(rows[0], "expected_rejection")
        m.refused = x(rows[0], "send_refused")
    if m.plain or m.rejection is not None:
        return m
    i_attempt, i_final = _COL["attempt"], _COL["final"]
    m.rows.sort(key=lambda r: r[i_attempt])
    m.final_attempt = max((r[i_attempt] for r in m.rows if r[i_final]), default=None)
    m.missing = next((r for r in m.rows if r[i_attempt] not in got), None)
    reached = consumed or bool(dlqs)
    if ended_ms is None:  # an interrupted run: what was not observed yet may still come
        m.pending = not reached
    else:
        latest = x(m.missing, "latest_ms")
        m.pending = not reached and m.missing is not None and (latest is None or latest > ended_ms)
    return m
