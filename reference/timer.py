"""5.x timer messages: a message carrying a deliver time instead of a delay level.

The broker (HookUtils.handleScheduleMessage) parks a timer message in ``rmq_sys_wheel_timer`` until
its deliver time, rounded down to the timer's precision; a deliver time in the past is delivered at
once; one further ahead than ``timerMaxDelaySec`` is refused (``MESSAGE_ILLEGAL``); a delay level
on the same message wins and the timer properties are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

TIMER_TOPIC = "rmq_sys_wheel_timer"


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


def timer_ruling(deliver_at_ms: int | None, delay_level: int, now_ms: int, precision_ms: int,
                 max_delay_sec: int) -> TimerRuling:
    """HookUtils.checkIfTimerMessage + transformTimerMessage (5.x): what the broker does with a send
    carrying ``deliver_at_ms`` (TIMER_DELIVER_MS) at broker time ``now_ms``."""
    if deliver_at_ms is None:
        return TimerRuling(True, False, now_ms, "not a timer message")
    if delay_level > 0:
        return TimerRuling(True, False, now_ms, "a delay level wins: timer properties dropped")
    if deliver_at_ms <= now_ms:
        return TimerRuling(True, False, now_ms, "deliver time already passed: delivered at once")
    if deliver_at_ms - now_ms > max_delay_sec * 1000:
        return TimerRuling(False, False, now_ms,
                           f"deliver time {deliver_at_ms - now_ms} ms ahead exceeds timerMaxDelaySec {max_delay_sec} s")
    return TimerRuling(True, True, rounded_deliver_ms(deliver_at_ms, precision_ms), "timer message")
