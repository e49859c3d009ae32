"""Fault targets resolved once: each part of a system (a broker, its second broker, the name
server, the consumers) is an object with verbs of its own, as openchaos's ``ChaosNode`` and
kafkatest's ``broker_node(...)``. A system keeps its parts by target and its public verbs
(``kill(target)``, ``fill_disk(target)``, ...: the protocols of :mod:`adapters.base`) look the
target up once and hand over to the part; no verb switches on a target's name.

A system answers one question about faults, :meth:`PartsSystem.cannot`: None when it can perform
the primitive fault ``action`` on ``target`` now, else why not, in words.
"""

from __future__ import annotations

from adapters.base import AdapterError
from reference.clock import CLOCK, CLOCK_DRIFT
from reference.disk import DISK_ACTIONS, FILL, FREE
from reference.network import LATENCY, LATENCY_END, LOSS, LOSS_END, NET_ACTIONS, PARTITION, PARTITION_END

#: the primitive faults on a part's process (``harness.faults``), in the order error messages name them
PROCESS_ACTIONS = ("start", "stop", "kill", "pause", "resume")
#: a start frozen at once (the ``slow_start`` step): a start, then a pause
START_PAUSED = "start_paused"
#: every primitive fault a system is asked about (``reference.disk``, ``reference.network``, ``reference.clock``)
PRIMITIVE_ACTIONS = (*PROCESS_ACTIONS, START_PAUSED, *DISK_ACTIONS, *NET_ACTIONS, CLOCK, CLOCK_DRIFT)
#: why a part other than the (first) broker refuses the machine faults (``reference.cluster``)
BROKER_ONLY = "a full store, a cut network and a moved clock are the first broker's only"
NETWORK = "act on the network of {target}"
DRIFT = "make the clock of {target} drift"


def faculties(store=None, net=None, clock=None) -> dict[str, object]:
    """A part's faculties by action: its store for the disk actions, its network for the network
    actions, its clock for the clock steps and drifts (each one left out where it is None)."""
    out: dict[str, object] = {}
    for actions, faculty in ((DISK_ACTIONS, store), (NET_ACTIONS, net), ((CLOCK, CLOCK_DRIFT), clock)):
        if faculty is not None:
            out.update(dict.fromkeys(actions, faculty))
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
        return BROKER_ONLY if faculty is None else faculty.cannot(action)

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

    def fill_disk(self) -> None:
        self.able(FILL, "fill the store of {target}").fill()

    def free_disk(self) -> None:
        """Frees what was filled; nothing where there is no store to free."""
        store = self.faculties.get(FREE)
        if store is not None:
            store.free()

    def partition(self) -> None:
        self.able(PARTITION, NETWORK).partition()

    def heal_partition(self) -> None:
        self.able(PARTITION_END, NETWORK).heal_partition()

    def add_latency(self, delay_ms: int) -> None:
        self.able(LATENCY, NETWORK).add_latency(delay_ms)

    def remove_latency(self) -> None:
        self.able(LATENCY_END, NETWORK).remove_latency()

    def add_loss(self, loss_percent: int) -> None:
        self.able(LOSS, NETWORK).add_loss(loss_percent)

    def remove_loss(self) -> None:
        self.able(LOSS_END, NETWORK).remove_loss()

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
        the reason in words (what ``can_fault``, the capability protocols and ``info.details``'s
        reason keys said before)."""
        if action not in PRIMITIVE_ACTIONS:
            return f"{action!r} is no primitive fault: expected one of {', '.join(PRIMITIVE_ACTIONS)}"
        found = self.parts.get(target)
        if found is None:
            return self.unknown(target)
        if action == START_PAUSED:
            return found.cannot("start") or found.cannot("pause")
        return found.cannot(action)

    def can_fault(self, action: str, target: str) -> bool:
        """Kept while the harness still asks this way: :meth:`cannot` is the question."""
        return self.cannot(action, target) is None

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

    def fill_disk(self, target: str) -> None:
        self.part(target).fill_disk()

    def free_disk(self, target: str) -> None:
        self.part(target).free_disk()

    def partition(self, target: str) -> None:
        self.part(target).partition()

    def heal_partition(self, target: str) -> None:
        self.part(target).heal_partition()

    def add_latency(self, target: str, delay_ms: int) -> None:
        self.part(target).add_latency(delay_ms)

    def remove_latency(self, target: str) -> None:
        self.part(target).remove_latency()

    def add_loss(self, target: str, loss_percent: int) -> None:
        self.part(target).add_loss(loss_percent)

    def remove_loss(self, target: str) -> None:
        self.part(target).remove_loss()

    def set_clock(self, target: str, offset_ms: int) -> None:
        self.part(target).set_clock(offset_ms)

    def set_clock_rate(self, target: str, offset_ms: int, rate_permille: int) -> None:
        self.part(target).set_clock_rate(offset_ms, rate_permille)

    def clock_settle_ms(self, target: str) -> int:
        return self.part(target).clock_settle_ms()
