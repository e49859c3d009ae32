"""The row protocol between the judging tasks and the driver: what crosses the Spark boundary.

Into a judging task: one (run, bucket of keys) as an Arrow table in :func:`transport_schema`
layout (``plan`` as comma-joined words, ``offsets`` as JSON: Spark's Arrow writer is slow on
arrays and maps). Out of it: rows of :data:`OUTPUT_SCHEMA`, whose ``kind`` says what they hold:

==========  =====================================================================================
``v``       a violation (payload: JSON of :data:`VIOLATION_COLUMNS`)
``c``       checked counts per invariant
``p``       a message still pending (undecided), with the reason
``s``       stats: messages, attempts, recovered
``n``       what the bucket observed: events (its own, not copies) and the last ``ts_ms``
``plot``    partial plot aggregates
``lo``      a delayed message's first attempt, for LEVEL_ORDER (typed columns; ``payload``: its broker name)
``lob``     a bucket's ``lo`` rows as one Arrow IPC blob (base64 in ``payload``): LEVEL_ORDER spans buckets
``lv``      a LEVEL_ORDER violation (``reports.level_order.judge_run``); ``lc`` its checked count
``qo``      a message's first delivery and end in an orderly group, for QUEUE_ORDER (``reports.queue_order``;
            carried in the ``lob`` blob too; judged into ``v`` and ``c`` rows of bucket -1)
``u``       the run's unkeyed events (faults, snapshots), bucket 0 only
``rp``      re-puts per delay level in the windows OFFSET_PERSISTENCE needs (each bucket its own)
``tg``      the (topic, group) pairs a bucket saw, and the topics it sent to
``f``       a file holding a row that breaks the contract (the driver rescans it)
``e``       the run could not be judged (payload: ``message`` and whether to ``rescan`` its files)
``t``       seconds the task spent in each of its phases (parse, model, judging; summed by the driver)
==========  =====================================================================================

This module imports nothing else of the checker but the events' Spark schema.
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict

import pyarrow as pa

from hourglass.reference.contract import EVENT_FIELDS
from hourglass.reference.expected import EXPECTED_COLUMNS
from hourglass.reports.inputs import event_schema

#: The row kinds that span buckets: carried to the per-run judge (``reports.level_order``) in the ``lob`` blob.
CROSS_BUCKET_KINDS: tuple[str, ...] = ("lo", "qo")
OUTPUT_SCHEMA = ("run_id string, bucket bigint, kind string, key string, level bigint, store_ms bigint, "
                 "send_ts_ms bigint, born_ms bigint, payload string")
#: (name, Spark SQL type) of every violation row (the ``violations`` Parquet), in order.
VIOLATION_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "string"), ("invariant", "string"), ("key", "string"), ("group", "string"), ("attempt", "bigint"),
    ("requested_level", "bigint"), ("level", "bigint"), ("clamped", "boolean"), ("anchor_ms", "bigint"),
    ("earliest_ms", "bigint"), ("latest_ms", "bigint"), ("observed_ms", "bigint"), ("widened_by", "string"),
    ("other_key", "string"), ("cause", "string"), ("detail", "string"),
)
#: a violation's field (beyond the columns, read by the driver): when the client logged the send-back
#: of that message failed — one of its own LATERs' (``reports.judge_events``, from
#: ``reference.network.send_back_failures``); only such a violation can be its re-sends' doing
#: (``reports.stalls.resent_reclassify``)
SEND_BACK_FAILED_FIELD = "send_back_failed_ms"
#: a RETRY_SCHEDULE violation of a POP copy revived after its OK: when the OK came, and when the
#: copy's checkpoint was due (its pop time + invisible time): ``reports.stalls.held_ack_reclassify``
ACKED_FIELD, REVIVE_FIELD = "acked_ms", "revive_ms"
#: a NO_LOSS violation of a message every attempt of which its plan owes was delivered (what is
#: missing is the broker's DLQ entry, or an OK never answered): no consumer's lag explains it
DELIVERED = "delivered"
#: Column index of each field of the model's expected rows (:data:`reference.expected.EXPECTED_COLUMNS`).
EXPECTED_COL = {name: i for i, name in enumerate(EXPECTED_COLUMNS)}
LATENESS_BIN_MS = 250
LATENESS_RANGE_MS = (-30_000, 120_000)
#: Lateness bin of the lateness-over-time plot: one point per time bin and lateness bin. 10 ms: an
#: attempt 92 ms early is drawn at -0.09 s, not at -1 s (whole seconds did), while a run of many
#: attempts still draws one point per distinct 10 ms of lateness in each time bin.
LATENESS_TIME_BIN_MS = 10
#: The key of the marker deliveries that tell the model which groups consume a topic.
TOPIC_GROUP_KEY = "\u0000topic-group"


def _judge_columns() -> set[str]:
    """Contract fields the model and the judging read, of every event type, except ``msg_id``
    (nobody reads it, and it is the widest column)."""
    return ({"type", "ts_ms"} | {f.name for t in EVENT_FIELDS for f in EVENT_FIELDS[t]}) - {"msg_id"}


JUDGE_COLUMNS = _judge_columns()
#: Contract fields that are JSON objects (``offsets``, ``max_offsets``): they travel as JSON text.
JSON_FIELDS: tuple[str, ...] = tuple(sorted({f.name for t in EVENT_FIELDS for f in EVENT_FIELDS[t] if f.kind == "dict"}))


def transport_schema() -> pa.Schema:
    """The columns the judges read, typed as Spark hands them over, plus ``bad_file`` and ``echo``."""
    kinds = {"LongType": pa.int64(), "BooleanType": pa.bool_()}
    fields = [(f.name, kinds.get(type(f.dataType).__name__, pa.string())) for f in event_schema().fields if f.name in JUDGE_COLUMNS]
    return pa.schema(fields + [("bad_file", pa.string()), ("echo", pa.bool_())])


def table_from_events(events: list[dict]) -> pa.Table:
    """Contract event dicts as one bucket's table, in the transport encoding (for the run-file
    fallbacks, and for tests and tools that judge without Spark)."""
    schema = transport_schema()
    rows = []
    for e in events:
        row = {n: e.get(n) for n in schema.names}
        if row.get("plan") is not None:
            row["plan"] = ",".join(row["plan"])
        for name in JSON_FIELDS:
            if row.get(name) is not None:
                row[name] = json.dumps(row[name])
        row["echo"] = False
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=schema)


def output_layout() -> tuple[list[str], list[pa.DataType]]:
    """Names and Arrow types of :data:`OUTPUT_SCHEMA`."""
    pairs = [p.strip().split(" ") for p in OUTPUT_SCHEMA.split(",")]
    kinds = {"string": pa.string(), "bigint": pa.int64()}
    return [n for n, _ in pairs], [kinds[t] for _, t in pairs]


def rows_table(rows: list[tuple]) -> pa.Table:
    """Row tuples of :data:`OUTPUT_SCHEMA` as an Arrow table."""
    names, types = output_layout()
    return pa.Table.from_arrays([pa.array(c, type=t) for c, t in zip(zip(*rows), types)] if rows
                                else [pa.array([], type=t) for t in types], names=names)


def timing_row(run_id: str, bucket: int, seconds: dict[str, float]) -> tuple:
    """A row of kind ``t``: seconds per phase of a task."""
    return (run_id, bucket, "t", None, None, None, None, None, json.dumps({k: round(v, 4) for k, v in seconds.items()}))


def error_row(run_id: str, bucket: int, message: str, rescan: bool, send_key: str | None = None) -> tuple:
    """A row of kind ``e``: the run could not be judged; ``rescan``: its files may name the line;
    ``send_key``: a key sent twice (the driver names both lines)."""
    return (run_id, bucket, "e", None, None, None, None, None,
            json.dumps({"message": message, "rescan": rescan, "send_key": send_key}))


class Judgements:
    """The judgements of one (run, bucket) as they are made: rows of :data:`OUTPUT_SCHEMA`, checked
    counts and plot aggregates (emitted at the end)."""

    def __init__(self, run_id: str, bucket: int = 0):
        self.run_id = run_id
        self.bucket = bucket
        self.rows: list[tuple] = []
        self.checked: Counter = Counter()
        # lateness: level -> lateness bin -> attempts; lateness_widened: the same for attempts whose
        # window a broker outage widened; lateness_time: (time bin of the attempt, lateness bin of
        # LATENESS_TIME_BIN_MS, widened 0/1) -> attempts; lateness_timer: a timer message's delay
        # (ms) -> lateness bin -> first attempts (not in lateness's level 0)
        self.plot = {"lateness": defaultdict(Counter), "lateness_widened": defaultdict(Counter), "lateness_time": Counter(),
                     "lateness_timer": defaultdict(Counter),
                     "gaps": defaultdict(Counter), "gap_expected": {}, "timeline": Counter(), "duplicates": Counter()}
        self.seconds: Counter = Counter()  # per phase of the task (kind ``t``)

    def timed(self, phase: str, since: float) -> float:
        """Add the time since ``since`` (``time.perf_counter()``) to ``phase``; return now."""
        now = time.perf_counter()
        self.seconds[phase] += now - since
        return now

    def violation(self, invariant: str, key, **fields) -> None:
        fields.update(invariant=invariant, key=key)
        self.rows.append((self.run_id, self.bucket, "v", key, None, None, None, None, json.dumps(fields)))

    def emit(self, kind: str, payload) -> None:
        self.rows.append((self.run_id, self.bucket, kind, None, None, None, None, None, json.dumps(payload)))

    def emit_plot(self) -> None:
        plot = self.plot
        self.emit("plot", {
            "lateness": {str(lv): dict(c) for lv, c in plot["lateness"].items()},
            "lateness_widened": {str(lv): dict(c) for lv, c in plot["lateness_widened"].items()},
            "lateness_timer": {str(d): dict(c) for d, c in plot["lateness_timer"].items()},
            "lateness_time": [[b, late, w, n] for (b, late, w), n in plot["lateness_time"].items()],
            "gaps": {str(a): dict(c) for a, c in plot["gaps"].items()},
            "gap_expected": {str(a): v for a, v in plot["gap_expected"].items()},
            "timeline": [[b, o, n] for (b, o), n in plot["timeline"].items()],
            "duplicates": dict(plot["duplicates"]),
        })
