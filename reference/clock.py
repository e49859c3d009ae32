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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from reference.retry import retry_level

CLOCK = "clock"
#: the primitive fault action that moves the broker's clock (``fault`` events of ``target: broker``)
CLOCK_ACTIONS = (CLOCK,)
#: the largest step a scenario takes: a larger one would outlive the broker's 120 s channel expiry
#: (ClientHousekeepingService) and the name server's broker expiry in the broker's own clock,
#: which this rule does not state
MAX_CLOCK_STEP_MS = 60_000


@dataclass(frozen=True)
class Step:
    """From some moment in ``[ts_ms, settled_ms]`` the broker's clock reads ``offset_ms`` ahead.
    ``waiting_levels``: the delay levels with entries the harness had sent and not yet seen
    delivered at the step (None: unknown, any level may hold entries)."""

    ts_ms: int
    settled_ms: int
    offset_ms: int
    waiting_levels: frozenset[int] | None = None


@dataclass(frozen=True)
class BrokerClock:
    """The broker clock's offset from the true time, a step function (0 before the first step).

    Each step took effect at an unknown moment of its ``[ts_ms, settled_ms]``: every question is
    answered for the two extremes (all steps at ``ts_ms``, all at ``settled_ms``) and the answers
    bound what a correct broker may do."""

    steps: tuple[Step, ...]

    @classmethod
    def from_faults(cls, faults: Iterable[Mapping]) -> "BrokerClock | None":
        """The clock of a run's ``fault`` events; None when no event moved it."""
        steps = sorted((Step(int(f["ts_ms"]), int(f.get("settled_ms") or f["ts_ms"]), int(f.get("offset_ms") or 0),
                             parse_levels(f.get("waiting_levels")))
                        for f in faults if f.get("action") == CLOCK and f.get("target", "broker") == "broker"),
                       key=lambda s: s.ts_ms)
        return cls(tuple(steps)) if steps else None

    # -- one extreme: every step at ts_ms (late=False) or at settled_ms (late=True) ------------
    def _changes(self, late: bool) -> list[tuple[int, int]]:
        return [(s.settled_ms if late else s.ts_ms, s.offset_ms) for s in self.steps]

    def offset_at(self, t_ms: int, late: bool = False) -> int:
        off = 0
        for at, o in self._changes(late):
            if at > t_ms:
                break
            off = o
        return off

    def broker_ms(self, t_ms: int, late: bool = False) -> int:
        return t_ms + self.offset_at(t_ms, late)

    def reached_ms(self, from_ms: int, target_broker_ms: int, late: bool = False) -> int:
        """The first true moment at or after ``from_ms`` at which the broker's clock reads
        ``target_broker_ms`` or later (after the last step the offset is constant: always reached)."""
        changes = [(at, o) for at, o in self._changes(late) if at > from_ms]
        start, off = from_ms, self.offset_at(from_ms, late)
        for at, o in changes:
            if start + off >= target_broker_ms:
                return start
            if target_broker_ms - off < at:
                return target_broker_ms - off
            start, off = at, o
        return max(start, target_broker_ms - off)

    def correction_ms(self, store_ms: int, until_ms: int, late: bool = False) -> int | None:
        """correctDeliverTimestamp: the first step after ``store_ms`` (true) and before
        ``until_ms`` that takes the broker's clock back below the store's broker time: the message
        is due at once there. None if no step does."""
        stored_at = self.broker_ms(store_ms, late)
        for at, o in self._changes(late):
            if store_ms < at <= until_ms and at + o < stored_at:
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
        before = 0
        for step in self.steps:
            back = before - step.offset_ms
            before = step.offset_ms
            waiting = step.waiting_levels is None or level is None or level in step.waiting_levels
            if back > 0 and waiting and step.ts_ms <= stored_hi_ms:
                late.append(step.settled_ms + delay_ms + back)
        return min(early), max(late)

    def deadline_range(self, from_ms: int, deliver_at_broker_ms: int) -> tuple[int, int]:
        """A due time given in the broker's clock (a timer message's deliver time): the earliest
        and latest true moment the broker's clock reads it, over both extremes."""
        reached = [self.reached_ms(from_ms, deliver_at_broker_ms, late) for late in (False, True)]
        return min(reached), max(reached)

    def true_ms(self, broker_ms: int, before_ms: int) -> int:
        """A ``store_ms`` (the broker's clock) as true time: the latest true moment no later than
        ``before_ms`` (when the copy was delivered) at which the broker's clock read it, over both
        extremes (the later one: a copy is never taken as stored earlier than it may have been);
        if no moment fits (a reading inside a step's settling), the reading less the offset in
        force at ``before_ms``, capped at ``before_ms``."""
        best = None
        for late in (False, True):
            bounds = self._changes(late)
            starts = [-(2**62)] + [at for at, _ in bounds]
            offsets = [0] + [o for _, o in bounds]
            ends = [at for at, _ in bounds] + [2**62]
            for lo, off, hi in zip(starts, offsets, ends):
                t = broker_ms - off
                if lo <= t <= hi and t <= before_ms:  # a reading at a step's moment: either side
                    best = t if best is None else max(best, t)
        if best is None:
            best = min(before_ms, broker_ms - self.offset_at(before_ms, True))
        return best


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
    was seen but not the next attempt (level ``reference.retry.retry_level``). As the
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
            if e.get("outcome") == "LATER":
                later.add((e.get("key"), e.get("group"), k + 1))
    levels = {lv for key, lv in sent.items() if (key, 0) not in delivered}
    levels |= {retry_level(k, max_level) for key, group, k in later if (key, group, k) not in delivered}
    return ",".join(str(lv) for lv in sorted(levels))

