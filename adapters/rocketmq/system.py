"""A RocketMQ system under test: name server + broker(s), the client process, consumers.

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
    system.cannot("disk_full", "broker")              # None, or why this system cannot now
    system.read_dlq("G"); system.snapshot()           # DlqReading, Snapshotting
    system.last_offset_flush_ms()                     # OffsetFlushWatching (process, container)
    system.log_files(); system.logs_not_collected()   # LogFiles: copied into each run's logs/
    system.teardown()

Targets: ``namesrv``, ``broker`` (and ``broker-2`` in a cluster), ``consumer`` (every consumer of
the system), each resolved once to its part (:mod:`adapters.rocketmq.servers`,
:mod:`adapters.rocketmq.consumers`). :class:`RocketMQSystem` is what every RocketMQ system does
through its client process; :class:`~adapters.rocketmq.local.LocalRocketMQSystem` starts its own
servers (process and container runtimes), :class:`~adapters.rocketmq.external_system.ExternalRocketMQSystem`
reaches an existing cluster.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Collection

from hourglass.adapters.base import AdapterError, BrokerProfile, ConsumerSpec, SendRequest, SendResult, SystemInfo
from hourglass.adapters.parts import Part, PartsSystem
from hourglass.adapters.rocketmq.clientlink import NO_BROKER, ClientError, ClientProcess, ConsumerProcess, transport_failure
from hourglass.adapters.rocketmq.consumers import ConsumerProcesses
from hourglass.adapters.rocketmq.family import capabilities_of
from hourglass.adapters.rocketmq.provision import CHAIN_SEP, Distribution
from hourglass.adapters.rocketmq.proxy import endpoint
from hourglass.adapters.rocketmq.runtime import Runtime
from hourglass.adapters.rocketmq.topology import Topology
from hourglass.adapters.rocketmq.whitebox import broker_status
from hourglass.reference.cluster import REGISTERED_WITHIN_MS
from hourglass.reference.contract import CONSUME_STATS_SOURCE, POP_CONSUMPTION, PROXY_TARGET, ROCKETMQ_ADAPTER, queue_key
from hourglass.reference.modes import GRPC_MODES
from hourglass.reference.pop import DEFAULT_RETRY_MAX_TIMES, POP, POP_MODES


class WallClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def sleep_until(self, ts_ms: int) -> None:
        delay_s = (ts_ms - self.now_ms()) / 1000
        if delay_s > 0:
            time.sleep(delay_s)


class RocketMQSystem(PartsSystem):
    """What every RocketMQ system does through its client process: topics, sends, consumers, the
    DLQ, the broker's configuration and consume stats; and the fault verbs, each handed to the part
    its target names. A subclass starts (or finds) the servers and fills ``parts``."""

    def __init__(self, dist: Distribution, runtime: Runtime, workdir: Path, profile: BrokerProfile,
                 base_port: int = 19876, chain: tuple[Distribution, ...] = (), external: bool = False):
        self.runtime = runtime
        self.profile = profile
        self.topology = Topology(dist, chain, workdir, profile, base_port, external)
        self.dist = dist
        self.chain = self.topology.chain
        self.layout = self.topology.layout
        self.clock = WallClock()
        self.client: ClientProcess | None = None
        self.launched: set[str] = set()  # the servers the harness launched
        self.paused: set[str] = set()  # SIGSTOPped servers: white-box reads skip them
        self.proxy_local = False  # 5.x's proxy runs in the first broker's process (ProxyStartup -pm local)
        self.consumer = ConsumerProcesses(dist.lib_dir, lambda: self.namesrv_addr, self.layout.logs_dir,
                                          lambda: endpoint(self.info.details))
        self.parts: dict[str, Part] = {}
        self._is_setup = False
        version = CHAIN_SEP.join(d.version for d in self.chain)
        self.info = SystemInfo(ROCKETMQ_ADAPTER, version, runtime.name,
                               {"system": CHAIN_SEP.join(d.system for d in self.chain), "source": dist.source,
                                "workdir": str(self.layout.root)})
        if len(self.chain) > 1:
            self.info.details["versions"] = [d.version for d in self.chain]
        self.info.details.update(dist.details())
        self.info.details["cluster"] = self.cluster
        if self.topology.cluster_unsupported:
            self.info.details["cluster_unsupported"] = self.topology.cluster_unsupported

    @property
    def cluster(self) -> str:
        return self.topology.cluster

    @property
    def nodes(self):
        return self.topology.nodes

    @property
    def broker_name(self) -> str:
        return self.topology.broker_name

    @property
    def broker_version(self) -> str:
        """The version the broker runs now (changes at each start of an across-store chain)."""
        return self.topology.broker_dist.version

    @property
    def namesrv_addr(self) -> str:
        raise NotImplementedError

    @property
    def consumers(self) -> dict[str, ConsumerProcess]:
        return self.consumer.procs

    def unknown(self, target: str) -> str:
        return f"target {target!r}: expected one of {', '.join(self.parts)} (cluster {self.cluster})"

    def open_client(self) -> None:
        self.layout.logs_dir.mkdir(parents=True, exist_ok=True)
        self.client = ClientProcess(self.dist.lib_dir, self.namesrv_addr, self.layout.logs_dir,
                                    instance=f"hg{id(self) % 100000}")

    def teardown(self) -> None:
        """Everything of the system ended, at once: its runs are over and their events written
        (line by line, as they happen), so nothing a graceful stop does (the consumers' offset
        commits, the clients' unregistering, the broker's persists) is read any more; under two
        brokers' starts the graceful stops of a shared system's consumers held its slot 14 s."""
        try:
            self.stop_consumers(graceful=False)
        finally:
            if self.client is not None:
                self.client.abort()
                self.client = None
        self.runtime.close()
        self.release()
        self._is_setup = False

    def release(self) -> None:
        """What the system holds besides its runtime's servers (mounts, namespaces, ports)."""

    def request(self, cmd: str, timeout_s: float = 30.0, **args) -> dict:
        if self.client is None:
            raise AdapterError(f"{cmd}: system not set up (no client process)")
        return self.client.request(cmd, timeout_s=timeout_s, **args)

    def broker_status(self, addrs: list[str] | None = None) -> dict | None:
        return broker_status(self.request, self.info.details, addrs=addrs)

    # -- admin on every broker ---------------------------------------------------------------
    #: an admin call has RocketMQ's own 5 s timeout: on a starved broker (a busy host,
    #: reference.stalls) it can time out, or fail with the channel another request's timeout
    #: closed (clientlink.TRANSPORT_FAILURES); each of these commands is harmless to repeat
    ADMIN_ATTEMPTS = 4

    def admin(self, cmd: str, **args) -> dict:
        """An admin command on every broker the name server routes (``create_topic``, ``create_group``,
        ``set_pop_mode``, ``start_offsets``, ``broker_config``): :meth:`repeated`."""
        return self.repeated(cmd, 30, **args)

    def repeated(self, cmd: str, timeout_s: float, **args) -> dict:
        """A request harmless to repeat: again after a failure on its way
        (:func:`clientlink.transport_failure`), up to :data:`ADMIN_ATTEMPTS` times, and while the
        name server routes no broker, until one it dropped has registered again
        (``reference.cluster.REGISTERED_WITHIN_MS``): then it is an error."""
        registered_by = time.monotonic() + REGISTERED_WITHIN_MS / 1000
        failures = 0
        while True:
            try:
                return self.request(cmd, timeout_s=timeout_s, **args)
            except ClientError as e:
                if NO_BROKER in e.error and time.monotonic() < registered_by:
                    time.sleep(1.0)  # poll interval: the broker's periodic registration brings it back
                    continue
                if not transport_failure(e.error):
                    raise
                failures += 1
                if failures >= self.ADMIN_ATTEMPTS:
                    raise
                time.sleep(failures)

    def create_topic(self, topic: str, queues: int = 4) -> None:
        self.admin("create_topic", topic=topic, queues=queues)

    # -- producing ----------------------------------------------------------------------------

    def send(self, req: SendRequest, timeout_ms: int = 3000) -> SendResult:
        res = self.request("send", timeout_s=timeout_ms / 1000 + 30, message=_message(req), timeout_ms=timeout_ms)
        return _result(res)

    def send_batch(self, reqs: list[SendRequest], threads: int = 8, timeout_ms: int = 3000) -> list[SendResult]:
        """Send concurrently from ``threads`` client threads; results in request order."""
        if not reqs:
            return []
        res = self.request("send_batch", timeout_s=timeout_ms / 1000 * len(reqs) / threads + 60,
                           messages=[_message(r) for r in reqs], threads=threads, timeout_ms=timeout_ms)
        return [_result(r) for r in res["results"]]

    # -- consuming ----------------------------------------------------------------------------
    def start_consumer(self, spec: ConsumerSpec) -> None:
        if spec.mode in GRPC_MODES and not self.info.details.get(PROXY_TARGET):
            raise AdapterError(f"a {spec.mode} consumer talks to 5.x's proxy, and this system runs none")
        if spec.mode in POP_MODES:
            self._pop_mode(spec)
        elif spec.group_retry_max_times is not None:  # the broker's side of the group, before its consumer
            self.admin("create_group", group=spec.group, retry_max_times=spec.group_retry_max_times)
        self.consumer.add(spec, self.create_topic)

    def _pop_mode(self, spec: ConsumerSpec) -> None:
        """The broker's side of a POP group (reference.pop): the group and its topics exist, and the
        broker hands the group's queues out by POP (its request mode; 5.x only)."""
        if POP_CONSUMPTION not in capabilities_of([self.info.version]):
            raise AdapterError(f"POP consumption needs RocketMQ 5.x; this broker is {self.info.version}")
        retry = spec.group_retry_max_times if spec.group_retry_max_times is not None else DEFAULT_RETRY_MAX_TIMES
        self.admin("create_group", group=spec.group, retry_max_times=retry)
        for topic in spec.topics:
            self.create_topic(topic)
            self.admin("set_pop_mode", topic=topic, group=spec.group)
            if spec.mode in GRPC_MODES:  # the remoting consumer starts from the first offset by itself (CONSUME_FROM_FIRST_OFFSET)
                self.admin("start_offsets", topic=topic, group=spec.group)

    def poll_consumers(self) -> list[str]:
        return self.consumer.poll()

    def warm_consumer_hosts(self, modes: Collection[str]) -> None:
        for pop in sorted({m == POP for m in modes if m not in GRPC_MODES}):  # a gRPC group is never hosted
            self.consumer.warm(pop)

    def stop_consumers(self, graceful: bool = True) -> None:
        (self.consumer.stop if graceful else self.consumer.discard)()

    def stop_consumer(self, name: str) -> None:
        self.consumer.stop_one(name)

    def consume_stats(self, group: str, topics: list[str]) -> dict:
        got = self.request("consume_stats", timeout_s=30, group=group, topics=list(topics))
        if got.get("errors"):
            self.info.details.setdefault("consume_stats_errors", []).extend(got["errors"])
        committed = {queue_key(q["topic"], q["broker"], q["queue_id"]): q["consumer_offset"] for q in got["queues"]}
        stored = {queue_key(q["topic"], q["broker"], q["queue_id"]): q["broker_offset"] for q in got["queues"]}
        return {"source": CONSUME_STATS_SOURCE, "group": group, "offsets": committed, "max_offsets": stored}

    # -- reading ------------------------------------------------------------------------------
    def broker_config(self) -> dict[str, str]:
        """The first registered broker's configuration (getBrokerConfig)."""
        brokers = self.admin("broker_config")["brokers"]
        return brokers[sorted(brokers)[0]]

    def read_dlq(self, group: str) -> list[dict]:
        return self.repeated("read_dlq", 60, group=group)["messages"]


def _message(req: SendRequest) -> dict:
    return {"topic": req.topic, "key": req.key, "body": req.body.decode("latin-1"), "delay_level": req.delay_level,
            "timer": dict(req.timer().properties()), "plan": list(req.plan)}


def _result(res: dict) -> SendResult:
    return SendResult(status=res["status"], ts_ms=res["ts_ms"], born_ms=res["born_ms"], msg_id=res.get("msg_id"),
                      broker=res.get("broker"), queue_id=res.get("queue_id"),
                      body_crc=res.get("body_crc"), error=res.get("error"), response_code=res.get("response_code"))
