"""The schedule offset's life at a broker stop, as the axes of a scenario family (issue 10 item 1).

For one delay level four numbers matter when the broker stops: how many entries of its schedule
queue were re-put (the true progress), the in-memory schedule offset (the next entry to re-put),
the persisted offset (``delayOffset.json``) and the schedule queue's max offset. How they relate
depends on what the scheduler was doing and on what happened since the last offset flush; the
axes below name those situations, :class:`Coordinates` combines them, and the rules say what a
correct broker (4.9.4+, 5.x) does in each. Pure: frozen values and functions, no I/O, no clock.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from hourglass.reference.persistence import corrected_delay_offset


class Reput(enum.Enum):
    """How the due messages were re-put before the stop: the rate at which they fall due."""

    ONE_AT_A_TIME = "trickle"  # a steady trickle on one level, each re-put by its own task run as it falls due
    BACKLOG = "backlog"  # a burst due at once (the scheduler was held back): one task run re-puts them all
    LEVELS = "levels"  # bursts on several levels at once
    #: a low rate on several levels: each level's task re-puts one message, then waits for the next
    #: (DeliverDelayedMessageTimerTask: a head not yet due reschedules the task after its countdown),
    #: so a stop finds every level's task waiting rather than running
    LOW_RATE = "lowrate"


class StopTiming(enum.Enum):
    """When the stop comes relative to the periodic offset flush (flushDelayOffsetInterval)."""

    AFTER_FLUSH = "afterflush"  # right after a flush: the persisted offset is (almost) the in-memory one
    BEFORE_FLUSH = "beforeflush"  # just before the next: a whole interval of re-puts is not persisted
    LATER = "later"  # several intervals after the re-puts of interest: those are long persisted
    #: just before a message falls due: it falls due while the broker stops (a graceful stop's
    #: shutdown sequence: ScheduleMessageService.shutdown stops the deliver executors, then
    #: persists; proved by reference.reach's due_during_stop)
    WHILE_DUE = "whiledue"


class Stop(enum.Enum):
    """How the broker stops."""

    GRACEFUL = "graceful"  # shutdown: the schedule service persists its offsets
    KILL9 = "kill9"  # the process dies: the last periodic flush is what survives
    PAUSE_KILL = "pausekill"  # frozen (SIGSTOP) first, then killed: nothing runs between


class Start(enum.Enum):
    """How it starts again (same version and store; the other version of a matrix is the
    ``--across-store`` mode, not an axis here)."""

    FAST = "fast"
    #: frozen from its exec until well after the first persist's delay (slow_start): nothing of it
    #: runs meanwhile, its timers included — a late start, not a slow one
    SLOW = "slow"
    #: short of CPU from its exec (throttled_start, reference.faults.cpu): every thread runs, slowly,
    #: so the periodic tasks fire while the store still loads (where a persist then comes before the
    #: offsets are loaded, 5.0.0-5.1.1 write the empty table: #6881); reference.reach's slow_load
    #: checks the start outlasted the first persist's delay
    THROTTLED = "throttled"


class Follow(enum.Enum):
    """What follows the stop."""

    ONE_RESTART = "onerestart"
    TWO_RESTARTS = "tworestarts"  # a second stop after the first ready, before the next flush
    DURING_BACKLOG = "duringbacklog"  # the second stop while the backlog of the outage is re-put


AXES: tuple[type[enum.Enum], ...] = (Reput, StopTiming, Stop, Start, Follow)


class Deliver(enum.Enum):
    """How the schedule service re-puts (MessageStoreConfig.enableScheduleAsyncDeliver, 4.9.3+): the
    same states again in the other mode, not a sixth axis of the pairwise cover (each mode's suite
    is the whole cover)."""

    SYNC = "sync"  # each put waited for; the offset moves past it at once (the default)
    ASYNC = "async"  # puts handed to the store; HandlePutResultTask moves the offset, in order


@dataclass(frozen=True)
class Coordinates:
    """One point of the axes' product: the state a persistence scenario puts the broker in."""

    reput: Reput
    timing: StopTiming
    stop: Stop
    start: Start
    follow: Follow
    deliver: Deliver = Deliver.SYNC

    @property
    def name(self) -> str:
        """``persist-backlog-beforeflush-kill9-fast-tworestarts`` (``-async`` after it for the
        asynchronous mode): a failure says which state broke."""
        return "persist-" + "-".join(v.value for v in self.values()) + ("-async" if self.deliver is Deliver.ASYNC else "")

    def values(self) -> tuple[enum.Enum, ...]:
        return (self.reput, self.timing, self.stop, self.start, self.follow)

    @staticmethod
    def of(values) -> "Coordinates":
        return Coordinates(*values)


# --- one level's offsets ----------------------------------------------------------------------
@dataclass(frozen=True)
class LevelOffsets:
    """One level at one moment: ``reput`` entries re-put so far (true progress), ``in_memory``
    (offsetTable, the next entry to re-put), ``persisted`` (delayOffset.json), ``cq_max`` (entries
    in the schedule queue). In a correct running broker ``persisted <= in_memory == reput <= cq_max``."""

    reput: int = 0
    in_memory: int = 0
    persisted: int = 0
    cq_max: int = 0

    def unpersisted(self) -> int:
        """Re-puts a kill -9 now would repeat after the restart."""
        return self.in_memory - self.persisted


def enqueue(s: LevelOffsets, n: int = 1) -> LevelOffsets:
    """CommitLog.asyncPutMessage (delay level > 0): the message goes to the level's schedule queue."""
    return replace(s, cq_max=s.cq_max + n)


def reput(s: LevelOffsets, n: int = 1) -> LevelOffsets:
    """DeliverDelayedMessageTimerTask.executeOnTimeup (4.9.4+): after each PUT_OK the offset is set
    to that entry's offset + 1, so one task run re-putting a backlog leaves it past the backlog."""
    n = min(n, s.cq_max - s.in_memory)
    return replace(s, reput=s.reput + n, in_memory=s.in_memory + n)


def flush(s: LevelOffsets) -> LevelOffsets:
    """ScheduleMessageService.persist (periodic, every flushDelayOffsetInterval after a first 10 s):
    delayOffset.json gets the in-memory table."""
    return replace(s, persisted=s.in_memory)


def stop(s: LevelOffsets, how: Stop) -> LevelOffsets:
    """ScheduleMessageService.shutdown (4.9.3+: executors stopped, then persist): a graceful stop
    persists the in-memory offset; a kill -9 (paused first or not) leaves the last flush."""
    return flush(s) if how is Stop.GRACEFUL else s


def start(s: LevelOffsets) -> LevelOffsets:
    """ScheduleMessageService.load/correctDelayOffset (4.9.2+): the scheduler resumes at the
    persisted offset clamped to the schedule queue's [min, max]; what lies between it and the
    progress made before the stop is re-put again."""
    loaded = corrected_delay_offset(s.persisted, 0, s.cq_max)
    return replace(s, in_memory=loaded, persisted=loaded)


# --- what a correct broker does at a stop -------------------------------------------------------
@dataclass(frozen=True)
class Expectation:
    """What a correct broker does in one state, and which invariant says so."""

    persisted_equals_memory: bool  # OFFSET_PERSISTENCE: after the stop, delayOffset.json == offsetTable
    duplicates_allowed: bool  # NO_DUPLICATE: re-puts since the last flush may be repeated
    loss_allowed: bool  # NO_LOSS: never, a stop alone loses nothing
    resumes_at_persisted: bool  # OFFSET_PERSISTENCE: after a start, offsetTable == delayOffset.json
    unpersisted_at_stop: str  # which re-puts the persisted offset does not cover when it stops


def persisted_after_graceful_stop_equals_memory(how: Stop) -> bool:
    """ScheduleMessageService.shutdown (4.9.3+, BrokerController.shutdownBasicService in 5.x): the
    offsets are persisted after the deliver executors stop, so file == memory; a kill persists nothing."""
    return how is Stop.GRACEFUL


def duplicates_allowed(how: Stop, deliver: Deliver = Deliver.SYNC) -> bool:
    """ScheduleMessageService.persist vs. a kill -9: the re-puts since the last flush (and since
    start when the first 10 s flush has not run yet) are made again after the restart. With
    asynchronous delivery a graceful stop may repeat the puts completed after HandlePutResultTask
    last ran (reference.persistence.async_stop_duplicate)."""
    return how is not Stop.GRACEFUL or deliver is Deliver.ASYNC


def loss_allowed(how: Stop) -> bool:
    """DeliverDelayedMessageTimerTask.executeOnTimeup: the offset moves past an entry only after its
    re-put succeeded, and the schedule queue survives a kill in the page cache: nothing is lost."""
    return False


def unpersisted_at_stop(c: Coordinates) -> str:
    """ScheduleMessageService.persist timing: which of the re-puts of ``c`` the last flush before
    the stop does not cover (the scheduler duplicates a kill -9 allows)."""
    what = {Reput.ONE_AT_A_TIME: "the trickle's last re-puts", Reput.BACKLOG: "a backlog re-put in one task run",
            Reput.LEVELS: "backlogs of several levels", Reput.LOW_RATE: "the last re-put of each level"}[c.reput]
    return {StopTiming.AFTER_FLUSH: f"at most ~100 ms of re-puts ({what} persisted)",
            StopTiming.BEFORE_FLUSH: f"{what}, re-put within the last interval",
            StopTiming.LATER: f"only the trickle since the last flush ({what} persisted intervals ago)",
            StopTiming.WHILE_DUE: f"{what} since the last flush, and one falling due as the broker stops"}[c.timing]


def expected(c: Coordinates) -> Expectation:
    """ScheduleMessageService.shutdown/persist/load: what a correct broker does in state ``c``."""
    return Expectation(
        persisted_equals_memory=persisted_after_graceful_stop_equals_memory(c.stop),
        duplicates_allowed=duplicates_allowed(c.stop, c.deliver),
        loss_allowed=loss_allowed(c.stop),
        resumes_at_persisted=True,
        unpersisted_at_stop=unpersisted_at_stop(c),
    )


def repeated_after_restart(at_stop: LevelOffsets, how: Stop) -> int:
    """ScheduleMessageService.shutdown then load: how many re-puts a correct broker makes again
    after restarting from ``at_stop`` (0 after a graceful stop; the unpersisted ones after a kill)."""
    return at_stop.in_memory - start(stop(at_stop, how)).in_memory
