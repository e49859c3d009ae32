"""Where the checker calls the reference model: on the executors, one call per bucket of keys.

The rules live in ``reference``; this module only moves data to them and back. Events are grouped
by (run, bucket of keys) so one call of :func:`reference.expected.build_expected_rows` (in
:func:`reports.judge.judge_bucket`) sees every event of the keys it judges plus the run's faults and
snapshots (shipped to the executors in the closure: they are few). The model is per message, so a
bucket's answer is the run's answer for its keys.
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


def judged_table(events: DataFrame, runs: dict[str, dict], unkeyed: dict[str, list[dict]],
                 events_per_run: dict[str, int], topic_groups: dict[str, list[tuple[str, str]]],
                 ended_ms: dict[str, int], timeline_bin_ms: dict[str, int]) -> DataFrame:
    """The judgements (:data:`reports.judge.OUTPUT_SCHEMA` rows) of every message in ``events``
    (contract-valid rows with ``run_id``): one model call and one judging per (run, bucket of keys).

    ``runs``: run_id -> run.json; ``unkeyed``: run_id -> the run's fault and snapshot events;
    ``events_per_run`` sizes the buckets; ``topic_groups``: run_id -> the (topic, group) pairs
    delivered in the whole run. A ContractError of the model comes back as a row of kind ``e``."""
    from reports.judge import OUTPUT_SCHEMA

    spark = events.sparkSession
    buckets = spark.createDataFrame(
        [(rid, max(1, n // EVENTS_PER_BUCKET + 1)) for rid, n in events_per_run.items()], "run_id string, buckets long"
    )
    keyed = (
        events.filter(F.col("type").isin(*KEYED_TYPES))
        .join(F.broadcast(buckets), "run_id")
        .withColumn("bucket", F.pmod(F.xxhash64("key"), F.col("buckets")))
        .drop("buckets")
    )

    def judge_partition(batches):
        """All (run, bucket) groups of one shuffle partition: gathered, then judged one by one."""
        import json
        from collections import defaultdict

        import pyarrow as pa

        from reference.contract import ContractError
        from reports.judge import judge_bucket

        groups: dict[tuple, list[dict]] = defaultdict(list)
        for batch in batches:
            data = batch.to_pydict()
            names = [n for n in data if n not in ("run_id", "bucket")]
            columns = [data[n] for n in names]
            for run_id, bucket, *row in zip(data["run_id"], data["bucket"], *columns):
                groups[(run_id, bucket)].append({n: v for n, v in zip(names, row) if v is not None})
        for (run_id, _), evs in groups.items():
            evs.extend(unkeyed.get(run_id, ()))
            evs.extend(_topic_group_markers(topic_groups.get(run_id, ())))
            try:
                rows = judge_bucket(runs[run_id], evs, ended_ms[run_id], timeline_bin_ms[run_id])
            except ContractError as e:
                rows = [(run_id, "e", None, None, None, None, None, json.dumps(str(e)))]
            cols = list(zip(*rows))
            yield pa.RecordBatch.from_arrays([pa.array(c, type=t) for c, t in zip(cols, _OUT_TYPES)], names=_OUT_NAMES)

    # a hash repartition (no sort, unlike groupBy().applyInArrow), about one bucket per partition;
    # only the columns the model and the judging read (no msg_id, no fault/snapshot fields)
    cols = ["run_id", *[c for c in events.columns if c in _KEYED_COLUMNS]]
    partitions = max(events.sparkSession.sparkContext.defaultParallelism, sum(n // EVENTS_PER_BUCKET + 1 for n in events_per_run.values()))
    return keyed.select(*cols, "bucket").repartition(partitions, "run_id", "bucket").mapInArrow(judge_partition, OUTPUT_SCHEMA)


def _out_layout():
    import pyarrow as pa

    from reports.judge import OUTPUT_SCHEMA

    pairs = [p.strip().split(" ") for p in OUTPUT_SCHEMA.split(",")]
    kinds = {"string": pa.string(), "bigint": pa.int64()}
    return [n for n, _ in pairs], [kinds[t] for _, t in pairs]


_OUT_NAMES, _OUT_TYPES = _out_layout()


def _topic_group_markers(pairs) -> list[dict]:
    """ADAPTER (checker side): ``build_expected_rows`` learns which groups consume a topic from the
    deliveries it is given; a bucket of keys may hold none of a topic's deliveries, so each bucket
    gets one harmless OK delivery per (topic, group) of the whole run under a key never sent."""
    from reports.judge import TOPIC_GROUP_KEY

    return [{"type": "deliver", "ts_ms": 0, "key": TOPIC_GROUP_KEY, "topic": t, "group": g, "outcome": "OK",
             "reconsume_times": 0, "queue_id": 0, "queue_offset": 0, "msg_id": "", "born_ms": 0, "store_ms": 0}
            for t, g in pairs]


def _keyed_columns() -> set[str]:
    """Contract fields of send/deliver/dlq events, except ``msg_id`` (neither the model nor the
    judging reads it, and it is the widest column)."""
    from reference.contract import EVENT_FIELDS

    return ({"type", "ts_ms"} | {f.name for t in KEYED_TYPES for f in EVENT_FIELDS[t]}) - {"msg_id"}


_KEYED_COLUMNS = _keyed_columns()


def unkeyed_to_dicts(rows) -> list[dict]:
    """Fault/snapshot Spark rows -> contract event dicts (what the model and the report take)."""
    from reference.contract import EVENT_FIELDS

    out = []
    for r in rows:
        d = r.asDict(recursive=True)
        names = ("type", "ts_ms") + tuple(f.name for f in EVENT_FIELDS[d["type"]])
        out.append({k: d[k] for k in names if d.get(k) is not None})
    return out
