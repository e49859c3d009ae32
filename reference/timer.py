"""5.x timer messages: a message carrying a deliver time instead of a delay level.

A client asks for one through any of three properties (the 5.x client's
``Message.setDeliverTimeMs`` / ``setDelayTimeSec`` / ``setDelayTimeMs``): an absolute deliver
time, or a delay the *broker* adds to its own clock. The broker (HookUtils.handleScheduleMessage /
transformTimerMessage, identical from 5.1.0 to 5.3.3; 5.0.0 multiplies ``timerMaxDelaySec`` as an
int, the same for every value below 24 days) parks a timer message in ``rmq_sys_wheel_timer`` until
its deliver time, rounded down to the timer's precision; a deliver time not in the future is
delivered at once; one further ahead than ``timerMaxDelaySec`` is refused (``MESSAGE_ILLEGAL``); a
delay level on the same message wins and the timer properties are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

TIMER_TOPIC = "rmq_sys_wheel_timer"
#: MessageConst.PROPERTY_TIMER_*: the properties of the three client APIs, in the order
#: HookUtils.transformTimerMessage reads them (the first present wins)
TIMER_DELAY_SEC, TIMER_DELAY_MS, TIMER_DELIVER_MS = "TIMER_DELAY_SEC", "TIMER_DELAY_MS", "TIMER_DELIVER_MS"
TIMER_PROPERTIES = (TIMER_DELAY_SEC, TIMER_DELAY_MS, TIMER_DELIVER_MS)
#: the range of a Java long: every timer property is parsed with Long.parseLong
JAVA_LONG = (-2**63, 2**63 - 1)


def java_long(x: int) -> int:
    """``x`` as Java's long arithmetic leaves it (two's complement wrap-around)."""
    return (x + 2**63) % 2**64 - 2**63


@dataclass(frozen=True)
class TimerRequest:
    """The timer properties one send carries (each a Java long; any combination)."""

    deliver_at_ms: int | None = None  # TIMER_DELIVER_MS: epoch ms
    delay_sec: int | None = None  # TIMER_DELAY_SEC: from the broker's now
    delay_ms: int | None = None  # TIMER_DELAY_MS: from the broker's now

    @property
    def is_timer(self) -> bool:
        """HookUtils.checkIfTimerMessage: any of the three properties makes it one."""
        return any(v is not None for v in (self.deliver_at_ms, self.delay_sec, self.delay_ms))

    def properties(self) -> tuple[tuple[str, str], ...]:
        """The message properties the client puts, as strings."""
        values = {TIMER_DELAY_SEC: self.delay_sec, TIMER_DELAY_MS: self.delay_ms, TIMER_DELIVER_MS: self.deliver_at_ms}
        return tuple((name, str(values[name])) for name in TIMER_PROPERTIES if values[name] is not None)


@dataclass(frozen=True)
class TimerRuling:
    accepted: bool  # False: the broker answers MESSAGE_ILLEGAL (WHEEL_TIMER_MSG_ILLEGAL)
    timer: bool  # True: parked in the timer wheel; False: stored as a plain or delay-level message
    deliver_ms: int  # when it becomes due (rounded); the store time for a non-timer message
    reason: str


def rounded_deliver_ms(deliver_at_ms: int, precision_ms: int) -> int:
    """HookUtils.transformTimerMessage (5.x): deliverMs is rounded down to the precision, and one
    precision earlier when it is an exact multiple (so a timer message may come up to one precision
    before its deliver time, never after it for that reason)."""
    if deliver_at_ms % precision_ms == 0:
        return deliver_at_ms - precision_ms
    return deliver_at_ms // precision_ms * precision_ms


def broker_deliver_ms(req: TimerRequest, now_ms: int) -> int:
    """HookUtils.transformTimerMessage: ``deliverMs`` from the property that wins, in Java's long
    arithmetic: ``now + sec * 1000`` (the product wraps first) or ``now + ms``, else the absolute
    time as given. A delay so large that it wraps lands in the past: delivered at once."""
    if req.delay_sec is not None:
        return java_long(now_ms + java_long(req.delay_sec * 1000))
    if req.delay_ms is not None:
        return java_long(now_ms + req.delay_ms)
    assert req.deliver_at_ms is not None
    return req.deliver_at_ms


def timer_ruling(req: TimerRequest, delay_level: int, now_ms: int, precision_ms: int,
                 max_delay_sec: int) -> TimerRuling:
    """HookUtils.checkIfTimerMessage + transformTimerMessage (5.x): what the broker does with a send
    carrying the timer properties of ``req`` when its clock reads ``now_ms``."""
    if not req.is_timer:
        return TimerRuling(True, False, now_ms, "not a timer message")
    if delay_level > 0:
        return TimerRuling(True, False, now_ms, "a delay level wins: timer properties dropped")
    deliver = broker_deliver_ms(req, now_ms)
    if deliver <= now_ms:
        return TimerRuling(True, False, now_ms, "deliver time not in the future: delivered at once")
    if deliver - now_ms > max_delay_sec * 1000:
        return TimerRuling(False, False, now_ms,
                           f"deliver time {deliver - now_ms} ms ahead exceeds timerMaxDelaySec {max_delay_sec} s")
    return TimerRuling(True, True, rounded_deliver_ms(deliver, precision_ms), "timer message")


@dataclass(frozen=True)
class SendRuling:
    """A timer send judged when the broker's clock at its arrival is only known to lie within
    ``[born, ts]`` (the client's send and its answer): refused only when refused at both ends; due
    between the two ends' due times."""

    refused: str | None  # why the broker must refuse it (MESSAGE_ILLEGAL), or None
    earliest_ms: int  # the earliest due time
    latest_ms: int  # the latest due time
    timer: bool  # parked in the timer wheel at either end


def send_ruling(req: TimerRequest, delay_level: int, born_ms: int, ts_ms: int, precision_ms: int,
                max_delay_sec: int) -> SendRuling:
    """:func:`timer_ruling` at both ends of the broker's possible clock readings."""
    a, b = (timer_ruling(req, delay_level, now, precision_ms, max_delay_sec) for now in (born_ms, max(born_ms, ts_ms)))
    if not a.accepted and not b.accepted:
        return SendRuling(f"{a.reason}: MESSAGE_ILLEGAL", born_ms, born_ms, False)
    dues = [r.deliver_ms for r in (a, b) if r.accepted]
    return SendRuling(None, min(dues), max(dues), a.timer or b.timer)


# --- the timer store across a stop (TimerMessageStore, 5.x) -------------------------------------
#: TimerCheckpoint.flush: ``<store>/config/timercheck`` holds these big-endian longs, in this order
TIMER_CHECKPOINT_FIELDS = ("last_read_time_ms", "last_timer_log_flush_pos", "last_timer_queue_offset",
                           "master_timer_queue_offset", "state_version", "data_version_timestamp", "data_version_counter")


def parse_timer_checkpoint(data: bytes) -> dict[str, int] | None:
    """TimerCheckpoint's file as it was last flushed (the broker writes it through a mapped buffer
    only in ``flush()``: what the file holds is the last checkpoint, also after a kill -9); None
    for a file too short to hold the first four fields (not written yet)."""
    n = min(len(data) // 8, len(TIMER_CHECKPOINT_FIELDS))
    if n < 4:
        return None
    return {name: int.from_bytes(data[i * 8:i * 8 + 8], "big", signed=True) for i, name in enumerate(TIMER_CHECKPOINT_FIELDS[:n])}


def _checkpoint_lower_bound_ms(broker: list[tuple[int, str]], stop_ms: int, how: str, flush_interval_ms: int,
                               jitter_ms: int) -> int | None:
    """When the timer checkpoint the broker restarts from was written, at the earliest: a graceful
    stop writes it as the stop begins (TimerMessageStore.shutdown: prepareTimerCheckPoint first, the
    dequeue services stopped after it); a kill leaves TimerFlushService's last run, at most one
    interval before it (and none before the killed incarnation's first run, at its start)."""
    from hourglass.reference.persistence import last_flush_lower_bound_ms

    if how == "stop":
        return stop_ms - jitter_ms
    return last_flush_lower_bound_ms(broker, stop_ms, flush_interval_ms, flush_interval_ms, jitter_ms)


def timer_duplicate_allowed(faults, slot_ms: int, first_store_ms: int, second_store_ms: int, flush_interval_ms: int,
                            precision_ms: int, jitter_ms: int, born_ms: int | None = None) -> tuple[bool, str]:
    """TimerMessageStore.prepareTimerCheckPoint / recover (5.x): the checkpoint records the read
    time (``commitReadTimeMs``: the slot being read, which moves on once the slot's messages were
    handed to the put services) and the timer queue offset; a restarted broker reads the wheel again
    from that slot, replays the timer log from the checkpoint's flush position, and reads the timer
    topic again from ``min(revised offset, masterTimerQueueOffset)`` of the checkpoint. A timer
    message due at ``slot_ms``, sent at ``born_ms`` and first put at ``first_store_ms`` may so be
    put again after a broker stop or kill that came after it was sent and before its second copy,
    when it was put after the checkpoint the broker restarted from, or its slot was at most two
    precisions older than that checkpoint (the slot being read, and the one before it still in the
    put services' hands), or it was sent after that checkpoint (its timer-topic entry is enqueued
    again beside its timer-log record: both copies may come after the restart). Returns (allowed, reason)."""
    from hourglass.reference.persistence import broker_faults
    from hourglass.reference.contract import BROKER_TARGETS

    faults = list(faults)
    seen = []
    for target in BROKER_TARGETS:
        broker = broker_faults(faults, target)
        for ts, how in broker:
            if how not in ("stop", "kill") or not min(first_store_ms, born_ms or first_store_ms) - jitter_ms <= ts <= second_store_ms:
                continue
            seen.append(f"{how} at {ts}")
            bound = _checkpoint_lower_bound_ms(broker, ts, how, flush_interval_ms, jitter_ms)
            what = "graceful stop" if how == "stop" else "kill -9"
            if bound is None or first_store_ms >= bound or slot_ms >= bound - 2 * precision_ms or \
                    (born_ms is not None and born_ms >= bound):
                since = "the run began" if bound is None else str(bound)
                return True, (f"timer message sent at {born_ms}, due at {slot_ms}, first put at {first_store_ms}: not "
                              f"before the timer checkpoint the broker restarted from after its {what} at {ts} (written "
                              f"not before {since}), so it was enqueued or read again; second copy put at {second_store_ms}")
    if seen:
        return False, (f"timer message sent at {born_ms}, due at {slot_ms}, first put at {first_store_ms}: it was "
                       f"enqueued, read and checkpointed before the broker's {', '.join(seen)}; second copy put at {second_store_ms}")
    return False, (f"timer message due at {slot_ms}: a second copy put at {second_store_ms} with no broker stop or "
                   f"kill since it was sent ({born_ms}) or first put ({first_store_ms})")
