"""Where RocketMQ's JVMs run: the seam between the RocketMQ system and its runtimes.

A runtime starts one JVM per *component* (``namesrv``, ``broker``, ``proxy``) from a
:class:`LaunchSpec` and applies the lifecycle faults to it. ``process`` runs it on the host,
``container`` in a Docker container (host networking, the store and home bind-mounted at the same
paths so a kill -9 loses nothing on disk and paths in configs mean the same on both sides). The
RocketMQ system (readiness round trips, client, snapshots) is the same on top of either.

A spec with a ``command`` (a ``cmd:`` system, :mod:`adapters.rocketmq.cmd`) runs that command line
instead of the JVM: a launcher script whose server may be a grandchild. The process runtime treats
the whole process group as the component (signals, "running", waiting for a stop); the container
runtime refuses it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from hourglass.adapters.base import AdapterError
from hourglass.adapters.parts import PROCESS_ACTIONS


@dataclass(frozen=True)
class LaunchSpec:
    component: str  # "namesrv" | "broker" | "proxy"
    main_class: str  # e.g. org.apache.rocketmq.broker.BrokerStartup
    classpath: tuple[str, ...]  # jar paths or dir/* globs, as seen by the JVM
    jvm_opts: tuple[str, ...]
    args: tuple[str, ...]  # e.g. ("-c", "/run/x/broker.conf")
    env: tuple[tuple[str, str], ...]  # e.g. (("ROCKETMQ_HOME", "/run/x/home"),)
    log_file: Path  # stdout+stderr of the JVM (host path)
    mounts: tuple[Path, ...] = ()  # host dirs the JVM needs (home, store, conf): same path inside
    ports: tuple[int, ...] = ()  # the ports it listens on (for leftovers / diagnostics)
    labels: dict = field(default_factory=dict)
    #: what the JVM's command line is run under, e.g. ``("ip", "netns", "exec", NS)`` (it must exec
    #: the command, so the pid is the JVM's); the process runtime only
    command_prefix: tuple[str, ...] = ()
    #: the container runtime: the component runs in a network namespace of its own, not the host's,
    #: and its JVM starts once this interface is up there (the system plumbs it after each start:
    #: ``adapters.rocketmq.netns.attach``); the process runtime runs it under ``command_prefix``
    wait_for_interface: str | None = None
    #: the command line to run instead of ``java <jvm_opts> -cp <classpath> <main_class> <args>``
    #: (then those four fields are unused); its ``env`` is the whole of what the harness adds
    command: tuple[str, ...] | None = None


@runtime_checkable
class Runtime(Protocol):
    """Every call the RocketMQ system makes on its runtime (``process``, ``container``, and
    ``external``: an existing cluster faulted by the user's commands)."""

    name: str  # "process" | "container" | "external"

    def launch(self, spec: LaunchSpec) -> None:
        """First start of a component (creates the process/container)."""

    def start(self, component: str) -> None:
        """Start again after stop/kill: the same container, a new process from the same spec."""

    def stop(self, component: str, timeout_s: float = 60.0) -> None:
        """SIGTERM and wait for exit (graceful: shutdown hooks run)."""

    def kill(self, component: str) -> None:
        """SIGKILL."""

    def pause(self, component: str) -> None: ...

    def resume(self, component: str) -> None: ...

    def running(self, component: str) -> bool: ...

    def exit_code(self, component: str) -> int | None:
        """The exit status if the component has exited, else None."""

    def log_tail(self, component: str, lines: int = 60) -> str: ...

    def pid(self, component: str) -> int | None:
        """The host pid of the component's main process (a process group's leader, a container's
        init); None where there is none on this host. A container not running raises AdapterError."""

    def processes(self, component: str) -> list[tuple[int, str]]:
        """(pid, command line) of each live process of the component (what a launcher really ran);
        empty where the runtime cannot list them."""

    def note(self, component: str, text: str) -> None:
        """Append a harness line to the component's log, where the harness writes it."""

    def use_distribution(self, distribution) -> None:
        """Launch the next components from ``distribution`` (an across-store chain's next version)."""

    def throttle_cpu(self, component: str, permille: int | None) -> None:
        """Put the component under a CPU quota of ``permille`` thousandths of one CPU from now on,
        its next starts included (None: lift it) — ``reference.faults.cpu``."""

    def cannot_throttle(self, component: str) -> str | None:
        """Why this runtime cannot limit the component's CPU, or None."""

    def cannot(self, action: str, component: str) -> str | None:
        """Why this runtime cannot perform ``action`` (a process fault: start, stop, kill, pause,
        resume; or a fault the user gave a command for) on ``component``; None when it can."""

    def run(self, action: str, component: str) -> None:
        """Perform ``action`` on ``component`` by the user's command (the external runtime); a
        runtime that starts its components has no such commands and raises AdapterError."""

    def ships(self, artifact: str) -> bool:
        """Whether the jars it runs from hold ``artifact`` beyond the distribution's (a user's
        image with RocketMQ's proxy, as the official 5.x images have): then it runs that one."""

    def close(self) -> None:
        """Kill and remove everything this runtime started. Idempotent; safe in finally/atexit."""


class StartsItsComponents:
    """What a runtime that starts its components itself (process, container) answers: it performs
    every process fault, and runs no fault commands."""

    name: str

    def cannot(self, action: str, component: str) -> str | None:
        return None if action in PROCESS_ACTIONS else f"the {self.name} runtime has no command for {action}"

    def run(self, action: str, component: str) -> None:
        raise AdapterError(f"the {self.name} runtime runs no fault commands (asked for {action}:{component})")

    def ships(self, artifact: str) -> bool:
        return False


class CpuQuota:
    """The ``cpu`` fault family's faculty of one component (``reference.faults.cpu``): its
    runtime's CPU quota."""

    def __init__(self, runtime: Runtime, component: str):
        self.runtime, self.component = runtime, component
        self.permille: int | None = None

    @property
    def slowdown(self) -> float:
        """How many times longer the component's work takes under the quota now (1: none)."""
        return 1000 / self.permille if self.permille else 1.0

    def cannot(self, action: str) -> str | None:
        return self.runtime.cannot_throttle(self.component)

    def throttle_cpu(self, permille: int) -> None:
        self.runtime.throttle_cpu(self.component, int(permille))
        self.permille = int(permille)

    def unthrottle_cpu(self) -> None:
        self.runtime.throttle_cpu(self.component, None)
        self.permille = None
