"""A RocketMQ system under test: name server + broker on a runtime, the client process, consumers.

Harness-facing API (the protocols of ``adapters.base``)::

    system = open_system("rocketmq:4.9.7", runtime="process", workdir=run_dir / "system",
                         profile=BrokerProfile(message_delay_level="1s 2s 3s 4s 5s"))
    system.setup()                                  # start namesrv + broker, wait until ready
    system.create_topic("T", queues=4)
    result = system.send(SendRequest("T", "k-1", b"x", delay_level=2, plan=("LATER", "OK")))
    results = system.send_batch([...], threads=8)   # concurrent sends (benchmarks, large loads)
    system.start_consumer(ConsumerSpec("c1", "G", ("T",), max_reconsume_times=2, events_dir=...))
    system.kill("broker"); system.start("broker"); system.wait_ready("broker")
    system.pause("broker"); system.resume("broker")   # Pausable
    system.read_dlq("G"); system.snapshot()           # DlqReading, Snapshotting
    system.last_offset_flush_ms()                     # OffsetFlushWatching (process, container)
    system.log_files(); system.logs_not_collected()   # LogFiles: copied into each run's logs/
    system.teardown()

Targets: ``namesrv``, ``broker``, ``consumer`` (every consumer of the system). Readiness after a
start is an application round trip: the name server's route for the broker's own topic (the
broker is registered) and a real send to the readiness topic ``HG_READY``. While waiting, a
component that exits is reported at once with its exit status and log tail (e.g. 253 for a
``messageDelayLevel`` the broker cannot parse).
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import re
import sys
import threading
import time
from pathlib import Path

from adapters.base import (AdapterError, BrokerProfile, ConsumerSpec, NotReady, SendRequest, SendResult,
                           SystemInfo)
from adapters.rocketmq import config as cfg
from reference.clock import CLOCK, CLOCK_ACTIONS, CLOCK_DRIFT
from reference.cluster import CONTROLLER, MASTER_SLAVE, SECOND_BROKER_ACTIONS, SINGLE, broker_targets
from reference.contract import (BROKER_TARGETS, CONSUME_STATS_SOURCE, MEMORY_SOURCE, PERSISTED_SOURCE, RETRY_PREFIX, ROCKETMQ_ADAPTER,
                                queue_key)
from reference.disk import DISK_ACTIONS, FILL, FREE
from reference.network import LATENCY, LATENCY_END, NET_ACTIONS
from adapters.rocketmq.clientlink import ClientError, ClientProcess, ConsumerProcess, terminate_all
from adapters.rocketmq import brokerclock, disk, netns
from adapters.rocketmq.process import owner_alive, owner_tag, tail_file
from adapters.rocketmq.provision import CHAIN_SEP, MAIN_CLASS, Distribution
from adapters.rocketmq.runtime import LaunchSpec, Runtime

READY_TOPIC = "HG_READY"
#: the second broker's folder under the system's workdir (its store, home, logs of its own)
SECOND_BROKER_DIR = "broker-2"
#: where 5.x's own logback configuration writes the servers' logs, under ``${user.home}/logs``
SERVER_LOG_FOLDER = "rocketmqlogs"
SERVER_COMPONENTS = ("namesrv",) + BROKER_TARGETS
TARGETS = SERVER_COMPONENTS + ("consumer",)


@dataclasses.dataclass(frozen=True)
class BrokerNode:
    """One broker process of the system (``reference.cluster``): its fault target, its brokerName,
    whether it is a slave, and its own store and home (the first broker's are the system's)."""

    target: str
    name: str
    slave: bool
    layout: cfg.StoreLayout


def cluster_unsupported(cluster: str, external: bool, commands: bool) -> str | None:
    """Why a system cannot run ``cluster``'s second broker, or None."""
    if cluster == SINGLE:
        return None
    if external:
        return "an external cluster is what it is: the harness starts no broker there"
    if commands:
        return "a cmd: system launches one broker by its own command"
    return None


class WallClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def sleep_until(self, ts_ms: int) -> None:
        delay_s = (ts_ms - self.now_ms()) / 1000
        if delay_s > 0:
            time.sleep(delay_s)


class RocketMQSystem:
    def __init__(self, dist: Distribution, runtime: Runtime, workdir: Path, profile: BrokerProfile,
                 base_port: int = 19876, namesrv_addr: str | None = None, chain: tuple[Distribution, ...] = ()):
        #: the name server, the clients and the broker's first start run ``dist``; with a ``chain``
        #: (``provision.CHAIN_SEP``: ``dist`` is its first), each later start of the broker launches
        #: the next distribution of the chain on the same store
        self.chain = chain or (dist,)
        self.dist = dist
        self.broker_dist = dist
        self._broker_starts = 0
        self.runtime = runtime
        self.profile = profile
        self.layout = cfg.StoreLayout.under(workdir)
        self.clock = WallClock()
        self.external = namesrv_addr is not None
        self._base_port = base_port
        self.ports: cfg.SystemPorts | None = None
        self._lease: cfg.PortLease | None = None
        self._namesrv_addr = namesrv_addr
        self.broker_name = "hg-broker"
        why = cluster_unsupported(profile.cluster, self.external,
                                  any(type(d).command is not Distribution.command for d in self.chain))
        if why is None and profile.cluster != SINGLE and len(self.chain) > 1:
            why = "an across-store chain upgrades a single broker"
        if why is None and profile.cluster == CONTROLLER and dist.major < 5:
            why = f"controller mode (automatic failover) came with RocketMQ 5.0; this is {dist.version}"
        self.cluster = SINGLE if why else profile.cluster
        #: the broker processes, by target (reference.cluster); the first one's store is the system's
        self.nodes = {t: BrokerNode(t, self.broker_name if t == BROKER_TARGETS[0] or self.cluster in (MASTER_SLAVE, CONTROLLER)
                                    else f"{self.broker_name}-2", t != BROKER_TARGETS[0] and self.cluster == MASTER_SLAVE,
                                    self.layout if t == BROKER_TARGETS[0] else cfg.StoreLayout.under(self.layout.root / SECOND_BROKER_DIR))
                      for t in broker_targets(self.cluster)}
        self._lease2: cfg.PortLease | None = None
        self._ports2: cfg.SystemPorts | None = None  # the second broker's (its namesrv is the system's)
        self.client: ClientProcess | None = None
        self.consumers: dict[str, ConsumerProcess] = {}
        self._consumer_specs: dict[str, ConsumerSpec] = {}
        self._stopped_consumers: set[str] = set()
        self._launched: set[str] = set()
        self._paused: set[str] = set()  # SIGSTOPped components: white-box reads skip them
        self._watched: dict[str, int] = {}  # the host pid of each component, for the host watch
        self._fillable = False  # the store is a size-limited filesystem we mounted (disk_full)
        self._clock_file: Path | None = None  # the broker's clock control (brokerclock), for clock steps
        self._net: netns.BrokerNet | None = None  # the broker's own network namespace (partition, latency)
        self._is_setup = False
        version = CHAIN_SEP.join(d.version for d in self.chain)
        self.info = SystemInfo(ROCKETMQ_ADAPTER, version, runtime.name,
                               {"system": CHAIN_SEP.join(d.system for d in self.chain), "source": dist.source,
                                "workdir": str(self.layout.root)})
        if len(self.chain) > 1:
            self.info.details["versions"] = [d.version for d in self.chain]
        self.info.details.update(dist.details())
        self.info.details["cluster"] = self.cluster
        if why:
            self.info.details["cluster_unsupported"] = why

    # -- lifecycle --------------------------------------------------------------------------
    @property
    def namesrv_addr(self) -> str:
        if self._namesrv_addr:
            return self._namesrv_addr
        if self.ports is None:
            raise AdapterError("system not set up: no name-server address yet")
        return self.ports.namesrv_addr

    def ports_of(self, target: str) -> cfg.SystemPorts:
        """The ports of a broker process (the system's for the first broker and the name server)."""
        if target == BROKER_TARGETS[1]:
            if self._ports2 is None:
                raise AdapterError("system not set up: no ports for broker-2 yet")
            return self._ports2
        return self.ports

    def _spec(self, component: str) -> LaunchSpec:
        node = self.nodes.get(component)
        home = node.layout.home_dir if node is not None else self.layout.home_dir
        props = ("-Duser.home=" + str(home), "-Drocketmq.home.dir=" + str(home))
        dist = self.broker_dist if component == "broker" else self.dist
        conf = self.runtime_spec_conf(component)
        ports_of = self.ports_of(component) if node is not None else self.ports
        if node is not None:  # a chain's versions may take different keys: written at each launch
            cfg.write_properties(conf, cfg.broker_config(dist, self.profile, ports_of, node.layout,
                                                         broker_name=node.name, slave=node.slave,
                                                         controller=self.ports.controller_addr if self.cluster == CONTROLLER else None))
        own_net = component == "broker" and self._net is not None
        prefix = netns.command_prefix(self._net) if own_net and self.runtime.name == "process" else ()
        log_file = self.layout.logs_dir / f"{component}.out"
        ports = ((self.ports.namesrv, self.ports.controller) if component == "namesrv"
                 else (ports_of.broker - 2, ports_of.broker, ports_of.broker + 1))
        labels = {"hourglass.component": component, "hourglass.version": dist.version}
        kind = "broker" if node is not None else component  # the main class and heap of a broker
        own = dist.command(component, {  # a cmd: system's own command line (adapters.rocketmq.cmd)
            "conf": conf, "port": self.ports.namesrv if component == "namesrv" else self.ports.broker,
            "namesrv": f"{self.ports.namesrv_host_for_broker}:{self.ports.namesrv}" if component == "broker"
            else self.ports.namesrv_addr, "store": self.layout.store_dir, "home": home, "log": log_file})
        if own is not None:
            argv, env = own
            return LaunchSpec(component=component, main_class="", classpath=(), jvm_opts=(), args=(), env=env,
                              log_file=log_file, mounts=(self.layout.root,), ports=ports, labels=labels, command=argv,
                              command_prefix=prefix)
        return LaunchSpec(
            command_prefix=prefix, wait_for_interface=self._net.ns_if if own_net and self.runtime.name != "process" else None,
            component=component, main_class=MAIN_CLASS[kind], classpath=dist.classpath(),
            jvm_opts=dist.jvm_opts(kind) + props, args=("-c", str(conf)),
            env=(("ROCKETMQ_HOME", str(home)),) + (brokerclock.environment(self._clock_file, self.profile.drifting_clock)
                                                   if component == "broker" and self._clock_file is not None else ()),
            log_file=log_file,
            mounts=(self.layout.root, dist.lib_dir), ports=ports, labels=labels)

    def runtime_spec_conf(self, component: str) -> Path:
        """The config file ``component`` was last launched with."""
        if component == "broker" and len(self.chain) > 1:
            return self.layout.conf_dir / f"broker-{self.broker_dist.version}.conf"
        return self.layout.conf_dir / f"{component}.conf"

    @property
    def broker_version(self) -> str:
        """The version the broker runs now (changes at each start of an across-store chain)."""
        return self.broker_dist.version

    def setup(self) -> None:
        if self._is_setup:
            return
        try:
            if not self.external:
                if self.profile.fillable_store:
                    self._mount_fillable_store()
                self.layout.make()
                self.dist.make_home(self.layout.home_dir)
                self._lease = cfg.lease_ports(self._base_port)
                self.ports = self._lease.ports
                if self.profile.own_network:
                    self._make_broker_network()
                if self.profile.own_clock:
                    self._make_broker_clock()
                self.info.details["ports"] = {"namesrv": self.ports.namesrv, "broker": self.ports.broker}
                second = self.nodes.get(BROKER_TARGETS[1])
                if second is not None:  # its own ports (a lease of its own) and folders
                    self._lease2 = cfg.lease_ports(self._base_port)
                    self._ports2 = cfg.SystemPorts(namesrv=self.ports.namesrv, broker=self._lease2.ports.broker)
                    second.layout.make()
                    self.dist.make_home(second.layout.home_dir)
                    self.info.details["ports"][second.target] = self._ports2.broker
                    self.info.details["brokers"] = {n.target: {"name": n.name, "role": "slave" if n.slave else "master",
                                                               "store": str(n.layout.store_dir)} for n in self.nodes.values()}
                cfg.write_properties(self.layout.conf_dir / "namesrv.conf", cfg.namesrv_config(
                    self.ports, self.layout.root / "controller" if self.cluster == CONTROLLER else None))
                self._launch("namesrv")
            self.layout.logs_dir.mkdir(parents=True, exist_ok=True)
            self.client = ClientProcess(self.dist.lib_dir, self.namesrv_addr, self.layout.logs_dir,
                                        instance=f"hg{id(self) % 100000}")
            if not self.external:
                self.wait_ready("namesrv")
                if self.cluster == CONTROLLER:  # the first replica becomes master before the second starts
                    self._launch(BROKER_TARGETS[0])
                    self.wait_ready(BROKER_TARGETS[0])
                    self._wait_replicas({BROKER_TARGETS[0]}, master=BROKER_TARGETS[0])
                for target in self.nodes:  # started together; each waited for below
                    if target not in self._launched:
                        self._launch(target)
            else:
                if not all(self.can_fault(a, "broker") for a in DISK_ACTIONS):
                    self.info.details["disk_faults"] = "no fault command for disk_full/disk_free broker (give them in --faults)"
                if self.profile.own_network:
                    self.info.details["network_faults"] = "the external runtime has no commands for network faults yet"
                if self.profile.own_clock:
                    self.info.details["clock_faults"] = "the external runtime has no command to step a broker's clock yet"
                names = self._request("brokers", timeout_s=30)["brokers"]
                if not names:
                    raise NotReady(f"external cluster at {self.namesrv_addr}: no broker registered")
                self.broker_name = sorted(names)[0]
            for target in self.nodes if not self.external else ("broker",):
                self.wait_ready(target)
            if self.cluster == CONTROLLER:  # a send is acknowledged by both only once both are in sync
                self._wait_replicas(set(self.nodes))
            self._is_setup = True
        except BaseException:
            self.teardown()
            raise

    def _wait_replicas(self, targets: set[str], master: str | None = None, timeout_s: float = 90.0) -> None:
        """5.x controller mode: wait until the replicas ``targets`` are in the sync state set (and
        ``master`` is the master), as the controller says."""
        want = {self.ports_of(t).broker_addr for t in targets}
        deadline, last = time.monotonic() + timeout_s, "no answer yet"
        while True:
            try:
                state = self._request("sync_state", timeout_s=15, controller=self.ports.controller_addr,
                                      broker_name=self.broker_name)
                if want <= set(state["in_sync"]) and (master is None or state["master"] == self.ports_of(master).broker_addr):
                    self.info.details.setdefault("replicas", []).append({"master": state["master"], "in_sync": state["in_sync"]})
                    return
                last = f"master {state['master']}, in sync {state['in_sync']}"
            except ClientError as e:
                last = str(e)[:300]
            if time.monotonic() > deadline:
                raise NotReady(f"the controller did not report {sorted(want)} in the sync state set"
                               + (f" with {master} as master" if master else "") + f" within {timeout_s:.0f} s (last: {last})")
            time.sleep(0.5)  # poll interval while the replicas register and catch up

    def _launch(self, component: str) -> None:
        self.runtime.launch(self._spec(component))
        self._launched.add(component)
        self._plumb(component)

    def _plumb(self, component: str) -> None:
        """A container with a network of its own gets its veth after each start (netns.attach)."""
        if component == "broker" and self._net is not None and self.runtime.name != "process":
            netns.attach(self._net, self.runtime.pid(component))

    def teardown(self) -> None:
        # the client's graceful close (seconds of JVM shutdown) runs beside the consumers' stop
        closer = threading.Thread(target=self.client.close, name="hg-client-close") if self.client is not None else None
        if closer is not None:
            closer.start()
        try:
            self.stop_consumers()
        finally:
            if closer is not None:
                closer.join()
                self.client = None
        self.runtime.close()
        if self._fillable:
            disk.unmount(self.layout.store_dir)
            self._fillable = False
        if self._net is not None:
            netns.remove(self._net)
            self._net = None
        if self._clock_file is not None:
            brokerclock.remove_leftovers()
            self._clock_file = None
        self._is_setup = False
        for lease in (self._lease, self._lease2):
            if lease is not None:
                lease.release()
        self._lease = self._lease2 = None

    def _check(self, target: str) -> None:
        if target not in TARGETS or (target in BROKER_TARGETS and target not in self.nodes):  # an external one: single
            ours = ("namesrv",) + tuple(self.nodes) + ("consumer",)
            raise AdapterError(f"target {target!r}: expected one of {', '.join(ours)} (cluster {self.cluster})")

    def start(self, target: str) -> None:
        self._check(target)
        if target == "consumer":
            self._stopped_consumers.clear()
            self.poll_consumers()
        elif target == "broker" and len(self.chain) > 1 and not self.runtime.running("broker"):
            self._broker_starts += 1  # the next of the chain, on the same store
            self.broker_dist = self.chain[self._broker_starts % len(self.chain)]
            switch = getattr(self.runtime, "use_distribution", None)
            if switch is not None:
                switch(self.broker_dist)
            self._launch("broker")
        else:
            self.runtime.start(target)
            self._plumb(target)

    def stop(self, target: str) -> None:
        self._check(target)
        if target == "consumer":
            self.stop_consumers()
        else:
            self.runtime.stop(target)
            self._paused.discard(target)

    def kill(self, target: str) -> None:
        self._check(target)
        if target == "consumer":  # down until started again, as after a stop
            for name, proc in self.consumers.items():
                proc.kill()
                self._stopped_consumers.add(name)
        else:
            self.runtime.kill(target)
            self._paused.discard(target)

    def pause(self, target: str) -> None:
        self._check(target)
        if target == "consumer":
            for proc in self.consumers.values():
                _signal_group(proc, "SIGSTOP")
        else:
            self.runtime.pause(target)
            self._paused.add(target)

    def resume(self, target: str) -> None:
        self._check(target)
        if target == "consumer":
            for proc in self.consumers.values():
                _signal_group(proc, "SIGCONT")
        else:
            self.runtime.resume(target)
            self._paused.discard(target)

    def log_tail(self, component: str, lines: int = 40) -> str:
        parts = [f"--- {component} JVM output ---", self.runtime.log_tail(component, lines)]
        node = self.nodes.get(component)
        internal = {"broker": ("broker.log", f"{SERVER_LOG_FOLDER}/broker.log", f"{SERVER_LOG_FOLDER}/store.log"),
                    "namesrv": ("namesrv.log", f"{SERVER_LOG_FOLDER}/namesrv.log")}.get("broker" if node else component, ())
        home = node.layout.home_dir if node is not None else self.layout.home_dir
        for rel in internal:
            path = home / "logs" / rel
            if path.exists():
                errors = first_errors(path)
                if errors:
                    parts += [f"--- first errors in {path} ---", errors]
                parts += [f"--- {path} (tail) ---", tail_file(path, lines // 2)]
        return "\n".join(parts)

    # -- the host's stalls (adapters.base.HostWatching) -----------------------------------------
    def watched_processes(self) -> dict[str, int]:
        if self.external:
            return {}
        out: dict[str, int] = {}
        for component in sorted(self._launched):
            if component in self._paused:
                continue
            pid = self._watched.get(component)
            if pid is None or not os.path.exists(f"/proc/{pid}"):  # asked once per start (the watch's thread
                try:                                                # must not drive a runtime's client)
                    pid = self.runtime.pid(component)
                except AdapterError:  # a container not running now
                    continue
            if pid:
                out[component] = self._watched[component] = pid
        for name, proc in list(self.consumers.items()):
            if proc.alive():
                out[f"consumer {name}"] = proc.proc.pid
        return out

    def host_not_observed(self) -> str | None:
        if self.external:
            return "an external cluster: its brokers run on hosts the harness does not see"
        return None

    # -- logs (adapters.base.LogFiles) ---------------------------------------------------------
    def log_files(self) -> dict[str, Path]:
        """Every log of this system on this host, by the name of its copy in the run's ``logs/``:
        the JVM console outputs (``broker.out``, ``namesrv.out``) and the client and consumer
        processes' logs (``client-process.log``, ``consumer-<name>.log``, ``rocketmq_client.log``)
        by their own names, the client JVMs' own log folders under ``clients/``; and, where the
        harness started the servers, RocketMQ's own logs from ``$ROCKETMQ_HOME/logs``
        (``broker.log``, ``namesrv.log``, 5.x's ``store.log``, ``remoting.log``, …: the
        ``rocketmqlogs/`` folder of 5.x is flattened, so the broker's log is ``broker.log`` on
        every version)."""
        files: dict[str, Path] = {}
        logs = self.layout.logs_dir
        for path in _files_under(logs):
            rel = path.relative_to(logs).parts
            if len(rel) == 1:
                files[rel[0]] = path
            else:  # a client JVM's own logs (user.home is the logs folder: 5.x writes logs/rocketmqlogs/)
                files["/".join(("clients",) + (rel[1:] if rel[0] == "logs" else rel))] = path
        if self.external:
            return files
        for node in [None] + [n for n in self.nodes.values() if n.layout != self.layout]:
            home_logs = (node.layout if node is not None else self.layout).home_dir / "logs"
            prefix = f"{node.target}/" if node is not None else ""  # the second broker's own logs
            for path in _files_under(home_logs):
                rel = path.relative_to(home_logs).parts
                name = prefix + "/".join(rel[1:] if rel[0] == SERVER_LOG_FOLDER and len(rel) > 1 else rel)
                files[name if name not in files else "server/" + prefix + "/".join(rel)] = path
        return files

    def logs_not_collected(self) -> str | None:
        if self.external:
            return "broker and name server logs: not collected (external cluster: they stay on its hosts)"
        return None

    def _exited(self, component: str) -> None:
        if self.external or component not in self._launched:
            return
        code = self.runtime.exit_code(component)
        if code is not None:
            dist = self.broker_dist if component == "broker" else self.dist
            conf = self.runtime_spec_conf(component)
            raise AdapterError(f"{component} of {dist.system} exited with status {code} "
                               f"(config {conf}).\n{self.log_tail(component)}")

    def wait_ready(self, target: str, timeout_s: float = 120.0) -> None:
        self._check(target)
        deadline = time.monotonic() + timeout_s
        if target == "consumer":
            dead = [n for n, p in self.consumers.items() if not p.alive() and n not in self._stopped_consumers]
            if dead:
                raise NotReady(f"consumers not running: {dead}")
            return
        last = "no attempt yet"
        while True:
            self._exited(target)
            try:
                if self._round_trip(target):
                    self._note_processes(target)
                    return
                last = f"broker {self.broker_name} not registered with the name server yet"
            except ClientError as e:
                last = str(e)
            if time.monotonic() > deadline:
                raise NotReady(f"{target} of {(self.broker_dist if target == 'broker' else self.dist).system} did not answer a round trip within {timeout_s:.0f} s "
                               f"(last: {last}).\n{self.log_tail(target)}")
            time.sleep(0.25)  # poll interval between round trips, not a wait for readiness

    def _note_processes(self, target: str) -> None:
        """Write into the component's log which processes answered (what a launcher really ran)."""
        listing = getattr(self.runtime, "processes", None)
        if listing is None or self.external or target not in self._launched:
            return
        procs = listing(target)
        self.runtime.note(target, f"{target} answered a round trip; its processes:"
                          + "".join(f"\n  {pid} {line}" for pid, line in procs))

    def _round_trip(self, target: str) -> bool:
        if target == "namesrv":
            brokers = self._request("brokers", timeout_s=10)["brokers"]
            return "broker" not in self._launched or self.broker_name in brokers
        if target != BROKER_TARGETS[0] or self.cluster == CONTROLLER:
            # the second broker, or a replica whatever its role: registered at its address, and it answers
            node, addr = self.nodes[target], self.ports_of(target).broker_addr
            members = self._request("members", timeout_s=10)["members"].get(node.name, {})
            if (addr not in members.values()) if self.cluster == CONTROLLER else members.get("1" if node.slave else "0") != addr:
                return False
            self._request("broker_status", timeout_s=10, addrs=[addr])
            return True
        route = self._request("route", timeout_s=10, topic=self.broker_name)
        if self.broker_name not in route["brokers"]:
            return False
        if self.ports is not None and route["brokers"][self.broker_name] != self.ports.broker_addr:
            return False
        if "ready_topic" not in self.info.details:
            self._request("create_topic", timeout_s=15, topic=READY_TOPIC, queues=1)
            self.info.details["ready_topic"] = READY_TOPIC
        res = self._request("send", timeout_s=15, timeout_ms=3000,
                            message={"topic": READY_TOPIC, "key": f"ready-{self.clock.now_ms()}", "body": "ready"})
        return res["status"] == "SEND_OK"

    def _request(self, cmd: str, timeout_s: float = 30.0, **args) -> dict:
        if self.client is None:
            raise AdapterError(f"{cmd}: system not set up (no client process)")
        return self.client.request(cmd, timeout_s=timeout_s, **args)

    # -- producing ----------------------------------------------------------------------------
    #: a topic's creation is an admin call with RocketMQ's own 5 s timeout: on a starved broker (a
    #: busy host, reference.stalls) it can time out; creating a topic again is harmless
    CREATE_TOPIC_ATTEMPTS = 4

    def create_topic(self, topic: str, queues: int = 4) -> None:
        for attempt in range(1, self.CREATE_TOPIC_ATTEMPTS + 1):
            try:
                self._request("create_topic", timeout_s=30, topic=topic, queues=queues)
                return
            except ClientError as e:
                if attempt == self.CREATE_TOPIC_ATTEMPTS or "Timeout" not in e.error:
                    raise
                time.sleep(attempt)

    def send(self, req: SendRequest, timeout_ms: int = 3000) -> SendResult:
        res = self._request("send", timeout_s=timeout_ms / 1000 + 30, message=_message(req), timeout_ms=timeout_ms)
        return _result(res)

    def send_batch(self, reqs: list[SendRequest], threads: int = 8, timeout_ms: int = 3000) -> list[SendResult]:
        """Send concurrently from ``threads`` client threads; results in request order."""
        if not reqs:
            return []
        res = self._request("send_batch", timeout_s=timeout_ms / 1000 * len(reqs) / threads + 60,
                            messages=[_message(r) for r in reqs], threads=threads, timeout_ms=timeout_ms)
        return [_result(r) for r in res["results"]]

    # -- consuming ----------------------------------------------------------------------------
    def start_consumer(self, spec: ConsumerSpec) -> None:
        if spec.name in self.consumers and self.consumers[spec.name].alive():
            raise AdapterError(f"consumer {spec.name!r} is already running")
        self._consumer_specs[spec.name] = spec
        # the retry topic exists before the first LATER, so the consumer's route has it from the start
        self.create_topic(RETRY_PREFIX + spec.group, queues=1)
        self._stopped_consumers.discard(spec.name)
        self.consumers[spec.name] = self._spawn_consumer(spec)

    #: a consumer's start asks the name server and every broker; when many start at once on a busy
    #: machine one of those requests can fail ("send request ... failed"): start it again, a few times
    CONSUMER_START_ATTEMPTS = 4

    def _spawn_consumer(self, spec: ConsumerSpec) -> ConsumerProcess:
        for attempt in range(1, self.CONSUMER_START_ATTEMPTS + 1):
            try:
                return ConsumerProcess(spec, self.dist.lib_dir, self.namesrv_addr, self.layout.logs_dir)
            except AdapterError:
                if attempt == self.CONSUMER_START_ATTEMPTS:
                    raise
                time.sleep(attempt)  # back off before the next start
        raise AssertionError("unreachable")

    def poll_consumers(self) -> list[str]:
        """Restart every consumer that is down without having been stopped or killed by the
        harness. A death is recorded before its restart (by the consumer itself, or by its exit
        watch now), and the restart as the ``start`` of the replacement, in the consumer's events file."""
        restarted = []
        for name, proc in list(self.consumers.items()):
            if not proc.alive() and name not in self._stopped_consumers:
                died = proc.death()
                proc.kill()  # reap, close pipes
                if died:
                    proc.record_restart()
                self.consumers[name] = self._spawn_consumer(self._consumer_specs[name])
                restarted.append(name)
        return restarted

    def stop_consumers(self) -> None:
        terminate_all(list(self.consumers.values()))
        self._stopped_consumers.update(self.consumers)

    def consume_stats(self, group: str, topics: list[str]) -> dict:
        got = self._request("consume_stats", timeout_s=30, group=group, topics=list(topics))
        if got.get("errors"):
            self.info.details.setdefault("consume_stats_errors", []).extend(got["errors"])
        committed = {queue_key(q["topic"], q["broker"], q["queue_id"]): q["consumer_offset"] for q in got["queues"]}
        stored = {queue_key(q["topic"], q["broker"], q["queue_id"]): q["broker_offset"] for q in got["queues"]}
        return {"source": CONSUME_STATS_SOURCE, "group": group, "offsets": committed, "max_offsets": stored}

    # -- white box ----------------------------------------------------------------------------
    def _mount_fillable_store(self) -> None:
        """The store on a size-limited filesystem (adapters.rocketmq.disk), or the reason it is
        not in ``info.details['disk_faults']`` (then scenarios that fill it are skipped)."""
        why = disk.unavailable()
        if why:
            self.info.details["disk_faults"] = why
            return
        _sweep_once("mounts", disk.remove_leftover_mounts)
        disk.mount_limited(self.layout.store_dir, owner_tag())
        self._fillable = True
        self.info.details["store_limit_mb"] = disk.STORE_LIMIT_MB

    def fill_disk(self, target: str) -> None:
        if self.external:  # the user's command (--faults: [broker] disk_full = "...")
            self.runtime.run(FILL, target)
            return
        if target != "broker" or not self._fillable:
            raise AdapterError(f"cannot fill the store of {target}: " + self.info.details.get("disk_faults", "not a fillable store"))
        disk.fill(self.layout.store_dir)

    def free_disk(self, target: str) -> None:
        if self.external:
            self.runtime.run(FREE, target)
            return
        if target == "broker" and self._fillable:
            disk.free(self.layout.store_dir)

    # -- network faults (adapters.rocketmq.netns) ---------------------------------------------
    def _make_broker_network(self) -> None:
        """The broker in a network namespace of its own, reached at its veth address, or the reason
        it is not in ``info.details['network_faults']`` (then scenarios that need it are skipped)."""
        if self.runtime.name not in ("process", "container"):
            self.info.details["network_faults"] = f"network faults are not supported by the {self.runtime.name} runtime"
            return
        why = netns.unavailable()
        if why:
            self.info.details["network_faults"] = why
            return
        _sweep_once("namespaces", netns.remove_leftovers)
        net = netns.create(owner_tag())
        atexit.register(netns.remove, net)  # idempotent: teardown removes it first
        self._net = net
        no_netem = netns.latency_unavailable(net)
        if no_netem:
            self.info.details["latency_faults"] = no_netem
        self.ports = dataclasses.replace(self.ports, broker_host=net.ns_addr, namesrv_host_for_broker=net.host_addr)
        self.info.details["broker_network"] = {"netns": net.name, "broker": net.ns_addr, "host": net.host_addr}

    def _network(self, target: str) -> netns.BrokerNet:
        if target != "broker" or self._net is None:
            raise AdapterError(f"cannot act on the network of {target}: "
                               + self.info.details.get("network_faults", "it does not run in a network namespace of its own"))
        return self._net

    def partition(self, target: str) -> None:
        netns.partition(self._network(target))

    def heal_partition(self, target: str) -> None:
        netns.heal(self._network(target))

    # -- ClockFaults (brokerclock, reference.clock) ----------------------------------------------
    def _make_broker_clock(self) -> None:
        """The broker's clock control file (true time to begin with), or why not in
        ``info.details['clock_faults']`` (then clock scenarios are skipped)."""
        why = brokerclock.unavailable(self.info.runtime)
        if why is None and any(type(d).command is not Distribution.command for d in self.chain):
            why = "a cmd: system launches its broker by its own command: its clock is not the harness's to step"
        if why:
            self.info.details["clock_faults"] = why
            return
        self._clock_file = self.layout.conf_dir / brokerclock.CONTROL_FILE
        self._clock_file.parent.mkdir(parents=True, exist_ok=True)
        brokerclock.write_offset(self._clock_file, 0)

    def set_clock(self, target: str, offset_ms: int) -> None:
        if not self.can_fault(CLOCK, target):
            raise AdapterError(f"cannot step the clock of {target}: " + self.info.details.get("clock_faults", "not a broker under libfaketime"))
        brokerclock.write_offset(self._clock_file, offset_ms)

    def set_clock_rate(self, target: str, offset_ms: int, rate_permille: int) -> None:
        if not self.can_fault(CLOCK_DRIFT, target):
            raise AdapterError(f"cannot make the clock of {target} drift: " + self.info.details.get(
                "clock_faults", "not a broker launched to drift under libfaketime (BrokerProfile.drifting_clock)"))
        pid = self.runtime.pid(target)
        if pid is None:
            raise AdapterError(f"cannot make the clock of {target} drift: it is not running (libfaketime's speed "
                               "counts from the process's start)")
        brokerclock.write_rate(self._clock_file, offset_ms, rate_permille, brokerclock.process_start_ms(pid))

    def clock_settle_ms(self, target: str) -> int:
        return brokerclock.SETTLE_MS

    def add_loss(self, target: str, loss_percent: int) -> None:
        netns.add_loss(self._network(target), loss_percent)

    def remove_loss(self, target: str) -> None:
        netns.remove_loss(self._network(target))

    def add_latency(self, target: str, delay_ms: int) -> None:
        netns.add_latency(self._network(target), delay_ms)

    def remove_latency(self, target: str) -> None:
        netns.remove_latency(self._network(target))

    def can_fault(self, action: str, target: str) -> bool:
        """Whether this system can perform the primitive fault (an external cluster only where the
        user gave a command for it; filling a store only where it is size-limited; network faults
        only on a broker in a namespace of its own; clock steps only on a broker under libfaketime;
        a second broker only in a cluster, and only its process: start, stop, kill, pause)."""
        if target in BROKER_TARGETS[1:] and not self.external:
            return target in self.nodes and action in SECOND_BROKER_ACTIONS
        if action == CLOCK_DRIFT:  # a broker launched to drift (brokerclock.environment)
            return target == "broker" and self._clock_file is not None and self.profile.drifting_clock
        if action in CLOCK_ACTIONS:
            return target == "broker" and self._clock_file is not None
        if action in NET_ACTIONS:
            slowing = action in (LATENCY, LATENCY_END)
            return target == "broker" and self._net is not None and not (slowing and "latency_faults" in self.info.details)
        if action in DISK_ACTIONS and not self.external:
            return target == "broker" and self._fillable
        if target == "consumer":
            return True
        can = getattr(self.runtime, "can", None)
        return True if can is None else bool(can(action, target))

    def broker_config(self) -> dict[str, str]:
        """The first registered broker's configuration (getBrokerConfig)."""
        brokers = self._request("broker_config", timeout_s=30)["brokers"]
        if not brokers:
            raise AdapterError("getBrokerConfig: no broker registered with the name server")
        return brokers[sorted(brokers)[0]]

    def read_dlq(self, group: str) -> list[dict]:
        return self._request("read_dlq", timeout_s=60, group=group)["messages"]

    def snapshot(self) -> list[dict]:
        """The schedule offsets of every master (a slave re-puts nothing: ``reference.cluster``):
        persisted (``delayOffset.json`` in its store) and in memory (``brokerStatus``), each with
        the ``target`` it was read from."""
        out = []
        masters = self._masters()
        for node in masters:
            persisted = cfg.read_delay_offsets(node.layout)
            if persisted is not None:
                out.append({"source": PERSISTED_SOURCE, "offsets": {str(k): v for k, v in sorted(persisted.items())},
                            **self._target_field(node.target)})
        live = [n.target for n in masters if self.runtime.running(n.target) and n.target not in self._paused]
        if (self.external or live) and "namesrv" not in self._paused:
            targets = {self.ports_of(t).broker_addr: t for t in live}
            status = self._broker_status(addrs=None if self.external else sorted(targets))
            if status is None:
                return out
            for addr, table in status.items():
                target = targets.get(addr)
                offsets, max_offsets = schedule_offsets(table)
                out.append({"source": MEMORY_SOURCE, "broker": addr, "offsets": offsets, "max_offsets": max_offsets,
                            **self._target_field(target or BROKER_TARGETS[0])})
        return out

    def _masters(self) -> list[BrokerNode]:
        """The broker processes that are masters now: every one but a slave; in controller mode the
        one the name server lists as master (none while it does not answer)."""
        if self.external:
            return []
        if self.cluster != CONTROLLER:
            return [n for n in self.nodes.values() if not n.slave]
        if "namesrv" in self._paused:
            return []
        try:
            master = self._request("members", timeout_s=10)["members"].get(self.broker_name, {}).get("0")
        except ClientError:
            return []
        return [n for n in self.nodes.values() if self.ports_of(n.target).broker_addr == master]

    def _target_field(self, target: str) -> dict:
        """A snapshot's ``target``: written in a cluster only (a single broker's snapshots stay as they were)."""
        return {"target": target} if self.cluster != SINGLE else {}

    def _broker_status(self, timeout_s: float = 10.0, addrs: list[str] | None = None) -> dict | None:
        """Admin ``brokerStatus`` of every broker. Right after a start the broker answers with an
        error until its runtime statistics have a first sample: retry until ``timeout_s``; then
        None, and the reason goes to ``info.details['snapshot_errors']``."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                return self._request("broker_status", timeout_s=15, **({"addrs": addrs} if addrs is not None else {}))["brokers"]
            except AdapterError as e:
                if time.monotonic() > deadline:
                    self.info.details.setdefault("snapshot_errors", []).append(str(e)[:500])
                    return None
            time.sleep(0.5)  # poll interval while the broker's statistics warm up


class LocalRocketMQSystem(RocketMQSystem):
    """A system the harness started itself (process or container runtime): its store is on this
    host (bind-mounted for containers), so it also tells when the broker persisted its schedule
    offsets (:class:`~adapters.base.OffsetFlushWatching`). The external runtime cannot."""

    def last_offset_flush_ms(self) -> int | None:
        """The mtime of ``<store>/config/delayOffset.json``: the broker writes it (through a temp
        file renamed over it, MixAll.string2File) at each flush and at a graceful shutdown. None
        before the first write, and while the rename leaves no file."""
        try:
            return os.stat(cfg.delay_offset_path(self.layout)).st_mtime_ns // 1_000_000
        except FileNotFoundError:
            return None


_SWEPT: set[str] = set()


def _sweep_once(kind: str, remove_leftovers) -> None:
    """Remove, once per process, the fillable stores (``mounts``) or network namespaces
    (``namespaces``) left by harnesses that are gone."""
    if kind not in _SWEPT:
        _SWEPT.add(kind)
        remove_leftovers(owner_alive, lambda line: print(line, file=sys.stderr, flush=True))


_ERROR_LINE = re.compile(r"\bERROR\b|Exception\b")


def first_errors(path: Path, limit: int = 8, context: int = 2) -> str:
    """The first ``limit`` ERROR/exception lines of a log with ``context`` lines after each."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    picked: list[str] = []
    found = 0
    for i, line in enumerate(lines):
        if _ERROR_LINE.search(line) and not line.lstrip().startswith("at "):
            picked += lines[i:i + 1 + context]
            found += 1
            if found >= limit:
                break
    return "\n".join(picked)


def _files_under(folder: Path) -> list[Path]:
    """The files below ``folder`` (none if it does not exist), sorted."""
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []


def schedule_offsets(table: dict[str, str]) -> tuple[dict[str, int], dict[str, int]]:
    """``scheduleMessageOffset_<level> = <offset>,<max>`` entries of ``brokerStatus``."""
    offsets, max_offsets = {}, {}
    prefix = "scheduleMessageOffset_"
    for key, value in table.items():
        if key.startswith(prefix):
            level = key[len(prefix):]
            off, _, mx = value.partition(",")
            offsets[level] = int(off)
            if mx:
                max_offsets[level] = int(mx)
    return dict(sorted(offsets.items(), key=lambda kv: int(kv[0]))), dict(sorted(max_offsets.items(), key=lambda kv: int(kv[0])))


def _signal_group(proc, name: str) -> None:
    import os
    import signal

    if proc.alive():
        try:
            os.killpg(proc.proc.pid, getattr(signal, name))
        except ProcessLookupError:
            pass


def _message(req: SendRequest) -> dict:
    return {"topic": req.topic, "key": req.key, "body": req.body.decode("latin-1"), "delay_level": req.delay_level,
            "deliver_at_ms": req.deliver_at_ms, "plan": list(req.plan)}


def _result(res: dict) -> SendResult:
    return SendResult(status=res["status"], ts_ms=res["ts_ms"], born_ms=res["born_ms"], msg_id=res.get("msg_id"),
                      broker=res.get("broker"),
                      body_crc=res.get("body_crc"), error=res.get("error"))
