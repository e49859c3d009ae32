"""The simulated system: the broker, its name server and the consumers behind the adapter protocol
(Lifecycle, Pausable, Producing, Consuming, DlqReading, Snapshotting, OffsetFlushWatching), in
virtual time."""

from __future__ import annotations

import random
import zlib

from adapters.base import AdapterError, BrokerProfile, ConsumerSpec, NotReady, SendRequest, SendResult, SystemInfo
from adapters.simulated.broker import DOWN, PAUSED, STARTING, STARTUP_MS, UP, SimBroker
from adapters.simulated.clock import VirtualClock
from adapters.simulated.consumers import SimConsumer
from adapters.simulated.defects import Defect
from adapters.simulated.store import StoredMessage
from reference.cluster import MASTER_SLAVE, SECOND_BROKER_ACTIONS, SINGLE
from reference.contract import BROKER_TARGETS, FAULT_TARGETS, SIMULATED_ADAPTER, retry_topic
from reference.clock import CLOCK_STEP_ACTIONS
from reference.disk import DISK_ACTIONS
from reference.network import NET_ACTIONS
from reference.levels import parse_level_table
from reference.plans import PlanCursor, parse_plan
from reference.profile import Profile
from reference.timer import timer_ruling

#: DefaultMQProducer.sendMsgTimeout: a send to a paused broker returns UNKNOWN after this.
SEND_TIMEOUT_MS = 3000
#: Send round trip to a serving broker.
SEND_LATENCY_MS = (1, 3)


#: the topologies the simulator runs (reference.cluster): one broker, or a master and its slave
SIMULATED_CLUSTERS = (SINGLE, MASTER_SLAVE)


class SlaveView:
    """What consumers read while the master of a master-slave pair is down (reference.cluster): the
    slave's replica of its store (the same store here: replicated at once) and consume offsets of its
    own (copied from the master's persisted ones when it took over; commits made to it stay there)."""

    def __init__(self, store, consumer_offsets: dict):
        self.store = store
        self.consumer_offsets = consumer_offsets
        self.reachable = True
        self.latency_ms = 0


class SimulatedSystem:
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
        self.profile = Profile(level_table=table, flush_delay_offset_interval_ms=profile.flush_delay_offset_interval_ms)
        self._config = {"messageDelayLevel": profile.message_delay_level,
                        "flushDelayOffsetInterval": str(profile.flush_delay_offset_interval_ms)}
        self.defects = defects
        if put_failure_rate is None:
            put_failure_rate = 0.2 if Defect.LOST_REPUT_ON_WRITE_FAILURE in defects else 0.0
        self.rng = random.Random(seed)
        self.clock = VirtualClock(start_ms)
        self.broker = SimBroker(self.clock, self.profile, defects, self.rng, put_failure_rate, timers, startup_ms)
        self.broker.on_message = self._on_message
        self.broker.on_ready = self._on_broker_ready
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
            "capabilities": ["timer"] if timers else [],
        })
        self.cluster = profile.cluster if profile.cluster in SIMULATED_CLUSTERS else SINGLE
        self.info.details["cluster"] = self.cluster
        if profile.cluster != self.cluster:
            self.info.details["cluster_unsupported"] = "the simulator runs one broker, or a master and its slave"
        self.slave_up = self.cluster == MASTER_SLAVE  # broker-2: the master's slave
        self.slave: SlaveView | None = None  # serving reads while the master is down

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

    def _check_target(self, target: str) -> None:
        if target not in FAULT_TARGETS or (target == BROKER_TARGETS[1] and self.cluster == SINGLE):
            raise AdapterError(f"unknown target {target!r}: expected one of {', '.join(FAULT_TARGETS)} "
                               f"(broker-2 in a master-slave cluster)")

    def source(self):
        """Where consumers read and commit: the master while it serves; its slave while the master is
        down and the slave up (PullAPIWrapper.recalculatePullFromWhichNode); else the master (which
        does not answer)."""
        if self.cluster == MASTER_SLAVE and self.broker.state == DOWN and self.slave_up:
            if self.slave is None:
                self.slave = SlaveView(self.broker.store, dict(self.broker.consumer_offsets_persisted))
            return self.slave
        self.slave = None
        return self.broker

    def _slave(self, up: bool) -> None:
        self.slave_up = up
        if not up:
            self.slave = None
        self._after_master_down()

    def _after_master_down(self) -> None:
        if self.cluster == MASTER_SLAVE and self.broker.state == DOWN and self.slave_up:
            self.broker.slave_takes_over()
            self._on_broker_ready()  # the consumers' pulls go to the slave now

    def start(self, target: str) -> None:
        self._check_target(target)
        if target == BROKER_TARGETS[1]:
            self._slave(True)
        elif target == "broker":
            self.broker.start()
        elif target == "namesrv":
            self.namesrv_up = True
        elif target == "consumer":
            for c in self.consumers.values():
                c.start()

    def stop(self, target: str) -> None:
        self._check_target(target)
        if target == BROKER_TARGETS[1]:
            self._slave(False)
        elif target == "broker":
            self.broker.stop(graceful=True)
            self._after_master_down()
        elif target == "namesrv":
            self.namesrv_up = False
        elif target == "consumer":
            for c in self.consumers.values():
                c.stop()

    def kill(self, target: str) -> None:
        self._check_target(target)
        if target == BROKER_TARGETS[1]:
            self._slave(False)
        elif target == "broker":
            self.broker.stop(graceful=False)
            self._after_master_down()
        elif target == "namesrv":
            self.namesrv_up = False
        elif target == "consumer":
            for c in self.consumers.values():
                c.die(crashed=False)

    def wait_ready(self, target: str, timeout_s: float = 120.0) -> None:
        self._check_target(target)
        if target != "broker":
            return
        b = self.broker
        if b.state == STARTING and b.ready_at_ms is not None and b.ready_at_ms - self.clock.now_ms() <= timeout_s * 1000:
            self.clock.sleep_until(b.ready_at_ms)
        if b.state != UP:
            raise NotReady(f"simulated broker is {b.state} (not serving) after waiting {timeout_s} s")

    # --- DiskFaults -------------------------------------------------------------------------
    def can_fault(self, action: str, target: str) -> bool:
        if target == BROKER_TARGETS[1]:  # the slave: its process only
            return self.cluster == MASTER_SLAVE and action in SECOND_BROKER_ACTIONS
        return target == "broker" or action not in DISK_ACTIONS + NET_ACTIONS + CLOCK_STEP_ACTIONS

    def fill_disk(self, target: str) -> None:
        """reference.disk: the store is marked full at once (a real broker within DISK_CHECK_MS)."""
        self.broker.schedule.store_full = True

    def free_disk(self, target: str) -> None:
        self.broker.schedule.store_full = False  # failed re-puts are tried again every RETRY_PUT_MS

    # --- NetworkFaults ----------------------------------------------------------------------
    def partition(self, target: str) -> None:
        """reference.network: sends time out (some stored at the heal), pulls and send-backs fail."""
        self.broker.partitioned = True

    def heal_partition(self, target: str) -> None:
        self.broker.heal_partition()
        self._on_broker_ready()  # the consumers' pulls go through again

    def add_loss(self, target: str, loss_percent: int) -> None:
        """reference.network: a loss period at its worst, every packet dropped (a partition)."""
        self.partition(target)

    def remove_loss(self, target: str) -> None:
        self.heal_partition(target)

    def add_latency(self, target: str, delay_ms: int) -> None:
        """What the broker sends arrives ``delay_ms`` later: send results and deliveries."""
        self.broker.latency_ms = delay_ms

    def remove_latency(self, target: str) -> None:
        self.broker.latency_ms = 0

    # --- ClockFaults (reference.clock) -------------------------------------------------------
    def set_clock(self, target: str, offset_ms: int) -> None:
        """The broker's wall clock steps at once (a real broker's process within its settle time)."""
        self.broker.set_clock_offset(offset_ms)

    def set_clock_rate(self, target: str, offset_ms: int, rate_permille: int) -> None:
        """The broker's wall clock drifts from now on (virtual time: exactly the model's line)."""
        self.broker.set_clock_offset(offset_ms, rate_permille)

    def clock_settle_ms(self, target: str) -> int:
        return 0

    # --- Pausable ---------------------------------------------------------------------------
    def pause(self, target: str) -> None:
        self._check_target(target)
        if target == BROKER_TARGETS[1]:
            self._slave(False)  # a frozen slave serves nothing
        elif target == "broker":
            self.broker.pause()
        elif target == "consumer":
            for c in self.consumers.values():
                c.paused = True

    def resume(self, target: str) -> None:
        self._check_target(target)
        if target == BROKER_TARGETS[1]:
            self._slave(True)
        elif target == "broker":
            self.broker.resume()
            self._on_broker_ready()
        elif target == "consumer":
            for c in self.consumers.values():
                c.paused = False
                c.schedule_pull()

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
        if req.deliver_at_ms is not None and self.timers:
            ruling = timer_ruling(req.deliver_at_ms, req.delay_level, born, self.profile.timer_precision_ms,
                                  self.profile.timer_max_delay_sec)
            if not ruling.accepted:
                clock.advance(self.rng.randint(*SEND_LATENCY_MS))
                return SendResult("FAILED", clock.now_ms(), born, msg_id, crc, "MESSAGE_ILLEGAL: " + ruling.reason)

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
            raise AdapterError(f"consumer name {spec.name!r} is already used in this run")
        for topic in spec.topics:
            if topic not in self.broker.store.queue_counts:
                self.broker.store.create_topic(topic, 4)
        self.broker.store.create_topic(retry_topic(spec.group), 1)
        c = SimConsumer(self, spec)
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

    def stop_consumers(self) -> None:
        for c in self.consumers.values():
            c.stop()

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

    def _on_broker_ready(self) -> None:
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
