"""The checker's Spark jobs: runs judged whole from their files' bytes, one per task; runs too big
for one task cut into (run, bucket of keys) and judged on the executors.

The rules live in ``reference``; this module only moves data to them and back. Both paths parse
the files in Python tasks (:func:`reports.run_files.parse_file`: Arrow's readers, the contract
checked as rows are parsed). A big run's parsed files are cut by bucket of keys into Arrow IPC blobs
(:mod:`reports.buckets`) that one shuffle brings to the task judging each (run, bucket), so one call
of :func:`reference.expected.build_expected_rows` (in :func:`reports.judge_columnar.judge_table`)
sees every event of the keys it judges plus the run's faults, snapshots and CRASH answers (copied
to every bucket of the run: they are few). The model is per message, so a bucket's answer is the
run's answer for its keys.
"""

from __future__ import annotations

import json

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from hourglass.reference import expected as model
from hourglass.reference.contract import ContractError
from hourglass.reference.profile import profile_from_run
from hourglass.reference.rundir import RUN_JSON
from hourglass.reports.inputs import _display
from hourglass.reports.judge_columnar import judge_or_error
from hourglass.reports.rows import CROSS_BUCKET_KINDS, OUTPUT_SCHEMA, error_row, rows_table, timing_row
from hourglass.reports.run_files import judge_runs, parse_file
from hourglass.reports.spark import is_local

#: Target number of events handed to one model call (bounds Python memory per group).
EVENTS_PER_BUCKET = 200_000
#: Tasks read their local files themselves when the executors are the driver's (a local session);
#: else through Spark's binaryFile source, as a cluster's executors must.
READ_LOCAL_FILES_IN_TASKS = True
BLOB_SCHEMA = "run_ix long, bucket long, blob binary"
#: The bucket numbers of a cutting task's timings (JSON) and of a file it could not parse (the
#: error's text) among the blobs.
TIMING, ERROR = -1, -2


def validate_profiles(runs: list) -> dict[str, str]:
    """Run the model's profile parsing on the driver (a bad profile must not fail a Spark task):
    run_id -> error message (naming the run's run.json) for each run
    (:class:`reports.inputs.RunInput`) whose profile the model rejects."""
    errors: dict[str, str] = {}
    for r in runs:
        run = r.run
        try:
            profile_from_run(run, f"{_display(r.run_dir)}/{RUN_JSON}")
            model.build_expected(run, [])
        except ContractError as e:
            errors[run["run_id"]] = str(e)
    return errors


def bucket_counts(events_per_run: dict[str, int]) -> dict[str, int]:
    """Buckets of keys per run: about :data:`EVENTS_PER_BUCKET` events each."""
    return {rid: max(1, n // EVENTS_PER_BUCKET + 1) for rid, n in events_per_run.items()}


def judged_table(spark, runs: list, buckets: dict[str, int], ended_ms: dict[str, int], timeline_bin_ms: dict[str, int],
                 markers: dict[str, list[tuple[str, str]]] | None = None,
                 only: set[tuple[str, int]] | None = None) -> DataFrame:
    """The judgements (:data:`reports.rows.OUTPUT_SCHEMA` rows) of ``runs`` (:class:`reports.inputs.RunInput`),
    each cut into ``buckets[run_id]`` buckets of keys (:func:`bucket_counts`): one model call and one
    judging per (run, bucket), in one pass over the files (no cache, no earlier pass).

    One task per file parses it and cuts it into blobs by bucket (:func:`reports.buckets.split`); a
    hash repartition by (run, bucket) brings each bucket's blobs to one task, which judges it. A
    file holding rows that break the contract is reported by the bucket's judge (kind ``f``: the
    driver re-reads it to name line and field).

    ``markers`` (run_id -> (topic, group) pairs of the whole run) and ``only`` (the (run, bucket)
    pairs to judge) are for the rare second pass: a bucket that held none of some group's
    deliveries of a topic it sent to is judged again knowing the run's pairs (kind ``tg`` rows say
    which pairs each bucket saw). A ContractError of the model comes back as a row of kind ``e``."""
    run_ids = [r.run_id for r in runs]
    files = [(ix, f) for ix, r in enumerate(runs) for f in r.json_files + r.parquet_files]
    counts = [buckets[rid] for rid in run_ids]
    wanted: dict[int, set[int]] | None = None
    if only is not None:
        wanted = {}
        for rid, b in only:
            wanted.setdefault(run_ids.index(rid), set()).add(b)
    judge = _bucket_judge(run_ids, {r.run_id: r.run for r in runs}, ended_ms, timeline_bin_ms, markers)
    # a hash repartition (no sort, unlike groupBy().applyInArrow), about one bucket per partition
    partitions = max(spark.sparkContext.defaultParallelism, sum(counts))
    cuts = _map_files(spark, [[f] for _, f in files], _file_cutter(files, counts, wanted), BLOB_SCHEMA)
    return cuts.repartition(partitions, "run_ix", "bucket").mapInArrow(judge, OUTPUT_SCHEMA)


def _file_cutter(files: list[tuple[int, str]], counts: list[int], wanted: dict[int, set[int]] | None):
    """The task function of :func:`judged_table`'s first stage: one file (``files[group_ix]``:
    (run index, uri)) parsed and cut into blobs by bucket (``counts[run index]`` buckets; ``wanted``:
    only these buckets of these runs)."""

    def cut(group_ix: int, contents: list[tuple[str, bytes]]):
        import time

        import pyarrow as pa

        from hourglass.reports.buckets import bad_file_marker, split, to_ipc

        run_ix = files[group_ix][0]
        if wanted is not None and run_ix not in wanted:
            return
        t0 = time.perf_counter()

        def row(bucket: int, blob: bytes):  # one blob per batch: each is let go once Spark has it
            return pa.RecordBatch.from_arrays([pa.array([run_ix], pa.int64()), pa.array([bucket], pa.int64()),
                                               pa.array([blob], pa.binary())], names=["run_ix", "bucket", "blob"])

        for uri, content in contents:
            try:
                table, broken = parse_file(uri, content)
                blobs = [(bucket, to_ipc(part)) for bucket, part in split(table, counts[run_ix], None if wanted is None else wanted[run_ix])]
            except Exception as e:  # noqa: BLE001 - one run's file never stops the others: its run is broken, its files rescanned
                yield row(ERROR, f"{type(e).__name__}: {e}".encode())
                continue
            del table
            for bucket, blob in blobs:
                yield row(bucket, blob)
            if broken and (wanted is None or 0 in wanted[run_ix]):
                yield row(0, to_ipc(bad_file_marker(uri)))
        # the task's seconds ride along as bucket TIMING
        yield row(TIMING, json.dumps({"read: parse files, cut into buckets": time.perf_counter() - t0}).encode())

    return cut


def _bucket_judge(run_ids: list[str], run_jsons: dict[str, dict], ended_ms: dict[str, int], timeline_bin_ms: dict[str, int],
                  markers: dict[str, list[tuple[str, str]]] | None):
    """The task function of :func:`judged_table`'s second stage: all (run, bucket) groups of one
    shuffle partition, judged one by one."""

    def judge_partition(batches):
        import time
        from collections import defaultdict

        t0 = time.perf_counter()
        blobs: dict[tuple[int, int], list[bytes]] = defaultdict(list)
        for batch in batches:
            for run_ix, bucket, blob in zip(batch.column("run_ix").to_pylist(), batch.column("bucket").to_pylist(),
                                            batch.column("blob").to_pylist()):
                blobs[(run_ix, bucket)].append(blob)
        seconds = {"read: blobs from the shuffle": time.perf_counter() - t0}
        for (run_ix, bucket), parts in sorted(blobs.items()):
            run_id = run_ids[run_ix]
            if bucket == TIMING:
                for p in parts:
                    for phase, s in json.loads(p).items():
                        seconds[phase] = seconds.get(phase, 0.0) + s
            elif bucket == ERROR:
                yield from rows_table([error_row(run_id, 0, p.decode(), rescan=True) for p in parts]).to_batches()
            else:
                yield from _judged_bucket(run_jsons[run_id], bucket, parts, ended_ms[run_id], timeline_bin_ms[run_id],
                                          (markers or {}).get(run_id), seconds)
        if blobs:
            yield from rows_table([timing_row(run_ids[min(blobs)[0]], 0, seconds)]).to_batches()

    return judge_partition


def _judged_bucket(run: dict, bucket: int, parts: list[bytes], ended_ms: int | None, timeline_bin_ms: int,
                   markers: list[tuple[str, str]] | None, seconds: dict[str, float]):
    """One (run, bucket) from its blobs, judged: record batches of its rows (its ``lo`` rows as one
    ``lob`` blob: LEVEL_ORDER spans buckets, :mod:`reports.level_order`)."""
    import base64
    import time

    import pyarrow as pa
    import pyarrow.compute as pc

    from hourglass.reports.buckets import from_ipc, to_ipc

    t1 = time.perf_counter()
    part = from_ipc(parts)
    seconds["read: blobs from the shuffle"] += time.perf_counter() - t1
    judged = judge_or_error(run, bucket, part, ended_ms, timeline_bin_ms, markers)
    is_lo = pc.is_in(judged.column("kind"), value_set=pa.array(CROSS_BUCKET_KINDS))
    yield from judged.filter(pc.invert(is_lo)).to_batches()
    lo = judged.filter(is_lo)
    if lo.num_rows:
        yield from rows_table([(run["run_id"], bucket, "lob", None, None, None, None, None,
                                base64.b64encode(to_ipc(lo)).decode())]).to_batches()


def _map_files(spark, groups: list[list[str]], fn, schema: str) -> DataFrame:
    """``fn(group_index, [(uri, bytes), ...])`` (a generator of Arrow record batches of ``schema``)
    run once per group of files, one group per task. In a local session, local files are read by
    the task itself (nothing through the JVM); on a cluster, and for any other path, the files
    travel through Spark's ``binaryFile`` source, so any path Spark reads works (``file:`` on a
    shared mount, ``hdfs:``, ``s3a:``)."""
    if READ_LOCAL_FILES_IN_TASKS and is_local(spark.sparkContext.master) and all(u.startswith("file:") for g in groups for u in g):
        local = [[(u, _display(u)) for u in g] for g in groups]

        def read_local(batches):
            for batch in batches:
                for ix in batch.column("id").to_pylist():
                    yield from fn(ix, [(u, _read(path)) for u, path in local[ix]])

        return spark.range(0, len(groups), 1, len(groups)).mapInArrow(read_local, schema)

    file_to_group = spark.createDataFrame([(f, ix) for ix, g in enumerate(groups) for f in g], "source_file string, group_ix long")
    files = (spark.read.format("binaryFile").load([f for g in groups for f in g])
             .select(F.col("_metadata.file_path").alias("source_file"), "content")
             .join(F.broadcast(file_to_group), "source_file"))

    def read_binary(batches):
        from collections import defaultdict

        by_group: dict[int, list[tuple[str, bytes]]] = defaultdict(list)
        for batch in batches:
            for uri, ix, content in zip(batch.column("source_file").to_pylist(), batch.column("group_ix").to_pylist(),
                                        batch.column("content").to_pylist()):
                by_group[ix].append((uri, content))
        for ix, contents in sorted(by_group.items()):
            yield from fn(ix, contents)

    if all(len(g) == 1 for g in groups):  # each file its own group: read where Spark reads it, no shuffle of bytes
        return files.mapInArrow(read_binary, schema)
    # a group's files to one task: a hash repartition (a range one would read every file once more to sample it)
    return files.repartition(len(groups), "group_ix").mapInArrow(read_binary, schema)


def whole_runs_table(spark, runs: list, ended_ms: dict[str, int], timeline_bin_ms: dict[str, int]) -> DataFrame:
    """The judgements of ``runs`` (:class:`reports.inputs.RunInput`), each judged whole in one task
    from its files' bytes (:mod:`reports.run_files`, read as :func:`_map_files` says): no shuffle of
    events."""
    run_jsons = [r.run for r in runs]

    def judge(run_ix: int, contents: list[tuple[str, bytes]]):
        for judged in judge_runs({run_ix: contents}, run_jsons, ended_ms, timeline_bin_ms):
            yield from judged.to_batches()

    return _map_files(spark, [r.json_files + r.parquet_files for r in runs], judge, OUTPUT_SCHEMA)


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()
