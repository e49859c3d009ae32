"""The simulated system: the broker, its name server and the consumers behind the adapter protocol
(Lifecycle, Pausable, Producing, Consuming, DlqReading, Snapshotting, OffsetFlushWatching, and the
disk, network and clock faults), in virtual time. Its fault targets are parts
(:mod:`adapters.simulated.parts`, :mod:`adapters.simulated.slave`)."""

from __future__ import annotations

import random
import zlib

from hourglass.adapters.base import AdapterError, BrokerProfile, ConsumerSpec, SendRequest, SendResult, SystemInfo
from hourglass.adapters.parts import PartsSystem
from hourglass.adapters.simulated.broker import PAUSED, STARTUP_MS, UP, SimBroker
from hourglass.adapters.simulated.clock import VirtualClock
from hourglass.adapters.simulated.consumers import SimConsumer
from hourglass.adapters.simulated.orderly import OrderlySimConsumer
from hourglass.adapters.simulated.broadcast import BroadcastSimConsumer
from hourglass.adapters.simulated.pop import PopSimConsumer
from hourglass.reference.pop import POP_MODES, PROXY_LOCAL
from hourglass.reference.modes import BROADCASTING, ORDERLY
from hourglass.adapters.simulated.defects import Defect
from hourglass.adapters.simulated.parts import Broker as SimBrokerPart, Consumers, NameServer, Proxy
from hourglass.adapters.simulated.slave import Slave
from hourglass.adapters.simulated.store import StoredMessage
from hourglass.reference.cluster import MASTER_SLAVE, SINGLE
from hourglass.reference.contract import (ASYNC_DELIVER, FAULT_TARGETS, GRPC, POP_CONSUMPTION, PERSISTED_SOURCE, PROXY_TARGET,
                                          SIMULATED_ADAPTER, retry_topic)
from hourglass.reference.levels import parse_level_table
from hourglass.reference.plans import PlanCursor, parse_plan
from hourglass.reference.profile import Profile, passed_through_values
from hourglass.reference.limits import MESSAGE_ILLEGAL, body_refusal
from hourglass.reference.timer import timer_ruling

#: DefaultMQProducer.sendMsgTimeout: a send to a paused broker returns UNKNOWN after this.
SEND_TIMEOUT_MS = 3000
#: Send round trip to a serving broker.
SEND_LATENCY_MS = (1, 3)


#: the topologies the simulator runs (reference.cluster): one broker, or a master and its slave
SIMULATED_CLUSTERS = (SINGLE, MASTER_SLAVE)


class SimulatedSystem(PartsSystem):
    #: run.json ``host`` (reference.stalls): nothing of the host reaches a broker in virtual time
    VIRTUAL_TIME = "the simulated broker runs in virtual time: the host's stalls do not reach it"

    def __init__(self, profile: BrokerProfile, defects: frozenset[Defect], seed: int, start_ms: int,
                 put_failure_rate: float | None = None, send_back_failure_rate: float = 0.0,
                 unknown_stored_rate: float = 0.5, timers: bool = True, version: str = "5.3.3-sim",
                 startup_ms: int = STARTUP_MS):
        table = parse_level_table(profile.message_delay_level, "BrokerProfile", "message_delay_level")
        if profile.flush_delay_offset_interval_ms < 1:
            raise ValueError(f"BrokerProfile.flush_delay_offset_interval_ms: expected a positive int, "
                             f"found {profile.flush_delay_offset_interval_ms!r}")
        self.profile = Profile(level_table=table, flush_delay_offset_interval_ms=profile.flush_delay_offset_interval_ms,
                               schedule_async_deliver=profile.schedule_async_deliver,
                               **passed_through_values(dict(profile.extra)))
        self._config = {"messageDelayLevel": profile.message_delay_level,
                        "flushDelayOffsetInterval": str(profile.flush_delay_offset_interval_ms),
                        "enableScheduleAsyncDeliver": str(profile.schedule_async_deliver).lower(), **dict(profile.extra)}
        self.defects = defects
        if put_failure_rate is None:
            put_failure_rate = 0.2 if Defect.LOST_REPUT_ON_WRITE_FAILURE in defects else 0.0
        self.rng = random.Random(seed)
        self.clock = VirtualClock(start_ms)
        self.broker = SimBroker(self.clock, self.profile, defects, self.rng, put_failure_rate, timers, startup_ms)
        self.broker.on_message = self._on_message
        self.broker.on_ready = self.on_broker_ready
        self.send_back_failure_rate = send_back_failure_rate
        self.unknown_stored_rate = unknown_stored_rate
        self.timers = timers
        self.namesrv_up = False
        self.consumers: dict[str, SimConsumer] = {}
        self.plan_positions: dict[tuple[str, str], PlanCursor] = {}
        self._queue_cursor: dict[str, int] = {}
        self._sent = 0
        self.info = SystemInfo(SIMULATED_ADAPTER, version, "virtual", {
            "defects": sorted(d.slug for d in defects), "seed": seed,
            "capabilities": (["timer", POP_CONSUMPTION, GRPC] if timers else []) + [ASYNC_DELIVER],
        })
        self.cluster = profile.cluster if profile.cluster in SIMULATED_CLUSTERS else SINGLE
        self.info.details["cluster"] = self.cluster
        if profile.cluster != self.cluster:
            self.info.details["cluster_unsupported"] = "the simulator runs one broker, or a master and its slave"
        self.slave = Slave(self) if self.cluster == MASTER_SLAVE else None  # broker-2: the master's slave
        self.proxy_up = True  # 5.x's proxy, in front of the gRPC consumers (adapters.simulated.parts.Proxy)
        #: the fault targets (adapters.parts)
        self.parts = {"broker": SimBrokerPart(self), "namesrv": NameServer(self), "consumer": Consumers(self),
                      PROXY_TARGET: Proxy(self, profile.proxy_mode == PROXY_LOCAL), **({self.slave.target: self.slave} if self.slave is not None else {})}

    # --- Lifecycle --------------------------------------------------------------------------
    def setup(self) -> None:
        self.start("namesrv")
        self.start("broker")
        self.wait_ready("broker")

    def teardown(self) -> None:
        self.stop_consumers()
        for c in self.consumers.values():
            c.close()
        self.broker.stop(graceful=True)
        self.namesrv_up = False

    def unknown(self, target: str) -> str:
        return (f"unknown target {target!r}: expected one of {', '.join(FAULT_TARGETS)} "
                f"(broker-2 in a master-slave cluster)")

    def source(self):
        """Where consumers read and commit: the master while it serves; its slave while the master is
        down and the slave up (:class:`~adapters.simulated.slave.Slave`); else the master (which
        does not answer)."""
        return self.slave.source() if self.slave is not None else self.broker

    def after_master_down(self) -> None:
        if self.slave is not None:
            self.slave.after_master_down()

    # --- Producing --------------------------------------------------------------------------
    def create_topic(self, topic: str, queues: int = 4) -> None:
        self.broker.store.create_topic(topic, queues)

    def send(self, req: SendRequest) -> SendResult:
        clock, broker = self.clock, self.broker
        plan = parse_plan(list(req.plan) or None, f"SendRequest of key {req.key!r}")
        born = clock.now_ms()
        self._sent += 1
        msg_id = f"{0x7F000001:08X}{self._sent:024X}"
        crc = zlib.crc32(req.body)
        if broker.state not in (UP, PAUSED):
            clock.advance(self.rng.randint(*SEND_LATENCY_MS))
            return SendResult("FAILED", clock.now_ms(), born, msg_id, crc, "connection refused: broker not serving")
        if broker.state == UP and not broker.writable and not broker.partitioned:
            clock.advance(self.rng.randint(*SEND_LATENCY_MS))
            return SendResult("FAILED", clock.now_ms(), born, msg_id, crc, "SERVICE_NOT_AVAILABLE: the store is full")
        count = broker.store.queue_counts.get(req.topic) or (broker.store.create_topic(req.topic, 4) or 4)
        queue_id = self._queue_cursor.get(req.topic, 0) % count
        self._queue_cursor[req.topic] = queue_id + 1
        proto = StoredMessage(0, "", 0, 0, req.topic, req.key, req.body, crc, msg_id, born, 0, 0, plan,
                              delay_level=req.delay_level)
        ruling = None
        refused = body_refusal(len(req.body), self.profile.max_message_size)
        if refused is None and req.timer().is_timer and self.timers:
            ruling = timer_ruling(req.timer(), req.delay_level, born, self.profile.timer_precision_ms,
                                  self.profile.timer_max_delay_sec)
            refused = None if ruling.accepted else "MESSAGE_ILLEGAL: " + ruling.reason
        if refused is not None:
            clock.advance(self.rng.randint(*SEND_LATENCY_MS))
            return SendResult("FAILED", clock.now_ms(), born, msg_id, crc, refused, response_code=MESSAGE_ILLEGAL)

        def store() -> None:
            if ruling is not None and ruling.timer:
                broker.put_timer(proto, req.topic, queue_id, ruling.deliver_ms)
            else:
                broker.put(proto, req.topic, queue_id)

        if broker.state == PAUSED:  # the request waits in the socket buffer; the client times out
            if self.rng.random() < self.unknown_stored_rate:
                broker.pending_while_paused.append(store)
            clock.advance(SEND_TIMEOUT_MS)
            return SendResult("UNKNOWN", clock.now_ms(), born, msg_id, crc, "timeout: broker did not answer")
        if broker.partitioned:  # TCP retransmits the request; the client times out
            if self.rng.random() < self.unknown_stored_rate:
                broker.pending_while_partitioned.append(store)
            clock.advance(SEND_TIMEOUT_MS)
            return SendResult("UNKNOWN", clock.now_ms(), born, msg_id, crc, "timeout: the broker is cut off")
        store()
        clock.advance(self.rng.randint(*SEND_LATENCY_MS) + broker.latency_ms)
        return SendResult("SEND_OK", clock.now_ms(), born, msg_id, crc)

    # --- Consuming --------------------------------------------------------------------------
    def start_consumer(self, spec: ConsumerSpec) -> None:
        if spec.name in self.consumers:
            if self.consumers[spec.name].alive or self.consumers[spec.name].spec != spec:
                raise AdapterError(f"consumer name {spec.name!r} is already used in this run")
            self.consumers[spec.name].left = False
            self.consumers[spec.name].start()  # it left its group and joins again
            return
        for topic in spec.topics:
            if topic not in self.broker.store.queue_counts:
                self.broker.store.create_topic(topic, 4)
        self.broker.store.create_topic(retry_topic(spec.group), 1)
        if spec.group_retry_max_times is not None:  # SubscriptionGroupConfig.retryMaxTimes, set by the admin API
            self.broker.group_retry_max_times[spec.group] = spec.group_retry_max_times
        kind = PopSimConsumer if spec.mode in POP_MODES else {ORDERLY: OrderlySimConsumer, BROADCASTING: BroadcastSimConsumer}.get(spec.mode, SimConsumer)
        c = kind(self, spec)
        self.consumers[spec.name] = c
        c.start()

    def poll_consumers(self) -> list[str]:
        restarted = []
        for name, c in sorted(self.consumers.items()):
            if c.crashed and not c.alive:
                c.record("start")  # the replacement, written by the restart path at the restart's time
                c.start()
                restarted.append(name)
        return restarted

    def stop_consumers(self, graceful: bool = True) -> None:
        for c in self.consumers.values():
            c.stop()

    def stop_consumer(self, name: str) -> None:
        if name not in self.consumers:
            raise AdapterError(f"no consumer {name!r} (running: {sorted(self.consumers)})")
        self.consumers[name].left = True
        self.consumers[name].stop()

    def rebalance(self, group: str) -> None:
        """RebalanceImpl.updateProcessQueueTableInRebalance: queues that leave a consumer are
        committed and dropped; every member pulls again."""
        for c in self.consumers.values():
            if c.group == group and c.alive:
                owned = set(self.owned_queues(c))
                source = self.source()
                for q in [q for q in c.next_offsets if q not in owned]:
                    if source.reachable:
                        source.consumer_offsets[(group, q[0], q[1])] = c.next_offsets[q]
                    del c.next_offsets[q]
                c.schedule_pull()

    def owned_queues(self, consumer: SimConsumer) -> list[tuple[str, int]]:
        """AllocateMessageQueueAveragely (round robin here): the member's share of the group's queues."""
        members = sorted(n for n, c in self.consumers.items() if c.group == consumer.group and c.alive)
        if consumer.spec.name not in members:
            return []
        counts = self.broker.store.queue_counts
        queues = sorted((t, q) for t in consumer.subscriptions for q in range(counts.get(t, 0)))
        return queues[members.index(consumer.spec.name)::len(members)]

    def _on_message(self, msg: StoredMessage) -> None:
        for c in self.consumers.values():
            if c.alive and msg.queue_topic in c.subscriptions:
                c.schedule_pull()

    def on_broker_ready(self) -> None:
        for c in self.consumers.values():
            if c.alive:
                c.schedule_pull()

    # --- DlqReading, Snapshotting ---------------------------------------------------------------
    def read_dlq(self, group: str) -> list[dict]:
        """With each copy's offsets, as the RocketMQ client reads them: two copies of one message
        stored in the same millisecond are two different lines (an exact repeat is a recording fault)."""
        return [{"key": m.key, "group": group, "msg_id": m.msg_id, "reconsume_times": m.reconsume_times,
                 "store_ms": m.store_ms, "queue_offset": m.queue_offset, "commit_log_offset": m.commit_log_offset}
                for m in self.broker.read_dlq(group)]

    def broker_config(self) -> dict[str, str]:
        """What the simulated broker runs (it always runs what it was opened with)."""
        return dict(self._config)

    def snapshot(self) -> list[dict]:
        return self.broker.snapshot()

    # --- OffsetFlushWatching ----------------------------------------------------------------
    def last_offset_flush_ms(self) -> int | None:
        """The schedule service's last persist of its offsets (periodic or at a graceful stop)."""
        return self.broker.schedule.persisted_ms

    def persisted_offsets(self) -> list[dict]:
        return [s for s in self.broker.snapshot() if s["source"] == PERSISTED_SOURCE]

    # --- TimerCheckpointWatching -------------------------------------------------------------
    def timer_checkpoint(self) -> dict[str, int] | None:
        fields = self.broker.timer_ckpt.fields
        return None if fields is None else dict(fields)
