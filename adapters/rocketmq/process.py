"""The process runtime: each RocketMQ component is a JVM process on the host.

Harness-facing API: :class:`ProcessRuntime` implements :class:`adapters.rocketmq.runtime.Runtime`.
Each component runs in its own process group (so a fault reaches it and nothing else), its stdout
and stderr go to ``spec.log_file`` (appended across restarts). The component *is* its process group:
a launcher script (``spec.command``, e.g. Apache's ``bin/mqbroker`` → ``runbroker.sh`` → java) dies
at once on SIGTERM while its JVM still runs its shutdown hooks, so a stop or kill returns only when
no process of the group is left, and the component runs while any does. Every runtime is registered for
cleanup: :meth:`ProcessRuntime.close` kills what it started, and it runs at interpreter exit and
when the harness gets SIGINT/SIGTERM (then the previous handler runs). A harness killed with
SIGKILL cannot clean up: each JVM carries its owner (``HOURGLASS_OWNER=pid:start-time`` in its
environment), and the next process runtime on the host kills the JVMs whose owner is gone.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import threading
import time
import weakref
from collections import deque
from pathlib import Path

from hourglass.adapters.base import AdapterError
from hourglass.adapters.rocketmq.runtime import LaunchSpec, StartsItsComponents

_LIVE: "weakref.WeakSet[ProcessRuntime]" = weakref.WeakSet()
_HANDLERS_INSTALLED = False
_HANDLER_LOCK = threading.Lock()


def _close_all() -> None:
    """Kill everything live: at exit and on SIGINT/SIGTERM nothing waits for a graceful close (a
    client's would wait out the calls in flight to a broker that may be gone: tens of seconds)."""
    for rt in list(_LIVE):
        getattr(rt, "abort", rt.close)()


def _on_signal(signum, frame):  # pragma: no cover - exercised by Ctrl-C
    _close_all()
    previous = _PREVIOUS.get(signum)
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_DFL or previous is None:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


_PREVIOUS: dict[int, object] = {}
OWNER_ENV = "HOURGLASS_OWNER"
_SWEPT = False


def process_start_time(pid: int) -> str | None:
    """The start time of ``pid`` in clock ticks since boot (tells a live pid from a reused one)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def owner_tag(pid: int | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    return f"{pid}:{process_start_time(pid) or ''}"


def owner_alive(tag: str) -> bool:
    pid, _, started = tag.partition(":")
    try:
        now = process_start_time(int(pid))
    except ValueError:
        return False
    return now is not None and (not started or now == started)


def remove_leftover_processes(say=None) -> list[int]:
    """Kill (SIGKILL, whole process group) the JVMs a process runtime started for a harness that is
    gone; returns their pids."""
    killed = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        tag = next((v[len(OWNER_ENV) + 1:].decode() for v in environ if v.startswith(OWNER_ENV.encode() + b"=")), None)
        if tag is None or owner_alive(tag):
            continue
        try:  # the whole group: a launcher's JVM is not its group's leader, and the leader may be gone
            group = os.getpgid(int(entry))
            if group == os.getpgrp():
                continue
            os.killpg(group, signal.SIGKILL)
            killed.append(int(entry))
        except (ProcessLookupError, PermissionError):
            pass
    if killed and say is not None:
        say(f"hourglass process: killed JVMs left by harnesses that are gone: pids {', '.join(map(str, killed))}")
    return killed


def install_cleanup_handlers() -> None:
    """atexit + SIGINT/SIGTERM handlers that close every live runtime (main thread only)."""
    global _HANDLERS_INSTALLED
    with _HANDLER_LOCK:
        if _HANDLERS_INSTALLED:
            return
        atexit.register(_close_all)
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                _PREVIOUS[sig] = signal.getsignal(sig)
                signal.signal(sig, _on_signal)
        _HANDLERS_INSTALLED = True


def java_command(spec: LaunchSpec, java: str = "java") -> list[str]:
    """The command line of ``spec``: its own ``command``, else the JVM's; under ``command_prefix``."""
    if spec.command is not None:
        return [*spec.command_prefix, *spec.command]
    return [*spec.command_prefix, java, *spec.jvm_opts, "-cp", os.pathsep.join(spec.classpath), spec.main_class, *spec.args]


def group_members(pgid: int) -> list[int]:
    """The live (not zombie) processes of process group ``pgid``."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return []
    except PermissionError:
        pass
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            members.append(int(entry))
    return members


def command_line(pid: int, limit: int = 1000) -> str:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
    except OSError:
        return "(gone)"
    line = " ".join(a.decode("utf-8", "replace") for a in argv)
    return line if len(line) <= limit else line[:limit] + " ..."


def tail_file(path: Path, lines: int = 60) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return f"(no log file {path})"
    return "\n".join(deque(data.splitlines(), maxlen=lines))


def note_in_log(spec: LaunchSpec | None, text: str) -> None:
    """Append a harness line to a component's log (e.g. which processes answered)."""
    if spec is not None:
        with open(spec.log_file, "a") as log:
            log.write(f"==== hourglass: {text}\n")


class ProcessRuntime(StartsItsComponents):
    name = "process"

    def __init__(self, java: str = "java"):
        self.java = java
        self._specs: dict[str, LaunchSpec] = {}
        self._procs: dict[str, subprocess.Popen] = {}
        self._cpu: dict = {}  # the components under a CPU quota (cpu_throttle)
        self._closed = False
        #: a start racing the close (a fault step's restart while Ctrl-C tears the system down)
        #: either spawns before the close, which then kills it, or is refused: nothing outlives it
        self._spawning = threading.Lock()
        _LIVE.add(self)
        install_cleanup_handlers()
        global _SWEPT
        with _HANDLER_LOCK:
            if not _SWEPT:
                _SWEPT = True
                remove_leftover_processes(lambda line: print(line, file=sys.stderr, flush=True))

    def _spawn(self, spec: LaunchSpec) -> None:
        spec.log_file.parent.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.update(dict(spec.env))
        env[OWNER_ENV] = owner_tag()
        with open(spec.log_file, "ab") as log, self._spawning:
            if self._closed:
                raise AdapterError(f"process runtime: closed (not starting {spec.component})")
            group = self._cpu.get(spec.component)
            command = [*(group.exec_prefix() if group else ()), *java_command(spec, self.java)]
            log.write(f"\n==== hourglass: starting {spec.component}: {' '.join(command)}\n".encode())
            log.flush()
            try:
                self._procs[spec.component] = subprocess.Popen(
                    command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    env=env, start_new_session=True, close_fds=True)
            except OSError as e:  # a command that is not there or not executable
                raise AdapterError(f"process runtime: could not start {spec.component}: {java_command(spec, self.java)[0]}: "
                                   f"{e.strerror or e}") from None

    def _proc(self, component: str) -> subprocess.Popen:
        if component not in self._procs:
            raise AdapterError(f"process runtime: no component {component!r} launched "
                               f"(launched: {sorted(self._procs) or 'none'})")
        return self._procs[component]

    def launch(self, spec: LaunchSpec) -> None:
        if self._closed:
            raise AdapterError("process runtime: closed")
        if spec.component in self._procs and self._procs[spec.component].poll() is None:
            raise AdapterError(f"process runtime: {spec.component} is already running (pid {self._procs[spec.component].pid})")
        self._specs[spec.component] = spec
        self._spawn(spec)

    def start(self, component: str) -> None:
        self._proc(component)
        if self.running(component):
            return  # already running: start is idempotent
        self._spawn(self._specs[component])

    def _signal(self, component: str, sig: int) -> None:
        proc = self._proc(component)
        if proc.poll() is None or group_members(proc.pid):  # the group's id is its leader's pid
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                pass

    def _wait_gone(self, component: str, timeout_s: float) -> bool:
        """Wait until no process of the component's group is left (the leader reaped); False on timeout."""
        proc = self._proc(component)
        deadline = time.monotonic() + timeout_s
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return False
        while group_members(proc.pid):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)  # poll interval while the rest of the group exits
        return True

    def stop(self, component: str, timeout_s: float = 60.0) -> None:
        if not self.running(component):
            return
        self._signal(component, signal.SIGCONT)  # a paused JVM cannot run its shutdown hooks
        self._signal(component, signal.SIGTERM)
        if not self._wait_gone(component, timeout_s):
            self.kill(component)
            raise AdapterError(f"{component} did not exit within {timeout_s:.0f} s of SIGTERM; killed it. "
                               f"Log tail:\n{self.log_tail(component)}") from None

    def kill(self, component: str) -> None:
        self._signal(component, signal.SIGKILL)
        if not self._wait_gone(component, 30.0):
            raise AdapterError(f"process runtime: {component} (process group {self._proc(component).pid}) "
                               "still has processes 30 s after SIGKILL")

    def pause(self, component: str) -> None:
        self._signal(component, signal.SIGSTOP)

    def resume(self, component: str) -> None:
        self._signal(component, signal.SIGCONT)

    def running(self, component: str) -> bool:
        if component not in self._procs:
            return False
        proc = self._procs[component]
        return proc.poll() is None or bool(group_members(proc.pid))

    def exit_code(self, component: str) -> int | None:
        """The leader's exit status once the whole group is gone (a launcher that leaves its server
        running in the group has not exited)."""
        if component not in self._procs or self.running(component):
            return None
        code = self._procs[component].poll()
        return code if code >= 0 else 128 - code  # -9 -> 137, as a shell reports it

    def processes(self, component: str) -> list[tuple[int, str]]:
        """(pid, command line) of each live process of the component's group."""
        if component not in self._procs:
            return []
        return [(pid, command_line(pid)) for pid in sorted(group_members(self._procs[component].pid))]

    def note(self, component: str, text: str) -> None:
        note_in_log(self._specs.get(component), text)

    def use_distribution(self, distribution) -> None:
        """Nothing to switch: each launch's spec names the jars of its own distribution."""

    def pid(self, component: str) -> int | None:
        return self._procs[component].pid if component in self._procs else None

    def cannot_throttle(self, component: str) -> str | None:
        from hourglass.adapters.rocketmq import cgroup  # it imports this module's owner tags

        return cgroup.unavailable()

    def throttle_cpu(self, component: str, permille: int | None) -> None:
        """The component's group gets the quota; a running component is moved into it, and each
        start from now on execs inside it (adapters.rocketmq.cgroup)."""
        from hourglass.adapters.rocketmq import cgroup

        group = self._cpu.get(component)
        if group is None:
            if permille is None:
                return
            group = self._cpu[component] = cgroup.CpuGroup(component)
            cgroup.remove_leftovers()
        group.set(permille)
        if permille is not None and component in self._procs:
            group.add(group_members(self._procs[component].pid))

    def log_tail(self, component: str, lines: int = 60) -> str:
        spec = self._specs.get(component)
        if spec is None:
            return f"(no component {component!r})"
        return tail_file(spec.log_file, lines)

    def close(self) -> None:
        with self._spawning:
            if self._closed:
                return
            self._closed = True
        for component, proc in list(self._procs.items()):
            if proc.poll() is None or group_members(proc.pid):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                # the whole group, not only its leader (a launcher's server outlives it): a SIGKILL
                # lands a moment later, and "closed" means nothing of it runs any more
                self._wait_gone(component, 10.0)
        for group in self._cpu.values():
            group.remove()
        _LIVE.discard(self)
