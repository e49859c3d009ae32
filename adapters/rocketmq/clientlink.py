"""The harness side of the client and consumer processes (see ``client_proc``, ``consumer_proc``
and ``consumer_host``).

:class:`ClientProcess` starts ``python -m hourglass.adapters.rocketmq.client_proc`` and sends it
requests, concurrently (:meth:`_RequestProcess.request`: each reply reaches the request of its id);
a reply that does not come within the timeout, or a process that died, raises
:class:`AdapterError` with the tail of the process's log. :class:`ConsumerProcess` starts one
consumer and waits for its ``ready`` line; :class:`ConsumerHost` runs many, each a
:class:`HostedConsumer`.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import hourglass

from hourglass.adapters.base import AdapterError, ConsumerSpec
from hourglass.adapters.rocketmq import process as _process
from hourglass.adapters.rocketmq.process import tail_file
from hourglass.adapters.rocketmq.consumer_proc import CRASH_EXIT
from hourglass.adapters.rocketmq.jvm import now_ms
from hourglass.adapters.rocketmq.provision import grpc_client_lib
from hourglass.reference.modes import GRPC_MODES
from hourglass.adapters.rundir import EventLog
from hourglass.reference.contract import CONSUMER_DIED, CONSUMER_EXITED, consumer_fault
from hourglass.reference.rundir import consumer_events
from hourglass.reference.stalls import CLIENT_NICE, HOST_SESSION_NICE, niced

_CODE_ROOT = str(hourglass.code_root())
#: How long a consumer whose stdout ended may take to exit before it counts as still running.
EXIT_AFTER_EOF_S = 10.0


def _python_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = _CODE_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["PYTHONUNBUFFERED"] = "1"
    return env


class _LineProcess:
    """A child Python process speaking JSON lines on stdout; stderr goes to ``log_file``."""

    def __init__(self, argv: list[str], log_file: Path, what: str, session_nice: int | None = None):
        self.what = what
        self.log_file = log_file
        log_file.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(log_file, "ab")
        # niced: the broker under test gets the CPU first (reference.stalls.CLIENT_NICE)
        self.proc = subprocess.Popen(niced([sys.executable, *argv], CLIENT_NICE, session_nice), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._log, env=_python_env(), start_new_session=True, close_fds=True)
        self._lines: queue.Queue = queue.Queue()
        self._reader = threading.Thread(target=self._read, name=f"hg-read-{what}", daemon=True)
        self._reader.start()
        # killed with the runtimes at exit and on SIGINT/SIGTERM; a child whose parent died anyway
        # sees EOF on stdin and shuts down by itself
        _process._LIVE.add(self)
        _process.install_cleanup_handlers()

    def _read(self) -> None:
        for raw in self.proc.stdout:
            try:
                self._lines.put(json.loads(raw))
            except json.JSONDecodeError:
                continue
        self._lines.put(None)  # EOF: the process ended
        self._ended()

    def _ended(self) -> None:
        """Called by the reader as soon as the process's stdout ends (it exited)."""

    def next_line(self, timeout_s: float) -> dict:
        try:
            line = self._lines.get(timeout=timeout_s)
        except queue.Empty:
            raise AdapterError(f"{self.what}: no answer within {timeout_s:.0f} s; log {self.log_file} tail:\n"
                               f"{tail_file(self.log_file, 30)}") from None
        if line is None:
            code = self.proc.wait()
            raise AdapterError(f"{self.what}: process exited with status {code}; log {self.log_file} tail:\n"
                               f"{tail_file(self.log_file, 30)}")
        return line

    def _first_line(self, timeout_s: float) -> dict:
        """Its first line (that it is up), or the process killed and the error raised: a start that
        timed out on a starved host left its process running, unknown to the harness until it exited
        (proof C: three gRPC consumers of a torn-down system lived on through the retries, one of
        them a second member of its group beside its replacement)."""
        try:
            return self.next_line(timeout_s)
        except BaseException:
            self.kill()
            raise

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait()
        self._close_pipes()
        _process._LIVE.discard(self)

    def _close_pipes(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream:
                    stream.close()
            except OSError:
                pass
        self._log.close()

    def close(self) -> None:
        self.kill()

    def abort(self) -> None:
        """The exit and signal cleanup (``process._close_all``): killed at once, whatever it is doing."""
        self.kill()

    def ask_to_stop(self) -> None:
        """Close stdin: the graceful stop request (the process shuts its client down and exits)."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass

    def stopped_by(self, deadline: float) -> None:
        """Wait for the asked-for exit until ``deadline`` (monotonic); SIGKILL if it did not come."""
        if self.proc.poll() is None:
            try:
                self.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        self.kill()

    def terminate(self, timeout_s: float = 20.0) -> None:
        """Close stdin (the graceful stop request); SIGKILL if it does not exit in time."""
        terminate_all([self], timeout_s)


class _RequestProcess(_LineProcess):
    """A child process that answers JSON requests, each reply carrying its request's ``id``, after a
    first line ``{"ok": true, ...}`` once it is up. Requests go concurrently (the process answers
    each in a thread of its own): the runs sharing a system wait for none but their own."""

    def __init__(self, argv: list[str], log_file: Path, what: str, start_timeout_s: float, session_nice: int | None = None):
        self._waiting: dict[int, queue.Queue] = {}  # id -> where its reply goes
        self._wlock = threading.Lock()
        self._ids = itertools.count(1)
        self._closed = False  # its stdout ended, or it was asked to shut down
        super().__init__(argv, log_file, what, session_nice)
        hello = self._first_line(start_timeout_s)
        if not hello.get("ok"):
            self.kill()
            raise AdapterError(f"{self.what}: did not start: {hello}")

    def _read(self) -> None:
        for raw in self.proc.stdout:
            try:
                line = json.loads(raw)
            except json.JSONDecodeError:
                continue
            rid = line.get("id") if isinstance(line, dict) else None
            if rid is None:
                self._lines.put(line)
                continue
            with self._wlock:
                waiter = self._waiting.pop(rid, None)
            if waiter is not None:  # else the reply came after its request gave up: dropped
                waiter.put(line)
        with self._wlock:
            self._closed = True
            waiters, self._waiting = list(self._waiting.values()), {}
        for waiter in waiters:
            waiter.put(None)
        self._lines.put(None)  # EOF: the process ended
        self._ended()

    def _failed(self, cmd: str, error: str) -> AdapterError:
        return AdapterError(f"{self.what}: {cmd}: {error}")

    def request(self, cmd: str, timeout_s: float = 30.0, **args) -> dict:
        answer: queue.Queue = queue.Queue()
        with self._wlock:
            if self._closed or not self.alive():
                raise AdapterError(f"{self.what}: not running (status {self.proc.poll()}); log {self.log_file} tail:\n"
                                   f"{tail_file(self.log_file, 30)}")
            rid = next(self._ids)
            self._waiting[rid] = answer
            try:
                self.proc.stdin.write((json.dumps({"id": rid, "cmd": cmd, **args}) + "\n").encode())
                self.proc.stdin.flush()
            except OSError as e:
                del self._waiting[rid]
                raise AdapterError(f"{self.what}: {cmd}: {e}") from None
        try:
            reply = answer.get(timeout=timeout_s)
        except queue.Empty:
            with self._wlock:
                self._waiting.pop(rid, None)
            raise AdapterError(f"{self.what}: {cmd}: no answer within {timeout_s:.0f} s; log {self.log_file} tail:\n"
                               f"{tail_file(self.log_file, 30)}") from None
        if reply is None:
            raise AdapterError(f"{self.what}: {cmd}: the process exited with status {self.proc.wait()}; log "
                               f"{self.log_file} tail:\n{tail_file(self.log_file, 30)}")
        if not reply.get("ok"):
            raise self._failed(cmd, reply.get("error", "?"))
        return reply

    def shut_down(self, line: bytes, timeout_s: float) -> None:
        """Graceful (``line`` asks for it; the process exits within ``timeout_s``) unless a request
        is in flight: then it is waiting on a broker that does not answer, and the process is
        killed at once. No request is taken after this."""
        with self._wlock:
            idle = not self._waiting and not self._closed
            self._closed = True
            if idle and self.alive():
                try:
                    self.proc.stdin.write(line)
                    self.proc.stdin.flush()
                except OSError:
                    idle = False
        if idle:
            try:
                self.proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                pass
        self.kill()


class ClientProcess(_RequestProcess):
    def __init__(self, lib_dir: Path, namesrv_addr: str, log_dir: Path, instance: str, start_timeout_s: float = 60.0):
        super().__init__(["-m", "hourglass.adapters.rocketmq.client_proc", "--lib", str(lib_dir), "--namesrv", namesrv_addr,
                          "--log-dir", str(log_dir), "--instance", instance],
                         log_dir / "client-process.log", f"client process ({namesrv_addr})", start_timeout_s,
                         session_nice=HOST_SESSION_NICE)

    def _failed(self, cmd: str, error: str) -> AdapterError:
        return ClientError(cmd, error)

    def close(self) -> None:
        """Graceful (the client shuts down, up to 15 s) unless a request is in flight (:meth:`shut_down`)."""
        self.shut_down(b'{"cmd": "shutdown"}\n', 15.0)


#: The client process's answer to an admin command on every broker while the name server routes
#: none (a broker it dropped registers again: reference.cluster.REGISTERED_WITHIN_MS).
NO_BROKER = "no broker registered with the name server"

#: A request of the client process that failed on its way, not at the broker: RocketMQ's own
#: timeout, or a channel closed under the request (NettyRemotingClient.invokeSync closes a channel
#: on a timeout or a failed send, failing every request in flight on it: one starved broker's
#: timeout took 13 concurrent topic creations with it in a proof run). What is harmless to repeat
#: is asked again on these (``RocketMQSystem.repeated``); any other error is the answer.
TRANSPORT_FAILURES = ("TimeoutException", "RemotingSendRequestException", "RemotingConnectException",
                      "RemotingTooMuchRequestException")


def transport_failure(error: str) -> bool:
    """Whether a client process's error is a request's failure on its way (:data:`TRANSPORT_FAILURES`)."""
    return any(name in error for name in TRANSPORT_FAILURES)


class ClientError(AdapterError):
    def __init__(self, cmd: str, error: str):
        self.cmd, self.error = cmd, error
        super().__init__(f"client {cmd}: {error}")


def consumer_argv(spec: ConsumerSpec, lib_dir: Path, namesrv_addr: str, events_file: Path, log_dir: Path,
                  restarted_after: str | None = None, proxy_addr: tuple[str, bool] | None = None) -> list[str]:
    """The consumer's command line (``-m`` and its module, then ``consumer_proc``'s arguments, or
    ``grpc_consumer_proc``'s): the consumer host takes the same arguments after the module."""
    module = "consumer_proc"
    if spec.mode in GRPC_MODES:  # the 5.x gRPC client, through the proxy (adapters.rocketmq.grpc_consumer_proc)
        if proxy_addr is None:
            raise AdapterError(f"a {spec.mode} consumer talks to 5.x's proxy, and this system runs none")
        module = "grpc_consumer_proc"
    argv = ["-m", f"hourglass.adapters.rocketmq.{module}", "--lib", str(lib_dir), "--namesrv", namesrv_addr,
            "--group", spec.group, "--max-reconsume-times", str(spec.max_reconsume_times),
            "--events", str(events_file), "--log-dir", str(log_dir), "--name", spec.name,
            "--batch-size", str(spec.batch_size), "--mode", spec.mode, "--suspend-ms", str(spec.suspend_ms),
            "--instance", str(spec.instance)]
    if spec.consume_timeout_min is not None:
        argv += ["--consume-timeout", str(spec.consume_timeout_min)]
    if spec.pop_invisible_ms is not None:
        argv += ["--pop-invisible-ms", str(spec.pop_invisible_ms)]
    if restarted_after:  # the replacement records its own start, once its JVM is up
        argv += ["--restarted-after", restarted_after]
    if proxy_addr is not None and spec.mode in GRPC_MODES:
        argv += ["--proxy", proxy_addr[0], "--grpc-lib", str(grpc_client_lib())] + (["--tls"] if proxy_addr[1] else [])
    for topic in spec.topics:
        argv += ["--topic", topic]
    return argv


class _ExitWatch:
    """The exit watch of a consumer's death, for a consumer in a process of its own
    (:class:`ConsumerProcess`) and one in a consumer host (:class:`HostedConsumer`, whose ``proc``
    is its host's): an end of ``proc`` the harness did not ask for is recorded, at the time it is
    first noticed, as a ``kill`` with ``cause: exited`` and the ``exit_code`` in the consumer's events
    file — unless the consumer recorded its own death (:meth:`_recorded_itself`). An end the harness
    asked for (:meth:`_ask_to_end`) is the harness's fault event, not a death."""

    proc: subprocess.Popen

    def _watch_exits(self, spec: ConsumerSpec) -> None:
        self.spec = spec
        self.events_file = Path(spec.events_dir) / consumer_events(spec.name)
        self._death_lock = threading.Lock()
        self._asked_to_end = False  # the harness stops or kills it: not a death
        self._ready = False  # a consumer that never started is a failed start, not a death
        self._death: str | None = None  # cause of its recorded death, once noticed
        self._noticed = False

    def _started(self) -> None:
        """It counts as started: an end from now on is a death."""
        with self._death_lock:
            self._ready = True
        if self.proc.poll() is not None:  # ended before it counted as started: the reader's notice was too early
            self.death()

    def _recorded_itself(self, code: int) -> bool:
        """Whether exit status ``code`` says the consumer recorded its own death."""
        return False

    def death(self, ended: bool = False) -> str | None:
        """The cause of this consumer's death: ``died`` (it recorded its own) or ``exited``
        (recorded now, at the time it is first noticed: when its process's stdout ended, or
        ``ended`` is False and it has exited). None while it runs, when its end was asked for, or
        when it never started."""
        noticed_ms = now_ms()
        with self._death_lock:
            if self._noticed:
                return self._death
            if self._asked_to_end or not self._ready or (not ended and self.proc.poll() is None):
                return None
            try:
                code = self.proc.wait(timeout=EXIT_AFTER_EOF_S)  # stdout ends when the process does
            except subprocess.TimeoutExpired:
                return None  # it closed its stdout but runs on: not dead (yet)
            self._noticed = True
            if self._recorded_itself(code):
                self._death = CONSUMER_DIED
            else:
                with EventLog(self.events_file) as log:
                    log.write(consumer_fault("kill", noticed_ms, self.spec.name, self.spec.group, CONSUMER_EXITED,
                                             exit_code=code))
                self._death = CONSUMER_EXITED
            return self._death

    def _ask_to_end(self) -> bool:
        """Its end from now on is the harness's asking; whether it was asked before."""
        with self._death_lock:
            asked, self._asked_to_end = self._asked_to_end, True
            return asked


class ConsumerProcess(_ExitWatch, _LineProcess):
    """One consumer process, and the exit watch of its death (:class:`_ExitWatch`).

    A consumer that dies on a ``CRASH`` answer records its own death (``kill``, ``cause: died``)
    and exits with ``CRASH_EXIT``. Any other end the harness did not ask for (killed by the OS, a
    JVM crash) is recorded by the reader of its stdout the moment it sees the end (or by
    :meth:`death`, whichever comes first), appended to the consumer's events file (the dead
    process no longer writes to it). An end the harness asked for (:meth:`kill`,
    :meth:`terminate`) is the harness's fault event, not a death."""

    def __init__(self, spec: ConsumerSpec, lib_dir: Path, namesrv_addr: str, log_dir: Path,
                 start_timeout_s: float = 90.0, restarted_after: str | None = None,
                 proxy_addr: tuple[str, bool] | None = None):
        self._watch_exits(spec)
        argv = consumer_argv(spec, lib_dir, namesrv_addr, self.events_file, log_dir, restarted_after, proxy_addr)
        super().__init__(argv, log_dir / f"consumer-{spec.name}.log", f"consumer {spec.name} (group {spec.group})")
        ready = self._first_line(start_timeout_s)
        if not ready.get("ready"):
            self.kill()
            raise AdapterError(f"{self.what}: did not start: {ready}")
        self._started()

    def _ended(self) -> None:
        self.death(ended=True)

    def _recorded_itself(self, code: int) -> bool:
        return code == CRASH_EXIT

    def kill(self) -> None:
        self._ask_to_end()
        super().kill()

    def ask_to_stop(self) -> None:
        self._ask_to_end()
        super().ask_to_stop()


class ConsumerHost(_RequestProcess):
    """The harness side of a consumer host (:mod:`consumer_host`): many consumers in one process and
    one JVM, each a :class:`HostedConsumer`. The host's end (not asked for) is every hosted
    consumer's death, recorded in each one's events file."""

    def __init__(self, lib_dir: Path, log_dir: Path, pop: bool, start_timeout_s: float = 90.0):
        self.hosted: set[HostedConsumer] = set()
        super().__init__(["-m", "hourglass.adapters.rocketmq.consumer_host", "--lib", str(lib_dir), "--log-dir", str(log_dir),
                          *(["--pop"] if pop else [])],
                         log_dir / f"consumer-host{'-pop' if pop else ''}.log", f"consumer host{' (POP)' if pop else ''}",
                         start_timeout_s, session_nice=HOST_SESSION_NICE)

    def _ended(self) -> None:
        for consumer in list(self.hosted):
            consumer.death(ended=True)

    def running(self) -> list[HostedConsumer]:
        return [c for c in list(self.hosted) if c.alive()]


class HostedConsumer(_ExitWatch):
    """One consumer in a :class:`ConsumerHost`, to :class:`ConsumerProcesses` what a
    :class:`ConsumerProcess` is: started (``add``) when made, stopped gracefully alone
    (:meth:`ask_to_stop`, :meth:`stopped_by`); its death is the host's end, recorded like a
    consumer process's exit (:class:`_ExitWatch`: ``cause: exited``, the host's exit code). A system
    a fault acts on never hosts its consumers (``ConsumerSpec.hosted``): :meth:`kill` stops it
    gracefully, and ``proc`` (the host's process: what the host watch watches) is paused or killed
    only whole."""

    def __init__(self, spec: ConsumerSpec, host: ConsumerHost, lib_dir: Path, namesrv_addr: str, log_dir: Path,
                 start_timeout_s: float = 90.0, restarted_after: str | None = None):
        self._watch_exits(spec)
        self.host, self.proc = host, host.proc
        self.what = f"consumer {spec.name} (group {spec.group}, in the {host.what})"
        self._running = False  # started, and not stopped (its host may have ended: alive())
        self._stopped = threading.Event()  # its asked-for stop was answered
        argv = consumer_argv(spec, lib_dir, namesrv_addr, self.events_file, log_dir, restarted_after)[2:]
        host.hosted.add(self)
        try:
            host.request("add", start_timeout_s, argv=argv)
        except AdapterError as e:
            host.hosted.discard(self)
            raise AdapterError(f"{self.what}: did not start: {e}") from None
        self._running = True
        self._started()

    def alive(self) -> bool:
        return self._running and self.host.alive()

    def ask_to_stop(self) -> None:
        if self._ask_to_end():
            return
        if not self.alive():
            self._stopped.set()
            return
        threading.Thread(target=self._stop, name=f"hg-stop-{self.spec.name}", daemon=True).start()

    def _stop(self) -> None:
        try:
            self.host.request("stop", EXIT_AFTER_EOF_S + 20.0, name=self.spec.name)
        except AdapterError:
            pass  # the host ended meanwhile (then the consumer did too), or its log says why
        finally:
            self._running = False
            self.host.hosted.discard(self)
            self._stopped.set()

    def stopped_by(self, deadline: float) -> None:
        """Wait for the asked-for stop until ``deadline`` (monotonic); a consumer whose shutdown
        hangs past it ends with its host, once no other hosted consumer runs."""
        self._stopped.wait(max(0.0, deadline - time.monotonic()))
        if not self._stopped.is_set():
            self._running = False
            self.host.hosted.discard(self)
            if not self.host.running():
                self.host.kill()

    def kill(self) -> None:
        """A hosted consumer's end is its graceful stop (see the class)."""
        self.ask_to_stop()
        self.stopped_by(time.monotonic() + 20.0)

    def terminate(self, timeout_s: float = 20.0) -> None:
        terminate_all([self], timeout_s)


def terminate_all(procs: list, timeout_s: float = 20.0) -> None:
    """Stop processes gracefully all at once: every one is asked first, then each waited for until
    one shared deadline (SIGKILL after it), so N JVM shutdowns cost the time of the slowest, not
    their sum."""
    for p in procs:
        p.ask_to_stop()
    deadline = time.monotonic() + timeout_s
    for p in procs:
        p.stopped_by(deadline)
