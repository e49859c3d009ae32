"""The columnar judge: one bucket judged from Arrow columns with numpy, the same judgements as the
event-at-a-time :func:`reports.judge_events.judge_bucket`, without a Python dict per event.

What the executors receive is an Arrow table of one (run, bucket of keys). Most keys of a healthy
run are *plain*: every delivered attempt was delivered once, inside the model's window, after the
LATER it follows, to the right topic with the right body, and the message was consumed as its plan
says. Plain keys are judged here with numpy over whole columns; every other key (a violation, a
duplicate, a DLQ entry, an UNKNOWN or FAILED send, a pending message, anything unusual) goes
through the event-at-a-time path of :mod:`reports.judge_events`, with its events as dicts. The split only
decides *who* judges a key; the rules and the expectations are the same (the model's rows, built
once per bucket), and ``suites/selftest/checker/test_columns.py`` holds both paths to the same
output.

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

from reference import faults as fault_kinds
from reference import expected as model
from reference.clock import BrokerClock
from reference.contract import EVENT_FIELDS, ContractError
from reports import offsets
from reports.judge_events import judge_keys
from reports.rows import (EXPECTED_COL, JSON_FIELDS, LATENESS_BIN_MS, LATENESS_RANGE_MS, LATENESS_TIME_BIN_MS, TOPIC_GROUP_KEY,
                          Judgements, error_row, output_layout, rows_table, timing_row)

_COL = EXPECTED_COL

_NULL = np.iinfo(np.int64).min  # an absent integer
SEND_FIELDS = ("type", "ts_ms", "key", "topic", "delay_level", "deliver_at_ms", "body_crc", "plan", "status", "born_ms",
               "broker")  # broker: reference.cluster
DELIVER_FIELDS = ("type", "ts_ms", "key", "group", "topic", "queue_id", "queue_offset", "queue_topic",
                  "commit_log_offset", "broker", "body_crc", "reconsume_times", "born_ms", "store_ms", "outcome")
DLQ_FIELDS = ("type", "ts_ms", "key", "group", "reconsume_times", "store_ms")
#: what the model reads of a fault: its generic fields, and every fault family's (reference.faults)
FAULT_FIELDS = ("type", "ts_ms", "action", "target", "name", "group", "key", *(n for n, _, _ in fault_kinds.event_fields()))
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
    for ts, group, key in zip(*(crashes.column(n).to_pylist() for n in ("ts_ms", "group", "key"))):
        out.append({"type": "fault", "ts_ms": ts, "action": "crash", "target": "consumer", "group": group, "key": key})
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
    laters = _dicts(deliv.filter(pc.equal(deliv.column("outcome"), "LATER")), DELIVER_FIELDS)
    tg = pa.Table.from_arrays([deliv.column("topic"), deliv.column("group")], names=["t", "g"]).group_by(["t", "g"]).aggregate([])
    pairs = set(zip(tg.column("t").to_pylist(), tg.column("g").to_pylist())) | set(markers or ())
    marker_events = [{"type": "deliver", "ts_ms": 0, "key": TOPIC_GROUP_KEY, "topic": t, "group": g, "outcome": "OK",
                      "reconsume_times": 0} for t, g in sorted(pairs)]
    t = out.timed("judging: columns to dicts", t)
    rows = model.build_expected_rows(run, sends + laters + unkeyed + marker_events)
    t = out.timed("model: expected table", t)
    sent_topics = sorted({s["topic"] for s in sends})
    out.emit("tg", {"pairs": sorted(pairs), "sent_topics": sent_topics})

    _count_reputs(out, unkeyed, rows, deliv)
    slow = _judge_plain(out, run, rows, sends_t, deliv, dlq_t, ended_ms, timeline_bin_ms)
    t = out.timed("judging: columnar", t)

    if slow:
        slow_keys = pa.array(sorted(slow), type=pa.string())
        events = [s for s in sends if s["key"] in slow]
        events += _dicts(deliv.filter(pc.is_in(deliv.column("key"), slow_keys)), DELIVER_FIELDS)
        events += _dicts(dlq_t.filter(pc.is_in(dlq_t.column("key"), slow_keys)), DLQ_FIELDS)
        events += unkeyed
        key_i = _COL["key"]
        judge_keys(out, run, [r for r in rows if r[key_i] in slow], events, ended_ms, timeline_bin_ms, timeline=False)
        t = out.timed("judging: event at a time", t)
    out.emit("c", dict(out.checked))
    out.emit_plot()
    judged = _as_table(out)
    out.timed("judging: rows out", t)
    return pa.concat_tables([judged, rows_table([timing_row(run_id, bucket, out.seconds)])])


def _on_true_clock(table: pa.Table, clock: BrokerClock) -> pa.Table:
    """``store_ms`` (the broker's clock) as true time, each no later than its event's ``ts_ms``."""
    if not table.num_rows:
        return table
    true = [clock.true_ms(s, t) if s is not None else None
            for s, t in zip(table.column("store_ms").to_pylist(), table.column("ts_ms").to_pylist())]
    i = table.column_names.index("store_ms")
    return table.set_column(i, "store_ms", pa.array(true, type=table.schema.field("store_ms").type))


def _count_reputs(out: Judgements, unkeyed: list[dict], rows: list[tuple], deliv: pa.Table) -> None:
    """OFFSET_PERSISTENCE's re-puts (kind ``rp``): the bucket's stored copies of each delay level in
    each window a start rule needs (:func:`reports.offsets.plan`); the driver sums the buckets."""
    windows = sorted({c.window for c in offsets.plan(unkeyed) if c.window is not None})
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
    counts = offsets.count_reputs(windows, found, lambda d: levels.get((d["key"], d["group"], d["reconsume_times"])) or 0)
    out.emit("rp", [[lo, hi, {str(lv): n for lv, n in c.items()}] for (lo, hi), c in counts.items()])


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
    """Judge the plain keys with whole columns; return the other keys (for the dict path). Also
    counts what spans every key of the bucket: stats and the timeline."""
    n = deliv.num_rows
    ts = _ints(deliv.column("ts_ms"))
    started_ms = int(run.get("started_ms") or 0)
    # timeline of every delivery (the dict path is told not to count it again)
    if n:
        (oc,), names = _encode(deliv.column("outcome"))
        names = names.to_pylist()
        bins = (ts - started_ms) // timeline_bin_ms
        uniq, counts = np.unique(bins * len(names) + oc, return_counts=True)
        for u, c in zip(uniq.tolist(), counts.tolist()):
            out.plot["timeline"][(u // len(names), names[u % len(names)])] += c

    # the model's rows as columns
    m = len(rows)

    by_column = list(zip(*rows)) if m else []  # one transposition, not one pass per column

    def column(name):
        return by_column[_COL[name]]

    def icol(name):
        return _ints(pa.array(column(name), type=pa.int64())) if m else np.zeros(0, dtype=np.int64)

    def scol(name):
        return pa.array(column(name), type=pa.string())

    # codes: keys (sends first, then deliveries and DLQ entries), groups, topics
    n_sends = sends_t.num_rows
    (_, dk, qk), key_dict = _encode(sends_t.column("key"), deliv.column("key"), dlq_t.column("key"))
    n_keys = len(key_dict)
    ek = pc.index_in(scol("key"), value_set=key_dict).to_numpy(zero_copy_only=False).astype(np.int64) if m else np.zeros(0, dtype=np.int64)
    e_group = pc.fill_null(scol("group"), "") if m else pa.array([], type=pa.string())
    (_, dg, eg), group_dict = _encode(pa.array([""]), deliv.column("group"), e_group)
    n_groups = len(group_dict)
    q_topic = pc.if_else(pc.is_null(deliv.column("queue_topic")), deliv.column("topic"), deliv.column("queue_topic")) if n else pa.array([], type=pa.string())
    (dt, qtc, e_topic), _ = _encode(deliv.column("topic"), q_topic, pc.fill_null(scol("topic"), "\u0000none") if m else pa.array([], type=pa.string()))
    rt = _ints(deliv.column("reconsume_times"))
    ea = icol("attempt")

    slow = np.zeros(n_keys, dtype=bool)  # per key code: judged by the dict path
    status = sends_t.column("status")
    slow[:n_sends] |= ~pc.equal(status, "SEND_OK").to_numpy(zero_copy_only=False)
    slow[n_sends:] = True  # delivered or in the DLQ, never sent (in this bucket)
    slow[qk] = True  # in the DLQ: the dict path rules on routing
    s_crc = _ints(sends_t.column("body_crc"))
    delivered_keys = np.zeros(n_keys, dtype=bool)
    delivered_keys[dk] = True
    stats_recovered = int((pc.equal(status, "UNKNOWN").to_numpy(zero_copy_only=False) & delivered_keys[:n_sends]).sum())
    if not (n and m):  # nothing delivered or nothing expected: nothing plain
        out.emit("s", {"messages": n_sends, "attempts": len(np.unique((dk * n_groups + dg) * (int(rt.max(initial=0)) + 1) + rt)),
                       "recovered": stats_recovered})
        return set(key_dict.to_pylist())
    e_level, e_lo, e_hi, e_llo, e_lhi = icol("level"), icol("earliest_ms"), icol("latest_ms"), icol("local_earliest_ms"), icol("local_latest_ms")
    e_anchor, e_delay = icol("anchor_ms"), icol("delay_ms")
    e_widened = pc.is_valid(scol("widened_by")).to_numpy(zero_copy_only=False)  # a broker outage widened the window
    e_plainmsg = pc.and_(pc.and_(pc.equal(scol("send_status"), "SEND_OK"), pc.equal(scol("final_state"), "CONSUMED")),
                         pc.is_null(scol("expected_rejection"))).to_numpy(zero_copy_only=False)
    slow[ek[~e_plainmsg]] = True

    span = int(max(rt.max(initial=0), ea.max(initial=0))) + 2
    bad_rt = rt < 0
    if bad_rt.any():
        slow[dk[bad_rt]] = True
    d_id = (dk * n_groups + dg) * span + np.clip(rt, 0, span - 1)
    e_id = (ek * n_groups + eg) * span + ea
    e_order = np.argsort(e_id, kind="stable")
    e_sorted = e_id[e_order]

    # deliveries grouped by attempt (key, group, reconsume_times), by time within an attempt
    order = np.lexsort((ts, d_id))
    sid = d_id[order]
    starts = np.flatnonzero(np.r_[True, sid[1:] != sid[:-1]])
    counts = np.diff(np.r_[starts, n])
    first = order[starts]  # the first delivery of each attempt
    a_id = sid[starts]
    a_key = dk[first]
    a_att = np.clip(rt[first], 0, span - 1)
    slow[a_key[counts > 1]] = True  # a duplicate: the model rules on it

    is_later = pc.equal(deliv.column("outcome"), "LATER").to_numpy(zero_copy_only=False)
    is_ok = pc.equal(deliv.column("outcome"), "OK").to_numpy(zero_copy_only=False)
    # the first LATER of each attempt (in time order), if any
    later_sorted = is_later[order]
    pos = np.where(later_sorted, np.arange(n), n)
    seg_first_later = np.minimum.reduceat(pos, starts)
    a_has_later = seg_first_later < np.r_[starts[1:], n]
    a_later = order[np.minimum(seg_first_later, n - 1)]

    # the model's row of each attempt
    at = np.searchsorted(e_sorted, a_id)
    x = e_order[np.minimum(at, m - 1)]
    found = (at < m) & (e_id[x] == a_id)
    slow[a_key[~found]] = True

    # the previous attempt (its first LATER anchors this one)
    p_at = np.searchsorted(a_id, a_id - 1)
    p_idx = np.minimum(p_at, len(a_id) - 1)
    p_found = (a_att >= 1) & (p_at < len(a_id)) & (a_id[p_idx] == a_id - 1)
    retry = a_att >= 1
    prev_ok = ~retry | (p_found & a_has_later[p_idx] & (ts[a_later[p_idx]] <= ts[first]))
    slow[a_key[~prev_ok]] = True

    # local re-consume of the stored copy the LATER answered (same commit log offset, else queue position)
    clo = _ints(deliv.column("commit_log_offset"))
    qid, qoff = _ints(deliv.column("queue_id")), _ints(deliv.column("queue_offset"))
    pl = a_later[p_idx]
    both_clo = (clo[pl] != _NULL) & (clo[first] != _NULL)
    same_copy = np.where(both_clo, clo[pl] == clo[first],
                         (qtc[pl] == qtc[first]) & (qid[pl] == qid[first]) & (qoff[pl] == qoff[first]))
    if "broker" in deliv.column_names and deliv.column("broker").null_count < n:  # a cluster: per broker
        (bc,), _ = _encode(pc.fill_null(deliv.column("broker"), ""))
        same_copy &= bc[pl] == bc[first]
    local = retry & p_found & a_has_later[p_idx] & same_copy
    store = _ints(deliv.column("store_ms"))
    observed = np.where(local, ts[first], store[first])
    lo = np.where(local, e_llo[x], e_lo[x])
    hi = np.where(local, e_lhi[x], e_hi[x])
    in_window = (lo != _NULL) & (hi != _NULL) & (observed >= lo) & (observed <= hi)
    slow[a_key[~in_window]] = True

    # integrity of the (single) delivery: topic as expected, body as sent
    d_crc = _ints(deliv.column("body_crc"))
    f_key = dk[first]
    sent_crc = np.where(f_key < n_sends, s_crc[np.minimum(f_key, n_sends - 1)], _NULL)  # rows exist: so do sends
    crc_ok = (d_crc[first] == _NULL) | (sent_crc == _NULL) | (d_crc[first] == sent_crc)
    intact = (dt[first] == e_topic[x]) & crc_ok
    slow[a_key[~intact]] = True

    # messages: each (key, group) the model expects must have been consumed (an OK delivery), no DLQ entry
    consumed = np.zeros(n_keys * n_groups, dtype=bool)
    consumed[(dk * n_groups + dg)[is_ok]] = True
    e_mg = ek * n_groups + eg
    slow[ek[~consumed[e_mg]]] = True

    # plain keys: count, plot, and hand LEVEL_ORDER its first attempts
    plain_a = ~slow[a_key]
    if plain_a.any():
        xa, lv = x[plain_a], e_level[x[plain_a]]
        k = int(plain_a.sum())
        for name in ("NOT_EARLY", "ON_TIME", "NO_DUPLICATE", "INTEGRITY"):
            out.checked[name] += k
        att = a_att[plain_a]
        out.checked["RETRY_SCHEDULE"] += int((att >= 1).sum())
        lo_r, hi_r = LATENESS_RANGE_MS
        late = np.clip(observed[plain_a] - lo[plain_a], lo_r, hi_r)
        late_bin = (late // LATENESS_BIN_MS) * LATENESS_BIN_MS
        _count_into(out.plot["lateness"], lv, late_bin)
        widened = e_widened[xa] & ~local[plain_a]
        _count_into(out.plot["lateness_widened"], lv[widened], late_bin[widened])
        over_time = np.stack([(observed[plain_a] - started_ms) // timeline_bin_ms,
                              (late // LATENESS_TIME_BIN_MS) * LATENESS_TIME_BIN_MS, widened.astype(np.int64)])
        combos, n_each = np.unique(over_time, axis=1, return_counts=True)
        for (b, late_ms, w), c in zip(combos.T.tolist(), n_each.tolist()):
            out.plot["lateness_time"][(b, late_ms, w)] += c
        r = att >= 1
        if r.any():
            gap = observed[plain_a][r] - e_anchor[xa][r] - e_delay[xa][r]
            _count_into(out.plot["gaps"], att[r], (np.clip(gap, lo_r, hi_r) // LATENESS_BIN_MS) * LATENESS_BIN_MS)
            for a, d in zip(att[r].tolist(), e_delay[xa][r].tolist()):
                out.plot["gap_expected"][a] = d
        # LEVEL_ORDER: each delayed message's first attempt, the earliest stored over its groups
        f0 = (att == 0) & (lv > 0)
        if f0.any():
            fk, fl, fs = a_key[plain_a][f0], lv[f0], store[first[plain_a]][f0]
            o = np.lexsort((fs, fk))
            fk, fl, fs = fk[o], fl[o], fs[o]
            keep = np.r_[True, fk[1:] != fk[:-1]]
            fk, fl, fs = fk[keep], fl[keep], fs[keep]
            s_ts = _ints(sends_t.column("ts_ms"))[fk]
            s_born = _ints(sends_t.column("born_ms"))[fk]
            out.lo = {"key": key_dict.take(pa.array(fk)), "level": fl, "store_ms": fs, "send_ts_ms": s_ts,
                      "born_ms": np.where(s_born == _NULL, s_ts, s_born)}
            if "broker" in deliv.column_names:  # each broker of a cluster orders its own levels
                out.lo["payload"] = deliv.column("broker").take(pa.array(first[plain_a][f0][o][keep])).cast(pa.string())
    plain_mg = ~slow[ek]
    out.checked["NO_LOSS"] += len(set((e_mg[plain_mg]).tolist()))
    out.emit("s", {"messages": n_sends, "attempts": len(a_id), "recovered": stats_recovered})
    return set(key_dict.take(pa.array(np.flatnonzero(slow))).to_pylist())


def _count_into(target: dict, groups: np.ndarray, values: np.ndarray) -> None:
    """target[group][value] += 1 for each pair."""
    if not len(groups):
        return
    low = int(values.min())
    width = int(values.max()) - low + 1
    uniq, counts = np.unique((groups - int(groups.min())) * width + (values - low), return_counts=True)
    base = int(groups.min())
    for u, c in zip(uniq.tolist(), counts.tolist()):
        target[base + u // width][low + u % width] += c
