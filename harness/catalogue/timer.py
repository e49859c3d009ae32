"""The timer suite: the 5.x timer store's life at a stop, one scenario per state.

Each scenario is a point of :mod:`reference.timer_axes` (how the timers fall due, when the stop
comes relative to the timer checkpoint's flush, how the broker stops and starts), named by its
coordinates (``timer-slot-beforeflush-kill9-fast``). Faults are timed from what the broker did:
the timer checkpoint changing (``timer_flush``: ``<store>/config/timercheck``) and the timers'
puts (``timer``), so the same scenario reaches the same state however long the broker took to start.

The workload of every scenario: a trickle of timer messages (one sent every 400 ms, due 3 s later:
the wheel always has a slot to read), plus the axis' batch — ``slot``: 40 timers due in one slot;
``roll``: 10 timers due beyond the roll window (``timerRollWindowSlot`` 6: rolled over twice);
``nearmax``: 10 timers sent with ``TIMER_DELAY_SEC`` = ``timerMaxDelaySec`` (20 s).

``FULL`` is a pairwise cover of the axes (nightly); ``SHORT`` (CI, on the newest 5.x) its first
scenarios, every stop kind among them.
"""

from __future__ import annotations

from hourglass.harness.catalogue.pairwise import pairwise
from hourglass.harness.scenario import COMPRESSED_LEVELS, ConsumerGroup, FaultAnchor, FaultStep, Message, Profile, Scenario
from hourglass.reference.contract import TIMER
from hourglass.harness.catalogue.persistence import start_reach, stop_and_start
from hourglass.reference.timer_axes import AXES, Coordinates, Due, Stop, StopTiming, expected

#: timerFlushIntervalMs of the suite's brokers: long enough to stop before or after a flush on purpose
FLUSH_INTERVAL_MS = 2_000
ROLL_WINDOW_SLOT = 6
MAX_DELAY_SEC = 20
PROFILE = Profile(message_delay_level=COMPRESSED_LEVELS, timer_flush_interval_ms=FLUSH_INTERVAL_MS,
                  timer_roll_window_slot=ROLL_WINDOW_SLOT, timer_max_delay_sec=MAX_DELAY_SEC)

TRICKLE_EVERY_MS = 400
TRICKLE_DELAY_MS = 3_000
BATCH_AT_MS = 1_000
#: each batch: (size, the message's timer fields, when it falls due after the scenario's start)
BATCHES = {
    Due.SPREAD: (0, {}, 8_000),
    Due.SLOT: (40, {"deliver_after_ms": 5_000}, 6_000),
    Due.ROLL: (10, {"deliver_after_ms": 14_000}, 15_000),
    Due.NEAR_MAX: (10, {"delay_time_sec": MAX_DELAY_SEC}, 21_000),
}


def _messages(c: Coordinates, topic: str) -> tuple[Message, ...]:
    size, fields, due = BATCHES[c.due]
    end = due + 3_000  # the trickle goes on past the batch: the wheel keeps reading slots around the stop
    msgs = [Message(f"t{i:03d}", topic, at_ms=t, deliver_after_ms=TRICKLE_DELAY_MS)
            for i, t in enumerate(range(0, end - TRICKLE_DELAY_MS, TRICKLE_EVERY_MS))]
    msgs += [Message(f"b-{c.due.value}-{i:02d}", topic, at_ms=BATCH_AT_MS + i, **fields) for i in range(size)]
    return tuple(sorted(msgs, key=lambda m: (m.at_ms, m.key)))


def _stop_anchor(c: Coordinates) -> tuple[int, FaultAnchor]:
    """When the stop comes: (at_ms, after), from the batch's due time."""
    due = BATCHES[c.due][2]
    if c.timing is StopTiming.WHILE_DUE:  # the first put of the batch (the trickle's puts before it counted)
        before = len(range(0, due - TRICKLE_DELAY_MS - 500, TRICKLE_EVERY_MS))
        return 0, FaultAnchor("timer", count=before + 1 + BATCHES[c.due][0] // 2)
    flushes_before = due // FLUSH_INTERVAL_MS
    if c.timing is StopTiming.AFTER_FLUSH:  # the flush after the batch was put: its read checkpointed
        return 100, FaultAnchor("timer_flush", count=flushes_before + 1)
    return FLUSH_INTERVAL_MS - 300, FaultAnchor("timer_flush", count=flushes_before)  # just before the next


def faults(c: Coordinates) -> tuple[FaultStep, ...]:
    return tuple(stop_and_start(c, *_stop_anchor(c)))


def scenario(c: Coordinates) -> Scenario:
    e = expected(c)
    topic = "Timer" + "".join(v.value[:3].capitalize() for v in c.values())
    return Scenario(
        name=c.name, messages=_messages(c, topic), consumers=(ConsumerGroup(f"cg-{topic}", (topic,)),),
        faults=faults(c), profile=PROFILE, requires=(TIMER,), reach=start_reach(c),
        description=f"timers falling due {c.due.value}, stop {c.timing.value}, {c.stop.value}, {c.start.value} start: "
                    f"nothing lost; {e.late_allowed}; {e.repeated} may be put again")


FULL_COORDINATES: tuple[Coordinates, ...] = tuple(Coordinates.of(v) for v in pairwise([list(a) for a in AXES]))
FULL: tuple[Scenario, ...] = tuple(scenario(c) for c in FULL_COORDINATES)
#: CI's subset: the first of the cover with each stop kind
SHORT: tuple[Scenario, ...] = tuple(scenario(next(c for c in FULL_COORDINATES if c.stop is s)) for s in Stop)
