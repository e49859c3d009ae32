"""Fault steps timed from what the broker did (``FaultStep.after``), resolved while the run goes on.

A step with an anchor fires ``at_ms`` after the ``count``-th anchor event counted from when the
previous fault step of the scenario fired (the first step: from the run's first send). The runner
feeds this module what it observes — the events files it already tails and, where the system can
tell (:class:`adapters.base.OffsetFlushWatching`), when the broker last persisted its schedule
offsets — and asks which armed step's anchor has come:

- ``ready``: the broker's ``ready`` fault events (the fault driver writes them after each start);
- ``reput``: a first-attempt delivery (``reconsume_times`` 0) of a message sent with delay level L
  (clamped; 0 = any level > 0), one per stored copy, at its ``store_ms`` (the schedule service's
  re-put), counted in store order among the copies seen so far;
- ``flush``: each distinct time the broker persisted its schedule offsets;
- ``timer``: a first delivery of a 5.x timer message parked in the wheel (no delay level), one per
  stored copy, at its ``store_ms`` (the timer store's put), in store order;
- ``timer_flush``: each time the broker's timer checkpoint changed (``<store>/config/timercheck``,
  written by TimerFlushService every ``timerFlushIntervalMs``: :class:`adapters.base.TimerCheckpointWatching`),
  at the time the harness saw it change (``ANCHOR_POLL_MS`` late at most);
- ``previous``: the previous step's firing itself (what follows a stop or a pause, when the
  broker does nothing to be timed from).

An anchor is seen only when the runner observes it (a delivery comes a little after its re-put): a
step whose anchor time + ``at_ms`` is already past fires at once. An anchor that has not come when
the longest wait the model expects is over (:meth:`StepPlan.give_up_ms`) never will: the run stops
with :class:`AnchorNeverCame`, is healed, and is judged broken (the scenario did not reach its
state; the broker broke nothing by that).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hourglass.harness.drain import CONSUMER_RECOVERY_MS
from hourglass.harness.faults import TimedFault, expand, expand_step
from hourglass.harness.scenario import FaultAnchor, Scenario
from hourglass.harness.summary import scenario_wait_ms
from hourglass.reference.clock import CLOCK, BrokerClock
from hourglass.reference.stored_copy import stored_copy_key
from hourglass.reference.levels import parse_level_table
from hourglass.reference.profile import FIRST_DELAY_MS, FIRST_FLUSH_DELAY_MS

#: how often the runner looks for an armed step's anchor (its events files, the flush time): a step
#: fires at most this long after its anchor was observable
ANCHOR_POLL_MS = 10


class AnchorNeverCame(RuntimeError):
    """An anchored fault step's anchor did not come within the longest wait the model expects."""


@dataclass
class AnchorWatch:
    """What the runner has observed that anchors count: ready times, re-put copies, flush times."""

    levels: dict[str, int]  # key -> clamped delay level, of the messages sent delayed
    readies: list[int] = field(default_factory=list)
    reputs: dict[tuple, tuple[int, int, str]] = field(default_factory=dict)  # copy -> (store_ms, level, key)
    flushes: set[int] = field(default_factory=set)
    timer_keys: frozenset[str] = frozenset()  # the messages parked in the timer wheel
    timers: dict[tuple, tuple[int, str]] = field(default_factory=dict)  # copy -> (store_ms, key)
    timer_flushes: list[int] = field(default_factory=list)
    timer_checkpoint: object = None  # the last checkpoint seen
    clock: BrokerClock | None = None  # reference.clock: store times read as true times
    clock_steps: list[dict] = field(default_factory=list)  # the clock's steps seen so far

    @classmethod
    def of(cls, scenario: Scenario) -> "AnchorWatch":
        table = parse_level_table(scenario.profile.message_delay_level)
        return cls({m.key: table.clamp(m.delay_level) for m in scenario.messages if m.delay_level > 0},
                   timer_keys=frozenset(m.key for m in scenario.messages if m.is_timer and m.delay_level <= 0))

    def observe(self, events) -> None:
        for e in events:
            t = e.get("type")
            if t == "fault" and e.get("action") == "ready" and e.get("target") == "broker":
                self.readies.append(e["ts_ms"])
            elif t == "fault" and e.get("action") == CLOCK:
                self.clock_steps.append(e)
                self.clock = BrokerClock.from_faults(self.clock_steps)
            elif t == "deliver" and e.get("reconsume_times") == 0 and e.get("key") in self.levels:
                copy = stored_copy_key(e)
                stored = self.clock.true_ms(e["store_ms"], e["ts_ms"]) if self.clock is not None else e["store_ms"]
                self.reputs.setdefault(copy, (stored, self.levels[e["key"]], e["key"]))
            elif t == "deliver" and e.get("reconsume_times") == 0 and e.get("key") in self.timer_keys:
                stored = self.clock.true_ms(e["store_ms"], e["ts_ms"]) if self.clock is not None else e["store_ms"]
                self.timers.setdefault(stored_copy_key(e), (stored, e["key"]))

    def observe_flush(self, flush_ms: int | None) -> None:
        if flush_ms is not None:
            self.flushes.add(flush_ms)

    def observe_timer_checkpoint(self, checkpoint, seen_ms: int) -> None:
        """The timer checkpoint as read at ``seen_ms``: a change from the last one read is a flush."""
        if checkpoint is not None and checkpoint != self.timer_checkpoint:
            if self.timer_checkpoint is not None:
                self.timer_flushes.append(seen_ms)
            self.timer_checkpoint = checkpoint

    def _seen(self, after: FaultAnchor, since_ms: int) -> list[tuple[int, str]]:
        """The anchor events after ``since_ms`` in time order, each with what it was."""
        if after.event == "ready":
            return [(t, "") for t in sorted(self.readies) if t > since_ms]
        if after.event == "flush":
            return [(t, "") for t in sorted(self.flushes) if t > since_ms]
        if after.event == "timer_flush":
            return [(t, "") for t in self.timer_flushes if t > since_ms]
        if after.event == "timer":
            return [(ms, f" (key {key})") for ms, key in sorted(self.timers.values()) if ms > since_ms]
        if after.event == "previous":  # the previous step's firing itself (since_ms)
            return [(since_ms, "")]
        if after.event == "reput":
            return [(ms, f" (key {key})") for ms, level, key in sorted(self.reputs.values())
                    if ms > since_ms and (after.level == 0 or level == after.level)]
        raise ValueError(f"unknown anchor event {after.event!r}")

    def resolve(self, after: FaultAnchor, since_ms: int) -> tuple[int, str] | None:
        """``(when, text)`` of the ``count``-th anchor event after ``since_ms``, if it has come."""
        seen = self._seen(after, since_ms)
        if len(seen) < after.count:
            return None
        ts, what = seen[after.count - 1]
        return ts, f"{describe(after)} at {ts}{what}"

    def progress(self, after: FaultAnchor, since_ms: int) -> str:
        return f"{len(self._seen(after, since_ms))} of {after.count} seen after {since_ms}"


def describe(after: FaultAnchor) -> str:
    """``reput level 3 #2``, ``reput any level #1``, ``flush #1``, ``ready #1``."""
    if after.event == "reput":
        return f"reput {'any level' if after.level == 0 else f'level {after.level}'} #{after.count}"
    return f"{after.event} #{after.count}"


class StepPlan:
    """The scenario's fault steps as the run goes: the primitives of the steps timed from the start,
    which anchored steps are armed (their previous step fired), when each step fired and finished,
    and the primitives of an anchored step once its anchor has come."""

    def __init__(self, scenario: Scenario, t0: int):
        self.scenario = scenario
        self.t0 = t0
        self.steps = scenario.faults
        self.watch = AnchorWatch.of(scenario)
        self.first_send_ms: int | None = None
        self.fired: dict[int, int] = {}
        self.done: dict[int, int] = {}
        self._left: dict[int, int] = {}
        self.resolved: set[int] = set()
        self._wait_ms = t0 + scenario_wait_ms(scenario)
        self._table = parse_level_table(scenario.profile.message_delay_level)
        for f in expand(self.steps):
            self._left[f.step] = self._left.get(f.step, 0) + 1

    @property
    def anchored(self) -> list[int]:
        return [i for i, s in enumerate(self.steps) if s.after is not None]

    def needs_flushes(self) -> bool:
        return any(self.steps[i].after.event == "flush" for i in self.armed())

    def needs_timer_checkpoints(self) -> bool:
        """A timer_flush anchor is armed, or may be next (a change is seen only against an earlier read)."""
        return any(f.after is not None and f.after.event == "timer_flush" for f in self.steps) and bool(self.waiting())

    def absolute(self) -> list[TimedFault]:
        return expand(self.steps)

    def waiting(self) -> bool:
        return any(i not in self.resolved for i in self.anchored)

    def since_ms(self, i: int) -> int | None:
        """When step ``i``'s anchor events start counting (the previous step fired), if it has."""
        return self.first_send_ms if i == 0 else self.fired.get(i - 1)

    def armed(self) -> list[int]:
        return [i for i in self.anchored if i not in self.resolved and self.since_ms(i) is not None]

    # --- bookkeeping of the primitives as the runner applies them ---------------------------
    def sent(self, now_ms: int) -> None:
        if self.first_send_ms is None:
            self.first_send_ms = now_ms

    def firing(self, f: TimedFault, now_ms: int) -> None:
        if f.step is not None:
            self.fired.setdefault(f.step, now_ms)

    def finished(self, f: TimedFault, now_ms: int) -> None:
        if f.step is not None:
            self._left[f.step] -= 1
            if self._left[f.step] == 0:
                self.done[f.step] = now_ms

    # --- anchors ------------------------------------------------------------------------------
    def resolve(self) -> list[TimedFault]:
        """The primitives of every armed step whose anchor has come (offsets from the start)."""
        out = []
        for i in self.armed():
            step = self.steps[i]
            found = self.watch.resolve(step.after, self.since_ms(i))
            if found is None:
                continue
            anchor_ms, text = found
            self.resolved.add(i)
            prims = expand_step(step, anchor_ms + step.at_ms - self.t0, i, text, anchor_ms)
            self._left[i] = len(prims)
            out += prims
        return out

    def patience_ms(self, after: FaultAnchor) -> int:
        """How long after the previous step finished its anchor may still come: a re-put needs
        the schedule service's first pass and the level's delay, and consumers back after a
        restart; a flush the first flush after a start and ``count`` intervals; a ready nothing
        (only the scenario's own starts make one)."""
        if after.event == "reput":
            levels = [after.level] if after.level else range(1, self._table.max_level + 1)
            return FIRST_DELAY_MS + max(self._table.delay_ms(lv) for lv in levels) + CONSUMER_RECOVERY_MS
        if after.event == "flush":
            return FIRST_FLUSH_DELAY_MS + after.count * self.scenario.profile.flush_delay_offset_interval_ms
        if after.event == "timer_flush":
            return (after.count + 1) * self.scenario.profile.timer_flush_interval_ms + CONSUMER_RECOVERY_MS
        if after.event == "timer":
            return FIRST_DELAY_MS + self.scenario.profile.timer_precision_ms + CONSUMER_RECOVERY_MS
        return 0

    def give_up_ms(self, i: int) -> int | None:
        """When step ``i``'s anchor will not come any more: the scenario's last send + the longest
        wait the model expects (``scenario_wait_ms``), and not before the previous step finished
        + the anchor's own :meth:`patience_ms`; plus ``slack_ms``. None while the previous step
        is still going on (its start not yet ready)."""
        prev_done = self.first_send_ms if i == 0 else self.done.get(i - 1)
        if prev_done is None:
            return None
        return max(self._wait_ms, prev_done + self.patience_ms(self.steps[i].after)) + self.scenario.profile.slack_ms

    def check_overdue(self, now_ms: int) -> None:
        for i in self.armed():
            limit = self.give_up_ms(i)
            if limit is not None and now_ms > limit:
                step = self.steps[i]
                raise AnchorNeverCame(
                    f"fault step {i} ({step.action} of {step.target}, {step.at_ms} ms after {describe(step.after)}): "
                    f"its anchor never came ({self.watch.progress(step.after, self.since_ms(i))}; gave up at {limit}, "
                    f"the scenario's longest expected wait)")
