"""Where the checker calls the reference model: on the executors, one call per bucket of keys.

The rules live in ``reference``; this module only moves data to them and back. Events are grouped
by (run, bucket of keys) so one call of :func:`reference.expected.build_expected_rows` (in
:func:`reports.columns.judge_table`) sees every event of the keys it judges plus the run's faults,
snapshots and CRASH answers (copied to every bucket of the run: they are few). The model is per
message, so a bucket's answer is the run's answer for its keys.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from reference import expected as model

#: Target number of events handed to one model call (bounds Python memory per group).
EVENTS_PER_BUCKET = 200_000
KEYED_TYPES = ("send", "deliver", "dlq")
UNKEYED_TYPES = ("fault", "snapshot")

def validate_profiles(runs: list[dict]) -> dict[str, str]:
    """Run the model's profile parsing on the driver (a bad profile must not fail a Spark task):
    run_id -> error message for each run whose profile the model rejects."""
    from reference.contract import ContractError

    errors: dict[str, str] = {}
    for run in runs:
        try:
            model.build_expected(run, [])
        except ContractError as e:
            errors[run["run_id"]] = str(e)
    return errors


def bucket_counts(events_per_run: dict[str, int]) -> dict[str, int]:
    """Buckets of keys per run: about :data:`EVENTS_PER_BUCKET` events each."""
    return {rid: max(1, n // EVENTS_PER_BUCKET + 1) for rid, n in events_per_run.items()}


def judged_table(events: DataFrame, runs: dict[str, dict], buckets: dict[str, int],
                 ended_ms: dict[str, int], timeline_bin_ms: dict[str, int],
                 markers: dict[str, list[tuple[str, str]]] | None = None,
                 only: set[tuple[str, int]] | None = None) -> DataFrame:
    """The judgements (:data:`reports.judge.OUTPUT_SCHEMA` rows) of every run in ``events`` (all rows
    as read, with ``run_id``, ``source_file``, ``suspect`` and ``contract_ok``): one model call and
    one judging per (run, bucket of keys), in one pass over the events (no cache, no earlier pass).

    Each keyed event (send, deliver, dlq) goes to the bucket of its key; the run's faults and
    snapshots, and its CRASH answers (a consumer fault every bucket's duplicate rulings need), go to
    every bucket of the run; rows that break the contract only tell the judge their file (kind
    ``f``: the driver re-reads those files and names line and field). ``runs``: run_id -> run.json;
    ``buckets``: run_id -> number of buckets (:func:`bucket_counts`).

    ``markers`` (run_id -> (topic, group) pairs of the whole run) and ``only`` (the (run, bucket)
    pairs to judge) are for the rare second pass: a bucket that held none of some group's
    deliveries of a topic it sent to is judged again knowing the run's pairs (kind ``tg`` rows say
    which pairs each bucket saw). A ContractError of the model comes back as a row of kind ``e``."""
    from reports.columns import judge_table, output_layout
    from reports.judge import OUTPUT_SCHEMA

    spark = events.sparkSession
    sizes = spark.createDataFrame([(rid, n) for rid, n in buckets.items()], "run_id string, buckets long")
    ok = F.col("contract_ok") & ~F.col("suspect")
    own = F.pmod(F.xxhash64("key"), F.col("buckets"))
    everywhere = ok & (F.col("type").isin(*UNKEYED_TYPES) | ((F.col("type") == "deliver") & (F.col("outcome") == "CRASH")))
    cols = [c for c in events.columns if c in _JUDGE_COLUMNS]
    spread = (
        events.join(F.broadcast(sizes), "run_id")
        .select(
            "run_id", *cols,
            F.when(ok, F.lit(None).cast("string")).otherwise(F.col("source_file")).alias("bad_file"),
            own.alias("own"),
            F.explode(F.when(everywhere, F.sequence(F.lit(0).cast("long"), F.col("buckets") - 1)).otherwise(F.array(own))).alias("bucket"),
        )
        .withColumn("echo", F.col("bucket") != F.col("own"))
        .drop("own")
    )
    if only is not None:
        wanted = spark.createDataFrame(sorted(only), "run_id string, bucket long")
        spread = spread.join(F.broadcast(wanted), ["run_id", "bucket"])

    def judge_partition(batches):
        """All (run, bucket) groups of one shuffle partition, judged one by one."""
        import json

        import pyarrow as pa
        import pyarrow.compute as pc

        from reference.contract import ContractError

        batches = [b for b in batches if b.num_rows]
        if not batches:
            return
        table = pa.Table.from_batches(batches)
        pairs = pa.Table.from_arrays([table.column("run_id"), table.column("bucket")], names=["r", "b"]).group_by(["r", "b"]).aggregate([])
        for run_id, bucket in zip(pairs.column("r").to_pylist(), pairs.column("b").to_pylist()):
            part = table.filter(pc.and_(pc.equal(table.column("run_id"), run_id), pc.equal(table.column("bucket"), bucket)))
            try:
                judged = judge_table(runs[run_id], bucket, part, ended_ms[run_id], timeline_bin_ms[run_id],
                                     (markers or {}).get(run_id))
            except ContractError as e:
                names, types = output_layout()
                row = (run_id, bucket, "e", None, None, None, None, None, json.dumps(str(e)))
                judged = pa.Table.from_arrays([pa.array([v], type=t) for v, t in zip(row, types)], names=names)
            yield from judged.to_batches()

    # a hash repartition (no sort, unlike groupBy().applyInArrow), about one bucket per partition
    partitions = max(spark.sparkContext.defaultParallelism, sum(buckets.values()))
    return spread.repartition(partitions, "run_id", "bucket").mapInArrow(judge_partition, OUTPUT_SCHEMA)


def _judge_columns() -> set[str]:
    """Contract fields the model and the judging read, of every event type, except ``msg_id``
    (nobody reads it, and it is the widest column)."""
    from reference.contract import EVENT_FIELDS

    return ({"type", "ts_ms"} | {f.name for t in EVENT_FIELDS for f in EVENT_FIELDS[t]}) - {"msg_id"}


_JUDGE_COLUMNS = _judge_columns()
