"""The consumers of a RocketMQ system as one fault target, ``consumer`` (:mod:`adapters.parts`):
each a process of its own (:class:`~adapters.rocketmq.clientlink.ConsumerProcess`), or, where its
spec says ``hosted``, one of many in the system's consumer host, one JVM (a second for POP groups:
:class:`~adapters.rocketmq.clientlink.HostedConsumer`); restarted when it dies unasked
(:meth:`ConsumerProcesses.poll`), down after the harness's stop or kill until the harness starts
them again."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Callable

from hourglass.adapters.base import AdapterError, ConsumerSpec, ConsumersNotRestarted, NotReady
from hourglass.adapters.parts import PROCESS_ACTIONS, Part
from hourglass.adapters.rocketmq.clientlink import ConsumerHost, ConsumerProcess, HostedConsumer, terminate_all
from hourglass.reference.contract import RETRY_PREFIX
from hourglass.reference.modes import GRPC_MODES
from hourglass.reference.pop import POP


def _signal_group(proc: ConsumerProcess, sig: int) -> None:
    if proc.alive():
        try:
            os.killpg(proc.proc.pid, sig)
        except ProcessLookupError:
            pass


class ConsumerProcesses(Part):
    #: a consumer's start asks the name server and every broker; when many start at once on a busy
    #: machine one of those requests can fail ("send request ... failed"): start it again, a few times
    CONSUMER_START_ATTEMPTS = 4

    def __init__(self, lib_dir: Path, namesrv_addr: Callable[[], str], logs_dir: Path,
                 proxy_addr: Callable[[], tuple[str, bool] | None] = lambda: None):
        super().__init__("consumer")
        self.lib_dir, self.namesrv_addr, self.logs_dir, self.proxy_addr = lib_dir, namesrv_addr, logs_dir, proxy_addr
        self.procs: dict[str, ConsumerProcess | HostedConsumer] = {}
        #: the consumer hosts, by whether they host POP groups (a JVM without binary request headers)
        self.hosts: dict[bool, ConsumerHost] = {}
        self._host_lock = threading.Lock()
        self.specs: dict[str, ConsumerSpec] = {}
        self.stopped: set[str] = set()
        self.left: set[str] = set()  # stopped for good by the scenario (left its group): start() leaves them down
        #: being started (by add or a restart): the runs sharing a system poll it from their own
        #: threads, and a consumer started twice would leave one process nobody stops
        self.starting: set[str] = set()
        #: torn down (discard): nothing starts any more — a run still draining when its batch was
        #: stopped restarted consumers of a system already gone, and left them running
        self.closed = False
        self._lock = threading.Lock()

    def add(self, spec: ConsumerSpec, create_topic: Callable[..., None]) -> None:
        with self._lock:
            if spec.name in self.starting or (spec.name in self.procs and self.procs[spec.name].alive()):
                raise AdapterError(f"consumer {spec.name!r} is already running")
            self.specs[spec.name] = spec
            self.starting.add(spec.name)
        try:
            # the retry topic exists before the first LATER, so the consumer's route has it from the start
            create_topic(RETRY_PREFIX + spec.group, queues=1)
            proc = self._spawn(spec)
            if not self._keep(spec.name, proc):
                raise AdapterError(f"consumer {spec.name!r} not started: the system's consumers were torn down")
            with self._lock:
                self.stopped.discard(spec.name)
                self.left.discard(spec.name)
        finally:
            with self._lock:
                self.starting.discard(spec.name)

    def _host(self, pop: bool) -> ConsumerHost:
        """The running consumer host for POP groups or the others, started if there is none."""
        with self._host_lock:
            if self.closed:
                raise AdapterError("no consumer host started: the system's consumers were torn down")
            host = self.hosts.get(pop)
            if host is None or not host.alive():
                if host is not None:
                    host.kill()  # reap, close pipes
                host = self.hosts[pop] = ConsumerHost(self.lib_dir, self.logs_dir, pop)
            return host

    def warm(self, pop: bool) -> None:
        """The consumer host for POP groups or the others started now, in a thread of its own, beside
        the system's own start: the first hosted group's start then finds it up (its JVM and the
        client's classes: 1.8-3 s beside a shared system's other starts). A host that cannot start
        now is started by the first group that needs it, which reports why."""
        def start() -> None:
            try:
                self.logs_dir.mkdir(parents=True, exist_ok=True)
                self._host(pop)
            except (AdapterError, OSError):
                pass

        threading.Thread(target=start, name=f"hg-warm-host{'-pop' if pop else ''}", daemon=True).start()

    def _spawn(self, spec: ConsumerSpec, restarted_after: str | None = None) -> ConsumerProcess | HostedConsumer:
        for attempt in range(1, self.CONSUMER_START_ATTEMPTS + 1):
            if self.closed:
                raise AdapterError(f"consumer {spec.name!r} not started: the system's consumers were torn down")
            try:
                if spec.hosted and spec.mode not in GRPC_MODES:
                    return HostedConsumer(spec, self._host(spec.mode == POP), self.lib_dir, self.namesrv_addr(), self.logs_dir,
                                          restarted_after=restarted_after)
                return ConsumerProcess(spec, self.lib_dir, self.namesrv_addr(), self.logs_dir, restarted_after=restarted_after,
                                       proxy_addr=self.proxy_addr())
            except AdapterError:
                if attempt == self.CONSUMER_START_ATTEMPTS:
                    raise
                time.sleep(attempt)  # back off before the next start
        raise AssertionError("unreachable")

    def _keep(self, name: str, proc: ConsumerProcess | HostedConsumer) -> bool:
        """``proc`` (just started) recorded as consumer ``name``'s, unless the consumers were torn
        down while it started: then it ends at once, and nobody is left running."""
        with self._lock:
            if not self.closed:
                self.procs[name] = proc
                return True
        proc._ask_to_end()
        proc.kill()
        return False

    def poll(self) -> list[str]:
        """Restart every consumer that is down without having been stopped or killed by the
        harness. A death is recorded before its restart (by the consumer itself, or by its exit
        watch now), and the restart as the ``start`` of the replacement, in the consumer's events file."""
        restarted, failed = [], {}
        with self._lock:
            due = [(n, p) for n, p in self.procs.items()
                   if not self.closed and not p.alive() and n not in self.stopped and n not in self.starting]
            self.starting.update(n for n, _ in due)
        try:
            for name, proc in due:
                died = proc.death()  # recorded once, however often its restart is tried
                proc.kill()  # reap, close pipes
                # the replacement records its start (cause: the death) once its JVM is up: a start
                # under load takes seconds, and the consumer's outage lasts until then
                try:
                    new = self._spawn(self.specs[name], restarted_after=died)
                except AdapterError as e:  # one consumer's failure stops no other's restart
                    failed[name] = str(e)
                    continue
                if not self._keep(name, new):
                    continue
                restarted.append(name)
        finally:
            with self._lock:
                self.starting.difference_update(n for n, _ in due)
        if failed:
            raise ConsumersNotRestarted(failed, restarted)
        return restarted

    def start(self) -> None:
        with self._lock:
            self.stopped = set(self.left)
        self.poll()

    def stop(self) -> None:
        with self._lock:  # marked down first: a poll meanwhile restarts none of them
            self.stopped.update(self.procs)
            procs = list(self.procs.values())
        terminate_all(procs)
        self.close_hosts()

    def discard(self) -> None:
        """Every consumer and consumer host ended at once (SIGKILL), their ends asked for (no death
        recorded): a system being torn down after its runs (Consuming.stop_consumers); nothing
        starts any more (:attr:`closed`)."""
        with self._lock:
            self.closed = True
            self.stopped.update(self.procs)
            procs = list(self.procs.values())
        for proc in procs:
            proc._ask_to_end()
            if isinstance(proc, ConsumerProcess):
                proc.kill()
        with self._host_lock:
            hosts, self.hosts = list(self.hosts.values()), {}
        for host in hosts:
            for consumer in list(host.hosted):
                consumer._ask_to_end()
            host.kill()

    def close_hosts(self) -> None:
        """Every consumer host ends (its consumers stopped: a start after this starts a new one)."""
        with self._host_lock:
            hosts, self.hosts = list(self.hosts.values()), {}
        terminate_all(hosts)

    def stop_one(self, name: str) -> None:
        """One consumer stopped gracefully, for good (it left its group): never restarted."""
        with self._lock:
            if name not in self.procs:
                raise AdapterError(f"no consumer {name!r} (running: {sorted(self.procs)})")
            self.stopped.add(name)
            self.left.add(name)
            proc = self.procs[name]
        terminate_all([proc])

    def kill(self) -> None:
        """Down until started again, as after a stop."""
        with self._lock:
            self.stopped.update(self.procs)
            procs = list(self.procs.values())
        for proc in procs:
            proc.kill()

    def pause(self) -> None:
        for proc in self.procs.values():
            _signal_group(proc, signal.SIGSTOP)

    def resume(self) -> None:
        for proc in self.procs.values():
            _signal_group(proc, signal.SIGCONT)

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        dead = [n for n, p in self.procs.items() if not p.alive() and n not in self.stopped]
        if dead:
            raise NotReady(f"consumers not running: {dead}")

    def only(self, names: frozenset[str]) -> "ConsumerMembers":
        return ConsumerMembers(self, names)

    def watched(self) -> dict[str, int]:
        """The pid of each live consumer, by subject (``consumer <name>``); a consumer host's once
        (``consumer host``, ``consumer host (POP)``): its threads are all its consumers'."""
        out = {f"consumer {name}": proc.proc.pid for name, proc in list(self.procs.items())
               if proc.alive() and not isinstance(proc, HostedConsumer)}
        out.update({host.what: host.proc.pid for host in list(self.hosts.values()) if host.alive()})
        return out


class ConsumerMembers(Part):
    """Some of a system's consumers as the target ``consumer`` (:meth:`ConsumerProcesses.only`): the
    consumers of one run on a system other runs share (``harness.batch``). Each is a process of its
    own (a run with consumer faults is never ``hosted``: a signal to a consumer host would stop every
    run's consumers in it); its process verbs act on these and leave the others running."""

    def __init__(self, consumers: ConsumerProcesses, names: frozenset[str]):
        super().__init__(consumers.target)
        self.consumers, self.names = consumers, frozenset(names)

    def cannot(self, action: str) -> str | None:
        return None if action in PROCESS_ACTIONS else "a fault on some of the consumers acts on their processes only"

    def _mine(self) -> list[ConsumerProcess | HostedConsumer]:
        c = self.consumers
        with c._lock:
            procs = [p for n, p in c.procs.items() if n in self.names]
        hosted = [p.spec.name for p in procs if isinstance(p, HostedConsumer)]
        if hosted:
            raise AdapterError(f"consumers {hosted} share a consumer host with other runs': no fault acts on them apart")
        return procs

    def start(self) -> None:
        c = self.consumers
        with c._lock:
            c.stopped -= self.names - c.left
        c.poll()

    def stop(self) -> None:
        c = self.consumers
        procs = self._mine()
        with c._lock:  # marked down first: a poll meanwhile restarts none of them
            c.stopped.update(self.names & set(c.procs))
        terminate_all(procs)

    def kill(self) -> None:
        c = self.consumers
        procs = self._mine()
        with c._lock:
            c.stopped.update(self.names & set(c.procs))
        for proc in procs:
            proc.kill()

    def pause(self) -> None:
        for proc in self._mine():
            _signal_group(proc, signal.SIGSTOP)

    def resume(self) -> None:
        for proc in self._mine():
            _signal_group(proc, signal.SIGCONT)

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        c = self.consumers
        dead = [n for n, p in list(c.procs.items()) if n in self.names and not p.alive() and n not in c.stopped]
        if dead:
            raise NotReady(f"consumers not running: {dead}")
