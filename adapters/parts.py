"""Fault targets resolved once: each part of a system (a broker, its second broker, the name
server, the consumers) is an object with verbs of its own, as openchaos's ``ChaosNode`` and
kafkatest's ``broker_node(...)``. A system keeps its parts by target and its public verbs
(``kill(target)``, ``fill_disk(target)``, ...: the protocols of :mod:`adapters.base`) look the
target up once and hand over to the part; no verb switches on a target's name.

A system answers one question about faults, :meth:`PartsSystem.cannot`: None when it can perform
the primitive fault ``action`` on ``target`` now, else why not, in words.
"""

from __future__ import annotations

from hourglass.adapters.base import AdapterError
from hourglass.reference import faults as kinds
from hourglass.reference.clock import CLOCK, CLOCK_DRIFT
from hourglass.reference.contract import BROKER_TARGETS
from hourglass.reference.faults.process import KILL, PAUSE, RESUME, START, START_PAUSED, STOP

#: the primitive faults on a part's process (``harness.faults``), in the order error messages name them
PROCESS_ACTIONS = (START, STOP, KILL, PAUSE, RESUME)
#: why a part other than the (first) broker refuses the machine faults (``reference.cluster``)
BROKER_ONLY = "a full store, a cut network and a moved clock are the first broker's only"
DRIFT = "make the clock of {target} drift"


def faculties(**by_family) -> dict[str, object]:
    """A part's faculties by action: for each fault family named (``disk=store``, ``network=net``,
    ``clock=clock``: :mod:`reference.faults`), the object that performs its primitives — a method
    named after each primitive's verb, and ``cannot(action)`` (each one left out where it is None)."""
    out: dict[str, object] = {}
    for family in kinds.families():
        faculty = by_family.get(family.name)
        if faculty is not None:
            out.update(dict.fromkeys(kinds.family_actions(family), faculty))
    return out


class Part:
    """One fault target. Its process verbs do nothing here; its machine faults are those of its
    ``faculties`` (by action: a store, a network, a clock of its own, each with ``cannot(action)``
    and the verbs of its kind), and the others are refused with :meth:`cannot`'s reason."""

    #: how long after a clock step the part's process may still read the old clock
    settle_ms = 0

    def __init__(self, target: str, faculties: dict[str, object] | None = None):
        self.target = target
        self.faculties = faculties or {}

    def cannot(self, action: str) -> str | None:
        """None when this part takes ``action`` now, else why not."""
        if action in PROCESS_ACTIONS:
            return None
        faculty = self.faculties.get(action)
        if faculty is not None:
            return faculty.cannot(action)
        if self.target == BROKER_TARGETS[0]:  # the first broker: this system has no such faculty at all
            return f"this system performs no {kinds.family_of(action).name} fault ({action}) on {self.target}"
        return BROKER_ONLY

    def start(self) -> None: ...

    def stop(self) -> None: ...

    def kill(self) -> None: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def wait_ready(self, timeout_s: float) -> None: ...

    def able(self, action: str, doing: str):
        """The faculty that performs ``action``; AdapterError("cannot <doing>: <reason>") if none can."""
        why = self.cannot(action)
        if why:
            raise AdapterError(f"cannot {doing.format(target=self.target)}: {why}")
        return self.faculties[action]

    def perform(self, action: str, *args) -> None:
        """A fault family's primitive ``action`` (reference.faults: its verb, with ``args``) by the
        faculty that performs it. An undoing (``disk_free``, ``partition_end``...) is left to the
        faculty, which undoes only what it did; on a part without one it does nothing."""
        verb = kinds.primitive(action).verb
        if action in kinds.heal_actions():
            faculty = self.faculties.get(action)
            if faculty is not None:
                getattr(faculty, verb)(*args)
            return
        getattr(self.able(action, f"{action} {{target}}"), verb)(*args)

    def only(self, names: frozenset[str]) -> "Part":
        """This target limited to its members ``names`` (a run's own consumers on a shared system:
        ``harness.batch``), for the process verbs; a part without members refuses."""
        raise AdapterError(f"{self.target} has no members a fault could act on apart")

    def set_clock(self, offset_ms: int) -> None:
        self.able(CLOCK, "step the clock of {target}").set(offset_ms)

    def set_clock_rate(self, offset_ms: int, rate_permille: int) -> None:
        self.able(CLOCK_DRIFT, DRIFT).set_rate(offset_ms, rate_permille)

    def clock_settle_ms(self) -> int:
        return self.settle_ms


class PartsSystem:
    """The public fault verbs of a system, each one lookup of its target in ``parts`` and a call on
    the part found. A subclass fills ``parts`` and says which targets it has in :meth:`unknown`."""

    parts: dict[str, Part]

    def unknown(self, target: str) -> str:
        return f"unknown target {target!r}: expected one of {', '.join(self.parts)}"

    def part(self, target: str) -> Part:
        found = self.parts.get(target)
        if found is None:
            raise AdapterError(self.unknown(target))
        return found

    def cannot(self, action: str, target: str) -> str | None:
        """None when the system can perform the primitive fault ``action`` on ``target`` now, else
        the reason in words."""
        if action not in kinds.asked_actions():
            return f"{action!r} is no primitive fault: expected one of {', '.join(kinds.asked_actions())}"
        found = self.parts.get(target)
        if found is None:
            return self.unknown(target)
        if action == START_PAUSED:
            return found.cannot("start") or found.cannot("pause")
        return found.cannot(action)

    def start(self, target: str) -> None:
        self.part(target).start()

    def stop(self, target: str) -> None:
        self.part(target).stop()

    def kill(self, target: str) -> None:
        self.part(target).kill()

    def pause(self, target: str) -> None:
        self.part(target).pause()

    def resume(self, target: str) -> None:
        self.part(target).resume()

    def wait_ready(self, target: str, timeout_s: float = 120.0) -> None:
        self.part(target).wait_ready(timeout_s)

    def perform(self, action: str, target: str, *args) -> None:
        """A fault family's primitive ``action`` on ``target`` (reference.faults.Primitive)."""
        self.part(target).perform(action, *args)

    def set_clock(self, target: str, offset_ms: int) -> None:
        self.part(target).set_clock(offset_ms)

    def with_members(self, target: str, names: frozenset[str]) -> "PartsSystem":
        """The fault verbs of this system with ``target`` limited to its members ``names``
        (:meth:`Part.only`): a run's consumer faults on a system other runs share act on that run's
        consumers only. Everything else is this system's."""
        return _WithMembers(self, target, self.part(target).only(names))

    def set_clock_rate(self, target: str, offset_ms: int, rate_permille: int) -> None:
        self.part(target).set_clock_rate(offset_ms, rate_permille)

    def clock_settle_ms(self, target: str) -> int:
        return self.part(target).clock_settle_ms()


class _WithMembers(PartsSystem):
    """:meth:`PartsSystem.with_members`: its parts are the system's, one replaced by its members."""

    def __init__(self, system: PartsSystem, target: str, members: Part):
        self._system = system
        self.parts = {**system.parts, target: members}

    def unknown(self, target: str) -> str:
        return self._system.unknown(target)

    def __getattr__(self, name: str):  # the clock, info and every other attribute: the system's
        return getattr(self._system, name)
