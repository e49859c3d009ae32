"""The broker's clock when a scenario moves it: what a correct broker does with delayed messages
when its wall clock steps forward or back (the ``clock`` fault events of ``target: broker``).

A ``clock`` event says that from ``ts_ms`` (the harness's true clock) the broker's wall clock reads
``offset_ms`` ahead of the true time (negative: behind); the change reached the broker at some
moment in ``[ts_ms, settled_ms]`` (the clock control is read by the broker's process with a
delay). The harness's own clock, the producers' and the consumers' stay true.

The rule, method by method (4.9.3+ and 5.x: the schedule service's tasks run on a
ScheduledExecutorService, which waits on the monotonic clock, so a step of the wall clock does not
stall them; only the due test below reads the wall clock):

- ScheduleMessageService.computeDeliverTimestamp: a delayed message stored at broker time ``S``
  carries its due time ``S + delay`` (the schedule queue's tags code), both in the broker's clock.
- DeliverDelayedMessageTimerTask.executeOnTimeup (every 100 ms per level, in queue order): the
  head is re-put once the broker's clock reads its due time, ``now >= S + delay``
  (:func:`BrokerClock.reached_ms`). A step forward of ``F`` re-puts what was waiting up to ``F``
  early in true time; a step back of ``J`` re-puts it up to ``J`` late.
- DeliverDelayedMessageTimerTask.correctDeliverTimestamp (``reference.windows.corrected_deliver_ms``):
  a due time more than one level's delay ahead of ``now`` is corrected to ``now``. After a step
  back below ``S`` (``now < S``), the message is due at once: early in true time
  (:meth:`BrokerClock.correction_ms`).
- The level queue is re-put in order, and the test stops at the first entry not due, so the
  correction reaches the head only: an entry stored within ``J`` before the step waits behind an
  older head that is ``J`` late (seen on 4.9.7: a 10 s message stored 2 s before a 5 s step back
  came 5 s late, behind one stored 6 s before). An entry stored after ``T`` carries a smaller due
  time than those stored before ``T``, and waits behind them: up to ``T + delay + J``, in the
  levels that held entries at the step (the ``waiting_levels`` the harness records with the step:
  sent or retried, not yet delivered; unknown: every level). A level without waiting entries
  re-puts what is stored after the step on time: a schedule service that stalls there (4.9.0–4.9.2,
  ``java.util.Timer``: every level waits ``J``) is late.
- ``store_ms`` of every stored copy is the broker's clock. The judges compare it with windows in
  true time, so a run with clock events has its ``store_ms`` mapped back to true time
  (:meth:`BrokerClock.true_ms`): the latest true moment, no later than the copy was delivered, at
  which the broker's clock could read it. After a step back of ``J`` the clock reads some times
  twice, ``J`` apart; the later one is right as long as deliveries come less than ``J`` after
  their store, so a scenario does not combine a step back with a fault that holds deliveries
  back (a process down or frozen, a partition: ``harness.scenario`` refuses it).

Timer messages (5.x TimerMessageStore): their deliver time is in the broker's clock too (seen on
5.5.0: 30 s late after a 30 s step back, at once after a step ahead).

A drift (the ``clock_drift`` step, issue 13): for a while the broker's clock runs at ``1 + r`` times
the true rate (``rate_permille`` = 1000·r, ``|r| <= MAX_CLOCK_RATE_PERMILLE / 1000``, so the
clock stays increasing), then at the true rate again. The clock is then piecewise linear: each
``clock`` event starts a segment whose offset is ``offset_ms + r·(t - ts_ms)`` (a step is a segment
of rate 0 that starts with a jump; a drift's start and end are continuous). The same rule applies,
read on a monotone clock: DeliverDelayedMessageTimerTask.executeOnTimeup re-puts the head once
``System.currentTimeMillis() >= S + delay``, so a fast clock re-puts early in true time (by
``delay·r/(1+r)`` when the whole wait drifts) and a slow one late; correctDeliverTimestamp never
fires while the clock only runs fast or slow (it never reads below ``S``), and nothing is held
behind a level's head (due times stay in store order). ``store_ms`` maps back to true time
uniquely (:meth:`BrokerClock.true_ms`). Timer messages likewise wait on the broker's clock
(TimerMessageStore's dequeue compares with ``System.currentTimeMillis``). The heal at a run's end
steps the clock back to true (offset 0): after a drift that is a ``clock`` step with its rules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from hourglass.reference.faults.clock import (  # noqa: F401 (the family owns the names)
    CLOCK, CLOCK_DRIFT, CLOCK_STEP_ACTIONS, MAX_CLOCK_RATE_PERMILLE, MAX_CLOCK_STEP_MS)
from hourglass.reference.retry import asked_retry_level, clamped_level

#: the primitive fault action that moves the broker's clock (``fault`` events of ``target: broker``)
CLOCK_ACTIONS = (CLOCK,)
#: how far off a drift's line a real broker's clock may start: libfaketime counts a speed from the
#: process's start, which the harness knows to the clock tick (adapters.rocketmq.brokerclock:
#: 10 ms), so the clock may read up to ``|r|`` times that off the recorded line
DRIFT_ANCHOR_MS = 10


@dataclass(frozen=True)
class Step:
    """From some moment in ``[ts_ms, settled_ms]`` the broker's clock reads ``offset_ms`` ahead.
    ``waiting_levels``: the delay levels with entries the harness had sent and not yet seen
    delivered at the step (None: unknown, any level may hold entries)."""

    ts_ms: int
    settled_ms: int
    offset_ms: int
    waiting_levels: frozenset[int] | None = None
    rate_permille: int = 0  # a drift: from ts_ms the offset grows by this much per 1000 ms (0: a step)

    def offset_ms_at(self, t_ms: int) -> int:
        """The offset of the segment this change starts, at true ``t_ms`` (anchored at ``ts_ms``:
        the harness writes the change so the clock is continuous there)."""
        return self.offset_ms + (self.rate_permille * (t_ms - self.ts_ms)) // 1000

    def reading_slack_ms(self) -> int:
        """How far in true time a due moment, and a store time read back, may lie off this
        segment's line (:data:`DRIFT_ANCHOR_MS`, each way; 0 for a step), plus the clock's
        millisecond."""
        r = self.rate_permille
        return 0 if not r else 2 * (-(-abs(r) * DRIFT_ANCHOR_MS // (1000 + r))) + 2

    def true_of(self, broker_ms: int) -> int:
        """The latest true millisecond at which this segment's line reads ``broker_ms`` or less
        (the inverse of ``t + offset_ms_at(t)``; exact for a step)."""
        if not self.rate_permille:
            return broker_ms - self.offset_ms
        t = (1000 * (broker_ms - self.offset_ms) + self.rate_permille * self.ts_ms) // (1000 + self.rate_permille)
        while t + 1 + self.offset_ms_at(t + 1) <= broker_ms:
            t += 1
        while t + self.offset_ms_at(t) > broker_ms:
            t -= 1
        return t


@dataclass(frozen=True)
class BrokerClock:
    """The broker clock's offset from the true time, piecewise linear (0 before the first change):
    each change starts a segment, a step (rate 0) or a drift (:meth:`Step.offset_ms_at`).

    Each change took effect at an unknown moment of its ``[ts_ms, settled_ms]``: every question is
    answered for the two extremes (all changes at ``ts_ms``, all at ``settled_ms``; until then the
    previous segment runs on) and the answers bound what a correct broker may do."""

    steps: tuple[Step, ...]

    @classmethod
    def from_faults(cls, faults: Iterable[Mapping]) -> "BrokerClock | None":
        """The clock of a run's ``fault`` events; None when no event moved it."""
        steps = sorted((Step(int(f["ts_ms"]), int(f.get("settled_ms") or f["ts_ms"]), int(f.get("offset_ms") or 0),
                             parse_levels(f.get("waiting_levels")), int(f.get("rate_permille") or 0))
                        for f in faults if f.get("action") == CLOCK and f.get("target", "broker") == "broker"),
                       key=lambda s: s.ts_ms)
        return cls(tuple(steps)) if steps else None

    # -- one extreme: every change at ts_ms (late=False) or at settled_ms (late=True) ----------
    def _segments(self, late: bool) -> list[tuple[int, int, Step | None]]:
        """``(start, end, change)``: from ``start`` (inclusive) to ``end`` the clock follows
        ``change``'s line (None: true, before the first change)."""
        out, start, current = [], -(2**62), None
        for s in self.steps:
            at = s.settled_ms if late else s.ts_ms
            out.append((start, at, current))
            start, current = at, s
        out.append((start, 2**62, current))
        return out

    def _changes(self, late: bool) -> list[int]:
        return [s.settled_ms if late else s.ts_ms for s in self.steps]

    def offset_at(self, t_ms: int, late: bool = False) -> int:
        for start, end, change in self._segments(late):
            if start <= t_ms < end:
                return change.offset_ms_at(t_ms) if change else 0
        return 0

    def broker_ms(self, t_ms: int, late: bool = False) -> int:
        return t_ms + self.offset_at(t_ms, late)

    def reached_ms(self, from_ms: int, target_broker_ms: int, late: bool = False) -> int:
        """The first true moment at or after ``from_ms`` at which the broker's clock reads
        ``target_broker_ms`` or later (the last segment increases: always reached)."""
        for start, end, change in self._segments(late):
            if end <= from_ms:
                continue
            start = max(start, from_ms)
            line = (lambda t, c=change: t + c.offset_ms_at(t)) if change else (lambda t: t)
            if line(start) >= target_broker_ms:
                return start
            t = max(start, change.true_of(target_broker_ms) if change else target_broker_ms)
            while t > start and line(t - 1) >= target_broker_ms:  # the line's rounding: to the millisecond
                t -= 1
            while line(t) < target_broker_ms:
                t += 1
            if t < end:
                return t
        raise AssertionError("the last segment increases")  # pragma: no cover

    def correction_ms(self, store_ms: int, until_ms: int, late: bool = False) -> int | None:
        """correctDeliverTimestamp: the first change after ``store_ms`` (true) and before
        ``until_ms`` that takes the broker's clock back below the store's broker time: the message
        is due at once there. None if none does (a drift alone never does: the clock increases)."""
        stored_at = self.broker_ms(store_ms, late)
        for at in self._changes(late):
            if store_ms < at <= until_ms and self.broker_ms(at, late) < stored_at:
                return at
        return None

    # -- the windows ---------------------------------------------------------------------------
    def due_range(self, stored_lo_ms: int, stored_hi_ms: int, delay_ms: int, level: int | None = None) -> tuple[int, int]:
        """A delayed message of ``level`` stored (true time) somewhere in ``[stored_lo_ms,
        stored_hi_ms]`` with ``delay_ms``: the earliest and the latest true moment a correct broker
        re-puts it (before slack and outages), over both extremes of every step."""
        early, late = [], []
        for extreme in (False, True):
            for stored in (stored_lo_ms, stored_hi_ms):
                due = self.reached_ms(stored, self.broker_ms(stored, extreme) + delay_ms, extreme)
                late.append(due)
                corrected = self.correction_ms(stored, due, extreme)
                early.append(min(due, corrected) if corrected is not None else due)
        # the level queue is re-put in order: after a step back of J at T, the entries of the level
        # waiting at T are due by T + delay + J and hold those stored after T
        before: Step | None = None
        for step in self.steps:
            back = (before.offset_ms_at(step.ts_ms) if before else 0) - step.offset_ms  # the jump back at the change
            before = step
            waiting = step.waiting_levels is None or level is None or level in step.waiting_levels
            if back > 0 and waiting and step.ts_ms <= stored_hi_ms:
                late.append(step.settled_ms + delay_ms + back)
        slack = self.reading_slack_ms()
        return min(early) - slack, max(late) + slack

    def deadline_range(self, from_ms: int, deliver_at_broker_ms: int) -> tuple[int, int]:
        """A due time given in the broker's clock (a timer message's deliver time): the earliest
        and latest true moment the broker's clock reads it, over both extremes."""
        reached = [self.reached_ms(from_ms, deliver_at_broker_ms, late) for late in (False, True)]
        slack = self.reading_slack_ms()
        return min(reached) - slack, max(reached) + slack

    def reading_slack_ms(self) -> int:
        """The largest :meth:`Step.reading_slack_ms` of this clock's drifts (0 without one)."""
        return max((s.reading_slack_ms() for s in self.steps), default=0)

    def true_ms(self, broker_ms: int, before_ms: int) -> int:
        """A ``store_ms`` (the broker's clock) as true time: the latest true moment no later than
        ``before_ms`` (when the copy was delivered) at which the broker's clock read it, over both
        extremes (the later one: a copy is never taken as stored earlier than it may have been);
        if no moment fits (a reading inside a change's settling), the reading less the offset in
        force at ``before_ms``, capped at ``before_ms``. Within a drift the clock increases, so
        each segment reads a time at one moment (:meth:`Step.true_of`)."""
        fits = self.true_candidates(broker_ms, before_ms)
        return max(fits) if fits else min(before_ms, broker_ms - self.offset_at(before_ms, True))

    def true_candidates(self, broker_ms: int, before_ms: int) -> list[int]:
        """Every true moment no later than ``before_ms`` at which the broker's clock read
        ``broker_ms`` (a step back makes a reading come twice: :meth:`true_ms` takes the later, so
        nothing is judged early; an ON_TIME judgement of such a reading takes the earlier, so nothing
        is judged late on a guess)."""
        out = []
        for late in (False, True):
            for lo, hi, change in self._segments(late):
                t = change.true_of(broker_ms) if change else broker_ms
                if lo <= t <= hi and t <= before_ms:  # a reading at a change's moment: either side
                    out.append(t)
        return out

    def earliest_true_ms(self, true_ms: int, before_ms: int, not_before_ms: int | None = None) -> int:
        """The earliest moment the broker's reading at ``true_ms`` (as :meth:`true_ms` chose it) may
        have been taken at, not before ``not_before_ms`` (when the copy could first have been stored:
        its send, its due time); itself when the reading is not ambiguous."""
        fits = [t for t in self.true_candidates(self.broker_ms(true_ms, True), before_ms)
                if not_before_ms is None or t >= not_before_ms]
        return min([true_ms] + fits)


def on_true_clock(events: list[Mapping]) -> list[Mapping]:
    """``events`` with every ``deliver`` and ``dlq`` ``store_ms`` as true time
    (:meth:`BrokerClock.true_ms`, before the event's own ``ts_ms``) when a ``clock`` event moved
    the broker's clock; the same list otherwise."""
    clock = BrokerClock.from_faults(e for e in events if e.get("type") == "fault")
    if clock is None:
        return events
    return [dict(e, store_ms=clock.true_ms(e["store_ms"], e["ts_ms"]))
            if e.get("type") in ("deliver", "dlq") and e.get("store_ms") is not None else e for e in events]


def parse_levels(text: str | None) -> frozenset[int] | None:
    """``waiting_levels`` of a ``clock`` event ("3,8,9"; "" none) as a set; None when absent."""
    if text is None:
        return None
    return frozenset(int(x) for x in str(text).split(",") if x.strip())


def waiting_levels(events: Iterable[Mapping], max_level: int, clamp) -> str:
    """The delay levels that may hold entries now, from what the harness has seen: messages sent
    with a level (``clamp``: the table's clamping) not yet delivered, and retries whose ``LATER``
    was seen but not the next attempt (level ``reference.retry.asked_retry_level``, clamped). As the
    ``waiting_levels`` of a ``clock`` event ("3,8")."""
    sent: dict[str, int] = {}
    delivered: set[tuple] = set()
    later: set[tuple] = set()
    for e in events:
        t = e.get("type")
        if t == "send" and (e.get("delay_level") or 0) > 0 and e.get("status") in ("SEND_OK", "UNKNOWN"):
            sent[e["key"]] = clamp(e["delay_level"])
        elif t == "deliver":
            k = int(e.get("reconsume_times") or 0)
            delivered.add((e.get("key"), e.get("group"), k))
            delivered.add((e.get("key"), k))
            asked = int(e.get("next_level") or 0)  # the level the consumer asked for; < 0: the DLQ, no level
            if e.get("outcome") == "LATER" and asked >= 0:
                later.add((e.get("key"), e.get("group"), k + 1, asked))
    levels = {lv for key, lv in sent.items() if (key, 0) not in delivered}
    levels |= {clamped_level(asked_retry_level(k, asked), max_level)
               for key, group, k, asked in later if (key, group, k) not in delivered}
    return ",".join(str(lv) for lv in sorted(levels))

