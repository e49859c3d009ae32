"""A RocketMQ system the harness starts itself on the process or container runtime: its name
server and broker processes (:mod:`adapters.rocketmq.topology`), their machine faults
(:mod:`adapters.rocketmq.machine`), its store on this host (bind-mounted for containers), so it
also reads ``delayOffset.json`` and tells when the broker persisted its schedule offsets
(:class:`~adapters.base.OffsetFlushWatching`), its processes for the host watch and its logs."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

from hourglass.adapters.base import AdapterError, BrokerProfile, ConsumerSpec, NotReady
from hourglass.adapters.parts import faculties
from hourglass.adapters.rocketmq.clientlink import ClientError
from hourglass.adapters.rocketmq.logs import client_log_files, server_log_files
from hourglass.adapters.rocketmq.iostall import FreezableStore
from hourglass.adapters.rocketmq.machine import ClockControl, FillableStore, OwnNetwork
from hourglass.adapters.rocketmq.provision import Distribution, NotOnCentral
from hourglass.adapters.rocketmq.proxy import InBrokerProxy, Proxy, ProxyStart, proxy_jars, tls_only
from hourglass.adapters.rocketmq.runtime import CpuQuota, Runtime
from hourglass.adapters.rocketmq.servers import Broker, NameServer
from hourglass.adapters.rocketmq.system import RocketMQSystem
from hourglass.adapters.rocketmq.topology import BrokerNode
from hourglass.adapters.rocketmq.whitebox import last_offset_flush_ms, memory_snapshots, persisted_snapshots, timer_checkpoint
from hourglass.reference.cluster import CONTROLLER
from hourglass.reference.faults.io import FREEZABLE_STORE
from hourglass.reference.contract import BROKER_TARGETS, PROXY_TARGET
from hourglass.reference.modes import GRPC_MODES
from hourglass.reference.pop import PROXY_CLUSTER, PROXY_LOCAL


class LocalRocketMQSystem(RocketMQSystem):
    def __init__(self, dist: Distribution, runtime: Runtime, workdir: Path, profile: BrokerProfile,
                 base_port: int = 19876, chain: tuple[Distribution, ...] = ()):
        super().__init__(dist, runtime, workdir, profile, base_port=base_port, chain=chain)
        self.store = FillableStore(self.layout.store_dir)  # the store on a size-limited filesystem (disk_full)
        self.freezer = FreezableStore(self.layout.store_dir)  # a loop-mounted ext4 it can freeze (io_stall)
        self.net = OwnNetwork()  # the broker's own network namespace (partition, latency, loss)
        self.broker_clock = ClockControl(self.layout.conf_dir, profile.drifting_clock)  # libfaketime (clock steps)
        self._watched: dict[str, int] = {}  # the host pid of each server, for the host watch
        self._proxy_start: ProxyStart | None = None  # set up: the proxy's start, awaited by what needs it
        self.parts = {"namesrv": NameServer(self, "namesrv", self.layout.home_dir)}
        self.parts.update({t: self._broker(node) for t, node in self.nodes.items()})
        self.parts["consumer"] = self.consumer
        if profile.proxy and dist.major >= 5 and not self.topology.commands:  # the gRPC groups' endpoint
            self.proxy_local = profile.proxy_mode == PROXY_LOCAL
            self.parts[PROXY_TARGET] = InBrokerProxy(self) if self.proxy_local else Proxy(self)

    def _broker(self, node: BrokerNode) -> Broker:
        if node.target != BROKER_TARGETS[0]:  # a second broker: its process only (reference.cluster)
            return Broker(self, node)
        return Broker(self, node, faculties(disk=self.store, io=self.freezer, cpu=CpuQuota(self.runtime, node.target),
                                            network=self.net, clock=self.broker_clock), self.net, self.broker_clock)

    @property
    def ports(self):
        return self.topology.ports

    @property
    def namesrv_addr(self) -> str:
        if self.topology.ports is None:
            raise AdapterError("system not set up: no name-server address yet")
        return self.topology.ports.namesrv_addr

    def setup(self) -> None:
        if self._is_setup:
            return
        try:
            self._prepare()
            self.parts["namesrv"].launch()
            self.open_client()
            self.parts["namesrv"].wait_ready()
            first = self.parts[BROKER_TARGETS[0]]
            if self.cluster == CONTROLLER:  # the first replica becomes master before the second starts
                first.launch()
                first.wait_ready()
                self._wait_replicas({first.target}, master=first.target)
            for target in self.nodes:  # started together; each waited for below
                if target not in self.launched:
                    self.parts[target].launch()
            for target in self.nodes:
                self.parts[target].wait_ready()
            if self.cluster == CONTROLLER:  # a send is acknowledged by both only once both are in sync
                self._wait_replicas(set(self.nodes))
            if PROXY_TARGET in self.parts:  # in front of registered brokers
                self._start_proxy()
            self._is_setup = True
        except BaseException:
            self.teardown()
            raise

    def _start_proxy(self) -> None:
        """The proxy in front of the brokers: in local mode the broker's process runs it, answering
        by now; in cluster mode its own JVM starts now, and the runs go on beside its start (it took
        6 s of a shared system's 13 s setup): what needs it waits for it (:meth:`part`,
        :meth:`start_consumer`: :class:`ProxyStart`)."""
        self.info.details.update({PROXY_TARGET: self.ports.proxy_addr, "proxy_tls": tls_only(self.dist.version),
                                  "proxy_mode": PROXY_LOCAL if self.proxy_local else PROXY_CLUSTER})
        self._proxy_start = ProxyStart(self.parts[PROXY_TARGET], self.proxy_local)
        if self.proxy_local:
            self._proxy_start.wait()

    def part(self, target: str):
        if target == PROXY_TARGET and self._proxy_start is not None:  # a fault of the proxy acts on a proxy up
            self._proxy_start.wait()
        return super().part(target)

    def start_consumer(self, spec: ConsumerSpec) -> None:
        if spec.mode in GRPC_MODES and self._proxy_start is not None:  # its endpoint
            self._proxy_start.wait()
        super().start_consumer(spec)

    def _proxy_jars(self) -> None:
        """The proxy's jars, where Maven Central has its version; else the system runs no proxy and
        offers no gRPC (its scenarios are skipped, the reason in run.json)."""
        try:
            proxy_jars(self.dist, self.runtime)
        except NotOnCentral as e:
            self.info.details["proxy_unavailable"] = str(e)
            del self.parts[PROXY_TARGET]
            self.proxy_local = False

    def _prepare(self) -> None:
        """Folders, ports, the machine faults the profile asks for, the name server's config."""
        if PROXY_TARGET in self.parts:
            self._proxy_jars()
        topo, details = self.topology, self.info.details
        if self.profile.fillable_store:
            self.store.mount(details)
        elif FREEZABLE_STORE in self.profile.needs:
            self.freezer.mount(details)
        self.layout.make()
        self.dist.make_home(self.layout.home_dir)
        topo.lease()
        if self.profile.own_network:
            net = self.net.make(self.runtime.name, details)
            if net is not None:
                topo.ports = dataclasses.replace(topo.ports, broker_host=net.ns_addr, namesrv_host_for_broker=net.host_addr)
        if self.profile.own_clock:
            self.broker_clock.make(self.info.runtime, topo.commands, details)
        details["ports"] = {"namesrv": topo.ports.namesrv, "broker": topo.ports.broker}
        topo.lease_second(details)
        topo.write_namesrv_conf()

    def _wait_replicas(self, targets: set[str], master: str | None = None, timeout_s: float = 90.0) -> None:
        """5.x controller mode: wait until the replicas ``targets`` are in the sync state set (and
        ``master`` is the master), as the controller says."""
        topo = self.topology
        want = {topo.ports_of(t).broker_addr for t in targets}
        deadline, last = time.monotonic() + timeout_s, "no answer yet"
        while True:
            try:
                state = self.request("sync_state", timeout_s=15, controller=topo.ports.controller_addr,
                                     broker_name=self.broker_name)
                if want <= set(state["in_sync"]) and (master is None or state["master"] == topo.ports_of(master).broker_addr):
                    self.info.details.setdefault("replicas", []).append({"master": state["master"], "in_sync": state["in_sync"]})
                    return
                last = f"master {state['master']}, in sync {state['in_sync']}"
            except ClientError as e:
                last = str(e)[:300]
            if time.monotonic() > deadline:
                raise NotReady(f"the controller did not report {sorted(want)} in the sync state set"
                               + (f" with {master} as master" if master else "") + f" within {timeout_s:.0f} s (last: {last})")
            time.sleep(0.5)  # poll interval while the replicas register and catch up

    def teardown(self) -> None:
        if self._proxy_start is not None:  # a proxy exiting from now on is not started again
            self._proxy_start.close()
        self.freezer.thaw()  # first: a process blocked on a frozen store cannot even be killed
        super().teardown()

    def release(self) -> None:
        self.freezer.close()
        self.store.close()
        self.net.close()
        self.broker_clock.close()
        self.topology.release()

    def log_tail(self, component: str, lines: int = 40) -> str:
        return self.part(component).log_tail(lines)

    # -- the host's stalls (adapters.base.HostWatching) -----------------------------------------
    def watched_processes(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for component in sorted(self.launched):
            if component in self.paused:
                continue
            pid = self._watched.get(component)
            if pid is None or not os.path.exists(f"/proc/{pid}"):  # asked once per start (the watch's thread
                try:                                                # must not drive a runtime's client)
                    pid = self.runtime.pid(component)
                except AdapterError:  # a container not running now
                    continue
            if pid:
                out[component] = self._watched[component] = pid
        out.update(self.consumer.watched())
        return out

    def host_not_observed(self) -> str | None:
        return None

    # -- logs (adapters.base.LogFiles) ---------------------------------------------------------
    def log_files(self) -> dict[str, Path]:
        """Every log of this system on this host, by the name of its copy in the run's ``logs/``
        (:mod:`adapters.rocketmq.logs`): the client side's, and each server home's own."""
        layouts = [("", self.layout)] + [(f"{n.target}/", n.layout) for n in self.nodes.values() if n.layout != self.layout]
        return server_log_files(client_log_files(self.layout.logs_dir), layouts)

    def logs_not_collected(self) -> str | None:
        return None

    # -- white box (adapters.rocketmq.whitebox) --------------------------------------------------
    def snapshot(self) -> list[dict]:
        """The schedule offsets of every master (a slave re-puts nothing: ``reference.cluster``):
        persisted (``delayOffset.json`` in its store) and in memory (``brokerStatus``), each with
        the ``target`` it was read from."""
        masters = self._masters()
        out = persisted_snapshots(masters, self.cluster)
        live = [n.target for n in masters if self.runtime.running(n.target) and n.target not in self.paused]
        if live and "namesrv" not in self.paused:
            targets = {self.topology.ports_of(t).broker_addr: t for t in live}
            out += memory_snapshots(self.broker_status(addrs=sorted(targets)), targets, self.cluster)
        return out

    def _masters(self) -> list[BrokerNode]:
        """The broker processes that are masters now: every one but a slave; in controller mode the
        one the name server lists as master (none while it does not answer)."""
        if self.cluster != CONTROLLER:
            return [n for n in self.nodes.values() if not n.slave]
        if "namesrv" in self.paused:
            return []
        try:
            master = self.request("members", timeout_s=10)["members"].get(self.broker_name, {}).get("0")
        except ClientError:
            return []
        return [n for n in self.nodes.values() if self.topology.ports_of(n.target).broker_addr == master]

    def last_offset_flush_ms(self) -> int | None:
        return last_offset_flush_ms(self.layout)

    def persisted_offsets(self) -> list[dict]:
        return persisted_snapshots([n for n in self.nodes.values() if not n.slave], self.cluster)

    def timer_checkpoint(self) -> dict[str, int] | None:
        return timer_checkpoint(self.layout)
