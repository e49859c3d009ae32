"""The broker profile a run was made against: ``run.json``'s ``profile``, parsed and checked.

Required fields are those of :data:`reference.contract.PROFILE_FIELDS`; the optional ones carry
the broker's and client's constants and default to them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from hourglass.reference.contract import ContractError
from hourglass.reference.limits import MAX_MESSAGE_SIZE
from hourglass.reference.levels import DEFAULT_LEVEL_TABLE, LevelTable, parse_level_table
from hourglass.reference.modes import unit_group
from hourglass.reference.orderly import SUSPEND_RANGE_MS
from hourglass.reference.pop import (PROXY_CLUSTER, PROXY_MODES, DEFAULT_RETRY_MAX_TIMES, GRPC_INVISIBLE_RANGE_MS, GRPC_PUSH, GRPC_SIMPLE, POP,
                                     POP_INVISIBLE_RANGE_MS, POP_MODES, PopGroup)
from hourglass.reference.timeout import MAX_CONSUME_TIMEOUT_MIN, MIN_CONSUME_TIMEOUT_MIN

#: DefaultMQPushConsumerImpl.getMaxReconsumeTimes: -1 (the consumer's default) means 16.
DEFAULT_MAX_RECONSUME_TIMES = 16
#: DefaultMQPushConsumer.maxReconsumeTimes and the send-back header's maxReconsumeTimes
#: (ConsumerSendMsgBackRequestHeader) are Java ints: no larger limit means anything to a broker.
#: The model never allocates per possible attempt, only per attempt a plan asks for.
MAX_RECONSUME_TIMES = 2**31 - 1
#: MessageStoreConfig.flushDelayOffsetInterval: how often the schedule offsets are persisted.
DEFAULT_FLUSH_DELAY_OFFSET_INTERVAL_MS = 10_000
#: How late an attempt may come after its due time before it is a violation (ON_TIME), by default.
DEFAULT_SLACK_MS = 3000
#: ScheduleMessageService.FIRST_DELAY_TIME: the schedule service's first pass after start.
FIRST_DELAY_MS = 1000
#: ScheduleMessageService.start: the first periodic persist runs 10 s after start.
FIRST_FLUSH_DELAY_MS = 10_000
#: ConsumeMessageConcurrentlyService.submitConsumeRequestLater: local re-consume after 5 s.
LOCAL_RETRY_DELAY_MS = 5000
#: MessageStoreConfig.timerPrecisionMs (5.x).
TIMER_PRECISION_MS = 1000
#: MessageStoreConfig.timerMaxDelaySec (5.x): 3 days.
TIMER_MAX_DELAY_SEC = 3 * 24 * 3600
#: MessageStoreConfig.timerFlushIntervalMs (5.x): how often TimerFlushService writes the timer
#: checkpoint (``<store>/config/timercheck``).
TIMER_FLUSH_INTERVAL_MS = 1000
#: MessageStoreConfig.timerRollWindowSlot (5.x): a timer further ahead than this many slots is
#: parked at the window's end and rolled over (re-put to the timer topic) until it is within it.
TIMER_ROLL_WINDOW_SLOT = 3600 * 24 * 2
#: MessageStoreConfig.enableScheduleAsyncDeliver (4.9.3+, 5.x): the schedule service's asynchronous
#: delivery mode (reference.persistence: what it changes at a stop), off by default.
DEFAULT_SCHEDULE_ASYNC_DELIVER = False


@dataclass(frozen=True)
class Profile:
    """What the model reads of a run's profile (``run.json``), parsed: the level table as a table, the
    broker's and client's constants. Its siblings hold the same settings at other stages, with these
    defaults: ``harness.scenario.Profile`` (what a scenario asks for, as JSON) and
    ``adapters.base.BrokerProfile`` (what the harness sets up a broker with)."""

    level_table: LevelTable = DEFAULT_LEVEL_TABLE
    max_reconsume_times: int = DEFAULT_MAX_RECONSUME_TIMES  # effective: -1 already mapped to 16
    flush_delay_offset_interval_ms: int = DEFAULT_FLUSH_DELAY_OFFSET_INTERVAL_MS
    slack_ms: int = DEFAULT_SLACK_MS
    first_delay_ms: int = FIRST_DELAY_MS
    first_flush_delay_ms: int = FIRST_FLUSH_DELAY_MS
    local_retry_delay_ms: int = LOCAL_RETRY_DELAY_MS
    timer_precision_ms: int = TIMER_PRECISION_MS
    timer_max_delay_sec: int = TIMER_MAX_DELAY_SEC
    max_message_size: int = MAX_MESSAGE_SIZE  # MessageStoreConfig.maxMessageSize (reference.limits)
    timer_flush_interval_ms: int = TIMER_FLUSH_INTERVAL_MS
    timer_roll_window_slot: int = TIMER_ROLL_WINDOW_SLOT
    #: consumer groups whose consumers set their own maxReconsumeTimes (effective values)
    max_reconsume_times_by_group: tuple[tuple[str, int], ...] = ()
    schedule_async_deliver: bool = DEFAULT_SCHEDULE_ASYNC_DELIVER
    #: consumer groups that consume orderly (reference.orderly), with their effective suspend time (ms)
    orderly_groups: tuple[tuple[str, int], ...] = ()
    #: broadcasting groups (reference.broadcast) and their instance counts: each instance a unit
    broadcasting_groups: tuple[tuple[str, int], ...] = ()
    #: consumer groups that set their consumeTimeout (minutes; reference.timeout)
    consume_timeouts: tuple[tuple[str, int], ...] = ()
    #: POP groups (reference.pop): each group's mode (remoting POP, gRPC simple or push), its invisible
    #: time (effective, ms), the broker's release (what its revive and client do differs by release)
    #: and its maximum (remoting: the consumer's maxReconsumeTimes; gRPC: the group's retryMaxTimes)
    pop_groups: tuple[tuple[str, PopGroup], ...] = ()
    #: how 5.x's proxy runs for the gRPC groups (reference.pop.PROXY_MODES): in local mode the
    #: broker's outages are the proxy's
    proxy_mode: str = PROXY_CLUSTER

    @property
    def whole_history_groups(self) -> list[str]:
        """The groups whose every delivery the model reads, not only the LATERs: an orderly group's
        (its queue's lock and suspends: reference.expected._orderly_outcome) and a POP group's (its
        pop times, and a retry after a CRASH: reference.expected._pop_window, reference.pop.NOT_ACKED)."""
        return [g for g, _ in self.orderly_groups] + [g for g, _ in self.pop_groups]

    def pop_group(self, group: str | None) -> PopGroup | None:
        """A POP group's ``reference.pop.PopGroup``, ``None`` for any other group."""
        for name, popping in self.pop_groups:
            if name == group:
                return popping
        return None

    def consume_timeout_of(self, group: str | None) -> int | None:
        """A group's consumeTimeout in minutes (reference.timeout), ``None``: the client's default."""
        for name, value in self.consume_timeouts:
            if name == group:
                return value
        return None

    def broadcast_units(self, group: str) -> tuple[str, ...] | None:
        """The judging units of a broadcasting group (reference.modes.unit_group), ``None`` for any other."""
        for name, n in self.broadcasting_groups:
            if name == group:
                return tuple(unit_group(group, i) for i in range(n))
        return None

    def suspend_ms_of(self, group: str | None) -> int | None:
        """The suspend time of an orderly group (reference.orderly), ``None`` for any other group."""
        for name, value in self.orderly_groups:
            if name == group:
                return value
        return None

    @property
    def max_level(self) -> int:
        return self.level_table.max_level

    def max_reconsume_times_for(self, group: str | None) -> int:
        """The consumer's maxReconsumeTimes wins (see :func:`effective_max_reconsume_times`)."""
        for name, value in self.max_reconsume_times_by_group:
            if name == group:
                return value
        return self.max_reconsume_times


def effective_max_reconsume_times(consumer_value: int | None, group_value: int = DEFAULT_MAX_RECONSUME_TIMES) -> int:
    """SendMessageProcessor.asyncConsumerSendMsgBack (4.9.x): the consumer's maxReconsumeTimes in
    the request header wins over the subscription group's retryMaxTimes; the consumer maps -1 to 16
    (DefaultMQPushConsumerImpl.getMaxReconsumeTimes)."""
    if consumer_value is None:
        return group_value
    return DEFAULT_MAX_RECONSUME_TIMES if consumer_value == -1 else consumer_value


def _int(profile: Mapping[str, Any], name: str, default: int | None, minimum: int, where: str, what: str,
         maximum: int | None = None) -> int:
    value = profile.get(name, default)
    if value is None:
        raise ContractError(where, name, f"{what} (required)", "missing")
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum or (maximum is not None and value > maximum):
        raise ContractError(where, name, what, value)
    return value


_MAX_RT_WORDS = f"-1 (means 16) or an integer 0..{MAX_RECONSUME_TIMES} (a Java int)"


def parse_profile(profile: Any, where: str = "run.json profile") -> Profile:
    """Profile from ``run.json``'s ``profile`` object; a bad field raises ContractError naming it."""
    if not isinstance(profile, Mapping):
        raise ContractError(where, None, "a JSON object", profile)
    table = parse_level_table(profile.get("message_delay_level"), where, "message_delay_level")
    max_rt = _int(profile, "max_reconsume_times", None, -1, where, _MAX_RT_WORDS, MAX_RECONSUME_TIMES)
    by_group = profile.get("max_reconsume_times_by_group") or {}
    if not isinstance(by_group, Mapping):
        raise ContractError(where, "max_reconsume_times_by_group", "an object group -> int", by_group)
    groups = []
    for group, value in sorted(by_group.items()):
        value = _int(by_group, group, None, -1, f"{where} max_reconsume_times_by_group", _MAX_RT_WORDS, MAX_RECONSUME_TIMES)
        groups.append((group, effective_max_reconsume_times(value)))
    orderly = profile.get("orderly_groups") or {}
    if not isinstance(orderly, Mapping):
        raise ContractError(where, "orderly_groups", "an object group -> suspend time (ms)", orderly)
    lo, hi = SUSPEND_RANGE_MS
    orderly_groups = tuple((group, _int(orderly, group, None, lo, f"{where} orderly_groups",
                                        f"the suspend time in ms, {lo}..{hi} (ConsumeMessageOrderlyService clamps it)", hi))
                           for group in sorted(orderly))
    broadcasting = profile.get("broadcasting_groups") or {}
    if not isinstance(broadcasting, Mapping):
        raise ContractError(where, "broadcasting_groups", "an object group -> its instances", broadcasting)
    broadcasting_groups = tuple((group, _int(broadcasting, group, None, 1, f"{where} broadcasting_groups",
                                             "the group's instance count (an int >= 1)"))
                                for group in sorted(broadcasting))
    consume_timeouts = _consume_timeouts(profile, where)
    return Profile(
        pop_groups=_pop_groups(profile.get("pop_groups") or {}, f"{where} pop_groups", dict(groups),
                               effective_max_reconsume_times(max_rt)),
        max_reconsume_times_by_group=tuple(groups),
        consume_timeouts=consume_timeouts,
        orderly_groups=orderly_groups,
        broadcasting_groups=broadcasting_groups,
        level_table=table,
        max_reconsume_times=effective_max_reconsume_times(max_rt),
        flush_delay_offset_interval_ms=_int(profile, "flush_delay_offset_interval_ms", None, 1, where,
                                            "a positive int (milliseconds)"),
        slack_ms=_int(profile, "slack_ms", None, 0, where, "an int >= 0 (milliseconds)"),
        first_delay_ms=_int(profile, "first_delay_ms", FIRST_DELAY_MS, 0, where, "an int >= 0 (milliseconds)"),
        first_flush_delay_ms=_int(profile, "first_flush_delay_ms", FIRST_FLUSH_DELAY_MS, 0, where,
                                  "an int >= 0 (milliseconds)"),
        local_retry_delay_ms=_int(profile, "local_retry_delay_ms", LOCAL_RETRY_DELAY_MS, 0, where,
                                  "an int >= 0 (milliseconds)"),
        timer_precision_ms=_int(profile, "timer_precision_ms", TIMER_PRECISION_MS, 1, where,
                                "a positive int (milliseconds)"),
        timer_max_delay_sec=_int(profile, "timer_max_delay_sec", TIMER_MAX_DELAY_SEC, 0, where,
                                 "an int >= 0 (seconds)"),
        max_message_size=_int(profile, "max_message_size", MAX_MESSAGE_SIZE, 1, where, "a positive int (bytes)"),
        timer_flush_interval_ms=_int(profile, "timer_flush_interval_ms", TIMER_FLUSH_INTERVAL_MS, 1, where,
                                     "a positive int (milliseconds)"),
        timer_roll_window_slot=_int(profile, "timer_roll_window_slot", TIMER_ROLL_WINDOW_SLOT, 2, where,
                                    "an int >= 2 (slots)"),
        schedule_async_deliver=_bool(profile, "schedule_async_deliver", DEFAULT_SCHEDULE_ASYNC_DELIVER, where),
        proxy_mode=_proxy_mode(profile, where),
    )


def _consume_timeouts(profile: Mapping[str, Any], where: str) -> tuple[tuple[str, int], ...]:
    timeouts = profile.get("consume_timeouts") or {}
    if not isinstance(timeouts, Mapping):
        raise ContractError(where, "consume_timeouts", "an object group -> consumeTimeout (minutes)", timeouts)
    lo, hi = MIN_CONSUME_TIMEOUT_MIN, MAX_CONSUME_TIMEOUT_MIN
    return tuple((group, _int(timeouts, group, None, lo, f"{where} consume_timeouts",
                              f"the consumeTimeout in minutes, {lo}..{hi}", hi)) for group in sorted(timeouts))


def _proxy_mode(profile: Mapping[str, Any], where: str) -> str:
    value = profile.get("proxy_mode", PROXY_CLUSTER)
    if value not in PROXY_MODES:
        raise ContractError(where, "proxy_mode", f"one of {', '.join(PROXY_MODES)} (how 5.x's proxy runs)", value)
    return value


#: The invisible times each POP mode takes (ms): DefaultMQPushConsumerImpl.popMessage's range, the
#: proxy's for a SimpleConsumer's receive (ReceiveMessageActivity), any for a PushConsumer's (the
#: proxy's default, auto-renewed).
_INVISIBLE_RANGES = {POP: POP_INVISIBLE_RANGE_MS, GRPC_SIMPLE: GRPC_INVISIBLE_RANGE_MS, GRPC_PUSH: (1, GRPC_INVISIBLE_RANGE_MS[1])}


def _pop_groups(raw: Any, where: str, max_by_group: Mapping[str, int], max_rt: int) -> tuple[tuple[str, PopGroup], ...]:
    """``pop_groups``: group -> {"mode": one of reference.pop.POP_MODES (default pop), "invisible_ms":
    its invisible time, "release": the broker's release as a list of ints, e.g. [5, 5, 0],
    "max_times": its maximum (default: the group's maxReconsumeTimes; gRPC: its retryMaxTimes, 16)}."""
    fields = '{"mode", "invisible_ms", "release", "max_times"}'
    if not isinstance(raw, Mapping):
        raise ContractError(where.rsplit(" ", 1)[0], "pop_groups", f"an object group -> {fields}", raw)
    out = []
    for group in sorted(raw):
        entry = raw[group]
        if not isinstance(entry, Mapping):
            raise ContractError(where, group, f"an object {fields}", entry)
        mode = entry.get("mode", POP)
        if mode not in POP_MODES:
            raise ContractError(f"{where} {group}", "mode", "one of " + ", ".join(POP_MODES), mode)
        lo, hi = _INVISIBLE_RANGES[mode]
        invisible = _int(entry, "invisible_ms", None, lo, f"{where} {group}", f"the invisible time in ms, {lo}..{hi}", hi)
        release = entry.get("release")
        if not (isinstance(release, list) and release and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                                                              for v in release)):
            raise ContractError(f"{where} {group}", "release", "the broker's release as a list of ints, e.g. [5, 5, 0]", release)
        default_max = max_by_group.get(group, max_rt) if mode == POP else DEFAULT_RETRY_MAX_TIMES
        max_times = _int(entry, "max_times", default_max, 0, f"{where} {group}", f"an int 0..{MAX_RECONSUME_TIMES}",
                         MAX_RECONSUME_TIMES)
        out.append((group, PopGroup(mode, tuple(release), invisible, max_times)))
    return tuple(out)


def _bool(profile: Mapping[str, Any], name: str, default: bool, where: str) -> bool:
    value = profile.get(name, default)
    if not isinstance(value, bool):
        raise ContractError(where, name, "true or false", value)
    return value


def profile_from_run(run: Any, where: str = "run.json") -> Profile:
    if not isinstance(run, Mapping):
        raise ContractError(where, None, "a JSON object", run)
    if "profile" not in run:
        raise ContractError(where, "profile", "an object (required)", "missing")
    return parse_profile(run["profile"], where + " profile")


def profile_to_json(profile: Profile) -> dict:
    """The ``run.json`` profile object for ``profile`` (inverse of :func:`parse_profile`)."""
    return {
        "message_delay_level": profile.level_table.format(),
        "max_reconsume_times": profile.max_reconsume_times,
        "flush_delay_offset_interval_ms": profile.flush_delay_offset_interval_ms,
        "slack_ms": profile.slack_ms,
        "first_delay_ms": profile.first_delay_ms,
        "first_flush_delay_ms": profile.first_flush_delay_ms,
        "local_retry_delay_ms": profile.local_retry_delay_ms,
        "timer_precision_ms": profile.timer_precision_ms,
        "timer_max_delay_sec": profile.timer_max_delay_sec,
        "max_message_size": profile.max_message_size,
        "timer_flush_interval_ms": profile.timer_flush_interval_ms,
        "timer_roll_window_slot": profile.timer_roll_window_slot,
        "max_reconsume_times_by_group": dict(profile.max_reconsume_times_by_group),
        "schedule_async_deliver": profile.schedule_async_deliver,
        "proxy_mode": profile.proxy_mode,
        "orderly_groups": dict(profile.orderly_groups),
        "broadcasting_groups": dict(profile.broadcasting_groups),
        "consume_timeouts": dict(profile.consume_timeouts),
        "pop_groups": {g: {"mode": pg.mode, "invisible_ms": pg.invisible_ms, "release": list(pg.version), "max_times": pg.max_times}
                       for g, pg in profile.pop_groups},
    }


#: run.json profile field -> the broker's config key (BrokerConfig / MessageStoreConfig setter name)
BROKER_CONFIG_KEYS = {"message_delay_level": "messageDelayLevel",
                      "flush_delay_offset_interval_ms": "flushDelayOffsetInterval",
                      "schedule_async_deliver": "enableScheduleAsyncDeliver",
                      "timer_precision_ms": "timerPrecisionMs",
                      "timer_max_delay_sec": "timerMaxDelaySec",
                      "max_message_size": "maxMessageSize",
                      "timer_flush_interval_ms": "timerFlushIntervalMs",
                      "timer_roll_window_slot": "timerRollWindowSlot"}
#: the fields of :data:`BROKER_CONFIG_KEYS` the harness passes to the broker as they are (the others
#: have a field of their own in ``adapters.base.BrokerProfile``)
PASSED_THROUGH = ("timer_precision_ms", "timer_max_delay_sec", "max_message_size", "timer_flush_interval_ms",
                  "timer_roll_window_slot")


def passed_through_config(values: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The broker.conf pairs of the :data:`PASSED_THROUGH` fields in ``values`` (a scenario's profile)."""
    return tuple((BROKER_CONFIG_KEYS[f], str(int(values[f]))) for f in PASSED_THROUGH if f in values)


def passed_through_values(config: Mapping[str, str]) -> dict[str, int]:
    """The :data:`PASSED_THROUGH` fields a broker.conf sets (the inverse of :func:`passed_through_config`)."""
    return {f: int(config[BROKER_CONFIG_KEYS[f]]) for f in PASSED_THROUGH if BROKER_CONFIG_KEYS[f] in config}


def profile_mismatches(run_profile: Mapping[str, Any], broker_config: Mapping[str, str]) -> list[str]:
    """Where the broker does not run the profile the scenario is judged against: one sentence per
    field (a field the broker does not report is not compared). MessageStoreConfig keeps
    ``messageDelayLevel`` as the string it was given and ScheduleMessageService.parseDelayLevel
    reads it; a bad number in broker.conf is silently ignored (MixAll.properties2Object), so the
    harness asks the running broker instead of trusting its own file."""
    out = []
    for field, key in BROKER_CONFIG_KEYS.items():
        if key not in broker_config or field not in run_profile:
            continue
        got, want = str(broker_config[key]).strip(), run_profile[field]
        if field == "message_delay_level":
            same = got.split() == str(want).split()
        elif isinstance(want, bool):
            same = got.lower() == str(want).lower()
        else:
            same = got.isdigit() and int(got) == int(want)
        if not same:
            out.append(f"the broker runs {key}={got!r}, the scenario needs {want!r}")
    return out
