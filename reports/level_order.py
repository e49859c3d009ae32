"""LEVEL_ORDER across messages: one vectorised pass per (run, effective delay level).

Within one effective delay level (the model's clamped level, carried by the ``lo`` rows of
:mod:`reports.judge_events`), a message B born after A's send returned must not be stored before A. The
rows become a stream of "A returned" (at A's send ``ts_ms``) and "B born" events; sorted by time
(a birth before a return at the same millisecond: the rule wants A's return strictly before B's
birth), each B is compared with the latest store time among the A's returned before it. An
``UNKNOWN`` send never counts as returned (its row carries ``judge_events.UNKNOWN_NEVER_RETURNED``):
it may be stored after it timed out, so its store bounds nobody's.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

RESULT_SCHEMA = ("run_id string, kind string, key string, level bigint, born_ms bigint, store_ms bigint, "
                 "other_key string, other_send_ts_ms bigint, other_store_ms bigint, checked bigint")


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


def level_order(lo_rows: DataFrame) -> DataFrame:
    """``lo`` rows (run_id, key, level, store_ms, send_ts_ms, born_ms) -> rows of
    :data:`RESULT_SCHEMA`: kind ``v`` (a violation) and ``c`` (checked count of a level)."""

    def per_level(table):
        import numpy as np
        import pyarrow as pa

        run_id = table.column("run_id")[0].as_py()
        level = table.column("level")[0].as_py()
        keys = table.column("key").to_pylist()
        cols = [np.asarray(table.column(c).to_numpy(), dtype=np.int64) for c in ("store_ms", "send_ts_ms", "born_ms")]
        violations, checked = judge_level(keys, *cols)
        rows = [(run_id, "v", k, level, born, store, ok, ots, ostore, None) for k, born, store, ok, ots, ostore in violations]
        rows.append((run_id, "c", None, level, None, None, None, None, None, checked))
        names = [p.strip().split(" ")[0] for p in RESULT_SCHEMA.split(",")]
        return pa.Table.from_pylist([dict(zip(names, r)) for r in rows], schema=_arrow_schema())

    return lo_rows.select("run_id", "key", "level", "store_ms", "send_ts_ms", "born_ms").groupBy("run_id", "level").applyInArrow(
        per_level, RESULT_SCHEMA)


def _arrow_schema():
    import pyarrow as pa

    types = {"string": pa.string(), "bigint": pa.int64()}
    return pa.schema([(n, types[t]) for n, t in (p.strip().split(" ") for p in RESULT_SCHEMA.split(","))])
