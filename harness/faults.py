"""The fault scheduler: turns a scenario's fault steps into timed primitive actions on a system,
records each as a ``fault`` event, and heals whatever is still broken at the end of a run.

Like a Jepsen nemesis package, a compound step (``restart``, ``kill_restart``, ``outage``, a
``pause`` with a duration, ``slow_start``) expands into primitives with their own times, so sends
scheduled during an outage still happen (and fail) while the broker is down, and every run ends
healed. Steps timed from the start are expanded up front (:func:`expand`); a step timed from what
the broker did when its anchor comes (:func:`expand_step`, called by :mod:`harness.anchors`).
Every broker stop is bracketed by ``snapshot`` events (``moment`` ``before_stop``/``after_stop``)
and every start followed by one (``after_ready``), for the white-box offset checks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from hourglass.adapters.base import AdapterError, Lifecycle, Snapshotting
from hourglass.adapters.rundir import EventLog
from hourglass.reference import faults as kinds
from hourglass.reference.clock import CLOCK, CLOCK_DRIFT, MAX_CLOCK_STEP_MS, Step
from hourglass.reference.cluster import is_broker
from hourglass.reference.contract import CONSUMER_TARGET
from hourglass.reference.faults.process import KILL, PAUSE, RESUME, START, START_PAUSED, STOP, STOPPED


@dataclass(frozen=True)
class TimedFault:
    at_ms: int  # offset from the scenario start
    action: str  # a primitive of a fault family (reference.faults)
    target: str
    step: int | None = None  # index of the scenario's fault step it belongs to
    anchor: str | None = None  # an anchored step: what it was timed from
    anchor_event_ms: int | None = None  # an anchored step: when that happened
    fields: tuple[tuple[str, int], ...] = ()  # what its family records of it (a latency's delay_ms...)

    def event_fields(self) -> dict:
        """The optional ``fault`` event fields that say which step this is, what timed it, and
        what its family records of it."""
        out = {"step": self.step, "anchor": self.anchor, "anchor_event_ms": self.anchor_event_ms}
        return {**{k: v for k, v in out.items() if v is not None}, **dict(self.fields)}


def expand_step(s, at_ms: int, step: int | None = None, anchor: str | None = None,
                anchor_event_ms: int | None = None) -> list[TimedFault]:
    """The primitives of one step fired at ``at_ms`` (offset from the scenario start), in order:
    its fault family's expansion (reference.faults)."""
    return [TimedFault(at_ms + offset, action, s.target, step, anchor, anchor_event_ms, tuple(fields.items()))
            for offset, action, fields in kinds.step_kind(s.action).expand(s)]


def expand(steps: tuple) -> list[TimedFault]:
    """Primitive, time-ordered actions for a scenario's steps timed from its start (steps with
    ``after`` are expanded by the runner when their anchor is seen, :mod:`harness.anchors`)."""
    out: list[TimedFault] = []
    for i, s in enumerate(steps):
        if s.after is None:
            out += expand_step(s, s.at_ms, i)
    return sorted(out, key=lambda f: f.at_ms)


class FaultDriver:
    """Applies primitive faults to one system and writes the ``fault`` events, with a ``snapshot``
    of the schedule offsets around each broker stop and after each start (``moment`` says which)."""

    def __init__(self, system: Lifecycle, log: EventLog, consumers: frozenset[str] | None = None):
        self.system = system
        self._consumers = consumers  # on a system other runs share: this run's consumers
        self._members = None
        self.log = log
        self.down: set[str] = set()  # stopped or killed
        self.paused: set[str] = set()
        self.starting: set[str] = set()  # started paused (slow_start): ready only after resume
        self.open: set[tuple[str, str]] = set()  # (primitive, target) of a family's fault in force, undone by the heal
        self.clocked: set[str] = set()  # targets whose clock is stepped, stepped back by the heal
        self.clock_lines: dict[str, Step] = {}  # each moved clock's segment now (reference.clock.Step)
        self.clock_reach_ms = 0  # how far behind the true time a clock of this run has read (store times read earlier)
        #: the delay levels holding entries now (reference.clock.waiting_levels), recorded with a
        #: clock step; None: unknown (the model then lets every level hold what comes after)
        self.waiting_levels: Callable[[], str] | None = None

    @property
    def verbs(self):
        """The fault verbs: the system's, or on a system other runs share, with the target
        ``consumer`` limited to this run's consumers (adapters.parts.PartsSystem.with_members),
        made the first time a fault acts (a run without one never asks the system for it)."""
        if self._consumers is None:
            return self.system
        if self._members is None:
            self._members = self.system.with_members(CONSUMER_TARGET, self._consumers)
        return self._members

    def _event(self, action: str, target: str, extra: dict) -> None:
        self.log.write({"type": "fault", "ts_ms": self.system.clock.now_ms(), "action": action, "target": target,
                        **extra})

    def _able(self, action: str, target: str) -> None:
        why = self.verbs.cannot(action, target)
        if why is not None:
            raise AdapterError(f"{type(self.system).__name__} cannot {action} {target}: {why}")

    def apply(self, action: str, target: str, extra: dict | None = None) -> None:
        """Do ``action`` to ``target``; ``extra``: fields added to its fault events (its step)."""
        extra = extra or {}
        self._able(CLOCK_DRIFT if action == CLOCK and "rate_permille" in extra else action, target)
        if action in (KILL, STOP):
            self._stop(action, target, extra)
        elif action == START:
            self._event(START, target, extra)
            self.verbs.start(target)
            self._ready(target, extra)
        elif action == START_PAUSED:
            self._event(START, target, extra)
            self.verbs.start(target)
            self._event(PAUSE, target, extra)
            self.verbs.pause(target)
            self.down.discard(target)
            self.paused.add(target)
            self.starting.add(target)
        elif action in (PAUSE, RESUME):
            self._event(action, target, extra)
            (self.verbs.pause if action == PAUSE else self.verbs.resume)(target)
            (self.paused.add if action == PAUSE else self.paused.discard)(target)
            if action == RESUME and target in self.starting:
                self._ready(target, extra)
        elif action == CLOCK:
            self._clock(target, extra)
        else:
            self._family_verb(action, target, extra)

    def _stop(self, action: str, target: str, extra: dict) -> None:
        if is_broker(target):
            self.snapshot("before_stop")  # the in-memory offsets the stop should persist
        self._event(action, target, extra)  # recorded before: the outage starts when we act
        (self.verbs.kill if action == KILL else self.verbs.stop)(target)
        if action == STOP:
            self._event(STOPPED, target, extra)  # the shutdown's end: reference.reach
        self.down.add(target)
        self.paused.discard(target)
        self.starting.discard(target)
        if is_broker(target):
            self.snapshot("after_stop")  # what the stop left in delayOffset.json

    def _family_verb(self, action: str, target: str, extra: dict) -> None:
        """A primitive its family maps to a system verb (reference.faults.Primitive): recorded
        before it acts (the model's periods start no later), and remembered until its heal."""
        prim = kinds.primitive(action)
        if prim.verb is None:
            raise ValueError(f"unknown primitive fault {action!r}")
        self._event(action, target, extra)
        self.verbs.perform(action, target, *(extra.get(a, 0) for a in prim.args))
        if prim.heals:
            self.open.add((action, target))
        self.open -= {(a, t) for a, t in self.open if t == target and kinds.primitive(a).heals == action}

    def _clock(self, target: str, extra: dict) -> None:
        sysm = self.system
        now = sysm.clock.now_ms()  # recorded before: the process may take the change at once
        rate = extra.get("rate_permille")  # a drift's start or end: from the offset reached now
        line = self.clock_lines.get(target)
        offset = int(extra["offset_ms"] if rate is None else (line.offset_ms_at(now) if line else 0))
        fields = {**extra, "offset_ms": offset, "settled_ms": now + sysm.clock_settle_ms(target)}
        if self.waiting_levels is not None:
            fields["waiting_levels"] = self.waiting_levels()
        self._event(CLOCK, target, fields)
        if rate is None:
            sysm.set_clock(target, offset)
        else:
            sysm.set_clock_rate(target, offset, int(rate))
        self.clock_lines[target] = Step(now, fields["settled_ms"], offset, rate_permille=int(rate or 0))
        (self.clocked.add if offset or rate else self.clocked.discard)(target)
        # a slow drift reads further back as it goes, at most MAX_CLOCK_STEP_MS (harness.scenario)
        self.clock_reach_ms = max(self.clock_reach_ms, -offset + (MAX_CLOCK_STEP_MS if (rate or 0) < 0 else 0))

    def _ready(self, target: str, extra: dict) -> None:
        self.verbs.wait_ready(target)
        if target == "broker" and self.system.info.details.get("versions"):  # an across-store chain: which one
            extra = {**extra, "version": self.system.broker_version}
        self._event("ready", target, extra)
        self.down.discard(target)
        self.starting.discard(target)
        self.snapshot("after_ready")

    def snapshot(self, moment: str) -> None:
        if isinstance(self.system, Snapshotting):
            for snap in self.system.snapshot():
                self.log.write({"type": "snapshot", "ts_ms": self.system.clock.now_ms(), **snap, "moment": moment})

    def heal(self) -> None:
        """Undo every family's fault still in force (in family order), step moved clocks back,
        resume what is paused and start what is down, so every run ends healed."""
        for action, target in sorted(self.open, key=lambda o: (kinds.family_of(o[0]).rank, o)):
            self.apply(kinds.primitive(action).heals, target)
        for target in sorted(self.clocked):
            self.apply(CLOCK, target, {"offset_ms": 0})
        for target in sorted(self.paused):
            self.apply(RESUME, target)
        for target in sorted(self.down, key=lambda t: 0 if t == "namesrv" else 1):
            self.apply(START, target)
