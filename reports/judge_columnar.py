"""The columnar judge: one bucket judged from Arrow columns with numpy, the same judgements as the
event-at-a-time :func:`reports.judge_events.judge_bucket`, without a Python dict per event.

What the executors receive is an Arrow table of one (run, bucket of keys). Most keys of a healthy
run are *plain*: every delivered attempt was delivered once, inside the model's window, after the
LATER it follows, to the right topic with the right body, and the message was consumed as its plan
says. Each invariant's unit (:mod:`reports.invariants`) says over whole columns where it plainly
holds and counts what it checked there; every other key (a violation, a duplicate, a DLQ entry, an
UNKNOWN or FAILED send, a pending message, anything unusual) goes through the event-at-a-time path
of :mod:`reports.judge_events`, with its events as dicts, where the same units judge it. The split
only decides *who* judges a key; the rules and the expectations are the same (the units, the
model's rows, built once per bucket, the stored copy of :mod:`reference.stored_copy`), and
``suites/selftest/checker/test_columns.py`` holds both paths to the same output.

The model is handed what it reads: sends, faults, snapshots, LATER deliveries (retry anchors) and
one delivery per (topic, group) (which groups consume a topic).
"""

from __future__ import annotations

import json
import time
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hourglass.reference import expected as model
from hourglass.reference.clock import BrokerClock
from hourglass.reference.contract import EVENT_FIELDS, ContractError
from hourglass.reference.expected import EXPECTED_COLUMNS
from hourglass.reference.persistence import level_order_kept
from hourglass.reference.profile import profile_from_run
from hourglass.reference.stored_copy import FIELDS as COPY_FIELDS
from hourglass.reference.stored_copy import stored_copy_key
from hourglass.reports import offsets
from hourglass.reports.invariants import UNITS
from hourglass.reports.invariants.base import NULL as _NULL
from hourglass.reports.invariants.base import Columns
from hourglass.reports.judge_events import crash_faults, judge_keys
from hourglass.reports.rows import EXPECTED_COL, JSON_FIELDS, JUDGE_COLUMNS, TOPIC_GROUP_KEY, Judgements, error_row, output_layout, rows_table, timing_row

_COL = EXPECTED_COL
#: what the model reads of a send: every contract field but ``msg_id``
SEND_FIELDS = ("type", "ts_ms", *(f.name for f in EVENT_FIELDS["send"] if f.name != "msg_id"))
#: what the model and the units read of a delivery: every contract field but ``msg_id`` (reports.rows)
DELIVER_FIELDS = ("type", "ts_ms", *(f.name for f in EVENT_FIELDS["deliver"] if f.name in JUDGE_COLUMNS))
DLQ_FIELDS = ("type", "ts_ms", "key", "group", "reconsume_times", "store_ms")
#: what the model reads of a fault: its generic fields, and every fault family's (reference.faults)
FAULT_FIELDS = ("type", "ts_ms", *(f.name for f in EVENT_FIELDS["fault"] if f.name in JUDGE_COLUMNS))
SNAPSHOT_FIELDS = ("type", "ts_ms", *(f.name for f in EVENT_FIELDS["snapshot"]))
STALL_FIELDS = ("type", "ts_ms", *(f.name for f in EVENT_FIELDS["stall"]))  # reference.stalls: judged per run


@lru_cache(maxsize=None)
def _rows_as_dicts(names: tuple[str, ...]):
    """``f(columns) -> [{names[0]: columns[0][i], ...} for each row i]``, compiled for ``names``
    (as ``collections.namedtuple`` compiles its class): a dict display per row builds twice as fast
    as ``dict(zip(names, row))``. ``names`` are contract field names (``repr`` keeps them literal)."""
    args = ", ".join(f"a{i}" for i in range(len(names)))
    body = ", ".join(f"{n!r}: a{i}" for i, n in enumerate(names))
    return eval(f"lambda columns: [{{{body}}} for {args}{',' if len(names) == 1 else ''} in zip(*columns)]")  # noqa: S307


def _dicts(table: pa.Table, names) -> list[dict]:
    """Rows as contract event dicts (absent fields left out, as in the files); ``plan`` and
    ``offsets`` decoded from their transport encoding (:mod:`reports.rows`)."""
    names = [n for n in names if n in table.column_names]
    nulls = {n: table.column(n).null_count for n in names}
    full = tuple(n for n in names if not nulls[n])  # every row has it: one dict display per row
    out = _rows_as_dicts(full)([_values(n, table.column(n)) for n in full]) if full else [{} for _ in range(table.num_rows)]
    for n in names:
        if 0 < nulls[n] < table.num_rows:  # some rows have it: set where it is
            col = table.column(n)
            where = np.flatnonzero(pc.is_valid(col).to_numpy(zero_copy_only=False)).tolist()
            for i, v in zip(where, _values(n, pc.drop_null(col))):
                out[i][n] = v
    return out


def _values(name: str, col) -> list:
    """A column's values as the contract has them: ``plan`` a list of words, ``offsets`` a dict."""
    values = col.to_pylist()
    if name == "plan":
        return [(v.split(",") if v else []) if isinstance(v, str) else v for v in values]
    if name in JSON_FIELDS:
        return [json.loads(o) if isinstance(o, str)
                else dict(o) if isinstance(o, list)  # an Arrow map: (key, value) pairs
                else {k: v for k, v in o.items() if v is not None} if isinstance(o, dict)  # a struct inferred from JSON
                else o for o in values]
    return values


def _ints(col) -> np.ndarray:
    return pc.fill_null(col, _NULL).to_numpy() if col.null_count else col.to_numpy()


def _unkeyed(faults: pa.Table, snapshots: pa.Table, deliveries: pa.Table, stalls: pa.Table | None = None) -> list[dict]:
    """The run's faults, snapshots and stalls, and its CRASH answers as consumer faults, in time order."""
    out = _dicts(faults, FAULT_FIELDS)
    out.extend(_dicts(snapshots, SNAPSHOT_FIELDS))
    if stalls is not None:
        out.extend(_dicts(stalls, STALL_FIELDS))
    crashes = deliveries.filter(pc.equal(deliveries.column("outcome"), "CRASH"))
    out.extend(crash_faults(_dicts(crashes, ("ts_ms", "group", "key", "outcome"))))
    out.sort(key=lambda e: e["ts_ms"])
    return out


def judge_table(run: dict, bucket: int, table: pa.Table, ended_ms: int | None, timeline_bin_ms: int,
                markers: list[tuple[str, str]] | None = None) -> pa.Table:
    """All judgements of one (run, bucket) as an Arrow table of :data:`reports.rows.OUTPUT_SCHEMA`:
    ``table`` holds the bucket's rows as :func:`reports.spark_jobs.judged_table` spreads them
    (``bad_file``, ``echo`` included). ``ended_ms`` None: the run was interrupted (nothing is judged
    on an absence). Also says what the bucket observed (kind ``n``: its events and the last
    ``ts_ms``: an interrupted run is judged up to there)."""
    run_id = run["run_id"]
    out = Judgements(run_id, bucket)
    t = time.perf_counter()
    bad = table.column("bad_file")
    if bad.null_count != table.num_rows:
        for f in sorted(set(pc.drop_null(bad).to_pylist())):
            out.emit("f", f)
        table = table.filter(pc.is_null(bad))
    echo = table.column("echo")  # the copies of faults (and CRASH answers) sent to every bucket
    echoed = pc.sum(echo).as_py() or 0
    ts_own = pc.filter(table.column("ts_ms"), pc.invert(echo)) if echoed else table.column("ts_ms")
    out.emit("n", {"events": table.num_rows - echoed, "last_ts_ms": pc.max(ts_own).as_py()})
    kind = table.column("type")

    def of_type(etype: str, names) -> pa.Table:  # only the columns read of each type: filtering copies
        return table.select([n for n in (*names, "echo") if n in table.column_names]).filter(pc.equal(kind, etype))

    sends_t = of_type("send", SEND_FIELDS)
    all_deliveries = of_type("deliver", DELIVER_FIELDS)
    dlq_t = of_type("dlq", DLQ_FIELDS)
    faults_t = of_type("fault", FAULT_FIELDS)
    clock = BrokerClock.from_faults(_dicts(faults_t, FAULT_FIELDS)) if faults_t.num_rows else None
    if clock is not None:  # reference.clock: store times judged as true times
        all_deliveries, dlq_t = _on_true_clock(all_deliveries, clock), _on_true_clock(dlq_t, clock)
    unkeyed = _unkeyed(faults_t, of_type("snapshot", SNAPSHOT_FIELDS), all_deliveries,
                       of_type("stall", STALL_FIELDS) if "from_ms" in table.column_names else None)
    if bucket == 0 and unkeyed:
        out.emit("u", unkeyed)
    deliv = all_deliveries.filter(pc.invert(all_deliveries.column("echo"))) if echoed else all_deliveries

    sends = _dicts(sends_t, SEND_FIELDS)
    rows, t = _expected(out, run, sends, deliv, unkeyed + _dicts(dlq_t, DLQ_FIELDS), markers, t)
    _count_reputs(out, run, unkeyed, rows, deliv)
    slow = _judge_plain(out, run, rows, sends_t, deliv, dlq_t, ended_ms, timeline_bin_ms)
    t = out.timed("judging: columnar", t)
    if slow:
        slow_keys = pa.array(sorted(slow), type=pa.string())
        events = [s for s in sends if s["key"] in slow]
        events += _dicts(deliv.filter(pc.is_in(deliv.column("key"), slow_keys)), DELIVER_FIELDS)
        events += _dicts(dlq_t.filter(pc.is_in(dlq_t.column("key"), slow_keys)), DLQ_FIELDS)
        key_i = _COL["key"]
        judge_keys(out, run, [r for r in rows if r[key_i] in slow], events + unkeyed, ended_ms, timeline_bin_ms, timeline=False)
        t = out.timed("judging: event at a time", t)
    out.emit("c", dict(out.checked))
    out.emit_plot()
    judged = _as_table(out)
    out.timed("judging: rows out", t)
    return pa.concat_tables([judged, rows_table([timing_row(run_id, bucket, out.seconds)])])


def _expected(out: Judgements, run: dict, sends: list[dict], deliv: pa.Table, unkeyed: list[dict],
              markers: list[tuple[str, str]] | None, t: float) -> tuple[list[tuple], float]:
    """The model's rows of the bucket, handed what it reads: sends, faults, snapshots (and the
    DLQ entries, in ``unkeyed`` here), LATER deliveries (retry anchors; an orderly group's every delivery) and one delivery
    per (topic, group) seen here or named by ``markers`` (which groups consume a topic; kind ``tg``
    says which the bucket saw)."""
    laters = pc.equal(deliv.column("outcome"), "LATER")
    profile = profile_from_run(run)
    every = profile.whole_history_groups
    if every:
        laters = pc.or_(laters, pc.is_in(deliv.column("group"), value_set=pa.array(every)))
    laters = _dicts(deliv.filter(laters), DELIVER_FIELDS)
    tg = pa.Table.from_arrays([deliv.column("topic"), deliv.column("group")], names=["t", "g"]).group_by(["t", "g"]).aggregate([])
    pairs = set(zip(tg.column("t").to_pylist(), tg.column("g").to_pylist())) | set(markers or ())
    marker_events = [{"type": "deliver", "ts_ms": 0, "key": TOPIC_GROUP_KEY, "topic": t, "group": g, "outcome": "OK",
                      "reconsume_times": 0} for t, g in sorted(pairs)]
    t = out.timed("judging: columns to dicts", t)
    rows = model.build_expected_rows(run, sends + laters + unkeyed + marker_events)
    t = out.timed("model: expected table", t)
    out.emit("tg", {"pairs": sorted(pairs), "sent_topics": sorted({s["topic"] for s in sends})})
    return rows, t


def _on_true_clock(table: pa.Table, clock: BrokerClock) -> pa.Table:
    """``store_ms`` (the broker's clock) as true time, each no later than its event's ``ts_ms``."""
    if not table.num_rows:
        return table
    true = [clock.true_ms(s, t) if s is not None else None
            for s, t in zip(table.column("store_ms").to_pylist(), table.column("ts_ms").to_pylist())]
    i = table.column_names.index("store_ms")
    return table.set_column(i, "store_ms", pa.array(true, type=table.schema.field("store_ms").type))


def _count_reputs(out: Judgements, run: dict, unkeyed: list[dict], rows: list[tuple], deliv: pa.Table) -> None:
    """OFFSET_PERSISTENCE's re-puts (kind ``rp``): the bucket's stored copies of each delay level in
    each window a start rule needs (:func:`reports.offsets.plan`); the driver sums the buckets."""
    windows = sorted({c.window for c in offsets.plan(unkeyed, run.get("profile")) if c.window is not None})
    if not windows:
        return
    store = deliv.column("store_ms")
    inside = None
    for lo, hi in windows:
        w = pc.and_(pc.greater_equal(store, lo), pc.less_equal(store, hi))
        inside = w if inside is None else pc.or_(inside, w)
    found = _dicts(deliv.filter(inside), DELIVER_FIELDS) if deliv.num_rows else []
    keys = {d["key"] for d in found}
    key_i, group_i, attempt_i, level_i = _COL["key"], _COL["group"], _COL["attempt"], _COL["level"]
    levels = {(r[key_i], r[group_i] or "", r[attempt_i]): r[level_i] for r in rows if r[key_i] in keys}
    tally = offsets.tally_reputs(windows, found, lambda d: levels.get((d["key"], d["group"], d["reconsume_times"])) or 0)
    out.emit("rp", [[lo, hi, {str(lv): n for lv, (n, _) in c.items()}, {str(lv): t for lv, (_, t) in c.items()}]
                    for (lo, hi), c in tally.items()])


def judge_or_error(run: dict, bucket: int, table: pa.Table, ended_ms: int | None, timeline_bin_ms: int,
                   markers: list[tuple[str, str]] | None = None) -> pa.Table:
    """:func:`judge_table`, or one row of kind ``e`` when the model rejects the run's events or the
    judging fails on them: one run's bad input never fails the task, hence the other runs."""
    try:
        return judge_table(run, bucket, table, ended_ms, timeline_bin_ms, markers)
    except ContractError as e:
        return rows_table([error_row(run["run_id"], bucket, str(e), rescan=False,
                                     send_key=e.found if e.expected == model.SENT_ONCE else None)])
    except Exception as e:  # noqa: BLE001 - e.g. bytes no contract check caught: the driver rescans the run's files
        return rows_table([error_row(run["run_id"], bucket, f"{type(e).__name__}: {e}", rescan=True)])


def _as_table(out: Judgements) -> pa.Table:
    """The judgements as Arrow: the few rows of :class:`reports.rows.Judgements`, then the LEVEL_ORDER
    rows of the plain keys (one per delayed message: kept as columns all the way)."""
    names, _ = output_layout()
    rows = rows_table(out.rows)
    lo = getattr(out, "lo", None)
    if lo is None:
        return rows
    k = len(lo["key"])
    cols = {"run_id": pa.array([out.run_id] * k, type=pa.string()), "bucket": pa.array(np.full(k, out.bucket, dtype=np.int64)),
            "kind": pa.array(["lo"] * k, type=pa.string()), "payload": pa.nulls(k, type=pa.string())}
    cols.update({n: pa.array(v, type=pa.int64()) if n not in ("key", "payload") else v for n, v in lo.items()})
    return pa.concat_tables([rows, pa.Table.from_arrays([cols[n] for n in names], names=names)])


def _encode(*parts) -> tuple[list[np.ndarray], pa.Array]:
    """Shared integer codes of several string columns (codes in order of first appearance)."""
    chunks = []
    for p in parts:
        arr = p if isinstance(p, (pa.Array, pa.ChunkedArray)) else pa.array(p, type=pa.string())
        chunks.extend(arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr])
    whole = pa.concat_arrays([c.cast(pa.string()) for c in chunks]) if chunks else pa.array([], type=pa.string())
    enc = pc.dictionary_encode(whole)
    codes = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    out, at = [], 0
    for p in parts:
        out.append(codes[at:at + len(p)])
        at += len(p)
    return out, enc.dictionary


def _judge_plain(out: Judgements, run, rows, sends_t, deliv, dlq_t, ended_ms, timeline_bin_ms) -> set[str]:
    """Judge the plain keys with whole columns; return the other keys (for the dict path). Each
    unit (:mod:`reports.invariants`) says where it plainly holds; a key outside any goes to the
    dict path; each unit counts what it checked on the rest. Also counts what spans every key of
    the bucket: stats and the timeline."""
    started_ms = int(run.get("started_ms") or 0)
    _timeline(out, deliv, started_ms, timeline_bin_ms)
    c = Columns(started_ms=started_ms, timeline_bin_ms=timeline_bin_ms, sends=sends_t, deliveries=deliv, dlqs=dlq_t)
    _model_columns(c, rows)
    _codes(c, sends_t, deliv, dlq_t)
    if not (deliv.num_rows and len(rows)):  # nothing delivered or nothing expected: nothing plain
        span = int(c.d_rt.max(initial=0)) + 1
        out.emit("s", {"messages": c.n_sends, "attempts": len(np.unique(c.d_mg * span + c.d_rt)), "recovered": c.recovered})
        return set(c.key_dict.to_pylist())
    _attempts(c, deliv)
    _timing(c, deliv)
    slow = c.slow
    profile = profile_from_run(run)
    # the dict path judges them (QUEUE_ORDER spans keys: reports.queue_order emits an orderly group's rows)
    by_dicts = profile.whole_history_groups
    if by_dicts:
        slow[c.d_key[pc.is_in(deliv.column("group"), value_set=pa.array(by_dicts)).to_numpy(zero_copy_only=False)]] = True
    for unit in UNITS:
        p = unit.plain(c)
        if p.attempts is not None:
            slow[c.a_key[~p.attempts]] = True
        if p.rows is not None:
            slow[c.e_key[~p.rows]] = True
        if p.keys is not None:
            slow |= ~p.keys
    c.plain_a = ~slow[c.a_key]
    c.plain_messages = len(set(c.e_mg[~slow[c.e_key]].tolist()))
    for unit in UNITS:
        unit.count(out, c)
    if c.plain_a.any() and level_order_kept(profile.schedule_async_deliver):  # reference.persistence
        _level_order_firsts(out, c, sends_t, deliv)
    out.emit("s", {"messages": c.n_sends, "attempts": len(c.a_id), "recovered": c.recovered})
    return set(c.key_dict.take(pa.array(np.flatnonzero(slow))).to_pylist())


def _timeline(out: Judgements, deliv: pa.Table, started_ms: int, timeline_bin_ms: int) -> None:
    """The timeline of every delivery (the dict path is told not to count it again)."""
    if not deliv.num_rows:
        return
    (oc,), names = _encode(deliv.column("outcome"))
    names = names.to_pylist()
    bins = (_ints(deliv.column("ts_ms")) - started_ms) // timeline_bin_ms
    uniq, counts = np.unique(bins * len(names) + oc, return_counts=True)
    for u, n in zip(uniq.tolist(), counts.tolist()):
        out.plot["timeline"][(u // len(names), names[u % len(names)])] += n


def _model_columns(c: Columns, rows: list[tuple]) -> None:
    """The model's rows as columns (``e_*``): one transposition, not one pass per column."""
    m = len(rows)
    by_column = list(zip(*rows)) if m else [()] * len(EXPECTED_COLUMNS)

    def icol(name):
        return _ints(pa.array(by_column[_COL[name]], type=pa.int64())) if m else np.zeros(0, dtype=np.int64)

    def scol(name):
        return pa.array(by_column[_COL[name]], type=pa.string())

    for name in ("attempt", "level", "earliest_ms", "latest_ms", "local_earliest_ms", "local_latest_ms", "anchor_ms", "delay_ms",
                 "timer_slot_ms"):
        setattr(c, "e_" + name, icol(name))
    c.e_key_names, c.e_group_names, c.e_topic_names = scol("key"), scol("group"), scol("topic")
    c.e_send_status, c.e_final_state, c.e_rejection = scol("send_status"), scol("final_state"), scol("expected_rejection")
    c.e_widened = pc.is_valid(scol("widened_by")).to_numpy(zero_copy_only=False)  # a broker outage widened the window


def _codes(c: Columns, sends_t: pa.Table, deliv: pa.Table, dlq_t: pa.Table) -> None:
    """Keys (sends first, then deliveries and DLQ entries), groups and topics as shared integer
    codes; what the columnar path cannot judge at all (``slow``: a key not sent SEND_OK in this
    bucket, a negative ``reconsume_times``); the stats' recovered sends."""
    m = len(c.e_attempt)
    c.n_sends = sends_t.num_rows
    (_, dk, c.q_key), c.key_dict = _encode(sends_t.column("key"), deliv.column("key"), dlq_t.column("key"))
    c.n_keys = len(c.key_dict)
    c.e_key = (pc.index_in(c.e_key_names, value_set=c.key_dict).to_numpy(zero_copy_only=False).astype(np.int64) if m
               else np.zeros(0, dtype=np.int64))
    e_group = pc.fill_null(c.e_group_names, "") if m else pa.array([], type=pa.string())
    (_, dg, eg), group_dict = _encode(pa.array([""]), deliv.column("group"), e_group)
    c.n_groups = len(group_dict)
    (c.d_topic, c.e_topic), _ = _encode(deliv.column("topic"), pc.fill_null(c.e_topic_names, "\u0000none") if m else pa.array([], type=pa.string()))
    c.d_rt = _ints(deliv.column("reconsume_times"))
    c.d_key, c.d_mg, c.e_mg = dk, dk * c.n_groups + dg, c.e_key * c.n_groups + eg
    c.e_group = eg
    c.d_ts, c.d_store, c.d_crc = (_ints(deliv.column(n)) for n in ("ts_ms", "store_ms", "body_crc"))
    c.d_ok = pc.equal(deliv.column("outcome"), "OK").to_numpy(zero_copy_only=False)
    c.d_later = pc.equal(deliv.column("outcome"), "LATER").to_numpy(zero_copy_only=False)
    c.s_crc = _ints(sends_t.column("body_crc"))
    status = sends_t.column("status")
    c.slow = slow = np.zeros(c.n_keys, dtype=bool)  # per key code: judged by the dict path
    slow[:c.n_sends] |= ~pc.equal(status, "SEND_OK").to_numpy(zero_copy_only=False)
    slow[c.n_sends:] = True  # delivered or in the DLQ, never sent (in this bucket)
    if m:
        slow[c.e_key[~pc.equal(c.e_send_status, "SEND_OK").to_numpy(zero_copy_only=False)]] = True
    slow[dk[c.d_rt < 0]] = True
    delivered = np.zeros(c.n_keys, dtype=bool)
    delivered[dk] = True
    c.recovered = int((pc.equal(status, "UNKNOWN").to_numpy(zero_copy_only=False) & delivered[:c.n_sends]).sum())


def _attempts(c: Columns, deliv: pa.Table) -> None:
    """Deliveries grouped by attempt (key, group, reconsume_times), in time within an attempt
    (``a_*``; ``first``: its first delivery, ``a_later``: its first LATER), its model row (``x``;
    none found: the dict path) and its previous attempt (``p_idx``, ``p_found``)."""
    n, m = deliv.num_rows, len(c.e_attempt)
    span = int(max(c.d_rt.max(initial=0), c.e_attempt.max(initial=0))) + 2
    d_id = c.d_mg * span + np.clip(c.d_rt, 0, span - 1)
    e_id = c.e_mg * span + c.e_attempt
    e_order = np.argsort(e_id, kind="stable")
    order = np.lexsort((c.d_ts, d_id))
    sid = d_id[order]
    starts = np.flatnonzero(np.r_[True, sid[1:] != sid[:-1]])
    c.a_deliveries = np.diff(np.r_[starts, n])
    c.first = order[starts]
    c.a_id = a_id = sid[starts]
    c.a_key = c.d_key[c.first]
    c.a_att = np.clip(c.d_rt[c.first], 0, span - 1)
    pos = np.where(c.d_later[order], np.arange(n), n)
    seg_first_later = np.minimum.reduceat(pos, starts)
    c.a_has_later = seg_first_later < np.r_[starts[1:], n]
    c.a_later = order[np.minimum(seg_first_later, n - 1)]
    at = np.searchsorted(e_id[e_order], a_id)
    c.x = e_order[np.minimum(at, m - 1)]
    found = (at < m) & (e_id[c.x] == a_id)
    c.slow[c.a_key[~found]] = True  # no model row: the plan does not lead there, or never sent
    p_at = np.searchsorted(a_id, a_id - 1)
    c.p_idx = np.minimum(p_at, len(a_id) - 1)
    c.p_found = (c.a_att >= 1) & (p_at < len(a_id)) & (a_id[c.p_idx] == a_id - 1)


def _timing(c: Columns, deliv: pa.Table) -> None:
    """Each attempt's time and window: a local re-consume of the stored copy its previous LATER
    answered (:mod:`reference.stored_copy`) by its delivery, any other by its store time."""
    candidate = (c.a_att >= 1) & c.p_found & c.a_has_later[c.p_idx]
    c.local = np.zeros(len(c.a_id), dtype=bool)
    which = np.flatnonzero(candidate)
    c.local[which] = _same_copy(deliv, c.a_later[c.p_idx][which], c.first[which])
    c.observed = np.where(c.local, c.d_ts[c.first], c.d_store[c.first])
    c.lo = np.where(c.local, c.e_local_earliest_ms[c.x], c.e_earliest_ms[c.x])
    c.hi = np.where(c.local, c.e_local_latest_ms[c.x], c.e_latest_ms[c.x])


def _same_copy(deliv: pa.Table, one: np.ndarray, other: np.ndarray) -> np.ndarray:
    """Whether deliveries ``one[i]`` and ``other[i]`` (row indices) are of the same stored copy:
    :func:`reference.stored_copy.stored_copy_key` of just these rows."""
    if not len(one):
        return np.zeros(0, dtype=bool)
    rows, at = np.unique(np.r_[one, other], return_inverse=True)
    names = tuple(n for n in COPY_FIELDS if n in deliv.column_names)
    taken = pa.array(rows)
    codes: dict[tuple, int] = {}
    keys = [codes.setdefault(stored_copy_key(d), len(codes))
            for d in _rows_as_dicts(names)([deliv.column(n).take(taken).to_pylist() for n in names])]
    code = np.asarray(keys, dtype=np.int64)[at]
    return code[:len(one)] == code[len(one):]


def _level_order_firsts(out: Judgements, c: Columns, sends_t: pa.Table, deliv: pa.Table) -> None:
    """LEVEL_ORDER's rows of the plain keys: each delayed message's first attempt, the earliest
    stored over its groups (kept as columns: :func:`_as_table`)."""
    p = c.plain_a
    att, lv = c.a_att[p], c.e_level[c.x[p]]
    f0 = (att == 0) & (lv > 0)
    if not f0.any():
        return
    fk, fl, fs = c.a_key[p][f0], lv[f0], c.d_store[c.first[p]][f0]
    o = np.lexsort((fs, fk))
    fk, fl, fs = fk[o], fl[o], fs[o]
    keep = np.r_[True, fk[1:] != fk[:-1]]
    fk, fl, fs = fk[keep], fl[keep], fs[keep]
    s_ts = _ints(sends_t.column("ts_ms"))[fk]
    s_born = _ints(sends_t.column("born_ms"))[fk]
    out.lo = {"key": c.key_dict.take(pa.array(fk)), "level": fl, "store_ms": fs, "send_ts_ms": s_ts,
              "born_ms": np.where(s_born == _NULL, s_ts, s_born)}
    if "broker" in deliv.column_names:  # each broker of a cluster orders its own levels
        out.lo["payload"] = deliv.column("broker").take(pa.array(c.first[p][f0][o][keep])).cast(pa.string())
