"""The checker's Spark jobs: events spread into (run, bucket of keys) and judged on the executors,
and runs judged whole from their files' bytes, one per task.

The rules live in ``reference``; this module only moves data to them and back. Events are grouped
by (run, bucket of keys) so one call of :func:`reference.expected.build_expected_rows` (in
:func:`reports.judge_columnar.judge_table`) sees every event of the keys it judges plus the run's faults,
snapshots and CRASH answers (copied to every bucket of the run: they are few). The model is per
message, so a bucket's answer is the run's answer for its keys.
"""

from __future__ import annotations

import os

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from reference import expected as model
from reference.contract import ContractError
from reports.inputs import _display
from reports.judge_columnar import judge_or_error
from reports.rows import JSON_FIELDS, JUDGE_COLUMNS, OUTPUT_SCHEMA
from reports.run_files import judge_runs
from reports.spark import is_local

#: Target number of events handed to one model call (bounds Python memory per group).
EVENTS_PER_BUCKET = 200_000
#: Runs judged whole read their local files in the task when the executors are the driver's (a
#: local session); else through Spark's binaryFile source, as a cluster's executors must.
READ_LOCAL_FILES_IN_TASKS = True
UNKEYED_TYPES = ("fault", "snapshot")
#: Prefix of a ``bad_file`` whose row was only held back (:func:`reports.inputs.read_events`'s
#: ``maybe_lone_surrogate``): the driver rescans the file and, if it is clean, judges again trusting it.
HELD = "?held:"

def validate_profiles(runs: list[dict]) -> dict[str, str]:
    """Run the model's profile parsing on the driver (a bad profile must not fail a Spark task):
    run_id -> error message for each run whose profile the model rejects."""
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


def spread_events(events: DataFrame, buckets: dict[str, int], only: set[tuple[str, int]] | None = None,
                  trusted_files: tuple[str, ...] = ()) -> DataFrame:
    """Each row with its ``bucket`` (see :func:`judged_table`), ``bad_file`` and ``echo``, in the
    transport encoding :func:`reports.judge_columnar.judge_table` reads: the run as its index in
    ``buckets`` (``run_ix``), ``plan`` as comma-joined words and ``offsets`` as JSON (Spark's Arrow
    writer is slow on arrays and maps even when they are null: they cost more than all other
    columns together)."""
    spark = events.sparkSession
    sizes = spark.createDataFrame([(rid, ix, n) for ix, (rid, n) in enumerate(buckets.items())],
                                  "run_id string, run_ix long, buckets long")
    held = F.col("maybe_lone_surrogate") & ~F.col("source_file").isin(*trusted_files) if trusted_files else F.col("maybe_lone_surrogate")
    ok = F.col("contract_ok") & ~F.col("suspect") & ~held
    own = F.pmod(F.xxhash64("key"), F.col("buckets"))
    everywhere = ok & (F.col("type").isin(*UNKEYED_TYPES) | ((F.col("type") == "deliver") & (F.col("outcome") == "CRASH")))
    encoded = {"plan": F.when(F.col("plan").isNotNull(), F.concat_ws(",", "plan")).alias("plan"),
               **{n: F.when(F.col(n).isNotNull(), F.to_json(n)).alias(n) for n in JSON_FIELDS}}
    cols = [encoded.get(c, F.col(c)) for c in events.columns if c in JUDGE_COLUMNS]
    spread = (
        events.join(F.broadcast(sizes), "run_id")
        .select(
            "run_ix", *cols,
            F.when(ok, F.lit(None).cast("string")).when(F.col("contract_ok") & ~F.col("suspect"), F.concat(F.lit(HELD), "source_file"))
            .otherwise(F.col("source_file")).alias("bad_file"),
            own.alias("own"),
            F.explode(F.when(everywhere, F.sequence(F.lit(0).cast("long"), F.col("buckets") - 1)).otherwise(F.array(own))).alias("bucket"),
        )
        .withColumn("echo", F.col("bucket") != F.col("own"))
        .drop("own")
    )
    if only is not None:
        ix = {rid: i for i, rid in enumerate(buckets)}
        wanted = spark.createDataFrame(sorted((ix[r], b) for r, b in only), "run_ix long, bucket long")
        spread = spread.join(F.broadcast(wanted), ["run_ix", "bucket"])
    return spread


def judged_table(events: DataFrame, runs: dict[str, dict], buckets: dict[str, int],
                 ended_ms: dict[str, int], timeline_bin_ms: dict[str, int],
                 markers: dict[str, list[tuple[str, str]]] | None = None,
                 only: set[tuple[str, int]] | None = None, trusted_files: tuple[str, ...] = ()) -> DataFrame:
    """The judgements (:data:`reports.rows.OUTPUT_SCHEMA` rows) of every run in ``events`` (all rows
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
    spark = events.sparkSession
    spread = spread_events(events, buckets, only, trusted_files)
    run_ids = list(buckets)
    timings = bool(os.environ.get("HOURGLASS_CHECK_TIMINGS"))

    def judge_partition(batches):
        """All (run, bucket) groups of one shuffle partition, judged one by one."""
        import sys
        import time

        import pyarrow as pa
        import pyarrow.compute as pc

        t_read = time.perf_counter()
        batches = [b for b in batches if b.num_rows]
        t_read = time.perf_counter() - t_read
        if not batches:
            return
        table = pa.Table.from_batches(batches)
        pairs = pa.Table.from_arrays([table.column("run_ix"), table.column("bucket")], names=["r", "b"]).group_by(["r", "b"]).aggregate([])
        for run_ix, bucket in zip(pairs.column("r").to_pylist(), pairs.column("b").to_pylist()):
            part = table.filter(pc.and_(pc.equal(table.column("run_ix"), run_ix), pc.equal(table.column("bucket"), bucket)))
            run_id = run_ids[run_ix]
            t0 = time.perf_counter()
            judged = judge_or_error(runs[run_id], bucket, part, ended_ms[run_id], timeline_bin_ms[run_id],
                                    (markers or {}).get(run_id))
            if timings:
                print(f"hourglass check: judged run {run_id} bucket {bucket}: {part.num_rows} rows in "
                      f"{time.perf_counter() - t0:.2f} s (partition read in {t_read:.2f} s)", file=sys.stderr, flush=True)
            yield from judged.to_batches()

    # a hash repartition (no sort, unlike groupBy().applyInArrow), about one bucket per partition
    partitions = max(spark.sparkContext.defaultParallelism, sum(buckets.values()))
    return spread.repartition(partitions, "run_ix", "bucket").mapInArrow(judge_partition, OUTPUT_SCHEMA)


def whole_runs_table(spark, runs: list, ended_ms: dict[str, int], timeline_bin_ms: dict[str, int]) -> DataFrame:
    """The judgements of ``runs`` (:class:`reports.inputs.RunInput`), each judged whole in one task
    from its files' bytes (:mod:`reports.run_files`): no parse in the JVM, no shuffle of events.

    In a local session, local files (``file:``) are read by the task itself: one task per run,
    nothing through the JVM. On a cluster, and for any other path, the files travel through
    Spark's ``binaryFile`` source (so any path Spark reads works: ``file:`` on a shared mount,
    ``hdfs:``, ``s3a:``), one run per task by a range split over the run indices."""
    run_jsons = [r.run for r in runs]
    uris = [r.json_files + r.parquet_files for r in runs]
    timings = bool(os.environ.get("HOURGLASS_CHECK_TIMINGS"))

    def judge(by_run, t0):
        import sys
        import time

        t1 = time.perf_counter()
        for judged in judge_runs(by_run, run_jsons, ended_ms, timeline_bin_ms):
            yield from judged.to_batches()
        if timings:
            print(f"hourglass check: judged runs {sorted(by_run)} whole in {time.perf_counter() - t1:.2f} s "
                  f"(files received in {t1 - t0:.2f} s)", file=sys.stderr, flush=True)

    if READ_LOCAL_FILES_IN_TASKS and is_local(spark.sparkContext.master) and all(u.startswith("file:") for us in uris for u in us):
        local = [[(u, _display(u)) for u in us] for us in uris]

        def judge_local(batches):
            import time

            t0 = time.perf_counter()
            by_run = {}
            for batch in batches:
                for ix in batch.column("id").to_pylist():
                    by_run[ix] = [(u, _read(path)) for u, path in local[ix]]
            yield from judge(by_run, t0)

        return spark.range(0, len(runs), 1, len(runs)).mapInArrow(judge_local, OUTPUT_SCHEMA)

    file_to_run = spark.createDataFrame([(f, ix) for ix, us in enumerate(uris) for f in us], "source_file string, run_ix long")
    files = (spark.read.format("binaryFile").load([f for us in uris for f in us])
             .select(F.col("_metadata.file_path").alias("source_file"), "content")
             .join(F.broadcast(file_to_run), "source_file"))

    def judge_partition(batches):
        import time
        from collections import defaultdict

        t0 = time.perf_counter()
        by_run: dict[int, list[tuple[str, bytes]]] = defaultdict(list)
        for batch in batches:
            for uri, ix, content in zip(batch.column("source_file").to_pylist(), batch.column("run_ix").to_pylist(),
                                        batch.column("content").to_pylist()):
                by_run[ix].append((uri, content))
        yield from judge(by_run, t0)

    return files.repartitionByRange(len(runs), "run_ix").mapInArrow(judge_partition, OUTPUT_SCHEMA)


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()
