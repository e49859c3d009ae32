"""LEVEL_ORDER across messages: one vectorised pass per (run, effective delay level).

Within one effective delay level (the model's clamped level, carried by the ``lo`` rows of
:mod:`reports.judge_events`) of one broker (the ``lo`` row's ``payload``: the broker name of its
first delivery; each broker of a cluster has its own schedule queues, ``reference.cluster``), a
message B born after A's send returned must not be stored before A. The
rows become a stream of "A returned" (at A's send ``ts_ms``) and "B born" events; sorted by time
(a birth before a return at the same millisecond: the rule wants A's return strictly before B's
birth), each B is compared with the latest store time among the A's returned before it. An
``UNKNOWN`` send never counts as returned (its row carries ``judge_events.UNKNOWN_NEVER_RETURNED``):
it may be stored after it timed out, so its store bounds nobody's.
"""

from __future__ import annotations

import json

import pyarrow as pa
from pyspark.sql import DataFrame

from hourglass.reports.rows import OUTPUT_SCHEMA, rows_table


def judge_level(keys, store_ms, send_ts_ms, born_ms):
    """(violations, checked) of one level: violations as (key, born, store, other_key,
    other_send_ts, other_store) tuples; checked = births that had at least one earlier return."""
    import numpy as np

    n = len(keys)
    t = np.concatenate([send_ts_ms, born_ms])
    kind = np.concatenate([np.ones(n, dtype=np.int8), np.zeros(n, dtype=np.int8)])  # 1 returned, 0 born
    idx = np.concatenate([np.arange(n), np.arange(n)])
    order = np.lexsort((kind, t))
    t, kind, idx = t[order], kind[order], idx[order]
    a_store = np.where(kind == 1, store_ms[idx], np.iinfo(np.int64).min)
    running = np.maximum.accumulate(a_store)
    returned_before = np.cumsum(kind)
    births = kind == 0
    judged = births & (returned_before > 0)
    holder = np.maximum.accumulate(np.where((kind == 1) & (a_store == running), np.arange(2 * n), 0))  # who holds the max
    bad = np.nonzero(judged & (running > store_ms[idx]))[0]
    violations = []
    for pos in bad:
        b, a = idx[pos], idx[holder[pos]]
        violations.append((keys[b], int(born_ms[b]), int(store_ms[b]), keys[a], int(send_ts_ms[a]), int(store_ms[a])))
    return violations, int(judged.sum())


def judge_run(judged: pa.Table) -> pa.Table:
    """LEVEL_ORDER of one run from its ``lo`` rows among ``judged`` (:data:`reports.rows.OUTPUT_SCHEMA`
    rows): those become ``lv`` (a violation) and ``lc`` (checked, per level) rows; the others stay.
    The run's other order across keys, QUEUE_ORDER (its ``qo`` rows), is judged here too
    (:func:`reports.queue_order.judge_run`): one per-run pass for both."""
    import numpy as np
    import pyarrow.compute as pc

    from hourglass.reports import queue_order

    judged = queue_order.judge_run(judged)
    is_lo = pc.equal(judged.column("kind"), "lo")
    lo = judged.filter(is_lo)
    if not lo.num_rows:
        return judged
    run_id = lo.column("run_id")[0].as_py()
    rows = []
    brokers = pc.fill_null(lo.column("payload"), "")
    for level, broker in sorted(set(zip(lo.column("level").to_pylist(), brokers.to_pylist()))):
        part = lo.filter(pc.and_(pc.equal(lo.column("level"), level), pc.equal(brokers, broker)))
        cols = [np.asarray(part.column(c).to_numpy(), dtype=np.int64) for c in ("store_ms", "send_ts_ms", "born_ms")]
        violations, checked = judge_level(part.column("key").to_pylist(), *cols)
        rows.append((run_id, 0, "lc", None, level, None, None, None, json.dumps(checked)))
        for key, born, store, other, other_ts, other_store in violations:
            rows.append((run_id, 0, "lv", key, level, store, None, born, json.dumps(
                {"other_key": other, "other_send_ts_ms": other_ts, "other_store_ms": other_store})))
    return pa.concat_tables([judged.filter(pc.invert(is_lo)), rows_table(rows)])


def level_order(lo_blobs: DataFrame, runs: int) -> DataFrame:
    """LEVEL_ORDER of runs judged in buckets: their ``lob`` rows (each bucket's ``lo`` rows, one Arrow
    IPC blob, base64 in ``payload``: no row per message through Spark) brought together by run,
    judged by :func:`judge_run`: rows of :data:`reports.rows.OUTPUT_SCHEMA` of kinds ``lv`` and ``lc``
    (and QUEUE_ORDER's ``v`` and ``c``)."""

    def per_run(batches):
        import base64
        from collections import defaultdict

        from hourglass.reports.buckets import from_ipc

        blobs = defaultdict(list)
        for batch in batches:
            for run_id, payload in zip(batch.column("run_id").to_pylist(), batch.column("payload").to_pylist()):
                blobs[run_id].append(base64.b64decode(payload))
        for run_id in sorted(blobs):
            yield from judge_run(from_ipc(blobs[run_id])).to_batches()

    return lo_blobs.repartition(max(1, runs), "run_id").mapInArrow(per_run, OUTPUT_SCHEMA)
