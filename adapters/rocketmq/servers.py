"""The servers of a RocketMQ system as fault targets (:mod:`adapters.parts`): the name server and
each broker process, with the process faults of their runtime and the machine faults of their
faculties (:mod:`adapters.rocketmq.machine`). Readiness after a start is an application round
trip through the system's client: the name server's route for the broker's own topic (the broker
is registered) and a real send to the readiness topic ``HG_READY``; a replica (the second broker,
or either in controller mode) registered at its address and answering ``brokerStatus``. While
waiting, a server that exits is reported at once with its exit status and log tail (e.g. 253 for a
``messageDelayLevel`` the broker cannot parse)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from hourglass.adapters.base import AdapterError, NotReady
from hourglass.adapters.parts import DRIFT, PROCESS_ACTIONS, Part
from hourglass.adapters.rocketmq import brokerclock, config as cfg, netns
from hourglass.adapters.rocketmq.clientlink import ClientError
from hourglass.adapters.rocketmq.launch import Launch, disk_warning_props, launch_spec, note_processes
from hourglass.adapters.rocketmq.logs import server_log_tail
from hourglass.adapters.rocketmq.machine import ClockControl, OwnNetwork
from hourglass.adapters.rocketmq.provision import Distribution
from hourglass.adapters.rocketmq.topology import BrokerNode
from hourglass.reference.clock import CLOCK_DRIFT
from hourglass.reference.faults.cpu import THROTTLE
from hourglass.reference.cluster import CONTROLLER
from hourglass.reference.contract import BROKER_TARGETS

if TYPE_CHECKING:
    from hourglass.adapters.rocketmq.system import RocketMQSystem

READY_TOPIC = "HG_READY"


class Server(Part):
    """A server on the system's runtime: stop, kill, pause and resume by the runtime (the white-box
    reads skip a paused one); ready once :meth:`answers` a round trip."""

    settle_ms = brokerclock.SETTLE_MS
    kind = "namesrv"

    def __init__(self, system: "RocketMQSystem", target: str, home, faculties: dict | None = None):
        super().__init__(target, faculties)
        self.system = system
        self.home = home

    @property
    def runtime(self):
        return self.system.runtime

    @property
    def dist(self) -> Distribution:
        return self.system.topology.dist

    def cannot(self, action: str) -> str | None:
        return self.runtime.cannot(action, self.target) if action in PROCESS_ACTIONS else super().cannot(action)

    def launch(self) -> None:
        self.runtime.launch(launch_spec(self.launch_args()))
        self.system.launched.add(self.target)
        self.plumb()

    def launch_args(self) -> Launch:
        raise NotImplementedError

    def plumb(self) -> None:
        """After each start: what the runtime's start does not give (a container's own network)."""

    def start(self) -> None:
        self.runtime.start(self.target)
        self.plumb()

    def stop(self) -> None:
        self.runtime.stop(self.target)
        self.system.paused.discard(self.target)

    def kill(self) -> None:
        self.runtime.kill(self.target)
        self.system.paused.discard(self.target)

    def pause(self) -> None:
        self.runtime.pause(self.target)
        self.system.paused.add(self.target)

    def resume(self) -> None:
        self.runtime.resume(self.target)
        self.system.paused.discard(self.target)

    def answers(self) -> bool:
        raise NotImplementedError

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        timeout_s *= getattr(self.faculties.get(THROTTLE), "slowdown", 1.0)  # a start under a CPU quota
        deadline = time.monotonic() + timeout_s
        last = "no attempt yet"
        while True:
            self.exited()
            try:
                if self.answers():
                    if self.target in self.system.launched:
                        note_processes(self.runtime, self.target)
                    return
                last = f"broker {self.system.broker_name} not registered with the name server yet"
            except ClientError as e:
                last = str(e)
            if time.monotonic() > deadline:
                raise NotReady(f"{self.target} of {self.dist.system} did not answer a round trip within {timeout_s:.0f} s "
                               f"(last: {last}).\n{self.log_tail()}")
            time.sleep(0.25)  # poll interval between round trips, not a wait for readiness

    def exited(self) -> None:
        """Raise with the exit status and log tail if the server the harness launched has exited."""
        if self.target not in self.system.launched:
            return
        code = self.runtime.exit_code(self.target)
        if code is not None:
            conf = self.system.topology.conf_of(self.target, self.dist)
            raise AdapterError(f"{self.target} of {self.dist.system} exited with status {code} "
                               f"(config {conf}).\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        return server_log_tail(self.runtime, self.target, self.kind, self.home, lines)


class NameServer(Server):
    def answers(self) -> bool:
        brokers = self.system.request("brokers", timeout_s=10)["brokers"]
        return BROKER_TARGETS[0] not in self.system.launched or self.system.broker_name in brokers

    def launch_args(self) -> Launch:
        topo = self.system.topology
        ports, layout = topo.ports, topo.layout
        return Launch(component=self.target, kind=self.kind, dist=self.dist, home=self.home,
                      conf=topo.conf_of(self.target, self.dist), log_file=layout.logs_dir / f"{self.target}.out",
                      root=layout.root, ports=(ports.namesrv, ports.controller), port=ports.namesrv,
                      namesrv=ports.namesrv_addr, store=layout.store_dir)


class Broker(Server):
    """A broker process. The first one is the system's (its store, its network and clock where the
    system made them, the next version of an across-store chain at each start); a replica (the
    second broker, or either in controller mode) is ready once registered at its own address."""

    kind = "broker"

    def __init__(self, system: "RocketMQSystem", node: BrokerNode, faculties: dict | None = None,
                 own_net: OwnNetwork | None = None, clock: ClockControl | None = None):
        super().__init__(system, node.target, node.layout.home_dir, faculties)
        self.node = node
        self.first = node.target == BROKER_TARGETS[0]
        self.replica = not self.first or system.topology.cluster == CONTROLLER
        self.own_net = own_net
        self.clock = clock

    @property
    def dist(self) -> Distribution:
        topo = self.system.topology
        return topo.broker_dist if self.first else topo.dist

    def start(self) -> None:
        topo = self.system.topology
        if self.first and len(topo.chain) > 1 and not self.runtime.running(self.target):
            self.runtime.use_distribution(topo.next_broker_dist())  # the next of the chain, on the same store
            self.launch()
        else:
            super().start()

    def plumb(self) -> None:
        if self.own_net is not None and self.own_net.net is not None and self.runtime.name != "process":
            self.own_net.attach(self.runtime.pid(self.target))

    def set_clock_rate(self, offset_ms: int, rate_permille: int) -> None:
        self.able(CLOCK_DRIFT, DRIFT).set_rate(offset_ms, rate_permille, self.runtime.pid(self.target), self.target)

    def answers(self) -> bool:
        return self._registered_replica() if self.replica else self._serving()

    def _registered_replica(self) -> bool:
        """Registered with the name server at its address (whatever its role), and it answers."""
        system = self.system
        addr = system.topology.ports_of(self.target).broker_addr
        members = system.request("members", timeout_s=10)["members"].get(self.node.name, {})
        if (addr not in members.values()) if system.topology.cluster == CONTROLLER else members.get("1" if self.node.slave else "0") != addr:
            return False
        system.request("broker_status", timeout_s=10, addrs=[addr])
        return True

    def _serving(self) -> bool:
        """The name server routes the broker's own topic to it, and a send to ``HG_READY`` succeeds."""
        system = self.system
        route = system.request("route", timeout_s=10, topic=system.broker_name)
        if system.broker_name not in route["brokers"]:
            return False
        ports = system.topology.ports
        if ports is not None and route["brokers"][system.broker_name] != ports.broker_addr:
            return False
        if "ready_topic" not in system.info.details:
            system.request("create_topic", timeout_s=15, topic=READY_TOPIC, queues=1)
            system.info.details["ready_topic"] = READY_TOPIC
        res = system.request("send", timeout_s=15, timeout_ms=3000,
                             message={"topic": READY_TOPIC, "key": f"ready-{system.clock.now_ms()}", "body": "ready"})
        return res["status"] == "SEND_OK"

    def launch_args(self) -> Launch:
        """Its config is written at each launch (a chain's versions may take different keys)."""
        topo, dist, node = self.system.topology, self.dist, self.node
        conf, ports, own = topo.conf_of(self.target, dist), topo.ports_of(self.target), topo.ports
        cfg.write_properties(conf, cfg.broker_config(dist, topo.profile, ports, node.layout, broker_name=node.name,
                                                     slave=node.slave,
                                                     controller=own.controller_addr if topo.cluster == CONTROLLER else None))
        net = self.own_net.net if self.own_net is not None else None
        on_host = self.runtime.name == "process"
        local = self.first and self.system.proxy_local  # ProxyStartup starts the broker (adapters.rocketmq.proxy)
        if local:
            from hourglass.adapters.rocketmq.proxy import local_mode_args, proxy_jars
        return Launch(component=self.target, kind=self.kind, dist=dist, home=self.home, conf=conf,
                      main="proxy" if local else None, args=local_mode_args(topo, dist, conf) if local else None,
                      lib_dir=proxy_jars(dist, self.runtime) if local else None,
                      log_file=topo.layout.logs_dir / f"{self.target}.out", root=topo.layout.root,
                      ports=(ports.broker - 2, ports.broker, ports.broker + 1), port=ports.broker,
                      namesrv=f"{own.namesrv_host_for_broker}:{own.namesrv}" if self.first else own.namesrv_addr,
                      store=topo.layout.store_dir, prefix=netns.command_prefix(net) if net and on_host else (),
                      wait_for_interface=net.ns_if if net and not on_host else None,
                      env=self.clock.environment() if self.clock is not None else (),
                      jvm_props=disk_warning_props(topo.profile))
