"""A busy host for the busy-host tests: CPU, I/O and memory hogs, and a CPU quota that starves the
broker's processes for seconds at a time, started and stopped by the test itself.

What makes a correct broker late here was measured (2026-11-25, this 2-core machine): hogs alone
(load 17–31, CPU pressure 91 %, I/O 28 %, 19 GiB of memory hogs) left every broker on time in 65
runs; a CPU quota of 1 % on the broker's processes for 6 s made re-puts late by seconds — what a
CI runner whose container shares its CPU quota with a build does. So :class:`HostLoad` runs both:

- ``stress-ng`` CPU, I/O (write + fsync) and memory workers in their own process group, bounded by
  ``--timeout`` (they end on their own if the test dies);
- a throttler thread that moves the processes ``targets()`` names into a cgroup-v1 ``cpu`` group
  of their own and sets its quota to :data:`STARVED_QUOTA_US` of every period for ``stall_s`` of
  every ``every_s`` seconds. The harness is told nothing: what it records of the stalls is what
  it measured itself (``harness.hostwatch``).

Everything it starts or makes is undone by :meth:`HostLoad.stop` (the hogs' group killed, the
processes moved back, the cgroup removed), also when the test fails.

:class:`LateBroker` is a broker late by its own doing, for proving that the harness still convicts
it on a busy host: it freezes only the threads of a broker's delivery path (by name: e.g. the
schedule service's ``ScheduleMessage`` threads) for ``freeze_s`` of every ``every_s`` seconds, in a
cgroup-v1 freezer group of their own (a frozen thread is not runnable: it waits for no CPU, so no
run-queue stall is recorded for it); the rest of the broker keeps serving, and the harness is told
nothing.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Iterable

CPU_CGROUP = Path("/sys/fs/cgroup/cpu")
FREEZER_CGROUP = Path("/sys/fs/cgroup/freezer")
#: 1 % of one CPU (of cpu.cfs_period_us = 100000): the starved processes barely run
STARVED_QUOTA_US = 1000


def unavailable() -> str | None:
    """Why a busy host cannot be made here, or None."""
    if shutil.which("stress-ng") is None:
        return "stress-ng is not installed (.ci/bootstrap installs it)"
    if not (CPU_CGROUP / "cpu.cfs_quota_us").exists() or not os.access(CPU_CGROUP, os.W_OK):
        return f"no writable cgroup-v1 cpu controller at {CPU_CGROUP} (needs root)"
    return None


def java_processes(marker: str, main_class: str = "BrokerStartup") -> list[int]:
    """The JVMs running ``main_class`` whose command line mentions ``marker`` (a test's directory)."""
    from hourglass.adapters.rocketmq.process import command_line

    pids = (int(entry) for entry in os.listdir("/proc") if entry.isdigit())
    return [pid for pid in pids if main_class in (cmd := command_line(pid, limit=1 << 30)) and marker in cmd]


class HostLoad:
    def __init__(self, seconds: int, targets: Callable[[], Iterable[int]] = lambda: (), stall_s: float = 6.0,
                 every_s: float = 20.0, cpu: int = 4, io: int = 2, vm: int = 2, vm_bytes: str = "6G", hogs: bool = True):
        self.seconds, self.targets, self.stall_s, self.every_s, self.hogs = seconds, targets, stall_s, every_s, hogs
        self.argv = ["stress-ng", "--cpu", str(cpu), "--hdd", str(io), "--hdd-opts", "wr-seq,fsync", "--hdd-bytes", "256M",
                     "--vm", str(vm), "--vm-bytes", vm_bytes, "--timeout", f"{seconds}s", "--quiet"]
        self.group = CPU_CGROUP / f"hourglass-starve-{os.getpid()}"
        self.starved: list[tuple[float, float]] = []  # (from, to) epoch seconds of each starvation
        self._stop = threading.Event()
        self._hogs: subprocess.Popen | None = None
        self._thread: threading.Thread | None = None
        self._workdir: Path | None = None

    def __enter__(self) -> "HostLoad":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        why = unavailable()
        if why:
            raise RuntimeError(f"HostLoad: {why}")
        import tempfile

        self._workdir = Path(tempfile.mkdtemp(prefix="hourglass-load-"))
        if self.hogs:
            self._hogs = subprocess.Popen(self.argv + ["--temp-path", str(self._workdir)], start_new_session=True,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.group.mkdir(exist_ok=True)
        self._thread = threading.Thread(target=self._throttle, name="hourglass-starver", daemon=True)
        self._thread.start()

    def _throttle(self) -> None:
        quota = self.group / "cpu.cfs_quota_us"
        while not self._stop.wait(self.every_s - self.stall_s):
            for pid in self.targets():
                try:
                    (self.group / "cgroup.procs").write_text(str(pid))
                except OSError:  # gone meanwhile
                    continue
            began = time.time()
            quota.write_text(str(STARVED_QUOTA_US))
            self._stop.wait(self.stall_s)
            quota.write_text("-1")
            self.starved.append((began, time.time()))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.stall_s + 5)
        if self._hogs is not None:
            try:
                os.killpg(self._hogs.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._hogs.wait()
        if self.group.exists():
            (self.group / "cpu.cfs_quota_us").write_text("-1")
            for pid in (self.group / "cgroup.procs").read_text().split():
                try:
                    (CPU_CGROUP / "cgroup.procs").write_text(pid)
                except OSError:
                    pass
            self.group.rmdir()
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)


class LateBroker:
    """Freezes the threads named ``prefix`` (as ``/proc`` names them: 15 characters) of the JVMs
    ``targets()`` names for ``freeze_s`` of every ``every_s`` seconds; :meth:`stop` thaws them and
    removes its group."""

    def __init__(self, prefix: str, targets: Callable[[], Iterable[int]], freeze_s: float = 6.0, every_s: float = 20.0):
        self.prefix, self.targets, self.freeze_s, self.every_s = prefix, targets, freeze_s, every_s
        self.group = FREEZER_CGROUP / f"hourglass-late-{os.getpid()}"
        self.frozen: list[tuple[float, float, int]] = []  # (from, to) epoch seconds, threads frozen
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "LateBroker":
        if not (FREEZER_CGROUP / "tasks").exists() or not os.access(FREEZER_CGROUP, os.W_OK):
            raise RuntimeError(f"LateBroker: no writable cgroup-v1 freezer at {FREEZER_CGROUP} (needs root)")
        self.group.mkdir(exist_ok=True)
        self._thread = threading.Thread(target=self._freeze, name="hourglass-late-broker", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def threads(self) -> list[int]:
        out = []
        for pid in self.targets():
            try:
                tids = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tids:
                try:
                    if Path(f"/proc/{pid}/task/{tid}/comm").read_text().startswith(self.prefix):
                        out.append(int(tid))
                except OSError:
                    continue
        return out

    def _freeze(self) -> None:
        state = self.group / "freezer.state"
        while not self._stop.wait(self.every_s - self.freeze_s):
            tids = self.threads()
            for tid in tids:
                try:
                    (self.group / "tasks").write_text(str(tid))
                except OSError:  # gone meanwhile
                    continue
            began = time.time()
            state.write_text("FROZEN")
            self._stop.wait(self.freeze_s)
            state.write_text("THAWED")
            self._release()
            self.frozen.append((began, time.time(), len(tids)))

    def _release(self) -> None:
        for tid in (self.group / "tasks").read_text().split():
            try:
                (FREEZER_CGROUP / "tasks").write_text(tid)
            except OSError:
                pass

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.freeze_s + 5)
        if self.group.exists():
            (self.group / "freezer.state").write_text("THAWED")
            self._release()
            self.group.rmdir()


def main(argv: list[str] | None = None) -> int:
    """``python -m suites.adapters.loadgen --marker DIR [--seconds N] -- COMMAND ...``: run COMMAND
    on a busy host (the hogs, and every broker JVM whose command line mentions DIR starved 6 s of
    every 20 s), then undo the load; exits with COMMAND's code. E.g. the suites on a busy host:
    ``python -m suites.adapters.loadgen --marker runs/busy -- python -m hourglass run --suite
    conformance --suite persistence --system rocketmq:4.9.7 --runtime process --out runs/busy``."""
    import argparse
    import sys

    p = argparse.ArgumentParser(prog="python -m suites.adapters.loadgen", description=main.__doc__)
    p.add_argument("--marker", required=True, help="starve the broker JVMs whose command line mentions this (the run's --out)")
    p.add_argument("--seconds", type=int, default=3600, help="the hogs' bound (stress-ng --timeout)")
    p.add_argument("--stall-s", type=float, default=6.0)
    p.add_argument("--every-s", type=float, default=20.0)
    p.add_argument("--no-hogs", action="store_true", help="only starve the brokers (another load already runs the hogs)")
    p.add_argument("--no-starve", action="store_true", help="do not starve the brokers (the hogs, or --late, only)")
    p.add_argument("--late", metavar="THREAD_PREFIX",
                   help="a broker late by its own doing: freeze its threads named so (e.g. ScheduleMessage) for "
                        "--stall-s of every --every-s seconds, untold to the harness (LateBroker)")
    p.add_argument("command", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        p.error("give the command to run after --")
    marker = str(Path(args.marker).resolve())
    from contextlib import ExitStack

    with ExitStack() as stack:
        load = late = None
        if not (args.no_hogs and args.no_starve):
            load = stack.enter_context(HostLoad(args.seconds, targets=lambda: [] if args.no_starve else java_processes(marker),
                                                stall_s=args.stall_s, every_s=args.every_s, hogs=not args.no_hogs))
        if args.late:
            late = stack.enter_context(LateBroker(args.late, lambda: java_processes(marker), args.stall_s, args.every_s))
        code = subprocess.call(command)
    if load is not None and not args.no_starve:
        print(f"loadgen: {len(load.starved)} starvations of {args.stall_s:.0f} s", file=sys.stderr)
    if late is not None:
        print(f"loadgen: {len(late.frozen)} freezes of {args.late}* threads, {args.stall_s:.0f} s each: "
              + ", ".join(f"{time.strftime('%H:%M:%S', time.localtime(a))} ({n} threads)" for a, _, n in late.frozen),
              file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
