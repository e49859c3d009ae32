"""The run-directory contract (v1): event types, their fields, and the invariant ids.

This module is the one place the contract of ``DESIGN.md`` is written down as code. The runner
writes events that pass :func:`validate_event`, the checker reads them with the same table, and
the verdict names invariants from :data:`INVARIANTS`. Anything may add fields; none may drop or
rename these.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from hourglass.reference import faults

CONTRACT_VERSION = 1

#: Stable invariant ids, in catalogue order (verdict.json, JUnit names, report).
INVARIANTS: tuple[str, ...] = (
    "NO_LOSS",
    "NOT_EARLY",
    "ON_TIME",
    "LEVEL_ORDER",
    "QUEUE_ORDER",
    "RETRY_SCHEDULE",
    "DLQ_ROUTING",
    "NO_DUPLICATE",
    "OFFSET_PERSISTENCE",
    "INTEGRITY",
)

#: Each invariant's one-line definition, the one owner of it: the HTML report shows it beside the
#: name, and ``docs/invariants.md`` (the catalogue, one section per invariant) holds each sentence
#: as written here (``suites/selftest/test_docs.py`` checks both).
INVARIANT_SUMMARY: dict[str, str] = {
    "NO_LOSS": "A message whose send returned SEND_OK reaches the end its plan says by the run's end: "
               "an OK delivery, or an entry in the group's DLQ.",
    "NOT_EARLY": "No attempt is stored (re-put for the consumer) before its window opens.",
    "ON_TIME": "Every attempt is stored by the time its window closes: its due time plus the slack, "
               "widened by the outages that overlap the wait.",
    "LEVEL_ORDER": "Within one delay level of one broker, a message born after another message's send "
                   "returned is not stored before it.",
    "QUEUE_ORDER": "In an orderly group, a message is first delivered only after every message ahead of "
                   "it in its queue was ended.",
    "RETRY_SCHEDULE": "Retry k of a message comes only after attempt k-1 was delivered and answered LATER, "
                      "and only where the consumer's plan leads to it.",
    "DLQ_ROUTING": "A message whose plan ends in the DLQ has exactly one DLQ entry and no attempt after its "
                   "last; no other message has one.",
    "NO_DUPLICATE": "An attempt is delivered once, unless a recorded fault or answer explains the repeat.",
    "OFFSET_PERSISTENCE": "The schedule offsets the broker persists cover the re-puts it had made, and a "
                          "start resumes from no less than what was persisted.",
    "INTEGRITY": "What is delivered was sent, was not refused, and has its topic and body; the broker "
                 "refuses exactly the sends a correct broker refuses.",
}

#: run.json ``system.adapter``: which adapter ran the system, one per package of ``adapters/``
#: (``adapters/rocketmq``: real brokers and cmd: systems; ``adapters/simulated``: the model as a
#: broker); each names itself with its constant, and baselines match on it
ROCKETMQ_ADAPTER, SIMULATED_ADAPTER = "rocketmq", "simulated"
ADAPTERS: tuple[str, ...] = (ROCKETMQ_ADAPTER, SIMULATED_ADAPTER)

#: What a consumer's delivery led to (a ``deliver`` event's ``outcome``).
ANSWERS: tuple[str, ...] = ("OK", "LATER", "CRASH")
#: What a consumer answers on one delivery of a message: an answer, or ``SLOW``: the listener holds
#: the message past its group's consumeTimeout, the client's clean-up sends it back at level 3 and
#: the listener answers OK after (reference.timeout); its ``deliver`` event records ``outcome``
#: LATER, ``next_level`` 3 and ``timed_out`` true.
PLAN_WORDS: tuple[str, ...] = ANSWERS + ("SLOW",)
#: A plan word beyond :data:`PLAN_WORDS`: ``LATER:<n>`` answers RECONSUME_LATER after
#: ConsumeConcurrentlyContext.setDelayLevelWhenNextConsume(n) — the delay level the consumer asks
#: its retry to wait (0: the broker's choice, as ``LATER``; below 0: the DLQ at once). The
#: ``deliver`` event of such an answer records ``outcome`` LATER and ``next_level`` n
#: (``reference.plans`` reads it).
CHOSEN_LEVEL_WORD = r"LATER:-?[0-9]{1,10}"
SEND_STATUSES: tuple[str, ...] = ("SEND_OK", "FAILED", "UNKNOWN")
#: ``action`` of the ``fault`` a client's own report writes: a send-back the official client logged
#: as failed (target ``consumer``; ``reference.network.send_back_failures``)
SEND_BACK_FAILED = "send_back_failed"
#: ``action`` of the ``fault`` a consumer writes when its client sends a ``LATER``'s send-back
#: (RequestCode.CONSUMER_SEND_MSG_BACK, seen by an RPCHook as the request leaves: target
#: ``consumer``, ``group``, ``key``, ``reconsume_times`` of the attempt sent back): the broker stores
#: the retry when the request arrives, so its delay counts from there, not from the answer
#: (``reference.expected``: what the client took to send it is the harness's, not the broker's)
SENT_BACK = "sent_back"
#: ``action`` of the ``fault`` the broker's own POP log writes (5.x ``pop.log``, ``enablePopLog``):
#: PopReviveService revived a popped copy of ``group`` as the copy at ``commit_log_offset``
#: (target ``broker``; ``reference.pop.popped_unseen``)
POP_REVIVED = "pop_revived"
#: what a ``fault`` event's ``action`` may be: the fault families' (``reference.faults``), and a
#: client's and the broker's own reports
FAULT_ACTIONS: tuple[str, ...] = (*faults.event_actions(), SEND_BACK_FAILED, SENT_BACK, POP_REVIVED)
#: the broker processes a system may run (``reference.cluster``: a second one in a cluster
#: topology); ``broker`` is the first, the only one of a single-broker system
BROKER_TARGETS: tuple[str, ...] = ("broker", "broker-2")
#: 5.x's proxy, the gRPC clients' endpoint (a process of its own in front of the brokers)
PROXY_TARGET = "proxy"
#: a run's consumers (all of its groups' processes; on a system other runs share, only its own)
CONSUMER_TARGET = "consumer"
FAULT_TARGETS: tuple[str, ...] = BROKER_TARGETS + ("namesrv", CONSUMER_TARGET, PROXY_TARGET)
EVENT_TYPES: tuple[str, ...] = ("send", "deliver", "dlq", "fault", "snapshot", "stall")
#: ``source`` of a ``stall`` event: what measured a period in which a subject could not run
#: (``reference.stalls`` says what each measures and what it explains)
STALL_SOURCES: tuple[str, ...] = ("psi-cpu", "psi-io", "psi-memory", "run-queue", "io-delay", "heartbeat", "broker-log")
#: ``moment`` of a ``snapshot`` event: when the harness took it — at the run's start, after a
#: start of the broker answered (``ready``), right before a broker ``kill``/``stop`` (written
#: before its ``fault`` event: the in-memory offsets at the stop), right after a ``kill``/``stop``
#: returned (the broker down: what the stop left in ``delayOffset.json``), at the run's end, and
#: after the run's consumers stopped (their graceful stop committed their offsets: ``consumeStats``),
#: and at each persist of the schedule offsets the harness saw (``flush``: ``delayOffset.json``
#: written anew, at the write's time)
CONSUMERS_STOPPED = "consumers_stopped"
FLUSH_MOMENT = "flush"
SNAPSHOT_MOMENTS: tuple[str, ...] = ("run_start", "after_ready", "before_stop", "after_stop", "run_end", CONSUMERS_STOPPED,
                                     FLUSH_MOMENT)
#: ``source`` of a ``snapshot``: the persisted file, and the broker's in-memory offsets (admin
#: ``brokerStatus``: ``scheduleMessageOffset_<level>`` = offset, schedule queue max offset)
PERSISTED_SOURCE = "delayOffset.json"
MEMORY_SOURCE = "brokerStatus"
#: ``source`` of a ``snapshot`` of one consumer group (``group``) at ``consumers_stopped``: per queue
#: of the group's topics (:func:`queue_key`), the group's committed offset (``offsets``) and the
#: broker's max offset (``max_offsets``), from admin ``consumeStats``. What lies between the two
#: is stored by the broker and never consumed by the group (``reports.stalls``).
CONSUME_STATS_SOURCE = "consumeStats"

#: What a system may be able to do beyond delay levels and consumer retry, the vocabulary of a
#: scenario's ``requires`` and of a system's capabilities: ``timer`` (5.x timer messages),
#: ``async_deliver`` (the schedule service's asynchronous delivery, MessageStoreConfig.
#: enableScheduleAsyncDeliver: 4.9.3+ and 5.x), ``pop`` (5.x POP consumption: the broker hands a
#: group's queues out by pop, reference.pop), ``grpc`` (5.x's gRPC proxy and its clients' SimpleConsumer
#: and PushConsumer, reference.pop)
TIMER, ASYNC_DELIVER, POP_CONSUMPTION, GRPC = "timer", "async_deliver", "pop", "grpc"
CAPABILITIES: tuple[str, ...] = (TIMER, ASYNC_DELIVER, POP_CONSUMPTION, GRPC)

RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"

#: User property that carries a message's consumer plan ("LATER,OK") to the consumer.
PLAN_PROPERTY = "HG_PLAN"
#: User property that carries the CRC32 of the body as the producer computed it.
BODY_CRC_PROPERTY = "HG_BODY_CRC"


#: ``cause`` of a ``fault`` event of target ``consumer`` (with its ``name`` and ``group``): started (or,
#: a member leaving, stopped) by the scenario (the group's membership changed, written by the runner); died on its own ``CRASH``
#: answer (the ``kill`` written by the dying consumer itself); its process exited for another reason
#: (the ``kill`` written by the runtime's exit watch when it noticed, with ``exit_code``). The
#: ``start`` of the replacement after a death carries that death's cause.
CONSUMER_STARTED_BY_SCENARIO = "scenario"
CONSUMER_DIED = "died"
CONSUMER_EXITED = "exited"


def consumer_fault(action: str, ts_ms: int, name: str, group: str, cause: str, **extra: Any) -> dict:
    """The ``fault`` event of one consumer's start or death (see :data:`CONSUMER_DIED`)."""
    return {"type": "fault", "ts_ms": ts_ms, "action": action, "target": CONSUMER_TARGET, "name": name, "group": group,
            "cause": cause, **extra}


def queue_key(topic: str, broker: str, queue_id: int) -> str:
    """One message queue as a snapshot's offsets key (topic names cannot hold ``/``)."""
    return f"{topic}/{broker}/{queue_id}"


def parse_queue_key(key: str) -> tuple[str, str, int]:
    topic, broker, queue_id = key.rsplit("/", 2)
    return topic, broker, int(queue_id)


def retry_topic(group: str) -> str:
    return RETRY_PREFIX + group


def dlq_topic(group: str) -> str:
    return DLQ_PREFIX + group


@dataclass(frozen=True)
class Field:
    name: str
    kind: str  # "str" | "int" | "bool" | "list[str]" | "dict"
    required: bool
    choices: tuple[str, ...] = ()
    pattern: str = ""  # a value not among ``choices`` that matches this (whole) regular expression is kept too
    pattern_words: str = ""  # what ``pattern`` means, as an error message says it

    def expected(self) -> str:
        """What a value must be, in words (the error of a value that is not)."""
        return "one of " + "/".join(self.choices) + (f" or {self.pattern_words or self.pattern}" if self.pattern else "")

    def kept(self, value: str) -> bool:
        return value in self.choices or bool(self.pattern and re.fullmatch(self.pattern, value))


def _f(name: str, kind: str, required: bool = True, choices: tuple[str, ...] = (), pattern: str = "",
       pattern_words: str = "") -> Field:
    return Field(name, kind, required, choices, pattern, pattern_words)


#: Fields of each event type beyond ``type`` and ``ts_ms`` (which every event has).
EVENT_FIELDS: dict[str, tuple[Field, ...]] = {
    "send": (
        _f("key", "str"),
        _f("topic", "str"),
        _f("delay_level", "int", False),
        _f("deliver_at_ms", "int", False),
        _f("body_crc", "int", False),
        _f("plan", "list[str]", False, PLAN_WORDS, CHOSEN_LEVEL_WORD, "LATER:<delay level>"),
        _f("status", "str", True, SEND_STATUSES),
        _f("msg_id", "str", False),
        _f("born_ms", "int", False),
        _f("broker", "str", False),  # the broker name the send stored it on (reference.cluster)
        _f("queue_id", "int", False),  # the queue the send stored it in (its topic's; a delayed message's re-put keeps it)
        _f("delay_time_sec", "int", False),  # 5.x timer by a delay the broker adds (reference.timer)
        _f("delay_time_ms", "int", False),
        _f("body_size", "int", False),  # bytes (reference.limits)
        _f("response_code", "int", False),  # a FAILED send: what the broker (or the client's check) answered
    ),
    "deliver": (
        _f("key", "str"),
        _f("group", "str"),
        _f("topic", "str"),
        _f("queue_id", "int"),
        _f("queue_offset", "int"),
        _f("queue_topic", "str", False),
        _f("commit_log_offset", "int", False),  # unique within its broker (see ``broker``)
        _f("broker", "str", False),  # the broker name of the queue it came from (reference.cluster)
        _f("body_crc", "int", False),
        _f("msg_id", "str"),
        _f("reconsume_times", "int"),
        _f("born_ms", "int"),
        _f("store_ms", "int"),
        _f("outcome", "str", True, ANSWERS),
        _f("next_level", "int", False),  # a LATER: the delay level the consumer asked for (CHOSEN_LEVEL_WORD)
        _f("batch_index", "int", False),  # a batch consumer: its place in the listener's batch (0-based)
        _f("ack_index", "int", False),  # ... and the batch's ack index the listener returned (-1: none consumed)
        _f("timed_out", "bool", False),  # a SLOW: held past consumeTimeout, sent back by the clean-up (reference.timeout)
        _f("pop_ms", "int", False),  # a POP delivery: when the broker popped it (its POP_CK's popTime, reference.pop)
        _f("ack_failed", "str", False),  # a gRPC SimpleConsumer's OK whose ack the proxy refused: its error
        _f("member", "str", False),  # which member of its group took it (reference.rundir.consumer_name)
    ),
    "dlq": (
        _f("key", "str"),
        _f("group", "str"),
        _f("msg_id", "str"),
        _f("reconsume_times", "int"),
        _f("store_ms", "int"),
    ),
    "fault": (
        _f("action", "str", True, FAULT_ACTIONS),
        _f("target", "str", True, FAULT_TARGETS),
        _f("name", "str", False),  # which consumer (target consumer)
        _f("group", "str", False),  # its group: a start changes the group's membership
        _f("cause", "str", False),  # why (a consumer's: CONSUMER_STARTED_BY_SCENARIO, CONSUMER_DIED, ...; setup)
        _f("key", "str", False),  # send_back_failed: the message's key, where the client's log line named it; sent_back: its key
        _f("reconsume_times", "int", False),  # sent_back: the attempt whose send-back it is
        _f("commit_log_offset", "int", False),  # pop_revived: the copy the revive put (a deliver event's)
        _f("step", "int", False),  # the scenario's fault step (index in its faults) this action belongs to
        _f("anchor", "str", False),  # an anchored step: what it was timed from ("reput level 3 #2 at ...")
        _f("anchor_event_ms", "int", False),  # an anchored step: when that anchor event happened
        _f("version", "str", False),  # a broker's ready in an across-store chain: the version now running
        *(_f(name, kind, False) for name, kind, _ in faults.event_fields()),  # each family's (reference.faults)
    ),
    "snapshot": (
        _f("source", "str"),
        _f("offsets", "dict"),
        _f("moment", "str", False, SNAPSHOT_MOMENTS),
        _f("broker", "str", False),  # brokerStatus: which broker (its address)
        _f("target", "str", False, BROKER_TARGETS),  # delayOffset.json, brokerStatus: which broker process (default broker)
        _f("max_offsets", "dict", False),  # brokerStatus: level -> max offset of its schedule queue
        _f("group", "str", False),  # consumeStats: which consumer group
    ),
    # reference.stalls: from from_ms to ts_ms, subject could not run for stalled_ms of it
    "stall": (
        _f("source", "str", True, STALL_SOURCES),
        _f("subject", "str"),  # host, harness, broker, broker-2, namesrv, consumer <name>
        _f("from_ms", "int"),
        _f("stalled_ms", "int"),
        _f("full_ms", "int", False),  # psi-*: every non-idle task stalled this long
        _f("detail", "str", False),  # what reported it (a broker log line, a thread's name)
        _f("path", "str", False),  # run-queue, io-delay: the message path whose worst thread it is (reference.stalls)
    ),
}

#: Fields of run.json (top level, then profile).
#: run.json's record of the Hourglass that made the run (absent in runs made before it was recorded)
VERSION_FIELD = "hourglass_version"
RUN_FIELDS: tuple[Field, ...] = (
    _f("run_id", "str"),
    _f("scenario", "str"),
    _f("system", "dict"),
    _f("profile", "dict"),
    _f("started_ms", "int"),
    _f("ended_ms", "int"),
    _f(VERSION_FIELD, "str", required=False),  # reports.version: which Hourglass made the run
)
PROFILE_FIELDS: tuple[Field, ...] = (
    _f("message_delay_level", "str"),
    _f("max_reconsume_times", "int"),
    _f("flush_delay_offset_interval_ms", "int"),
    _f("slack_ms", "int"),
)


class ContractError(ValueError):
    """An input that breaks the run-directory contract: says where, which field, what was wrong."""

    def __init__(self, where: str, field: str | None, expected: str, found: Any):
        self.where, self.field, self.expected, self.found = where, field, expected, found
        at = f"{where}: field '{field}'" if field else where
        super().__init__(f"{at}: expected {expected}, found {found!r}")


#: An ``int`` field is a signed 64-bit integer (Spark's LongType), narrower where RocketMQ means a
#: Java int; times and durations (``*_ms``) lie within :data:`MAX_MS` (the year 10000 in epoch
#: milliseconds), which leaves the model's sums of times and delays room inside 64 bits.
INT64 = (-2**63, 2**63 - 1)
MAX_MS = 253_402_300_800_000
INT32_FIELDS = ("queue_id", "reconsume_times", "delay_level", "step", "loss_percent", "rate_permille", "next_level",
                "batch_index", "ack_index")


#: ``*_ms`` fields that carry what a client sent as it sent it (a timer property: any Java long, the
#: edges included; reference.timer), not a time the harness observed
AS_SENT_FIELDS = ("deliver_at_ms", "delay_time_ms")


def int_range(name: str) -> tuple[int, int]:
    """The values an ``int`` field ``name`` may hold (inclusive)."""
    if name.endswith("_ms") and name not in AS_SENT_FIELDS:
        return -MAX_MS, MAX_MS
    return (-2**31, 2**31 - 1) if name in INT32_FIELDS else INT64


def _check_int(where: str, name: str, value: int) -> None:
    lo, hi = int_range(name)
    if not lo <= value <= hi:
        raise ContractError(where, name, f"an int in [{lo}, {hi}]", value)


class OptionError(ContractError):
    """A command-line option (or the environment variable behind it) that names nothing usable: a
    typo'd ``--system``, a malformed ``--namesrv``, an option the command would ignore. ``where`` is
    the option. A usage error (exit 64: nothing ran), where a file that does not check is a broken
    input (3)."""


def _type_ok(kind: str, value: Any) -> bool:
    if kind == "str":
        return isinstance(value, str)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "list[str]":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == "dict":
        return isinstance(value, dict)
    raise AssertionError(kind)


#: a field kind as the messages say it
_KIND_WORDS = {"str": "a string", "int": "an integer", "bool": "true or false", "list[str]": "a list of strings",
               "dict": "an object"}


def check_fields(obj: Mapping[str, Any], fields: tuple[Field, ...], where: str) -> None:
    for f in fields:
        if f.name not in obj or obj[f.name] is None:
            if f.required:
                raise ContractError(where, f.name, f"{_KIND_WORDS[f.kind]} (required)", "missing")
            continue
        v = obj[f.name]
        if not _type_ok(f.kind, v):
            raise ContractError(where, f.name, _KIND_WORDS[f.kind], v)
        if f.kind == "int":
            _check_int(where, f.name, v)
        if f.choices:
            vals = v if isinstance(v, list) else [v]
            for x in vals:
                if not f.kept(x):
                    raise ContractError(where, f.name, f.expected(), x)


def validate_event(obj: Any, where: str = "event") -> dict:
    """Return ``obj`` if it is a valid contract event, else raise :class:`ContractError`."""
    if not isinstance(obj, dict):
        raise ContractError(where, None, "a JSON object", obj)
    t = obj.get("type")
    if t not in EVENT_FIELDS:
        raise ContractError(where, "type", "one of " + "/".join(EVENT_TYPES), t)
    if not _type_ok("int", obj.get("ts_ms")):
        raise ContractError(where, "ts_ms", "an int (epoch milliseconds)", obj.get("ts_ms", "missing"))
    _check_int(where, "ts_ms", obj["ts_ms"])
    check_fields(obj, EVENT_FIELDS[t], where)
    return obj


def validate_run(obj: Any, where: str = "run.json") -> dict:
    """Return ``obj`` if it is a valid ``run.json``, its profile parsed as the model will read it
    (:func:`reference.profile.parse_profile`: every bound, named with ``where``), else raise."""
    from hourglass.reference.profile import parse_profile  # it builds on this module

    if not isinstance(obj, dict):
        raise ContractError(where, None, "a JSON object", obj)
    check_fields(obj, RUN_FIELDS, where)
    if obj["ended_ms"] and obj["ended_ms"] < obj["started_ms"]:  # 0: not ended (written so at the start)
        raise ContractError(where, "ended_ms", f"0 (the run never ended) or at least started_ms ({obj['started_ms']})", obj["ended_ms"])
    check_fields(obj["profile"], PROFILE_FIELDS, where + " profile")
    parse_profile(obj["profile"], where + " profile")
    return obj
