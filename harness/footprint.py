"""What the harness itself costs the machine it shares with the broker under test: its processes'
peak number of JVMs and the CPU-seconds they spent, beside the system's own (``harness.bench``).

A sampler thread walks ``/proc`` every :data:`SAMPLE_S` seconds: the process tree of this process
(the harness, its client and consumer processes, the checker's Spark), each process classed as the
system's when it runs a server of the system under test (:data:`SYSTEM_MAINS`: a broker, a name
server, a proxy, a controller, in a process or a container's JVM under this tree), else the
harness's. A process is a JVM when one of its threads is HotSpot's ``VM Thread`` (a ``java``
launcher, or a client or consumer process that started its JVM in Python through JPype). A process's
CPU time is its last sample's ``utime + stime`` (``/proc/<pid>/stat``; a process that lived less than
a sample is missed: a small undercount).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

SAMPLE_S = 1.0
#: the main classes of the servers of a system under test: their JVMs are the system's, not the harness's
SYSTEM_MAINS = ("BrokerStartup", "NamesrvStartup", "ProxyStartup", "ControllerStartup", "BrokerContainerStartup")
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid: str, proc: Path) -> tuple[int, int, str] | None:
    """(ppid, CPU ticks, comm) of one process."""
    try:
        stat = (proc / pid / "stat").read_text()
    except OSError:
        return None
    comm = stat[stat.find("(") + 1:stat.rfind(")")]
    fields = stat[stat.rfind(")") + 2:].split()
    return int(fields[1]), int(fields[11]) + int(fields[12]), comm


def _runs_a_jvm(pid: int, proc: Path) -> bool:
    """Whether one of ``pid``'s threads is HotSpot's VM thread (a JVM in that process)."""
    try:
        tids = os.listdir(proc / str(pid) / "task")
    except OSError:
        return False
    for tid in tids:
        try:
            if (proc / str(pid) / "task" / tid / "comm").read_text().startswith("VM Thread"):
                return True
        except OSError:
            continue
    return False


def _cmdline(pid: int, proc: Path) -> str:
    try:
        return (proc / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@dataclass
class Footprint:
    """Samples the process tree of ``root`` (this process) until :meth:`stop`."""

    root: int = field(default_factory=os.getpid)
    proc: Path = Path("/proc")
    peak_harness_jvms: int = 0
    peak_system_jvms: int = 0
    peak_processes: int = 0

    def __post_init__(self):
        self._cpu: dict[int, tuple[int, bool]] = {}  # pid -> (ticks, the system's)
        self._system: dict[int, bool] = {}
        self._jvm: set[int] = set()  # processes seen running a JVM (a JPype process starts its JVM late)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "Footprint":
        self.sample()
        self._thread = threading.Thread(target=self._loop, name="hourglass-footprint", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def _loop(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self.sample()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self.sample()

    def sample(self) -> None:
        stats = {int(p): s for p in os.listdir(self.proc) if p.isdigit() and (s := _stat(p, self.proc)) is not None}
        children: dict[int, list[int]] = {}
        for pid, (ppid, _, _) in stats.items():
            children.setdefault(ppid, []).append(pid)
        tree, todo = [], [self.root]
        while todo:
            pid = todo.pop()
            if pid in stats:
                tree.append(pid)
                todo.extend(children.get(pid, ()))
        harness_jvms = system_jvms = 0
        for pid in tree:
            _, ticks, comm = stats[pid]
            if pid not in self._system:  # a process's role does not change: its command line is read once
                self._system[pid] = any(m in _cmdline(pid, self.proc) for m in SYSTEM_MAINS)
            system = self._system[pid]
            self._cpu[pid] = (ticks, system)
            if pid in self._jvm or (comm == "java" or pid != self.root) and _runs_a_jvm(pid, self.proc):
                self._jvm.add(pid)
                system_jvms += system
                harness_jvms += not system
        self.peak_harness_jvms = max(self.peak_harness_jvms, harness_jvms)
        self.peak_system_jvms = max(self.peak_system_jvms, system_jvms)
        self.peak_processes = max(self.peak_processes, len(tree))

    def figures(self) -> dict:
        """The peak JVMs and the CPU-seconds, the harness's and the system's (the processes under this one)."""
        harness = sum(t for t, system in self._cpu.values() if not system) / _TICKS
        system = sum(t for t, system in self._cpu.values() if system) / _TICKS
        return {"peak_harness_jvms": self.peak_harness_jvms, "peak_system_jvms": self.peak_system_jvms,
                "peak_processes": self.peak_processes, "harness_cpu_s": round(harness, 1), "system_cpu_s": round(system, 1)}
