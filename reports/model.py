"""Where the checker calls the reference model: the expected table, built on the executors.

The rules live in ``reference``; this module only moves data to them and back. Events are grouped
by (run, bucket of keys) so one call of :func:`reference.expected.build_expected` sees every event
of the keys it judges plus the run's faults and snapshots (shipped to the executors in the closure:
they are few). The model is per message, so a bucket's answer is the run's answer for its keys.
"""

from __future__ import annotations

import dataclasses
import types
import typing

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from reference import expected as model

#: Target number of events handed to one model call (bounds Python memory per group).
EVENTS_PER_BUCKET = 200_000
KEYED_TYPES = ("send", "deliver", "dlq")
UNKEYED_TYPES = ("fault", "snapshot")

_SPARK_TYPE = {str: T.StringType(), int: T.LongType(), bool: T.BooleanType()}


def _spark_type(annotation) -> T.DataType:
    hint = eval(annotation, vars(model)) if isinstance(annotation, str) else annotation  # noqa: S307 - our own annotations
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    return _SPARK_TYPE[hint]


def expected_schema() -> T.StructType:
    """The Spark schema of :class:`reference.expected.ExpectedAttempt` rows."""
    return T.StructType([T.StructField(f.name, _spark_type(f.type), True) for f in dataclasses.fields(model.ExpectedAttempt)])


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


#: Marker of a row that carries the model's ContractError for a run instead of an expectation.
CONTRACT_ERROR_TOPIC = "\u0000contract-error"


def expected_table(events: DataFrame, runs: dict[str, dict], unkeyed: dict[str, list[dict]],
                   events_per_run: dict[str, int], topic_groups: dict[str, list[tuple[str, str]]]) -> DataFrame:
    """ExpectedAttempt rows of every message in ``events`` (contract-valid rows with ``run_id``).

    ``runs``: run_id -> run.json; ``unkeyed``: run_id -> the run's fault and snapshot events;
    ``events_per_run`` sizes the buckets; ``topic_groups``: run_id -> the (topic, group) pairs
    delivered in the whole run. A ContractError of the model comes back as one row whose topic is
    :data:`CONTRACT_ERROR_TOPIC` and whose ``widened_by`` holds the message."""
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
    schema = expected_schema()
    columns = model.EXPECTED_COLUMNS
    arrow_schema = _arrow_schema(schema)

    def build(table):
        import pyarrow as pa

        from reference.contract import ContractError

        data = table.to_pydict()
        run_id = data["run_id"][0]
        names = list(data)
        evs = [{n: v for n, v in zip(names, row) if v is not None} for row in zip(*data.values())]
        evs.extend(unkeyed.get(run_id, ()))
        evs.extend(_topic_group_markers(topic_groups.get(run_id, ())))
        try:
            rows = model.build_expected_rows(runs[run_id], evs)
        except ContractError as e:
            rows = [tuple(run_id if c == "run_id" else CONTRACT_ERROR_TOPIC if c == "topic" else str(e) if c == "widened_by" else None
                          for c in columns)]
        if not rows:
            return arrow_schema.empty_table()
        return pa.Table.from_arrays([pa.array(col, type=arrow_schema.field(i).type) for i, col in enumerate(zip(*rows))], schema=arrow_schema)

    cols = ["run_id", *[c for c in events.columns if c in _contract_columns()]]
    return keyed.select(*cols, "bucket").groupBy("run_id", "bucket").applyInArrow(build, schema)


def _topic_group_markers(pairs) -> list[dict]:
    """ADAPTER (checker side): ``build_expected_rows`` learns which groups consume a topic from the
    deliveries it is given; a bucket of keys may hold none of a topic's deliveries, so each bucket
    gets one harmless OK delivery per (topic, group) of the whole run under a key never sent."""
    return [{"type": "deliver", "ts_ms": 0, "key": "\u0000topic-group", "topic": t, "group": g, "outcome": "OK",
             "reconsume_times": 0, "queue_id": 0, "queue_offset": 0, "msg_id": "", "born_ms": 0, "store_ms": 0}
            for t, g in pairs]


def _contract_columns() -> set[str]:
    from reference.contract import EVENT_FIELDS

    return {"type", "ts_ms"} | {f.name for specs in EVENT_FIELDS.values() for f in specs}


def _arrow_schema(schema: T.StructType):
    import pyarrow as pa

    to_arrow = {T.StringType(): pa.string(), T.LongType(): pa.int64(), T.BooleanType(): pa.bool_()}
    return pa.schema([(f.name, to_arrow[f.dataType]) for f in schema.fields])


def unkeyed_to_dicts(rows) -> list[dict]:
    """Fault/snapshot Spark rows -> contract event dicts (what the model and the report take)."""
    from reference.contract import EVENT_FIELDS

    out = []
    for r in rows:
        d = r.asDict(recursive=True)
        names = ("type", "ts_ms") + tuple(f.name for f in EVENT_FIELDS[d["type"]])
        out.append({k: d[k] for k in names if d.get(k) is not None})
    return out


def rule_duplicates(run: dict, faults: list[dict], pairs: list[tuple[dict, dict]]) -> list[model.DuplicateRuling]:
    """NO_DUPLICATE rulings of the model, one per (first, second) delivery pair."""
    return [model.rule_duplicate(run, faults, first, second) for first, second in pairs]
