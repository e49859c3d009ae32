"""The persistence suite: the schedule offset's life at a stop, one scenario per state.

Each scenario is a point of :mod:`reference.persistence_axes` (how due messages were re-put, when
the stop comes relative to the offset flush, how the broker stops and starts, what follows), named
by its coordinates (``persist-backlog-beforeflush-kill9-fast-tworestarts``) so a failure says which
state broke. Faults are timed from what the broker did (``FaultStep.after``): the same scenario
reaches the same state whether the broker took 5 s or 20 s to start, alone or in a batch.

The workload of every scenario: a trickle of level-3 messages (one falls due every 300 ms: the
scheduler re-puts them one at a time and always has some pending, so every outage leaves a backlog
that the first pass after the start re-puts in one task run), plus, for ``backlog``, a burst of one
level (falls due at once, re-put in one go) and, for ``levels``, bursts of three levels; for
``lowrate`` the trickle is three slower streams instead (levels 3, 4 and 5, one message every
600 ms each, staggered), so every level's task spends most of its time waiting for its next head.

The states a scenario exists for are proved from its run (``Scenario.reach``, :mod:`reference.reach`):
a ``whiledue`` graceful stop has a message fall due during the shutdown, a ``throttled`` start
outlasts the first persist's delay; a run that did not get there is broken, never a pass.

``FULL`` is a pairwise cover of the axes (every pair of axis values in some scenario); ``SHORT``
(CI, newest 4.9.x and 5.x) is a subset that still has every value of every axis.
"""

from __future__ import annotations

from dataclasses import replace

from hourglass.harness.scenario import COMPRESSED_LEVELS, ConsumerGroup, FaultAnchor, FaultStep, Message, Profile, Scenario
from hourglass.reference.contract import ASYNC_DELIVER
from hourglass.reference.persistence_axes import AXES, Coordinates, Deliver, Follow, Reput, Start, Stop, StopTiming, expected
from hourglass.reference.reach import DUE_DURING_STOP, SLOW_LOAD
from hourglass.harness.catalogue.pairwise import pairwise

#: flushDelayOffsetInterval of the suite's brokers (the first persist is still 10 s after start)
FLUSH_INTERVAL_MS = 2_000
PROFILE = Profile(message_delay_level=COMPRESSED_LEVELS, flush_delay_offset_interval_ms=FLUSH_INTERVAL_MS)
ASYNC_PROFILE = replace(PROFILE, schedule_async_deliver=True)

TRICKLE_LEVEL = 3  # 3 s in the compressed table
TRICKLE_EVERY_MS = 300
#: long enough that a backlog is left after a first stop and start (5.5.0's graceful shutdown alone takes
#: 9-12 s here: a trickle ending at 20 s was all re-put before the restart's ready)
TRICKLE_END_MS = 26_000
BURST_AT_MS = 1_000
BURST_SIZE = 30
#: the burst levels of ``backlog`` (one) and ``levels`` (three); the last one anchors the stop
BURST_LEVELS = {Reput.ONE_AT_A_TIME: (), Reput.BACKLOG: (4,), Reput.LEVELS: (4, 5, 6), Reput.LOW_RATE: ()}
#: ``lowrate``: the streams' levels and each one's period (the first level anchors like the trickle)
LOW_RATE_LEVELS, LOW_RATE_EVERY_MS = (TRICKLE_LEVEL, 4, 5), 600
#: ``whiledue``: the stop comes this long before the next message of the anchor level falls due,
#: after the re-puts of this much of the run (its first flushes)
WHILE_DUE_LEAD_MS, WHILE_DUE_AFTER_MS = 100, 5_000
PAUSED_BEFORE_KILL_MS = 1_500
DOWN_MS = 1_000
#: a start frozen longer than the first persist's delay (10 s): ``slow``
SLOW_START_MS = 10_000
#: ``throttled``: the broker's CPU quota from its exec to its ready, in thousandths of one CPU (a
#: tenth of one: a 5 s start takes ~45 s here, past the first persist's 10 s: reference.reach)
THROTTLED_CPU_PERMILLE = 100
#: the second stop of ``tworestarts``: this long after the first ready, well before its first flush (10 s)
SECOND_STOP_AFTER_READY_MS = 2_000


def _stream_every_ms(c: Coordinates) -> int:
    """How often a message of the anchor level (``TRICKLE_LEVEL``) falls due."""
    return LOW_RATE_EVERY_MS if c.reput is Reput.LOW_RATE else TRICKLE_EVERY_MS


def _messages(c: Coordinates, topic: str) -> tuple[Message, ...]:
    if c.reput is Reput.LOW_RATE:
        stagger = LOW_RATE_EVERY_MS // len(LOW_RATE_LEVELS)
        msgs = [Message(f"l{level}-{i:03d}", topic, at_ms=t + n * stagger, delay_level=level)
                for n, level in enumerate(LOW_RATE_LEVELS)
                for i, t in enumerate(range(0, TRICKLE_END_MS, LOW_RATE_EVERY_MS))]
    else:
        msgs = [Message(f"t{i:03d}", topic, at_ms=t, delay_level=TRICKLE_LEVEL)
                for i, t in enumerate(range(0, TRICKLE_END_MS, TRICKLE_EVERY_MS))]
    for level in BURST_LEVELS[c.reput]:
        msgs += [Message(f"b{level}-{i:02d}", topic, at_ms=BURST_AT_MS + i, delay_level=level) for i in range(BURST_SIZE)]
    return tuple(sorted(msgs, key=lambda m: (m.at_ms, m.key)))


def _stop_anchor(c: Coordinates) -> tuple[int, FaultAnchor]:
    """When the first stop comes: (at_ms, after)."""
    bursts = BURST_LEVELS[c.reput]
    if c.timing is StopTiming.WHILE_DUE:  # the anchor level's next message falls due LEAD ms into the stop
        every = _stream_every_ms(c)
        return every - WHILE_DUE_LEAD_MS, FaultAnchor("reput", level=TRICKLE_LEVEL, count=WHILE_DUE_AFTER_MS // every)
    if c.timing is StopTiming.BEFORE_FLUSH:
        if bursts:  # right after the (last) burst was re-put: a whole backlog not yet persisted
            return 200, FaultAnchor("reput", level=bursts[-1])
        return FLUSH_INTERVAL_MS - 300, FaultAnchor("flush")  # 300 ms before the next flush
    if c.timing is StopTiming.AFTER_FLUSH:  # the flush after the bursts' re-put (they fall due at ~5-7 s)
        return 100, FaultAnchor("flush", count=2 if bursts else 1)
    return FLUSH_INTERVAL_MS // 2, FaultAnchor("flush", count=4)  # several intervals after the bursts


def stop_and_start(c, at_ms: int, after: FaultAnchor) -> list[FaultStep]:
    """The fault steps of ``c.stop`` at ``at_ms`` after ``after``, then ``c.start`` (the timer suite's too)."""
    prev = FaultAnchor("previous")
    if c.stop is Stop.PAUSE_KILL:
        steps = [FaultStep(at_ms, "pause", after=after), FaultStep(PAUSED_BEFORE_KILL_MS, "kill", after=prev)]
    else:
        steps = [FaultStep(at_ms, "stop" if c.stop is Stop.GRACEFUL else "kill", after=after)]
    if c.start is Start.SLOW:
        steps.append(FaultStep(DOWN_MS, "slow_start", duration_ms=SLOW_START_MS, after=prev))
    elif c.start is Start.THROTTLED:  # the quota is lifted at the ready (a start takes longer than 1 ms)
        steps.append(FaultStep(DOWN_MS, "throttled_start", duration_ms=1, cpu_permille=THROTTLED_CPU_PERMILLE, after=prev))
    else:
        steps.append(FaultStep(DOWN_MS, "start", after=prev))
    return steps


def start_reach(c) -> tuple[str, ...]:
    """What :func:`stop_and_start`'s start must be proved to have reached (reference.reach)."""
    return (SLOW_LOAD,) if c.start is Start.THROTTLED else ()


def faults(c: Coordinates) -> tuple[FaultStep, ...]:
    steps = stop_and_start(c, *_stop_anchor(c))
    if c.follow is Follow.TWO_RESTARTS:  # again, before the new incarnation's first flush
        steps += stop_and_start(c, SECOND_STOP_AFTER_READY_MS, FaultAnchor("ready"))
    elif c.follow is Follow.DURING_BACKLOG:  # again, while the outage's backlog is being re-put
        steps += stop_and_start(c, 0, FaultAnchor("reput", level=TRICKLE_LEVEL))
    return tuple(steps)


def scenario(c: Coordinates) -> Scenario:
    """The scenario that puts the broker in state ``c`` (its description says what must hold)."""
    e = expected(c)
    topic = "Persist" + "".join(v.value[:3].capitalize() for v in c.values())
    must = ("delayOffset.json == offsetTable after the stop, no duplicate" if not e.duplicates_allowed
            else "delayOffset.json == offsetTable after the stop, the re-puts completed in the handle task's "
                 "last run may repeat" if e.persisted_equals_memory else "re-puts since the last flush may repeat")
    is_async = c.deliver is Deliver.ASYNC
    reach = ((DUE_DURING_STOP,) if c.timing is StopTiming.WHILE_DUE and c.stop is Stop.GRACEFUL else ()) + start_reach(c)
    return Scenario(
        name=c.name, messages=_messages(c, topic), consumers=(ConsumerGroup(f"cg-{topic}", (topic,)),),
        faults=faults(c), profile=ASYNC_PROFILE if is_async else PROFILE, requires=(ASYNC_DELIVER,) if is_async else (),
        reach=reach,
        description=f"{c.reput.value} re-puts{' (asynchronous delivery)' if is_async else ''}, stop {c.timing.value} "
                    f"({e.unpersisted_at_stop} unpersisted), {c.stop.value}, {c.start.value} start, {c.follow.value}: "
                    f"{must}; nothing lost; the scheduler resumes at the persisted offset")


#: the pairwise cover, in a fixed order
FULL_COORDINATES: tuple[Coordinates, ...] = tuple(Coordinates.of(v) for v in pairwise([list(a) for a in AXES]))
FULL: tuple[Scenario, ...] = tuple(scenario(c) for c in FULL_COORDINATES)


def _short(coords: tuple[Coordinates, ...], size: int = 6) -> tuple[Coordinates, ...]:
    """``size`` points of the pairwise cover, each the one adding the most axis values not yet
    chosen (ties: the earlier in the cover, which covers more pairs), so every value of every axis
    is in (checked by the suite's self-test); one throttled start at most (each takes 40-85 s of a
    broker's start); in the cover's order."""
    out: list[Coordinates] = []
    while len(out) < size:
        seen = {v for o in out for v in o.values()}
        allowed = [c for c in coords if c not in out
                   and not (c.start is Start.THROTTLED and any(o.start is Start.THROTTLED for o in out))]
        out.append(max(allowed, key=lambda c: (len(set(c.values()) - seen), -coords.index(c))))
    return tuple(sorted(out, key=coords.index))


#: the same cover with asynchronous delivery (nightly: ``persistence-async``); CI's short set takes
#: its graceful and its paused-then-killed stop after a backlog (what the mode changes at a stop)
FULL_ASYNC_COORDINATES: tuple[Coordinates, ...] = tuple(replace(c, deliver=Deliver.ASYNC) for c in FULL_COORDINATES)
FULL_ASYNC: tuple[Scenario, ...] = tuple(scenario(c) for c in FULL_ASYNC_COORDINATES)
SHORT_ASYNC: tuple[Scenario, ...] = tuple(scenario(c) for c in (
    next(c for c in FULL_ASYNC_COORDINATES if c.stop is Stop.GRACEFUL and c.reput is Reput.BACKLOG),
    next(c for c in FULL_ASYNC_COORDINATES if c.stop is Stop.PAUSE_KILL and c.reput is not Reput.ONE_AT_A_TIME)))
SHORT: tuple[Scenario, ...] = tuple(scenario(c) for c in _short(FULL_COORDINATES)) + SHORT_ASYNC
