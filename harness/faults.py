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

from adapters.base import AdapterError, ClockFaults, DiskFaults, Lifecycle, NetworkFaults, Pausable, Snapshotting
from adapters.rundir import EventLog
from harness.scenario import FaultStep
from reference.clock import CLOCK, CLOCK_DRIFT, MAX_CLOCK_STEP_MS, Step
from reference.cluster import is_broker
from reference.disk import DISK_ACTIONS, FILL, FREE
from reference.network import LATENCY, LATENCY_END, LOSS, LOSS_END, NET_ACTIONS, NET_END, NET_START, PARTITION, PARTITION_END

#: primitive actions a timed step performs
PRIMITIVES = ("kill", "stop", "start", "pause", "resume", FILL, FREE, *NET_ACTIONS, CLOCK)
#: the first half of a ``slow_start``: start the target and pause it at once, before it is ready
#: (the ``resume`` that ends it waits until the target is ready)
START_PAUSED = "start_paused"


@dataclass(frozen=True)
class TimedFault:
    at_ms: int  # offset from the scenario start
    action: str  # one of PRIMITIVES, or START_PAUSED
    target: str
    step: int | None = None  # index of the scenario's fault step it belongs to
    anchor: str | None = None  # an anchored step: what it was timed from
    anchor_event_ms: int | None = None  # an anchored step: when that happened
    delay_ms: int | None = None  # a latency: the delay it adds
    offset_ms: int | None = None  # a clock step: the broker's clock offset from then on
    loss_percent: int | None = None  # a loss: the share of packets it drops
    rate_permille: int | None = None  # a drift's start (its rate) or end (0): the offset is the one reached

    def event_fields(self) -> dict:
        """The optional ``fault`` event fields that say which step this is and what timed it."""
        out = {"step": self.step, "anchor": self.anchor, "anchor_event_ms": self.anchor_event_ms,
               "delay_ms": self.delay_ms, "offset_ms": self.offset_ms, "loss_percent": self.loss_percent,
               "rate_permille": self.rate_permille}
        return {k: v for k, v in out.items() if v is not None}


def expand_step(s: FaultStep, at_ms: int, step: int | None = None, anchor: str | None = None,
                anchor_event_ms: int | None = None) -> list[TimedFault]:
    """The primitives of one step fired at ``at_ms`` (offset from the scenario start), in order."""
    def tf(offset: int, action: str, clock_offset: int | None = None, rate: int | None = None) -> TimedFault:
        delay = s.delay_ms if action == LATENCY else None
        return TimedFault(at_ms + offset, action, s.target, step, anchor, anchor_event_ms, delay, clock_offset,
                          s.loss_percent if action == LOSS else None, rate)

    if s.action == CLOCK_DRIFT:  # reference.clock: runs fast or slow, then at the true rate from the offset reached
        return [tf(0, CLOCK, rate=s.rate_permille), tf(s.duration_ms, CLOCK, rate=0)]
    if s.action == CLOCK:  # reference.clock: stepped, and stepped back after the duration (0: the heal does)
        return [tf(0, CLOCK, s.offset_ms)] + ([tf(s.duration_ms, CLOCK, 0)] if s.duration_ms else [])
    if s.action in PRIMITIVES and not (s.action in ("pause", FILL, *NET_END) and s.duration_ms):
        return [tf(0, s.action)]
    if s.action == FILL:
        return [tf(0, FILL), tf(s.duration_ms, FREE)]
    if s.action in NET_END:
        return [tf(0, s.action), tf(s.duration_ms, NET_END[s.action])]
    if s.action == "pause":
        return [tf(0, "pause"), tf(s.duration_ms, "resume")]
    if s.action == "restart":
        return [tf(0, "stop"), tf(s.duration_ms, "start")]
    if s.action in ("kill_restart", "outage"):
        return [tf(0, "kill"), tf(s.duration_ms, "start")]
    if s.action == "slow_start":
        return [tf(0, START_PAUSED), tf(s.duration_ms, "resume")]
    raise ValueError(f"fault step {s}: unknown action {s.action!r}")


def expand(steps: tuple[FaultStep, ...]) -> list[TimedFault]:
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

    def __init__(self, system: Lifecycle, log: EventLog):
        self.system = system
        self.log = log
        self.down: set[str] = set()  # stopped or killed
        self.paused: set[str] = set()
        self.starting: set[str] = set()  # started paused (slow_start): ready only after resume
        self.full: set[str] = set()  # stores filled (disk_full), freed by the heal
        self.cut: set[tuple[str, str]] = set()  # (partition/latency, target) in force, ended by the heal
        self.clocked: set[str] = set()  # targets whose clock is stepped, stepped back by the heal
        self.clock_lines: dict[str, Step] = {}  # each moved clock's segment now (reference.clock.Step)
        self.clock_reach_ms = 0  # how far behind the true time a clock of this run has read (store times read earlier)
        #: the delay levels holding entries now (reference.clock.waiting_levels), recorded with a
        #: clock step; None: unknown (the model then lets every level hold what comes after)
        self.waiting_levels: Callable[[], str] | None = None

    def _event(self, action: str, target: str, extra: dict) -> None:
        self.log.write({"type": "fault", "ts_ms": self.system.clock.now_ms(), "action": action, "target": target,
                        **extra})

    def apply(self, action: str, target: str, extra: dict | None = None) -> None:
        """Do ``action`` to ``target``; ``extra``: fields added to its fault events (its step)."""
        sysm, extra = self.system, extra or {}
        if action in ("kill", "stop"):
            if is_broker(target):
                self.snapshot("before_stop")  # the in-memory offsets the stop should persist
            self._event(action, target, extra)  # recorded before: the outage starts when we act
            (sysm.kill if action == "kill" else sysm.stop)(target)
            self.down.add(target)
            self.paused.discard(target)
            self.starting.discard(target)
            if is_broker(target):
                self.snapshot("after_stop")  # what the stop left in delayOffset.json
        elif action == "start":
            self._event("start", target, extra)
            sysm.start(target)
            self._ready(target, extra)
        elif action == START_PAUSED:
            if not isinstance(sysm, Pausable):
                raise AdapterError(f"{type(sysm).__name__} cannot pause {target} while it starts (slow_start)")
            self._event("start", target, extra)
            sysm.start(target)
            self._event("pause", target, extra)
            sysm.pause(target)
            self.down.discard(target)
            self.paused.add(target)
            self.starting.add(target)
        elif action in DISK_ACTIONS:
            if not isinstance(sysm, DiskFaults) or not sysm.can_fault(action, target):
                raise AdapterError(f"{type(sysm).__name__} cannot fill the store of {target} ({action})")
            self._event(action, target, extra)  # recorded before: the broker may notice at once
            (sysm.fill_disk if action == FILL else sysm.free_disk)(target)
            (self.full.add if action == FILL else self.full.discard)(target)
        elif action in NET_ACTIONS:
            if not isinstance(sysm, NetworkFaults) or not sysm.can_fault(action, target):
                raise AdapterError(f"{type(sysm).__name__} cannot act on the network of {target} ({action})")
            self._event(action, target, extra)  # recorded before: the model's periods start no later
            if action == PARTITION:
                sysm.partition(target)
            elif action == LATENCY:
                sysm.add_latency(target, extra["delay_ms"])
            elif action == LOSS:
                sysm.add_loss(target, extra["loss_percent"])
            else:
                {PARTITION_END: sysm.heal_partition, LATENCY_END: sysm.remove_latency, LOSS_END: sysm.remove_loss}[action](target)
            if action in NET_END:
                self.cut.add((action, target))
            else:
                self.cut.discard((NET_START[action], target))
        elif action == CLOCK:
            if not isinstance(sysm, ClockFaults) or not sysm.can_fault(CLOCK_DRIFT if "rate_permille" in extra else CLOCK,
                                                                          target):
                raise AdapterError(f"{type(sysm).__name__} cannot move the clock of {target}")
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
        elif action in ("pause", "resume"):
            if not isinstance(sysm, Pausable):
                raise AdapterError(f"{type(sysm).__name__} cannot {action} {target}")
            self._event(action, target, extra)
            (sysm.pause if action == "pause" else sysm.resume)(target)
            (self.paused.add if action == "pause" else self.paused.discard)(target)
            if action == "resume" and target in self.starting:
                self._ready(target, extra)
        else:
            raise ValueError(f"unknown primitive fault {action!r}")

    def _ready(self, target: str, extra: dict) -> None:
        self.system.wait_ready(target)
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
        """Resume what is paused and start what is down, so every run ends healed."""
        for target in sorted(self.full):
            self.apply(FREE, target)
        for target in sorted(self.clocked):
            self.apply(CLOCK, target, {"offset_ms": 0})
        for action, target in sorted(self.cut):
            self.apply(NET_END[action], target)
        for target in sorted(self.paused):
            self.apply("resume", target)
        for target in sorted(self.down, key=lambda t: 0 if t == "namesrv" else 1):
            self.apply("start", target)


#: the primitive actions each schedulable step performs, heal included (a kill or stop is healed by
#: a start, a pause by a resume)
_STEP_PRIMITIVES = {
    "kill": ("kill", "start"), "stop": ("stop", "start"), "start": ("start",), "pause": ("pause", "resume"),
    "resume": ("resume",), "restart": ("stop", "start"), "kill_restart": ("kill", "start"),
    "outage": ("kill", "start"), "slow_start": ("start", "pause", "resume"), FILL: DISK_ACTIONS,
    CLOCK: (CLOCK,), **{a: (a, end) for a, end in NET_END.items()},
    CLOCK_DRIFT: (CLOCK_DRIFT, CLOCK),  # a drift needs a clock that can run fast or slow; the heal steps
}


def primitives_needed(steps) -> set[tuple[str, str]]:
    """Every (primitive action, target) a scenario's fault steps may perform, healing included:
    what a system driven by user-supplied fault commands must be able to do."""
    return {(p, s.target) for s in steps for p in _STEP_PRIMITIVES[s.action]}
