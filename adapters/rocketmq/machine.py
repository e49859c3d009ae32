"""The machine faults of a broker the harness started: its store on a size-limited filesystem
(:mod:`adapters.rocketmq.disk`, ``disk_full``), its own network namespace
(:mod:`adapters.rocketmq.netns`: partition, latency, loss), its wall clock under libfaketime
(:mod:`adapters.rocketmq.brokerclock`: clock steps and drift); and of an external cluster, the
user's commands. Each is set up once (or says why it could not be, also under its
``info.details`` key), answers ``cannot(action)`` and cleans up after itself."""

from __future__ import annotations

import atexit
import sys
from pathlib import Path

from hourglass.adapters.base import AdapterError
from hourglass.adapters.rocketmq import brokerclock, disk, netns
from hourglass.adapters.rocketmq.process import owner_alive, owner_tag
from hourglass.adapters.rocketmq.runtime import Runtime
from hourglass.reference.clock import CLOCK_DRIFT
from hourglass.reference.disk import FILL, FREE
from hourglass.reference.network import LATENCY, LATENCY_END

NOT_FILLABLE = "not a fillable store"
NO_NETWORK = "it does not run in a network namespace of its own"
NO_CLOCK = "not a broker under libfaketime"
NO_DRIFT = "not a broker launched to drift under libfaketime (BrokerProfile.drifting_clock)"

_SWEPT: set[str] = set()


def _sweep_once(kind: str, remove_leftovers) -> None:
    """Remove, once per process, the fillable stores (``mounts``) or network namespaces
    (``namespaces``) left by harnesses that are gone."""
    if kind not in _SWEPT:
        _SWEPT.add(kind)
        remove_leftovers(owner_alive, lambda line: print(line, file=sys.stderr, flush=True))


class Refused:
    """A machine fault the system cannot do at all, with the reason."""

    def __init__(self, why: str):
        self.why = why

    def cannot(self, action: str) -> str | None:
        return self.why


class FillableStore:
    """The store on a size-limited filesystem, or the reason it is not in
    ``info.details['disk_faults']`` (then scenarios that fill it are skipped)."""

    def __init__(self, store_dir: Path):
        self.store_dir = store_dir
        self.mounted = False
        self.why = NOT_FILLABLE

    def mount(self, details: dict) -> None:
        why = disk.unavailable()
        if why:
            details["disk_faults"] = self.why = why
            return
        _sweep_once("mounts", disk.remove_leftover_mounts)
        disk.mount_limited(self.store_dir, owner_tag())
        self.mounted = True
        details["store_limit_mb"] = disk.STORE_LIMIT_MB

    def cannot(self, action: str) -> str | None:
        return None if self.mounted else self.why

    def fill_disk(self, fill_percent: int = 0) -> None:
        if fill_percent:
            disk.fill_to(self.store_dir, fill_percent)
        else:
            disk.fill(self.store_dir)

    def free_disk(self) -> None:
        if self.mounted:
            disk.free(self.store_dir)

    def close(self) -> None:
        if self.mounted:
            disk.unmount(self.store_dir)
            self.mounted = False


class CommandStore:
    """An external cluster's store, filled and freed by the user's commands (``--faults``)."""

    def __init__(self, runtime: Runtime, target: str):
        self.runtime, self.target = runtime, target

    def cannot(self, action: str) -> str | None:
        return self.runtime.cannot(action, self.target)

    def fill_disk(self, fill_percent: int = 0) -> None:
        self.runtime.run(FILL, self.target)  # the user's command fills it its own way

    def free_disk(self) -> None:
        self.runtime.run(FREE, self.target)


class OwnNetwork:
    """The broker in a network namespace of its own, reached at its veth address, or the reason it
    is not in ``info.details['network_faults']`` (then scenarios that need it are skipped)."""

    def __init__(self):
        self.net: netns.BrokerNet | None = None
        self.why = NO_NETWORK
        self.no_netem: str | None = None  # why it cannot be slowed (``info.details['latency_faults']``)

    def make(self, runtime_name: str, details: dict) -> netns.BrokerNet | None:
        if runtime_name not in ("process", "container"):
            details["network_faults"] = self.why = f"network faults are not supported by the {runtime_name} runtime"
            return None
        why = netns.unavailable()
        if why:
            details["network_faults"] = self.why = why
            return None
        _sweep_once("namespaces", netns.remove_leftovers)
        net = netns.create(owner_tag())
        atexit.register(netns.remove, net)  # idempotent: teardown removes it first
        self.net = net
        self.no_netem = netns.latency_unavailable(net)
        if self.no_netem:
            details["latency_faults"] = self.no_netem
        details["broker_network"] = {"netns": net.name, "broker": net.ns_addr, "host": net.host_addr}
        return net

    def cannot(self, action: str) -> str | None:
        if self.net is None:
            return self.why
        return self.no_netem if action in (LATENCY, LATENCY_END) else None

    def partition(self) -> None:
        netns.partition(self.net)

    def heal_partition(self) -> None:
        if self.net is not None:  # nothing cut or slowed without a namespace
            netns.heal(self.net)

    def add_latency(self, delay_ms: int) -> None:
        netns.add_latency(self.net, delay_ms)

    def remove_latency(self) -> None:
        if self.net is not None:  # nothing cut or slowed without a namespace
            netns.remove_latency(self.net)

    def add_loss(self, loss_percent: int) -> None:
        netns.add_loss(self.net, loss_percent)

    def remove_loss(self) -> None:
        if self.net is not None:  # nothing cut or slowed without a namespace
            netns.remove_loss(self.net)

    def attach(self, pid: int) -> None:
        """A container with a network of its own gets its veth after each start."""
        netns.attach(self.net, pid)

    def close(self) -> None:
        if self.net is not None:
            netns.remove(self.net)
            self.net = None


class ClockControl:
    """The broker's clock control file (true time to begin with), or why not in
    ``info.details['clock_faults']`` (then clock scenarios are skipped)."""

    def __init__(self, conf_dir: Path, drifting: bool):
        self.conf_dir = conf_dir
        self.drifting = drifting
        self.file: Path | None = None
        self.why: str | None = None

    def make(self, runtime_name: str, commands: bool, details: dict) -> None:
        why = brokerclock.unavailable(runtime_name)
        if why is None and commands:
            why = "a cmd: system launches its broker by its own command: its clock is not the harness's to step"
        if why:
            details["clock_faults"] = self.why = why
            return
        self.file = self.conf_dir / brokerclock.CONTROL_FILE
        self.file.parent.mkdir(parents=True, exist_ok=True)
        brokerclock.write_offset(self.file, 0)

    def cannot(self, action: str) -> str | None:
        if action == CLOCK_DRIFT and (self.file is None or not self.drifting):
            return self.why or NO_DRIFT
        return None if self.file is not None else self.why or NO_CLOCK

    def environment(self) -> tuple[tuple[str, str], ...]:
        """The broker's launch environment under libfaketime (none without a clock of its own)."""
        return brokerclock.environment(self.file, self.drifting) if self.file is not None else ()

    def set(self, offset_ms: int) -> None:
        brokerclock.write_offset(self.file, offset_ms)

    def set_rate(self, offset_ms: int, rate_permille: int, pid: int | None, target: str) -> None:
        if pid is None:
            raise AdapterError(f"cannot make the clock of {target} drift: it is not running (libfaketime's speed "
                               "counts from the process's start)")
        brokerclock.write_rate(self.file, offset_ms, rate_permille, brokerclock.process_start_ms(pid))

    def close(self) -> None:
        if self.file is not None:
            brokerclock.remove_leftovers()
            self.file = None
