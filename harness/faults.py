"""The fault scheduler: turns a scenario's fault steps into timed primitive actions on a system,
records each as a ``fault`` event, and heals whatever is still broken at the end of a run.

Like a Jepsen nemesis package, a compound step (``restart``, ``kill_restart``, ``outage``, a
``pause`` with a duration) expands into primitives with their own times, so sends scheduled
during an outage still happen (and fail) while the broker is down, and every run ends healed.
"""

from __future__ import annotations

from dataclasses import dataclass

from adapters.base import AdapterError, Lifecycle, Pausable, Snapshotting
from adapters.rundir import EventLog
from harness.scenario import FaultStep

#: primitive actions a timed step performs
PRIMITIVES = ("kill", "stop", "start", "pause", "resume")


@dataclass(frozen=True)
class TimedFault:
    at_ms: int  # offset from the scenario start
    action: str  # one of PRIMITIVES
    target: str


def expand(steps: tuple[FaultStep, ...]) -> list[TimedFault]:
    """Primitive, time-ordered actions for a scenario's fault steps."""
    out: list[TimedFault] = []
    for s in steps:
        if s.action in PRIMITIVES and not (s.action == "pause" and s.duration_ms):
            out.append(TimedFault(s.at_ms, s.action, s.target))
        elif s.action == "pause":
            out += [TimedFault(s.at_ms, "pause", s.target), TimedFault(s.at_ms + s.duration_ms, "resume", s.target)]
        elif s.action == "restart":
            out += [TimedFault(s.at_ms, "stop", s.target), TimedFault(s.at_ms + s.duration_ms, "start", s.target)]
        elif s.action in ("kill_restart", "outage"):
            out += [TimedFault(s.at_ms, "kill", s.target), TimedFault(s.at_ms + s.duration_ms, "start", s.target)]
        else:
            raise ValueError(f"fault step {s}: unknown action {s.action!r}")
    return sorted(out, key=lambda f: f.at_ms)


class FaultDriver:
    """Applies primitive faults to one system and writes the ``fault`` events."""

    def __init__(self, system: Lifecycle, log: EventLog):
        self.system = system
        self.log = log
        self.down: set[str] = set()  # stopped or killed
        self.paused: set[str] = set()

    def _event(self, action: str, target: str) -> None:
        self.log.write({"type": "fault", "ts_ms": self.system.clock.now_ms(), "action": action, "target": target})

    def apply(self, action: str, target: str) -> None:
        sysm = self.system
        if action in ("kill", "stop"):
            if target == "broker":
                self.snapshot("before_stop")  # the in-memory offsets the stop should persist
            self._event(action, target)  # recorded before: the outage starts when we act
            (sysm.kill if action == "kill" else sysm.stop)(target)
            self.down.add(target)
            if target == "broker":
                self.snapshot("after_stop")  # what the stop left in delayOffset.json
        elif action == "start":
            self._event("start", target)
            sysm.start(target)
            sysm.wait_ready(target)
            self._event("ready", target)
            self.down.discard(target)
            self.snapshot("after_ready")
        elif action in ("pause", "resume"):
            if not isinstance(sysm, Pausable):
                raise AdapterError(f"{type(sysm).__name__} cannot {action} {target}")
            self._event(action, target)
            (sysm.pause if action == "pause" else sysm.resume)(target)
            (self.paused.add if action == "pause" else self.paused.discard)(target)
        else:
            raise ValueError(f"unknown primitive fault {action!r}")

    def snapshot(self, moment: str) -> None:
        if isinstance(self.system, Snapshotting):
            for snap in self.system.snapshot():
                self.log.write({"type": "snapshot", "ts_ms": self.system.clock.now_ms(), **snap, "moment": moment})

    def heal(self) -> None:
        """Resume what is paused and start what is down, so every run ends healed."""
        for target in sorted(self.paused):
            self.apply("resume", target)
        for target in sorted(self.down, key=lambda t: 0 if t == "namesrv" else 1):
            self.apply("start", target)
