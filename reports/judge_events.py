"""The event-at-a-time judge: one bucket of messages, observed events (dicts) against the model's
expected attempts. The reference path; :mod:`reports.judge_columnar` gives the same judgements
from columns and hands it every key that is not plain.

Runs on the executors, once per (run, bucket of keys): the events of those keys are grouped with
the run's faults, :func:`reference.expected.build_expected_rows` says what must happen, and each
invariant compares. Nothing here decides what is due: windows, levels, topics and final states come
from the model, duplicate rulings from :func:`reference.expected.rule_duplicate`. LEVEL_ORDER spans
keys, so this module only emits each delayed message's first attempt for the Spark window in
:mod:`reports.level_order`.

Output rows: :data:`reports.rows.OUTPUT_SCHEMA` (``v``, ``c``, ``p``, ``s``, ``plot``, ``lo``).
"""

from __future__ import annotations

from collections import defaultdict

from reference import expected as model
from reference.clock import on_true_clock
from reference.stored_copy import same_stored_copy
from reports.rows import EXPECTED_COL, LATENESS_BIN_MS, LATENESS_RANGE_MS, LATENESS_TIME_BIN_MS, TOPIC_GROUP_KEY, Judgements

_COL = EXPECTED_COL

#: what an ON_TIME or NOT_EARLY violation of a local re-consume says (its time is the consumer's:
#: reference.stalls counts the consumer's stalls for it, not the broker's)
LOCAL_RECONSUME = "a local re-consume of the same stored copy"
#: LEVEL_ORDER: the return time given an UNKNOWN send (after every birth: it bounds no other store)
UNKNOWN_NEVER_RETURNED = 2**62


def _x(row, name):
    return None if row is None else row[_COL[name]]


def _clip_bin(value_ms: int, bin_ms: int = LATENESS_BIN_MS) -> int:
    lo, hi = LATENESS_RANGE_MS
    return (min(max(value_ms, lo), hi) // bin_ms) * bin_ms


def judge_bucket(run: dict, events: list[dict], ended_ms: int | None, timeline_bin_ms: int, bucket: int = 0) -> list[tuple]:
    """All judgements of the keys in ``events`` (plus the run's faults and snapshots), one event at
    a time: the reference path. :func:`reports.judge_columnar.judge_table` gives the same judgements from columns."""
    out = Judgements(run["run_id"], bucket)
    events = on_true_clock(events)  # reference.clock: store times judged as true times
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


def judge_keys(out: Judgements, run: dict, rows: list[tuple], events: list[dict], ended_ms: int | None, timeline_bin_ms: int,
                 timeline: bool) -> None:
    """Judge the keys of ``events`` (dicts) against the model's ``rows`` for them."""
    exp = {(r[_COL["key"]], r[_COL["group"]] or "", r[_COL["attempt"]]): r for r in rows}
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
    started_ms = int(run.get("started_ms") or 0)
    attempts = {}
    for k, ds in delivered.items():
        ds.sort(key=lambda d: d["ts_ms"])
        later = next((d for d in ds if d["outcome"] == "LATER"), None)
        attempts[k] = (ds, later)
    firsts: dict[str, tuple] = {}
    for (key, group, attempt), (ds, later) in attempts.items():
        x = exp.get((key, group, attempt))
        prev = attempts.get((key, group, attempt - 1))
        _attempt(out, run, faults, key, group, attempt, ds, prev, x, sends.get(key), timeline_bin_ms)
        if timeline:
            for d in ds:
                out.plot["timeline"][((d["ts_ms"] - started_ms) // timeline_bin_ms, d["outcome"])] += 1
        if attempt == 0 and x is not None and (x[_COL["level"]] or 0) > 0:
            copy = min(ds, key=lambda d: d["store_ms"])  # the earliest-stored copy's re-put
            store = copy["store_ms"]
            if key not in firsts or store < firsts[key][1]:
                firsts[key] = (x[_COL["level"]], store, copy.get("broker"))
    for key, (level, store, broker) in firsts.items():
        s = sends[key]
        # an UNKNOWN send's return says nothing of its store (it may be stored after: a paused or
        # partitioned broker, reference.network): it never "returned" before another's birth
        returned = s["ts_ms"] if s["status"] != "UNKNOWN" else UNKNOWN_NEVER_RETURNED
        out.rows.append((out.run_id, out.bucket, "lo", key, level, store, returned, s.get("born_ms", s["ts_ms"]), broker))
    _messages(out, exp, attempts, dlqs, ended_ms)



def stored_copies(ds: list[dict]) -> list[list[dict]]:
    """The deliveries of one attempt (in time order) grouped by stored copy
    (:func:`reference.stored_copy.same_stored_copy`), the copies in the order they were stored: the
    first is the attempt's (its time), the others are duplicates only."""
    copies: list[list[dict]] = []
    for d in ds:
        for c in copies:
            if same_stored_copy(c[0], d):
                c.append(d)
                break
        else:
            copies.append([d])
    if len(copies) > 1:
        copies.sort(key=lambda c: (c[0]["store_ms"], c[0]["ts_ms"]))
    return copies


def _attempt(out: Judgements, run, faults, key, group, attempt, ds, prev, x, send, timeline_bin_ms: int) -> None:
    copies = stored_copies(ds)
    first = copies[0][0]  # the first delivery of the earliest-stored copy: the attempt's time
    local = attempt >= 1 and prev is not None and prev[1] is not None and same_stored_copy(prev[1], first)
    observed = first["ts_ms"] if local else first["store_ms"]
    lo = _x(x, "local_earliest_ms" if local else "earliest_ms")
    hi = _x(x, "local_latest_ms" if local else "latest_ms")
    if lo is not None:
        out.checked["NOT_EARLY"] += 1
        level, widened = x[_COL["level"]], not local and _x(x, "widened_by") is not None
        out.plot["lateness"][level][_clip_bin(observed - lo)] += 1
        if widened:
            out.plot["lateness_widened"][level][_clip_bin(observed - lo)] += 1
        time_bin = (observed - int(run.get("started_ms") or 0)) // timeline_bin_ms
        out.plot["lateness_time"][(time_bin, _clip_bin(observed - lo, LATENESS_TIME_BIN_MS), int(widened))] += 1
    if hi is not None:
        out.checked["ON_TIME"] += 1
    early = lo is not None and observed < lo
    late = hi is not None and observed > hi
    if early or late:
        how = f" ({LOCAL_RECONSUME}: judged by delivery time)" if local else ""
        common = dict(group=group, attempt=attempt, requested_level=_x(x, "requested_level"), level=_x(x, "level"),
                      clamped=_x(x, "clamped"), anchor_ms=_x(x, "anchor_ms"), earliest_ms=lo, latest_ms=hi,
                      observed_ms=observed, widened_by=_x(x, "widened_by"))
        if early:
            out.violation("NOT_EARLY", key, detail="arrived before its window opened" + how, **common)
        if late:
            out.violation("ON_TIME", key, detail="arrived after its window closed" + how, **common)
    anchor = _x(x, "anchor_ms")
    if attempt >= 1 and anchor is not None:
        out.plot["gaps"][attempt][_clip_bin(observed - anchor - x[_COL["delay_ms"]])] += 1  # offset from the schedule
        out.plot["gap_expected"][attempt] = x[_COL["delay_ms"]]
    if attempt >= 1:
        out.checked["RETRY_SCHEDULE"] += 1
        detail = None
        if prev is None:
            detail = f"attempt {attempt - 1} was never delivered: a gap in reconsume_times"
        elif prev[1] is None:
            detail = f"attempt {attempt - 1} was never answered LATER"
        elif prev[1]["ts_ms"] > ds[0]["ts_ms"]:
            detail = "delivered before the LATER it should follow"
        elif x is None:
            detail = "the plan does not lead to this attempt"
        if detail:
            out.violation("RETRY_SCHEDULE", key, group=group, attempt=attempt, observed_ms=ds[0]["ts_ms"],
                          anchor_ms=prev[1]["ts_ms"] if prev and prev[1] else None, detail=detail)
    out.checked["NO_DUPLICATE"] += 1
    # each copy's redeliveries against its first delivery; each later-stored copy against the copy
    # stored before it (its re-put repeats that one: the cause lies between the two re-puts)
    later_copies = [(copies[i - 1][0], copies[i][0]) for i in range(1, len(copies))]
    # the copies of a retry that its attempt's own LATER answers stored, beyond the first
    # (reference.expected.sent_back_copies): the earliest-stored later copies
    sent_back = model.sent_back_copies(prev[0], faults) if attempt >= 1 and prev is not None else 0
    sent_back_extra = later_copies[:max(0, sent_back - 1)]
    out.plot["duplicates"]["consumer allowed"] += len(sent_back_extra)
    for one, other in [(c[0], d) for c in copies for d in c[1:]] + later_copies[len(sent_back_extra):]:
        ruling = model.rule_duplicate(run, faults, one, other)
        out.plot["duplicates"][f"{ruling.cause} {'allowed' if ruling.allowed else 'not allowed'}"] += 1
        if not ruling.allowed:
            if ruling.cause == "scheduler":  # explained by the faults between the two re-puts
                anchor, observed_dup = one["store_ms"], other["store_ms"]
                detail = (f"scheduler duplicate not allowed: {ruling.reason}; delivered at {one['ts_ms']} and "
                          f"{other['ts_ms']}")
            else:
                anchor, observed_dup = one["ts_ms"], other["ts_ms"]
                detail = f"{ruling.cause} duplicate not allowed: {ruling.reason}"
            out.violation("NO_DUPLICATE", key, group=group, attempt=attempt, anchor_ms=anchor,
                          observed_ms=observed_dup, cause=ruling.cause, detail=detail)
    want_topic = _x(x, "topic") or (send["topic"] if send else None)
    for d in ds:
        out.checked["INTEGRITY"] += 1
        detail = None
        if send is None:
            detail = "delivered a key that was never sent"
        elif send["status"] == "FAILED":
            detail = "delivered a message whose send FAILED (certainly not stored)"
        elif d["topic"] != want_topic:
            detail = f"topic {d['topic']}, expected {want_topic}"
        elif d.get("body_crc") is not None and send.get("body_crc") is not None and d["body_crc"] != send["body_crc"]:
            detail = f"body_crc {d['body_crc']}, sent {send['body_crc']}"
        if detail:
            out.violation("INTEGRITY", key, group=group, attempt=attempt, observed_ms=d["ts_ms"], detail=detail)


def _pending_reason(latest_ms: int | None, ended_ms: int | None) -> str:
    if ended_ms is None:
        return ("not final when the harness stopped observing (the run was interrupted)"
                + (f"; its window closes at {latest_ms}" if latest_ms is not None else ""))
    if latest_ms is None:
        return "its window has no end: the broker was not ready again"
    return f"its window closes at {latest_ms}, after the run ended at {ended_ms}"


def _messages(out: Judgements, exp, attempts, dlqs, ended_ms: int | None) -> None:
    """NO_LOSS and DLQ_ROUTING per (message, group), and the messages still pending at the end.
    ``ended_ms`` None: the run was interrupted, so nothing is judged on an absence (pending instead)."""
    plans: dict[tuple, list] = defaultdict(list)
    for (key, group, attempt), row in exp.items():
        plans[(key, group)].append(row)
    seen: dict[tuple, list[int]] = defaultdict(list)
    consumed: set[tuple] = set()
    for (key, group, attempt), (ds, _) in attempts.items():
        seen[(key, group)].append(attempt)
        for d in ds:
            if d["outcome"] == "OK":
                consumed.add((key, group))
                break
    i_status, i_state, i_attempt, i_final = _COL["send_status"], _COL["final_state"], _COL["attempt"], _COL["final"]
    for mg in set(plans) | set(dlqs):
        key, group = mg
        rows = plans.get(mg, ())
        status = rows[0][i_status] if rows else None
        final_state = rows[0][i_state] if rows else None
        n_dlq = len(dlqs[mg]) if mg in dlqs else 0
        if mg in consumed and not n_dlq and status == "SEND_OK" and final_state == "CONSUMED":
            out.checked["NO_LOSS"] += 1  # the common case: consumed as planned, nowhere near the DLQ
            continue
        rejection = _x(rows[0], "expected_rejection") if rows else None
        if rejection is not None:  # the broker must refuse this send: nothing to lose or route
            if status == "SEND_OK":
                out.checked["INTEGRITY"] += 1
                out.violation("INTEGRITY", key, group=group or None, attempt=0,
                              detail=f"the send returned SEND_OK, but the broker must refuse it: {rejection}")
            continue
        if len(rows) > 1:
            rows = sorted(rows, key=lambda r: r[i_attempt])
        final_attempt = max((r[i_attempt] for r in rows if r[i_final]), default=None)
        got = set(seen.get(mg, ()))
        missing = next((r for r in rows if r[i_attempt] not in got), None)
        reached = mg in consumed or n_dlq > 0
        m_latest = _x(missing, "latest_ms")
        if ended_ms is None:  # an interrupted run: what was not observed yet may still come
            pending = not reached
        else:
            pending = not reached and missing is not None and (m_latest is None or m_latest > ended_ms)
        if pending and status in ("SEND_OK", "UNKNOWN"):
            reason = _pending_reason(m_latest, ended_ms)
            out.emit("p", {"invariant": "DLQ_ROUTING" if final_state == "DLQ" else "NO_LOSS", "key": key,
                           "attempt": _x(missing, "attempt"), "detail": reason})
        if status == "SEND_OK":
            out.checked["NO_LOSS"] += 1
            if not reached and not pending:
                out.violation("NO_LOSS", key, group=group or None,
                              attempt=_x(missing, "attempt") if missing is not None else max(got, default=None),
                              earliest_ms=_x(missing, "earliest_ms"), latest_ms=m_latest, observed_ms=ended_ms,
                              detail=f"expected {final_state} by the run's end, found neither an OK delivery nor a DLQ entry")
        stored = status == "SEND_OK" or (status == "UNKNOWN" and got)
        if not ((final_state == "DLQ" and stored) or n_dlq):
            continue
        out.checked["DLQ_ROUTING"] += 1
        detail = None
        if final_state is None:
            detail = "in the DLQ, but the key was never sent"
        elif final_state != "DLQ" and n_dlq:
            detail = "in the DLQ, but its plan ends in CONSUMED"
        elif pending:
            detail = None
        elif n_dlq > 1 or (n_dlq == 0 and ended_ms is not None):  # the DLQ is read at the end: not yet, if interrupted
            detail = f"expected exactly one DLQ entry, found {n_dlq}"
        elif got and final_attempt is not None and max(got) > final_attempt:
            detail = f"delivered again after its last attempt {final_attempt}: attempt {max(got)}"
        if detail:
            first_dlq = min((d["ts_ms"] for d in dlqs.get(mg, ())), default=None)
            out.violation("DLQ_ROUTING", key, group=group or None, attempt=final_attempt, observed_ms=first_dlq, detail=detail)
