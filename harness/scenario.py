"""Scenarios as data: the workload, each message's consumer plan, and the fault schedule.

A scenario is a plain value: it is saved as ``RUN/scenario.json`` so a run can be replayed
(``python -m hourglass replay RUN``), and it is what hypothesis generates for nightly chaos runs.
Offsets (``at_ms``) are milliseconds after the scenario's start.

Scenario files are strict. :func:`scenario_from_json` (and :meth:`Scenario.load`) check a file
against the JSON Schema :func:`scenario_schema` (draft 2020-12), then cross-check what a schema
cannot say (every message's topic is consumed, unique keys and groups, the level table parses, a
fault's ``duration_ms`` fits its action); :func:`validate_scenario` does the same for a scenario
built in Python. Any failure is one :class:`ScenarioError` line naming the file, the field as a
path (``messages[3].delay``), what was expected and what was found.

The schema ships as ``harness/scenario.schema.json`` (:data:`SCHEMA_PATH`) for editors: point a
file's ``"$schema"`` at it, or your editor's JSON-schema setting. The file is generated from this
module's constants (``python -m hourglass.harness.scenario --schema > harness/scenario.schema.json``) and a
self-test keeps it identical to :func:`scenario_schema`.
"""

from __future__ import annotations

import json
import sys
from dataclasses import MISSING, asdict, dataclass, field, fields, make_dataclass, replace
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from hourglass.harness.schema_errors import Found, explain
from hourglass.reference.plans import CRASH, SLOW, later_level, parse_plan
from hourglass.reference.pop import (PROXY_CLUSTER, PROXY_LOCAL, PROXY_MODES, GRPC_INVISIBLE_RANGE_MS, GRPC_SIMPLE, POP, POP_INVISIBLE_RANGE_MS, POP_MODES,
                                     mode_invisible_ms, mode_max_times)
from hourglass.reference.timeout import MAX_CONSUME_TIMEOUT_MIN, MIN_CONSUME_TIMEOUT_MIN
from hourglass.reference.modes import BROADCASTING, CONCURRENTLY, GRPC_MODES, MODES, ORDERLY
from hourglass.reference.orderly import SUSPEND_RANGE_MS
from hourglass.reference.contract import (ASYNC_DELIVER, CAPABILITIES, GRPC, POP_CONSUMPTION, CHOSEN_LEVEL_WORD, FAULT_TARGETS, PLAN_WORDS, PROXY_TARGET,
                                          ContractError)
from hourglass.reference.levels import DEFAULT_MESSAGE_DELAY_LEVEL, parse_level_table
from hourglass.reference import faults as kinds
from hourglass.reference.disk import DISK_WARNING_PERCENT_RANGE
from hourglass.reference.faults.disk import FILL_TO
from hourglass.reference.cluster import CLUSTERS, SECOND_BROKER, SINGLE, broker_targets, is_broker
from hourglass.reference.reach import NAMES as REACH_NAMES, REACHES
from hourglass.reference.profile import (DEFAULT_FLUSH_DELAY_OFFSET_INTERVAL_MS, DEFAULT_MAX_RECONSUME_TIMES,
                               DEFAULT_SCHEDULE_ASYNC_DELIVER, DEFAULT_SLACK_MS, MAX_RECONSUME_TIMES,
                               TIMER_FLUSH_INTERVAL_MS, TIMER_MAX_DELAY_SEC, TIMER_PRECISION_MS, TIMER_ROLL_WINDOW_SLOT)
from hourglass.reference.limits import CLIENT_MAX_MESSAGE_SIZE, GROUP_MAX_LENGTH, MAX_MESSAGE_SIZE, RETRY_GROUP_MAX_LENGTH, TOPIC_MAX_LENGTH
from hourglass.reference.timer import JAVA_LONG, TimerRequest

DEFAULT_LEVELS = DEFAULT_MESSAGE_DELAY_LEVEL  # MessageStoreConfig.messageDelayLevel (reference.levels)
#: 18 levels like the default table (so retry levels 3..18 exist) with waits of seconds.
COMPRESSED_LEVELS = "1s 2s 3s 4s 5s 6s 7s 8s 9s 10s 1s 2s 3s 4s 5s 6s 7s 8s"

#: what a fault step's ``action`` may be, and those whose ``duration_ms`` means something (the others
#: must leave it 0): every fault family's (reference.faults)
FAULT_ACTIONS_SCHEDULABLE = kinds.schedulable()
FAULT_ACTIONS_WITH_DURATION = kinds.with_duration()
#: what a fault step may be timed from (``FaultStep.after``): the broker's last ``ready``, the
#: n-th re-put of a delay level seen by a consumer (its ``store_ms``), the n-th persist of the
#: schedule offsets (``delayOffset.json`` written), or the previous fault step itself (a step that
#: follows a stop or a pause, when the broker does nothing to be timed from)
ANCHOR_EVENTS = ("ready", "reput", "flush", "previous", "timer", "timer_flush")
#: capabilities a scenario may require of the system (``harness.runner.capabilities``)
KNOWN_REQUIREMENTS = CAPABILITIES  # reference.contract owns the vocabulary

#: the furthest moment a scenario may name or imply, after its start: the longest a broker holds a
#: message for later delivery (timerMaxDelaySec, 3 days). A send, a fault, a margin or a slack
#: further out only holds the batch (an at_ms of 2^40 hung it): every time field is bounded by it,
#: and so is when the model says each message is done and each fault step ends
MAX_SCENARIO_MS = TIMER_MAX_DELAY_SEC * 1000
#: the most consumer processes one group may run: a topic the harness creates has 4 queues on each
#: broker (two at most), and AllocateMessageQueueAveragely gives an instance beyond that no queue;
#: each is a JVM of its own (about 150 MB), so 10^6 of them would only exhaust the machine
MAX_CONSUMER_INSTANCES = 8
#: DefaultMQPushConsumer.checkConfig: consumeMessageBatchMaxSize in [1, 1024]
MAX_CONSUME_BATCH_SIZE = 1024
#: a timer message's deliver time (send time + deliver_after_ms) is a Java long of epoch ms
_DELIVER_AFTER_MAX = 2**62

#: the schema file shipped for editors; generated from :func:`scenario_schema`
SCHEMA_PATH = Path(__file__).with_name("scenario.schema.json")


class ScenarioError(ContractError):
    """A scenario that cannot be run: names the file, the field (a path such as
    ``messages[3].delay``), what was expected and what was found, in one line."""


@dataclass(frozen=True)
class Profile:
    """Broker and consumer settings of a scenario; lands in ``run.json``'s profile."""

    message_delay_level: str = COMPRESSED_LEVELS
    max_reconsume_times: int = DEFAULT_MAX_RECONSUME_TIMES
    flush_delay_offset_interval_ms: int = DEFAULT_FLUSH_DELAY_OFFSET_INTERVAL_MS
    slack_ms: int = DEFAULT_SLACK_MS
    cluster: str = SINGLE  # reference.cluster: the brokers the system runs (fault targets broker, broker-2)
    schedule_async_deliver: bool = DEFAULT_SCHEDULE_ASYNC_DELIVER  # enableScheduleAsyncDeliver (requires async_deliver)
    timer_precision_ms: int = TIMER_PRECISION_MS  # timerPrecisionMs (5.x)
    timer_max_delay_sec: int = TIMER_MAX_DELAY_SEC  # timerMaxDelaySec (5.x)
    max_message_size: int = MAX_MESSAGE_SIZE  # maxMessageSize (reference.limits)
    timer_flush_interval_ms: int = TIMER_FLUSH_INTERVAL_MS  # timerFlushIntervalMs (5.x)
    timer_roll_window_slot: int = TIMER_ROLL_WINDOW_SLOT  # timerRollWindowSlot (5.x)
    disk_warning_percent: int | None = None  # diskSpaceWarningLevelRatio (reference.disk; None: the harness's)
    proxy_mode: str = PROXY_CLUSTER  # how 5.x's proxy runs for the gRPC groups (reference.pop.PROXY_MODES)

    def to_run_profile(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Message:
    key: str
    topic: str
    at_ms: int = 0  # when to send, after the scenario start
    delay_level: int = 0
    deliver_after_ms: int | None = None  # 5.x timer message: deliver at send time + this
    body_size: int = 64
    plan: tuple[str, ...] = ()
    #: the other timer APIs (reference.timer): an absolute deliver time (TIMER_DELIVER_MS as given)
    #: and delays the broker adds to its own clock (TIMER_DELAY_SEC, TIMER_DELAY_MS)
    deliver_time_ms: int | None = None
    delay_time_sec: int | None = None
    delay_time_ms: int | None = None

    @property
    def is_timer(self) -> bool:
        return any(v is not None for v in (self.deliver_after_ms, self.deliver_time_ms, self.delay_time_sec, self.delay_time_ms))

    def timer_request(self, now_ms: int) -> TimerRequest:
        """The timer properties of its send at ``now_ms`` (deliver_after_ms counts from it; the
        absolute deliver_time_ms wins over it when both are given)."""
        at = self.deliver_time_ms if self.deliver_time_ms is not None else (
            None if self.deliver_after_ms is None else now_ms + self.deliver_after_ms)
        return TimerRequest(at, self.delay_time_sec, self.delay_time_ms)


@dataclass(frozen=True)
class ConsumerGroup:
    group: str
    topics: tuple[str, ...]
    instances: int = 1
    max_reconsume_times: int | None = None  # None: the profile's
    batch_size: int = 1  # consumeMessageBatchMaxSize: > 1 answers batches with an ack index (reference.plans)
    retry_max_times: int | None = None  # the broker's subscription group retryMaxTimes (None: its default)
    mode: str = CONCURRENTLY  # how the listener consumes (reference.orderly.MODES)
    suspend_ms: int | None = None  # orderly: suspendCurrentQueueTimeMillis (None: the client's 1000 ms)
    consume_timeout_min: int | None = None  # concurrently: consumeTimeout, minutes (None: the client's 15; reference.timeout)
    pop_invisible_ms: int | None = None  # pop: the consumer's popInvisibleTime (None: the client's 60 s; reference.pop)
    #: the group's last instance joins this long after the start (not started at setup) / leaves then
    #: (stopped gracefully): the group's membership changes and its queues move (a rebalance)
    join_at_ms: int | None = None
    leave_at_ms: int | None = None

    def pop_profile(self, release: tuple[int, ...]) -> dict:
        """run.json's ``pop_groups`` entry of this POP group (reference.profile) on a broker of
        ``release``: its mode, the invisible time its consumer asks for (effective) and, for a gRPC
        group, its maximum (the group's retryMaxTimes)."""
        entry = {"mode": self.mode, "invisible_ms": mode_invisible_ms(self.mode, self.pop_invisible_ms), "release": list(release)}
        if self.mode != POP:  # a remoting group's is its consumer's maxReconsumeTimes, in the profile already
            entry["max_times"] = mode_max_times(self.mode, 0, self.retry_max_times)
        return entry

    def membership(self) -> list[tuple[int, str]]:
        """When the group's last instance joins (``start``) and leaves (``stop``), in order."""
        steps = [(self.join_at_ms, "start")] if self.join_at_ms is not None else []
        steps += [(self.leave_at_ms, "stop")] if self.leave_at_ms is not None else []
        return sorted(steps)

    def starts_late(self) -> bool:
        """The group's last instance is not started at setup: it joins first."""
        steps = self.membership()
        return bool(steps) and steps[0][1] == "start"


@dataclass(frozen=True)
class FaultAnchor:
    """What a fault step is timed from, so a scenario reaches the same scheduler state however long
    the broker took to start or whatever runs beside it: the ``count``-th ``event`` (``ready`` of
    the broker, ``reput`` of delay level ``level`` — 0: any level —, ``flush`` of the schedule
    offsets; ``previous``: the previous fault step's firing itself, count 1) counted from when the
    previous fault step of the scenario fired (the first step: from the run's first send)."""

    event: str
    level: int = 0
    count: int = 1


#: One fault at ``at_ms`` on ``target``: ``action`` is a step of a fault family
#: (:mod:`reference.faults`: what each does, its duration rule, and the parameters it takes beyond
#: ``duration_ms`` — ``delay_ms``, ``loss_percent``, ``offset_ms``, ``rate_permille``..., each 0 for
#: the steps that do not take it). Without ``after``, ``at_ms`` counts from the scenario's start;
#: with it, from the anchor event.
FaultStep = make_dataclass("FaultStep", [
    ("at_ms", int), ("action", str), ("target", str, field(default="broker")),
    ("duration_ms", int, field(default=0)), ("after", "FaultAnchor | None", field(default=None)),
    *((p.name, int, field(default=0)) for p in kinds.params()),
], frozen=True)
FaultStep.__module__ = __name__
FaultStep.__doc__ = "One fault step of a scenario (harness.scenario: the fields; reference.faults: the actions)."


@dataclass(frozen=True)
class Scenario:
    name: str
    messages: tuple[Message, ...]
    consumers: tuple[ConsumerGroup, ...]
    faults: tuple[FaultStep, ...] = ()
    profile: Profile = field(default_factory=Profile)
    seed: int = 0
    description: str = ""
    drain_margin_ms: int = 3_000  # waited after the model says all is final (late duplicates)
    requires: tuple[str, ...] = ()  # e.g. ("timer",): capabilities the system must have
    reach: tuple[str, ...] = ()  # the states it exists to reach (reference.reach): not reached, broken

    def with_prefix(self, prefix: str) -> "Scenario":
        """Rename topics and groups so scenarios can share one broker without meeting. A name the
        prefix would take beyond its limit (a scenario at the limits) keeps its length: the prefix
        replaces its head."""
        def topic(t: str) -> str:
            return _prefixed(prefix, t, TOPIC_MAX_LENGTH)

        msgs = tuple(replace(m, topic=topic(m.topic), key=m.key) for m in self.messages)
        cons = tuple(replace(c, group=_prefixed(prefix, c.group, RETRY_GROUP_MAX_LENGTH),
                             topics=tuple(topic(t) for t in c.topics)) for c in self.consumers)
        return replace(self, messages=msgs, consumers=cons)

    def crashes(self, group: ConsumerGroup) -> bool:
        """Whether a plan CRASHes one of ``group``'s consumers (a message on a topic it consumes)."""
        return any(CRASH in m.plan for m in self.messages if m.topic in group.topics)

    # --- persistence -------------------------------------------------------------------
    def to_json(self) -> dict:
        return asdict(self)

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=1))

    @staticmethod
    def load(path: Path) -> "Scenario":
        try:
            raw = json.loads(Path(path).read_text(encoding="utf-8"))
        except UnicodeDecodeError as e:
            raise ScenarioError(str(path), None, "a UTF-8 scenario JSON file",
                                f"byte 0x{e.object[e.start]:02x} at offset {e.start}") from None
        except (OSError, json.JSONDecodeError) as e:
            raise ScenarioError(str(path), None, "a readable scenario JSON file", str(e)) from None
        return scenario_from_json(raw, str(path))


def _prefixed(prefix: str, name: str, limit: int) -> str:
    if len(prefix) + len(name) <= limit or len(name) <= len(prefix):
        return prefix + name
    return prefix + name[len(prefix):]


# --- the schema -----------------------------------------------------------------------------
#: Validators.checkTopic / checkGroup (client): these characters only
_NAME_PATTERN = "^[%|a-zA-Z0-9_-]+$"
#: Validators.TOPIC_MAX_LENGTH (reference.limits); a shared broker's prefix replaces the head of a
#: name at the limit (Scenario.with_prefix)
_TOPIC_MAX = TOPIC_MAX_LENGTH
#: DefaultMQProducer.maxMessageSize: the client refuses a larger body (reference.limits)
_BODY_MAX = CLIENT_MAX_MESSAGE_SIZE
_LONG = {"type": ["integer", "null"], "minimum": JAVA_LONG[0], "maximum": JAVA_LONG[1]}
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _default(cls: type, name: str) -> Any:
    """The dataclass default of ``cls.name`` as JSON (tuples as lists); ``MISSING`` when required
    or when the default is itself a dataclass (the profile: described by its own fields)."""
    f = cls.__dataclass_fields__[name]
    if f.default is not MISSING:
        value = f.default
    elif f.default_factory is not MISSING and not hasattr(f.default_factory, "__dataclass_fields__"):
        value = f.default_factory()
    else:
        return MISSING
    return list(value) if isinstance(value, tuple) else value


def _prop(cls: type, name: str, schema: dict, description: str) -> dict:
    out = {"description": description, **schema}
    default = _default(cls, name) if name in cls.__dataclass_fields__ else MISSING  # "$schema" is no field
    if default is not MISSING:
        out["default"] = default
    return out


def _object(cls: type, title: str, description: str, props: dict[str, tuple[dict, str]]) -> dict:
    required = [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING]  # type: ignore[misc]
    return {
        "title": title,
        "description": description,
        "type": "object",
        "properties": {n: _prop(cls, n, s, d) for n, (s, d) in props.items()},
        "required": required,
        "additionalProperties": False,
    }


_MS = {"type": "integer", "minimum": 0, "maximum": MAX_SCENARIO_MS}
_TOPIC = {"$ref": "#/$defs/topic"}


def scenario_schema() -> dict:
    """The JSON Schema (draft 2020-12) of a scenario file, built from this module's dataclasses and
    the vocabularies of :mod:`reference.contract`; ``harness/scenario.schema.json`` is its copy."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:hourglass:scenario:v1",
        **_object(Scenario, "Hourglass scenario",
                  "A workload, each message's consumer plan and a fault schedule, run against a broker "
                  "and judged against the RocketMQ delay/retry contract. Times are milliseconds.", {
                      "$schema": ({"type": "string"}, "The schema this file follows (for editors); ignored by the harness."),
                      "name": ({"type": "string", "minLength": 1}, "Names the scenario in run ids, reports and JUnit."),
                      "messages": ({"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/message"}},
                                   "The messages to send, each with its topic, delay and consumer plan."),
                      "consumers": ({"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/consumer"}},
                                    "The consumer groups; every message's topic needs one."),
                      "faults": ({"type": "array", "items": {"$ref": "#/$defs/fault"}},
                                 "The fault schedule: kills, restarts, pauses and outages at given offsets."),
                      "profile": ({"$ref": "#/$defs/profile"}, "Broker and consumer settings; they land in run.json."),
                      "seed": ({"type": "integer"}, "The seed the scenario was generated with (generated scenarios)."),
                      "description": ({"type": "string"}, "What the scenario shows; shown in reports."),
                      "drain_margin_ms": (_MS, "How long to wait after the model says every message is final "
                                              "(late duplicates still show up)."),
                      "requires": ({"type": "array", "uniqueItems": True, "items": {"enum": list(KNOWN_REQUIREMENTS)}},
                                   "Capabilities the system must have, else the scenario is skipped: "
                                   "timer = 5.x timer messages, async_deliver = the schedule service's "
                                   "asynchronous delivery (4.9.3+), pop = 5.x POP consumption, grpc = 5.x's gRPC "
                                   "proxy and clients."),
                      "reach": ({"type": "array", "uniqueItems": True, "items": {"enum": list(REACH_NAMES)}},
                                "The states the scenario exists to put the broker in, each proved from the run's "
                                "events; a run that did not reach one is broken (never a pass): "
                                + "; ".join(r.description for r in REACHES) + "."),
                  }),
        "$defs": {
            "topic": {"type": "string", "minLength": 1, "maxLength": _TOPIC_MAX, "pattern": _NAME_PATTERN,
                      "description": "A topic name (Validators.checkTopic: letters, digits, % | _ -); at most "
                                     f"{_TOPIC_MAX} characters (a shared broker's prefix replaces the head of a "
                                     "name at the limit)."},
            "message": _message_schema(),
            "consumer": _consumer_schema(),
            "fault": _fault_schema(),
            "anchor": _anchor_schema(),
            "profile": _profile_schema(),
        },
    }


def _message_schema() -> dict:
    return _object(Message, "Message", "One message: when it is sent, how it is delayed, and what the "
                                           "consumer answers to each delivery.", {
        "key": ({"type": "string", "minLength": 1}, "The message key; unique within the scenario."),
        "topic": (_TOPIC, "The topic it is sent to; a consumer group must subscribe to it."),
        "at_ms": (_MS, "When to send it, in milliseconds after the scenario starts."),
        "delay_level": ({"type": "integer", "minimum": _INT32_MIN, "maximum": _INT32_MAX},
                        "Delay level (1-based index into the profile's message_delay_level). 0 and below: "
                        "not delayed; above the table's maximum: clamped to the maximum "
                        "(CommitLog.asyncPutMessage)."),
        "deliver_after_ms": ({"type": ["integer", "null"], "minimum": -_DELIVER_AFTER_MAX,
                              "maximum": _DELIVER_AFTER_MAX},
                             "5.x timer message: deliver this long after the send (null: not a timer "
                             "message). In the past: delivered at once; beyond timerMaxDelaySec: refused. "
                             "A delay level above 0 wins. Needs requires: [\"timer\"]."),
        "deliver_time_ms": (_LONG, "5.x timer message: the absolute deliver time in epoch ms as the client "
                                   "sends it (TIMER_DELIVER_MS, a Java long; wins over deliver_after_ms)."),
        "delay_time_sec": (_LONG, "5.x timer message: a delay in seconds the broker adds to its clock "
                                  "(TIMER_DELAY_SEC, a Java long; wins over the others)."),
        "delay_time_ms": (_LONG, "5.x timer message: a delay in ms the broker adds to its clock "
                                 "(TIMER_DELAY_MS, a Java long; wins over the absolute time)."),
        "body_size": ({"type": "integer", "minimum": 0, "maximum": _BODY_MAX + 1},
                      "Body length in bytes (the client refuses an empty body and one above its 4 MiB: "
                      "a refused send, as the model expects)."),
        "plan": ({"type": "array", "items": {"anyOf": [{"enum": list(PLAN_WORDS)},
                                                       {"type": "string", "pattern": f"^{CHOSEN_LEVEL_WORD}$"}]}},
                 "What the consumer answers to each delivery, in order (OK, LATER = reconsume later, "
                 "CRASH = the consumer dies mid-consume, LATER:n = reconsume later at delay level n: "
                 "setDelayLevelWhenNextConsume, 0 the broker's choice, -1 the DLQ at once); after the list "
                 "ends it answers OK."),
    })


def _consumer_schema() -> dict:
    return _object(ConsumerGroup, "Consumer group", "A push-consumer group and the topics it subscribes to.", {
        "group": ({"type": "string", "minLength": 1, "maxLength": GROUP_MAX_LENGTH, "pattern": _NAME_PATTERN},
                  "The group name (Validators.checkGroup); unique within the scenario."),
        "topics": ({"type": "array", "minItems": 1, "uniqueItems": True, "items": _TOPIC},
                   "Topics it subscribes to; at least one must have messages sent to it."),
        "instances": ({"type": "integer", "minimum": 1, "maximum": MAX_CONSUMER_INSTANCES},
                      "How many consumer processes the group runs (each a JVM; more than a topic has "
                      "queues get none)."),
        "max_reconsume_times": ({"type": ["integer", "null"], "minimum": -1, "maximum": MAX_RECONSUME_TIMES},
                                "The consumer's maxReconsumeTimes (wins over the profile's; -1 means 16; a "
                                "Java int); null: the profile's."),
        "retry_max_times": ({"type": ["integer", "null"], "minimum": 0, "maximum": MAX_RECONSUME_TIMES},
                            "The broker's retryMaxTimes for the group (SubscriptionGroupConfig, set before the "
                            "consumers start; null: the broker's default 16). A client's maxReconsumeTimes in the "
                            "send-back header wins over it (AbstractSendMessageProcessor.consumerSendMsgBack)."),
        "batch_size": ({"type": "integer", "minimum": 1, "maximum": MAX_CONSUME_BATCH_SIZE},
                       "consumeMessageBatchMaxSize: the most messages the listener gets at once (from one "
                       "pull of one queue). Above 1 the consumer answers a batch with an ack index: it stops "
                       "at the first message its plan does not answer OK, and every message after it is sent "
                       "back without its plan being asked."),
        "mode": ({"enum": list(MODES)},
                 "How the listener consumes: concurrently (MessageListenerConcurrently: a LATER is sent back to "
                 "%RETRY%group) or orderly (MessageListenerOrderly: each queue in order, under its lock; a LATER "
                 "suspends the queue and the same message is consumed again with its reconsume count raised, "
                 "until maxReconsumeTimes sends it to the DLQ) or broadcasting (MessageModel.BROADCASTING: every "
                 "instance gets every message and keeps its own offsets; a LATER drops the message for that "
                 "instance: no retry) or pop (5.x: the broker hands the group's queues out by pop with an invisible "
                 "time; a LATER changes it to the POP level's time, LATER:n to level n's, a SLOW lets it run out, "
                 "and the broker revives the copy as the next attempt; needs requires ['pop']) or grpc-simple / "
                 "grpc-push (5.x's gRPC SimpleConsumer / PushConsumer through the proxy: a LATER does not ack / "
                 "answers FAILURE, the retry policy's backoff; maxAttempts = retry_max_times + 1, then the "
                 "proxy's DLQ; needs requires ['grpc'])."),
        "pop_invisible_ms": ({"type": ["integer", "null"], "minimum": POP_INVISIBLE_RANGE_MS[0],
                              "maximum": GRPC_INVISIBLE_RANGE_MS[1]},
                             "pop: the consumer's popInvisibleTime, how long a popped copy stays invisible unless "
                             "answered (DefaultMQPushConsumerImpl.popMessage uses 5000..300000); null: 60000. "
                             "grpc-simple: the SimpleConsumer's invisible duration (the proxy takes 10000..43200000); "
                             "null: 15000."),
        "suspend_ms": ({"type": ["integer", "null"], "minimum": SUSPEND_RANGE_MS[0], "maximum": SUSPEND_RANGE_MS[1]},
                       "orderly: suspendCurrentQueueTimeMillis, how long a failing queue waits before the message "
                       "is consumed again (ConsumeMessageOrderlyService clamps it to 10..30000); null: 1000."),
        "join_at_ms": ({"type": ["integer", "null"], "minimum": 0},
                       "The group's last instance joins this long after the scenario starts instead of at setup "
                       "(the group rebalances: queues move to it; an orderly one waits for their locks); null: at "
                       "setup. Needs instances >= 2; concurrently or orderly."),
        "leave_at_ms": ({"type": ["integer", "null"], "minimum": 0},
                        "The group's last instance stops gracefully this long after the scenario starts (it leaves: "
                        "its offsets persisted, an orderly one's queue locks released, the others take its queues); "
                        "with join_at_ms later, it joins again then. Needs instances >= 2; concurrently or orderly."),
        "consume_timeout_min": ({"type": ["integer", "null"], "minimum": MIN_CONSUME_TIMEOUT_MIN,
                                 "maximum": MAX_CONSUME_TIMEOUT_MIN},
                                "concurrently: consumeTimeout in minutes. The client's clean-up (every that long) sends "
                                "back at level 3 a message whose listener has held it longer (the SLOW plan word); "
                                "null: the client's 15. Required by a SLOW in a plan of a topic the group consumes."),
    })


def _fault_schema() -> dict:
    return _object(FaultStep, "Fault step", "One fault at an offset. "
                     + "; ".join(k.description for k in kinds.steps() if k.description) + ".", {
        "at_ms": (_MS, "When, in milliseconds after the scenario starts (with after: after the anchor event)."),
        "action": ({"enum": list(FAULT_ACTIONS_SCHEDULABLE)}, "What to do to the target."),
        "target": ({"enum": list(FAULT_TARGETS)}, "Which part of the system."),
        "duration_ms": (_MS, "How long the target stays down or paused: > 0 for outage and slow_start; used by "
                            + ", ".join(FAULT_ACTIONS_WITH_DURATION) + "; must be 0 for the others."),
        "after": ({"oneOf": [{"type": "null"}, {"$ref": "#/$defs/anchor"}]},
                  "Time this step from what the broker did, not from the scenario's start (null: from the start)."),
        **{p.name: ({"type": "integer", "minimum": p.low, "maximum": p.high}, p.description) for p in kinds.params()},
    })


def _anchor_schema() -> dict:
    return _object(FaultAnchor, "Fault anchor", "The broker event a fault step is timed from, counted from "
                                                  "when the previous fault step fired (the first: from the first "
                                                  "send).", {
        "event": ({"enum": list(ANCHOR_EVENTS)}, "ready = the broker answers again after a start; reput = a "
                                                  "delayed message of the level re-put (seen by a consumer, at "
                                                  "its store time); flush = delayOffset.json written; previous = "
                                                  "when the previous step fired (count 1: a step "
                                                  "after a stop or a pause)."),
        "level": ({"type": "integer", "minimum": 0}, "For reput: the delay level (0: any level)."),
        "count": ({"type": "integer", "minimum": 1}, "Which occurrence: 1 = the first."),
    })


def _profile_schema() -> dict:
    return _object(Profile, "Profile", "Broker and consumer settings of the scenario.", {
        "message_delay_level": ({"type": "string", "minLength": 1},
                                "The broker's messageDelayLevel: delays separated by single spaces, each an "
                                "integer and a unit s, m, h or d (ScheduleMessageService.parseDelayLevel)."),
        "max_reconsume_times": ({"type": "integer", "minimum": -1, "maximum": MAX_RECONSUME_TIMES},
                                "The group's retry limit before the DLQ (-1 means 16; a Java int)."),
        "flush_delay_offset_interval_ms": ({"type": "integer", "minimum": 1, "maximum": MAX_SCENARIO_MS},
                                           "How often the broker persists the schedule offsets "
                                           "(flushDelayOffsetInterval)."),
        "slack_ms": (_MS, "How late an attempt may come after its due time before it is a violation (ON_TIME)."),
        "cluster": ({"enum": list(CLUSTERS)},
                    "The brokers the system runs (reference.cluster): single (one broker, target broker), "
                    + ", ".join(f"{c} (broker-2 is {what})" for c, what in SECOND_BROKER.items())
                    + ". Fault steps reach the second broker with target broker-2."),
        "proxy_mode": ({"enum": list(PROXY_MODES)},
                       "How 5.x's proxy runs for the gRPC groups (ProxyStartup -pm): cluster (its own process in front of "
                       "the brokers, fault target proxy) or local (in the broker's process, which it starts: fault the "
                       "broker; a proxy fault step is refused)."),
        "schedule_async_deliver": ({"type": "boolean"},
                                   "The schedule service's asynchronous delivery (enableScheduleAsyncDeliver, 4.9.3+): "
                                   "due messages are re-put without waiting and the offset follows the puts in order. "
                                   "Needs requires: [\"async_deliver\"]."),
        "timer_precision_ms": ({"enum": [100, 200, 500, 1000]},
                               "The broker's timerPrecisionMs (5.x; TimerMessageStore takes no other value)."),
        "timer_max_delay_sec": ({"type": "integer", "minimum": 1, "maximum": TIMER_MAX_DELAY_SEC},
                                "The broker's timerMaxDelaySec (5.x): a timer message further ahead is refused."),
        "max_message_size": ({"type": "integer", "minimum": 1024, "maximum": MAX_MESSAGE_SIZE},
                             "The broker's maxMessageSize in bytes: a larger body is refused (MESSAGE_ILLEGAL)."),
        "timer_flush_interval_ms": ({"type": "integer", "minimum": 100, "maximum": 60_000},
                                    "The broker's timerFlushIntervalMs (5.x): how often the timer checkpoint is written."),
        "disk_warning_percent": ({"type": ["integer", "null"], "minimum": DISK_WARNING_PERCENT_RANGE[0],
                                  "maximum": DISK_WARNING_PERCENT_RANGE[1]},
                                 "The broker's diskSpaceWarningLevelRatio in percent (rocketmq.broker.diskSpaceWarning"
                                 "LevelRatio): above it the store refuses writes. null: the harness's (98; 5.x caps it at "
                                 "90). Needed by a disk_fill step, which fills the store above it."),
        "timer_roll_window_slot": ({"type": "integer", "minimum": 2, "maximum": TIMER_ROLL_WINDOW_SLOT},
                                   "The broker's timerRollWindowSlot (5.x): a timer further ahead than this many "
                                   "slots is rolled over until it is within them."),
    })


_VALIDATOR = Draft202012Validator(scenario_schema())


# --- validation -----------------------------------------------------------------------------
#: the timer fields of a message (the first: relative to the send)
_TIMER_FIELDS = ("deliver_after_ms", "deliver_time_ms", "delay_time_sec", "delay_time_ms")

def _cross_check(raw: dict, where: str) -> None:
    """What the schema cannot say; ``raw`` already follows the schema."""
    def fail(path: str, expected: str, found: Any) -> None:
        raise ScenarioError(where, path, expected, Found(found))

    table = raw.get("profile", {}).get("message_delay_level", _default(Profile, "message_delay_level"))
    try:
        parse_level_table(table, where, "profile.message_delay_level")
        why = None
    except ContractError as e:
        why = e.expected
    if why is not None:  # raised here, not in the except: the one line is the whole story
        fail("profile.message_delay_level", f"a delay table the broker accepts such as '1s 5s 10s' ({why})", table)
    for items, name in ((raw["messages"], "key"), (raw["consumers"], "group")):
        seen: dict[str, int] = {}
        for i, item in enumerate(items):
            if item[name] in seen:
                kind = "messages" if name == "key" else "consumers"
                fail(f"{kind}[{i}].{name}", f"a {name} unique in the scenario (also {kind}[{seen[item[name]]}].{name})", item[name])
            seen[item[name]] = i
    subscribed = {t: c["group"] for c in raw["consumers"] for t in c["topics"]}
    sent = {m["topic"] for m in raw["messages"]}
    requires = raw.get("requires", [])
    for i, m in enumerate(raw["messages"]):
        if m["topic"] not in subscribed:
            fail(f"messages[{i}].topic", f"a topic a consumer group subscribes to ({', '.join(sorted(subscribed))})", m["topic"])
        timer = [f for f in _TIMER_FIELDS if m.get(f) is not None]
        if timer and m.get("delay_level", 0) <= 0 and "timer" not in requires:
            fail("requires", f"a list with 'timer' (messages[{i}] is a timer message: {timer[0]})", requires)
        try:  # LATER:n takes a Java int (ConsumeConcurrentlyContext.setDelayLevelWhenNextConsume)
            parse_plan(m.get("plan", []), where, f"messages[{i}].plan")
            bad = None
        except ContractError as e:
            bad = e
        if bad is not None:  # raised here, not in the except: the one line is the whole story
            fail(bad.field, bad.expected, bad.found)
    if raw.get("profile", {}).get("schedule_async_deliver") and ASYNC_DELIVER not in requires:
        fail("requires", f"a list with '{ASYNC_DELIVER}' (profile.schedule_async_deliver is true)", requires)
    for mode, capability in ((POP, POP_CONSUMPTION), *((m, GRPC) for m in GRPC_MODES)):
        groups = [c["group"] for c in raw["consumers"] if c.get("mode") == mode]
        if groups and capability not in requires:
            fail("requires", f"a list with '{capability}' (group {groups[0]} consumes {mode})", requires)
    for i, c in enumerate(raw["consumers"]):
        # a group that no message reaches would only stand idle; most likely a misspelt topic
        if not sent & set(c["topics"]):
            fail(f"consumers[{i}].topics", f"at least one topic a message is sent to ({', '.join(sorted(sent))})", c["topics"])
        _check_mode(raw, i, fail)
    max_level = len(table.split(" "))
    for i in range(len(raw.get("faults", []))):
        _check_fault(raw["faults"], i, raw.get("profile", {}).get("cluster", SINGLE), max_level, fail)
        if raw["faults"][i].get("target") == PROXY_TARGET and raw.get("profile", {}).get("proxy_mode") == PROXY_LOCAL:
            fail(f"faults[{i}].target", "not proxy: with profile.proxy_mode local the proxy runs in the broker's process "
                 "(fault the broker)", PROXY_TARGET)
    warning = raw.get("profile", {}).get("disk_warning_percent")
    for i, f in enumerate(raw.get("faults", [])):  # reference.disk: a fill to a ratio must be above the broker's
        if f["action"] == FILL_TO and (warning is None or f.get("fill_percent", 0) <= warning):
            fail(f"faults[{i}].fill_percent", "a ratio above profile.disk_warning_percent (the broker's "
                 "diskSpaceWarningLevelRatio, which disk_fill needs set)" + (f", {warning}" if warning else ""),
                 f.get("fill_percent", 0))


def _check_mode(raw: dict, i: int, fail) -> None:
    """What a consumer group's mode allows (reference.orderly, reference.broadcast): an orderly
    listener answers one message at a time with SUCCESS or SUSPEND (no ack index, no delay level to
    ask for); a broadcasting one drops what it fails (no level either); a suspend time means
    nothing but to an orderly one."""
    c = raw["consumers"][i]
    mode = c.get("mode", CONCURRENTLY)
    if mode != ORDERLY and c.get("suspend_ms") is not None:
        fail(f"consumers[{i}].suspend_ms", "null unless mode is orderly (only an orderly consumer suspends a queue)",
             c["suspend_ms"])
    _check_popping(raw, i, fail)
    _check_slow(raw, i, fail)
    for when in ("join_at_ms", "leave_at_ms"):
        if c.get(when) is None:
            continue
        if mode == BROADCASTING:
            fail(f"consumers[{i}].{when}", "null for a broadcasting group (every instance owes every message)", c[when])
        if mode in POP_MODES:
            fail(f"consumers[{i}].{when}", f"null for a {mode} group (the broker hands out its queues: a member's coming "
                 "and going is not modelled)", c[when])
        if c.get("instances", 1) < 2:
            fail(f"consumers[{i}].instances", f"2 or more: {when} moves the group's last instance in or out (one "
                 "stays)", c.get("instances", 1))
    if c.get("join_at_ms") is not None and c.get("join_at_ms") == c.get("leave_at_ms"):
        fail(f"consumers[{i}].leave_at_ms", "a time other than join_at_ms", c["leave_at_ms"])
    if mode == CONCURRENTLY:
        return
    if c.get("batch_size", 1) != 1:
        fail(f"consumers[{i}].batch_size", f"1 for an {mode} group (its batches are not modelled)", c["batch_size"])
    topics = set(c["topics"])
    for j, m in enumerate(raw["messages"]):
        if m["topic"] in topics:
            for n, word in enumerate(m.get("plan", [])):
                if mode == POP and word.startswith("LATER:") and later_level(word) < 1:
                    fail(f"messages[{j}].plan[{n}]", f"OK, LATER, LATER:<n >= 1> or SLOW: {m['topic']} is consumed by "
                         f"pop by {c['group']} (a POP LATER asks for an index of popDelayLevel; a negative one fails "
                         "in the client)", word)
                elif mode == POP and word == CRASH:
                    fail(f"messages[{j}].plan[{n}]", f"OK, LATER, LATER:<n >= 1> or SLOW: {m['topic']} is consumed by "
                         f"pop by {c['group']} (a POP consumer that dies leaves every copy it holds to be revived, "
                         "seen or not; SLOW lets this copy's invisible time run out)", word)
                elif mode != POP and word.startswith("LATER:"):
                    fail(f"messages[{j}].plan[{n}]", f"OK, LATER or CRASH: {m['topic']} is consumed {mode} by "
                         f"{c['group']} (its LATER asks for no delay level)", word)


def _check_popping(raw: dict, i: int, fail) -> None:
    """What a POP group allows (reference.pop): an invisible time only where the mode has one to set,
    within what its client or the proxy takes; a gRPC group's answers are OK or LATER (a SimpleConsumer
    that does not ack, a PushConsumer's FAILURE), its maximum is the group's retryMaxTimes."""
    c = raw["consumers"][i]
    mode, invisible = c.get("mode", CONCURRENTLY), c.get("pop_invisible_ms")
    if invisible is not None:
        ranges = {POP: POP_INVISIBLE_RANGE_MS, GRPC_SIMPLE: GRPC_INVISIBLE_RANGE_MS}
        if mode not in ranges:
            fail(f"consumers[{i}].pop_invisible_ms", "null unless mode is pop or grpc-simple (a push consumer's invisible "
                 "time is the proxy's, renewed while it consumes)", invisible)
        elif not ranges[mode][0] <= invisible <= ranges[mode][1]:
            fail(f"consumers[{i}].pop_invisible_ms", f"{ranges[mode][0]}..{ranges[mode][1]} for a {mode} group", invisible)
    if mode not in GRPC_MODES:
        return
    if c.get("max_reconsume_times") is not None:
        fail(f"consumers[{i}].max_reconsume_times", f"null for a {mode} group (its maximum is the group's retryMaxTimes: "
             "set retry_max_times)", c["max_reconsume_times"])
    topics = set(c["topics"])
    for j, m in enumerate(raw["messages"]):
        if m["topic"] in topics:
            for n, word in enumerate(m.get("plan", [])):
                if word not in ("OK", "LATER"):
                    fail(f"messages[{j}].plan[{n}]", f"OK or LATER: {m['topic']} is consumed {mode} by {c['group']} (a "
                         "gRPC consumer acks or does not)", word)


def _check_slow(raw: dict, i: int, fail) -> None:
    """A ``SLOW`` (reference.timeout) is a concurrent listener held past its group's consumeTimeout:
    the group must consume concurrently, one message a call (the clean-up looks at a process queue's
    oldest message only: a held batch is not modelled), and set the timeout (the client's 15 minutes
    would hold a run for half an hour). ``consume_timeout_min`` means nothing to an orderly group
    (ProcessQueue.cleanExpiredMsg returns for it) or a broadcasting one (nothing it sends back is
    consumed again)."""
    c = raw["consumers"][i]
    mode = c.get("mode", CONCURRENTLY)
    if mode != CONCURRENTLY and c.get("consume_timeout_min") is not None:
        fail(f"consumers[{i}].consume_timeout_min", "null unless mode is concurrently (only its clean-up sends a held "
             "message back)", c["consume_timeout_min"])
    if mode == POP:  # reference.pop.pop_answer: held past the pop's invisible time, its answer dropped
        return
    topics = set(c["topics"])
    for j, m in enumerate(raw["messages"]):
        if m["topic"] not in topics or SLOW not in m.get("plan", []):
            continue
        n = m["plan"].index(SLOW)
        if mode != CONCURRENTLY:
            fail(f"messages[{j}].plan[{n}]", f"OK, LATER or CRASH: {m['topic']} is consumed {mode} by {c['group']} "
                 "(only a concurrent consumer's clean-up sends a held message back)", SLOW)
        if c.get("batch_size", 1) != 1:
            fail(f"consumers[{i}].batch_size", f"1: {m['topic']} has a SLOW in messages[{j}].plan (a held batch is "
                 "not modelled)", c["batch_size"])
        if c.get("consume_timeout_min") is None:
            fail(f"consumers[{i}].consume_timeout_min", f"the group's consumeTimeout in minutes: {m['topic']} has a "
                 f"SLOW in messages[{j}].plan", None)


def _check_fault(steps: list, i: int, cluster: str, max_level: int, fail) -> None:
    """What the schema cannot say of fault step ``i``: its anchor, its target, and its fault
    family's rules (reference.faults: duration, parameters, the family's own cross-check)."""
    f, where = steps[i], f"faults[{i}]"
    after = f.get("after") or {}
    if after.get("level", 0) and after["event"] != "reput":
        fail(f"{where}.after.level", f"0 or no such field ({after['event']} has no level)", after["level"])
    if after.get("event") == "previous" and after.get("count", 1) != 1:
        fail(f"{where}.after.count", "1 or no such field (previous fires once)", after["count"])
    if after.get("level", 0) > max_level:
        fail(f"{where}.after.level", f"a level of the profile's table (1..{max_level}, 0 = any)", after["level"])
    kind = kinds.step_kind(f["action"])
    duration = f.get("duration_ms", "missing")
    if kind.duration == kinds.REQUIRED and kind.check_duration is None and (duration == "missing" or duration <= 0):
        fail(f"{where}.duration_ms", f"how long the {f['action']} lasts, an integer > 0", duration)
    target = f.get("target", "broker")
    if target not in broker_targets(cluster) and is_broker(target):
        fail(f"{where}.target", f"a broker of the profile's cluster {cluster!r} ({', '.join(broker_targets(cluster))}; "
             f"{target} needs profile.cluster {' or '.join(SECOND_BROKER)})", target)
    if kind.broker_only and target != "broker":
        fail(f"{where}.target", f"broker ({f['action']} {kind.what})", target)
    for p in kinds.params():
        value = f.get(p.name, 0)
        if p.name in kind.params and value == 0:
            fail(f"{where}.{p.name}", p.needed, value)
        if p.name not in kind.params and value != 0:
            takers = [k.action for k in kinds.steps() if p.name in k.params]
            fail(f"{where}.{p.name}", f"0 or no such field (only {' or '.join(takers)} "
                                      f"{'takes' if len(takers) == 1 else 'take'} {p.noun})", value)
    why = kind.check_duration(kind, f) if kind.check_duration else None
    if why:
        fail(f"{where}.duration_ms", why, duration)
    family = kinds.family_of(f["action"])
    if family.check:
        family.check(steps, i, fail)
    if kind.duration == kinds.NONE and duration not in (0, "missing"):
        fail(f"{where}.duration_ms", f"0 or no such field ({f['action']} takes no duration; "
                                     f"use {'/'.join(FAULT_ACTIONS_WITH_DURATION)})", duration)


def validate_raw(raw: Any, where: str = "scenario") -> dict:
    """Return ``raw`` if it is a runnable scenario (schema, then cross-checks), else raise
    :class:`ScenarioError` naming ``where``, the field, what was expected and what was found."""
    error = best_match(_VALIDATOR.iter_errors(raw))
    if error is not None:
        path, expected, found = explain(error)
        raise ScenarioError(where, path, expected, found)
    _cross_check(raw, where)
    return raw


def validate_scenario(scenario: "Scenario", where: str | None = None) -> "Scenario":
    """Return ``scenario`` (built in Python) if it is runnable, checked as its JSON file would be."""
    try:
        raw = json.loads(json.dumps(scenario.to_json()))
    except (TypeError, ValueError) as e:
        raise ScenarioError(where or scenario.name, None, "a scenario of JSON values", str(e)) from None
    where = where or f"scenario {scenario.name!r}"
    validate_raw(raw, where)
    return _check_fault_schedule(_check_times(scenario, where), where)


def _check_times(sc: "Scenario", where: str) -> "Scenario":
    """Every moment ``sc`` implies lies within :data:`MAX_SCENARIO_MS` of its start: when the model
    says each message is done (its send, delay and retries on the profile's table) and when each
    fault step ends (an anchored one at :func:`harness.summary.fault_times_ms`'s pessimistic
    estimate), however its fields, each within bounds, add up."""
    from hourglass.harness.summary import broker_outages_ms, fault_times_ms, message_wait_ms

    table = parse_level_table(sc.profile.message_delay_level)
    outages = broker_outages_ms(sc, table)
    ends = [(f"messages[{i}]", "a message", message_wait_ms(sc, m, table, outages=outages)) for i, m in enumerate(sc.messages)]
    ends += [(f"faults[{i}]", "a fault step", fired + f.duration_ms) for i, (fired, f) in enumerate(fault_times_ms(sc, table))]
    for path, what, end_ms in ends:
        if end_ms > MAX_SCENARIO_MS:
            raise ScenarioError(where, path, f"{what} done within {MAX_SCENARIO_MS} ms of the start (timerMaxDelaySec: "
                                "its times, delays and retries on the profile's table added up)", Found(f"{end_ms} ms"))
    return sc


#: what each primitive needs its target to be, and leaves it (harness.faults.expand_step): a kill
#: or stop of a target already down, or a start of one that is up, is no action a broker can take
_NEEDS_LEAVES = {"kill": (True, False), "stop": (True, False), "start": (False, True), "start_paused": (False, True)}


def _check_fault_schedule(sc: "Scenario", where: str) -> "Scenario":
    """Every fault step is one its target can follow, in the order the steps fire: no kill or stop
    of a target already down, no start of one that is up. Checked up to the first step timed from
    a broker event (ready, reput, flush: when it fires, and so what comes before it, only the run
    knows), and every kill or stop is followed by a start (the catalogues never leave a target down;
    ``reference.windows``' "never ready again" outages are for runs whose start failed or was cut
    short)."""
    from hourglass.harness.faults import expand_step

    exact, timed = 0, []  # a step timed from a broker event fires at a moment only the run knows
    for i, f in enumerate(sc.faults):
        if f.after is not None and f.after.event != "previous":
            break
        fired = f.at_ms if f.after is None else exact + f.at_ms
        exact = fired
        timed += [(t.at_ms, i, n, t) for n, t in enumerate(expand_step(f, fired, i))]
    up: dict[str, bool] = {}
    for _, i, _, t in sorted(timed, key=lambda x: x[:3]):
        if t.action not in _NEEDS_LEAVES:
            continue
        needs_up, leaves_up = _NEEDS_LEAVES[t.action]
        if up.get(t.target, True) != needs_up:
            state = "up" if up.get(t.target, True) else "down (an earlier step stopped it, none started it since)"
            step = sc.faults[i]
            raise ScenarioError(where, f"faults[{i}].action", f"a step {step.target} can follow: it is {state} when "
                                f"this step {'starts' if leaves_up else 'stops'} it", step.action)
        up[t.target] = leaves_up
    # whatever the order, a target stopped more often than started ends the run down
    stopped: dict[str, int] = {}  # target -> its stops minus its starts
    last_stop: dict[str, int] = {}
    for i, f in enumerate(sc.faults):
        for t in expand_step(f, 0, i):
            if t.action in _NEEDS_LEAVES:
                starts = _NEEDS_LEAVES[t.action][1]
                stopped[t.target] = stopped.get(t.target, 0) + (-1 if starts else 1)
                if not starts:
                    last_stop[t.target] = i
    for target, n in stopped.items():
        if n > 0:
            i = last_stop[target]
            raise ScenarioError(where, f"faults[{i}].action", f"a step followed by a start of {target} before the run "
                                "ends (a target left down leaves nothing after it to judge)", sc.faults[i].action)
    return sc


def scenario_from_json(raw: Any, where: str = "scenario") -> Scenario:
    validate_raw(raw, where)
    return _check_fault_schedule(_check_times(_build(raw), where), where)


def _build(raw: dict) -> Scenario:
    prof = raw.get("profile", {})
    return Scenario(
        name=raw["name"],
        messages=tuple(
            Message(key=m["key"], topic=m["topic"], at_ms=int(m.get("at_ms", 0)), delay_level=int(m.get("delay_level", 0)),
                    deliver_after_ms=None if m.get("deliver_after_ms") is None else int(m["deliver_after_ms"]),
                    body_size=int(m.get("body_size", 64)), plan=tuple(m.get("plan", ())),
                    **{f: None if m.get(f) is None else int(m[f]) for f in _TIMER_FIELDS[1:]})
            for m in raw["messages"]
        ),
        consumers=tuple(
            ConsumerGroup(group=c["group"], topics=tuple(c["topics"]), instances=int(c.get("instances", 1)),
                          max_reconsume_times=None if c.get("max_reconsume_times") is None else int(c["max_reconsume_times"]),
                          batch_size=int(c.get("batch_size", 1)),
                          retry_max_times=None if c.get("retry_max_times") is None else int(c["retry_max_times"]),
                          mode=c.get("mode", CONCURRENTLY),
                          suspend_ms=None if c.get("suspend_ms") is None else int(c["suspend_ms"]),
                          consume_timeout_min=None if c.get("consume_timeout_min") is None else int(c["consume_timeout_min"]),
                          pop_invisible_ms=None if c.get("pop_invisible_ms") is None else int(c["pop_invisible_ms"]),
                          join_at_ms=None if c.get("join_at_ms") is None else int(c["join_at_ms"]),
                          leave_at_ms=None if c.get("leave_at_ms") is None else int(c["leave_at_ms"]))
            for c in raw["consumers"]
        ),
        faults=tuple(FaultStep(at_ms=int(f["at_ms"]), action=f["action"], target=f.get("target", "broker"),
                               duration_ms=int(f.get("duration_ms", 0)),
                               after=None if f.get("after") is None else FaultAnchor(**f["after"]),
                               **{p.name: int(f.get(p.name, 0)) for p in kinds.params()})
                     for f in raw.get("faults", [])),
        profile=Profile(**{k: (int(v) if k not in ("message_delay_level", "cluster", "schedule_async_deliver", "proxy_mode")
                               and v is not None else v) for k, v in prof.items()}),
        seed=int(raw.get("seed", 0)),
        description=raw.get("description", ""),
        drain_margin_ms=int(raw.get("drain_margin_ms", 3000)),
        requires=tuple(raw.get("requires", ())),
        reach=tuple(raw.get("reach", ())),
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m hourglass.harness.scenario --schema``: print the scenario JSON Schema (for editors);
    ``python -m hourglass.harness.scenario FILE...``: check scenario files, one line per bad file."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--schema"]:
        print(json.dumps(scenario_schema(), indent=2))
        return 0
    if not args or args[0].startswith("-"):
        print("usage: python -m hourglass.harness.scenario --schema | FILE...", file=sys.stderr)
        return 64
    bad = 0
    for name in args:
        try:
            Scenario.load(Path(name))
        except ContractError as e:
            print(e, file=sys.stderr)
            bad += 1
    return 3 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
