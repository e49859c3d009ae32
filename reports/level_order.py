"""LEVEL_ORDER across messages: a Spark window over each run's delayed first attempts.

Within one effective delay level (the model's clamped level, carried by the ``lo`` rows of
:mod:`reports.judge`), a message B born after A's send returned must not be stored before A. The
rows become a stream of "A returned" (at A's send ``ts_ms``) and "B born" events per (run, level);
each B sees the latest-stored A among those returned strictly before it was born.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F


def level_order(lo_rows: DataFrame) -> tuple[DataFrame, DataFrame]:
    """(violations, checked) from ``lo`` rows: run_id, key, level, store_ms, send_ts_ms, born_ms.
    Violations: run_id, key, level, born_ms, store_ms, other_key, other_send_ts_ms, other_store_ms."""
    returned = lo_rows.select("run_id", "level", "key", F.col("send_ts_ms").alias("t"), F.lit(1).alias("kind"), "store_ms")
    born = lo_rows.select("run_id", "level", "key", F.col("born_ms").alias("t"), F.lit(0).alias("kind"), "store_ms")
    w = Window.partitionBy("run_id", "level").orderBy("t", "kind").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    a = F.when(F.col("kind") == 1, F.struct("store_ms", "key", "t"))
    stream = returned.unionByName(born).select("*", F.max(a).over(w).alias("latest_a"), F.count(a).over(w).alias("a_before"))
    judged = stream.filter((F.col("kind") == 0) & (F.col("a_before") > 0))
    bad = judged.filter(F.col("latest_a.store_ms") > F.col("store_ms")).select(
        "run_id", "key", "level", F.col("t").alias("born_ms"), "store_ms", F.col("latest_a.key").alias("other_key"),
        F.col("latest_a.t").alias("other_send_ts_ms"), F.col("latest_a.store_ms").alias("other_store_ms"))
    checked = judged.groupBy("run_id").agg(F.count(F.lit(1)).alias("checked"))
    return bad, checked
