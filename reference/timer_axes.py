"""The 5.x timer store's life at a broker stop, as the axes of a scenario family (issue 21).

What a stop does to timer messages depends on where the timer store was: which slots its wheel had
read (``commitReadTimeMs``) and which timer-topic entries it had enqueued, as the last timer
checkpoint (``<store>/config/timercheck``, written by TimerFlushService every
``timerFlushIntervalMs`` and by TimerMessageStore.shutdown) recorded them; and on how the timers
fall due (one by one, a backlog in one slot, rolled over because their delay exceeds the wheel's
roll window, at ``timerMaxDelaySec``). The axes name those situations; :func:`expected` says what a
correct broker (TimerMessageStore, 5.0.0-5.3.3 read) does in each. Pure: frozen values, no I/O.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from hourglass.reference.persistence_axes import Start, Stop


class Due(enum.Enum):
    """How the timers fall due around the stop."""

    SPREAD = "spread"  # one by one, a slot apart: the wheel reads each slot as it comes
    SLOT = "slot"  # a backlog in one slot: one read hands them all to the put services
    ROLL = "roll"  # beyond the roll window: parked at its end and re-put to the timer topic (TIMER_ROLL_TIMES)
    NEAR_MAX = "nearmax"  # at timerMaxDelaySec (TIMER_DELAY_SEC exactly at the limit): taken, due last


class StopTiming(enum.Enum):
    """When the stop comes relative to the timer checkpoint's flush (timerFlushIntervalMs)."""

    AFTER_FLUSH = "afterflush"  # just after a flush: the checkpoint is (almost) the store's state
    BEFORE_FLUSH = "beforeflush"  # just before the next: a whole interval of reads not checkpointed
    WHILE_DUE = "whiledue"  # as the timers are being put (anchored on the first put)


#: how the broker stops and starts: the persistence suite's axes (one owner). For the timer store a
#: graceful stop prepares the checkpoint first and stops the dequeue services after it; a kill leaves
#: the last periodic checkpoint; a freeze stops its flush service too; a slow start holds the timers
#: due meanwhile until the ready


AXES: tuple[type[enum.Enum], ...] = (Due, StopTiming, Stop, Start)


@dataclass(frozen=True)
class Coordinates:
    due: Due
    timing: StopTiming
    stop: Stop
    start: Start

    @property
    def name(self) -> str:
        """``timer-slot-beforeflush-kill9-fast``: a failure says which state broke."""
        return "timer-" + "-".join(v.value for v in self.values())

    def values(self) -> tuple[enum.Enum, ...]:
        return (self.due, self.timing, self.stop, self.start)

    @staticmethod
    def of(values) -> "Coordinates":
        return Coordinates(*values)


@dataclass(frozen=True)
class Expectation:
    """What a correct broker does in one state, and which invariant says so."""

    loss_allowed: bool  # NO_LOSS: never (the timer log and the timer topic survive any stop)
    duplicates_allowed: bool  # NO_DUPLICATE: the slots read since the checkpoint may be put again
    late_allowed: str  # ON_TIME: what may come late, and why
    repeated: str  # which puts the checkpoint the broker restarts from does not cover


def loss_allowed(c: Coordinates) -> bool:
    """TimerMessageStore.recover (5.x): the timer topic's entries beyond the checkpointed queue offset
    are enqueued again and the wheel read again from the checkpointed read time; a kill leaves the
    page cache (the timer log, the wheel, the commit log) to the restarted process: nothing is lost."""
    return False


def duplicates_allowed(c: Coordinates) -> bool:
    """TimerMessageStore.shutdown prepares the checkpoint before it stops the dequeue services (a
    graceful stop too may put the slot being read again); a kill restarts from the last periodic
    checkpoint (reference.timer.timer_duplicate_allowed says which copies)."""
    return True


def repeated(c: Coordinates) -> str:
    what = {Due.SPREAD: "the timers put since", Due.SLOT: "the slot's backlog, when its read was not checkpointed",
            Due.ROLL: "rolled timers re-put to the timer topic since", Due.NEAR_MAX: "the timers put since"}[c.due]
    since = "the graceful stop's checkpoint (the slot being read)" if c.stop is Stop.GRACEFUL else \
        "the last periodic checkpoint (up to timerFlushIntervalMs before the kill)"
    return f"{what} {since}"


def expected(c: Coordinates) -> Expectation:
    return Expectation(loss_allowed=loss_allowed(c), duplicates_allowed=duplicates_allowed(c),
                       late_allowed="timers due while the broker was down or starting come after its ready",
                       repeated=repeated(c))
