"""Simulated push consumers (clustering, concurrently): pull, answer by plan, send back, commit.

Follows DefaultMQPushConsumerImpl / ConsumeMessageConcurrentlyService (4.9.x): a consumer of a
group subscribes its topics and ``%RETRY%group``; the group's queues are shared among its running
consumers; the consume offset moves locally after each answer and is committed to the broker every
5 s (persistConsumerOffsetInterval) and on graceful shutdown, so a consumer that dies redelivers
what it consumed since the last commit (the same stored copies). ``LATER`` sends the message back
(else re-sends through the client's producer, else re-consumes it locally after 5 s).
"""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from hourglass.adapters.base import ConsumerSpec
from hourglass.adapters.rundir import EventLog
from hourglass.adapters.simulated.store import StoredMessage
from hourglass.reference.contract import CONSUMER_DIED, consumer_fault
from hourglass.adapters.simulated.defects import Defect
from hourglass.reference.plans import LATER, PlanCursor, answer_batch, later_not_stored
from hourglass.reference.profile import effective_max_reconsume_times
from hourglass.reference.retry import retry_topic
from hourglass.reference.timeout import effective_timeout_min, hold_ms, timeout_ms
from hourglass.reference.rundir import consumer_events

if TYPE_CHECKING:
    from hourglass.adapters.simulated.system import SimulatedSystem

NO_PROGRESS = PlanCursor()
#: DefaultMQPushConsumer.persistConsumerOffsetInterval.
COMMIT_INTERVAL_MS = 5000
#: DefaultMQPushConsumer.pullBatchSize: a batch never spans two pulls (submitConsumeRequest splits one).
PULL_BATCH_SIZE = 32
#: Time from a message being stored to a long-polling consumer receiving it.
PULL_LATENCY_MS = (1, 15)


class SimConsumer:
    def __init__(self, system: "SimulatedSystem", spec: ConsumerSpec):
        self.system = system
        self.spec = spec
        self.group = spec.group
        self.subscriptions = tuple(spec.topics) + (retry_topic(spec.group),)
        self.alive = False
        self.crashed = False  # died on a CRASH answer (recorded): poll_consumers restarts it (recorded)
        self.left = False  # stopped for good by the scenario (left its group) until it joins again
        self.paused = False
        self.incarnation = 0
        self.max_reconsume_times = effective_max_reconsume_times(spec.max_reconsume_times)
        self.next_offsets: dict[tuple[str, int], int] = {}
        self.local_retries: dict[tuple[str, int], set[int]] = {}  # queue -> offsets re-consumed locally
        self.pull_at: int | None = None
        self.started_ms = 0  # this incarnation's start: the consume-timeout clean-up runs from it (reference.timeout)
        self._out = EventLog(Path(spec.events_dir) / consumer_events(spec.name))

    # --- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        if self.alive:
            return
        self.alive, self.crashed, self.paused = True, False, False
        self.incarnation += 1
        self.local_retries = {}
        self.next_offsets = {}  # from the broker's committed offsets on first pull of each queue
        self.pull_at = None  # a pull pending from an earlier incarnation is not this one's
        inc = self.incarnation
        clock = self.system.clock
        self.started_ms = clock.now_ms()

        def commit() -> None:
            if self.incarnation == inc and self.alive:
                if not self.paused:
                    self.commit()
                clock.call_at(clock.now_ms() + COMMIT_INTERVAL_MS, commit)

        clock.call_at(clock.now_ms() + COMMIT_INTERVAL_MS, commit)
        self.system.rebalance(self.group)
        self.schedule_pull()

    def die(self, crashed: bool) -> None:
        self.alive, self.crashed = False, crashed
        self.incarnation += 1
        self.next_offsets = {}

    def stop(self) -> None:
        """Graceful shutdown: commit the consumed offsets, then leave the group."""
        if self.alive:
            self.commit()
            self.die(crashed=False)
            self.system.rebalance(self.group)

    def close(self) -> None:
        self._out.close()

    def record(self, action: str) -> None:
        """A ``fault`` event of this consumer's death (``kill``) or of its restart after one
        (``start``), ``cause: died``, in its own events file at the current virtual time."""
        self._out.write(consumer_fault(action, self.system.clock.now_ms(), self.spec.name, self.group, CONSUMER_DIED))

    def commit(self) -> None:
        """RemoteBrokerOffsetStore.persistAll: the local offsets go to the broker (if it answers; its
        slave while a master with a slave is down)."""
        broker = self.system.source()
        if not broker.reachable:
            return
        for queue, offset in self.next_offsets.items():
            held = self.local_retries.get(queue)
            if held:  # ProcessQueue.removeMessage: the offset stops at the oldest message in process
                offset = min(offset, min(held))
            broker.consumer_offsets[(self.group, queue[0], queue[1])] = offset

    # --- pulling ----------------------------------------------------------------------------
    def schedule_pull(self) -> None:
        if not self.alive:  # its start schedules the first pull of the next incarnation
            return
        clock = self.system.clock
        at = clock.now_ms() + self.system.rng.randint(*PULL_LATENCY_MS) + self.system.source().latency_ms
        if self.pull_at is not None and self.pull_at <= at:
            return
        self.pull_at = at
        inc = self.incarnation
        clock.call_at(at, lambda: self._pull(inc, at))

    def _pull(self, inc: int, at: int) -> None:
        if self.pull_at == at:
            self.pull_at = None
        source = self.system.source()  # the master, or its slave while it is down (reference.cluster)
        if inc != self.incarnation or not self.alive or self.paused or not source.reachable:
            return
        store = source.store
        for topic, qid in self.system.owned_queues(self):
            key = (topic, qid)
            if key not in self.next_offsets:
                self.next_offsets[key] = source.consumer_offsets.get((self.group, topic, qid), 0)
            q = store.queues.get(key, ())
            while self.next_offsets[key] < len(q):
                start = self.next_offsets[key]
                batch = q[start:min(len(q), start + min(self.spec.batch_size, PULL_BATCH_SIZE))]
                self.next_offsets[key] = start + len(batch)
                self.consume_batch([(msg, msg.reconsume_times) for msg in batch])
                if not self.alive:
                    return

    # --- consuming --------------------------------------------------------------------------
    def consume(self, msg: StoredMessage, reconsume_times: int) -> None:
        """One delivery (a local re-consume): as a batch of one."""
        self.consume_batch([(msg, reconsume_times)])

    def consume_batch(self, batch: list[tuple[StoredMessage, int]]) -> None:
        """One call of the listener (ConsumeMessageConcurrentlyService.ConsumeRequest): record each
        delivery, answer by the plans in order until one is not OK (a batch consumer's ack index is
        the message before it, and the rest are sent back unasked: reference.plans), act on the
        answer (processConsumeResult: send back every message after the ack index)."""
        system = self.system
        now = system.clock.now_ms()
        batched = self.spec.batch_size > 1
        positions = system.plan_positions
        answer = answer_batch([(msg.plan, positions.get((self.group, msg.key), NO_PROGRESS), rt, msg.key) for msg, rt in batch])
        events = []
        for i, ((msg, reconsume_times), outcome, cursor) in enumerate(zip(batch, answer.outcomes, answer.cursors)):
            positions[(self.group, msg.key)] = cursor
            level = answer.level if outcome == LATER else 0
            events.append({**self.delivery(msg, reconsume_times, now, outcome), **({"next_level": level} if level else {}),
                           **({"timed_out": True} if answer.held and outcome == LATER else {}),
                           **({"batch_index": i} if batched else {})})
        if answer.crashed:
            for e in events:
                self._out.write(e)
            self.record("kill")  # the dying consumer records its own death, as the process does
            self.die(crashed=True)
            return
        ack, level = answer.ack_index, answer.level
        for e in events:
            self._out.write({**e, "ack_index": ack} if batched else e)
        if answer.held:
            self.clean_up_later(*batch[ack], now, level)
            return
        if Defect.ACK_INDEX_OFF_BY_ONE in system.broker.defects and batched:
            ack += 1  # the failing message is taken as consumed
        for msg, reconsume_times in batch[ack + 1:]:
            self.send_back(msg, reconsume_times, level)

    def clean_up_later(self, msg: StoredMessage, reconsume_times: int, consume_start: int, level: int) -> None:
        """A held (``SLOW``) message: ConsumeMessageConcurrentlyService.cleanExpireMsg, every consumeTimeout
        from this incarnation's start, sends it back at level 3 once its consume started more than a
        timeout ago (reference.timeout); the offset waits for it meanwhile."""
        minutes = effective_timeout_min(self.spec.consume_timeout_min)
        timeout = timeout_ms(minutes)
        tick = self.started_ms + ((consume_start + timeout - self.started_ms) // timeout + 1) * timeout
        held = self.local_retries.setdefault((msg.queue_topic, msg.queue_id), set())
        held.add(msg.queue_offset)
        inc = self.incarnation

        def clean_up() -> None:
            if inc == self.incarnation and self.alive and msg.queue_offset in held:
                held.discard(msg.queue_offset)
                self.send_back(msg, reconsume_times, level)

        def answered() -> None:  # the listener lets go and answers OK: the offset moves on
            if inc == self.incarnation:
                held.discard(msg.queue_offset)

        if Defect.CLEAN_UP_RUNS_ONCE not in self.system.broker.defects or tick == self.started_ms + timeout:
            self.system.clock.call_at(tick, clean_up)
        self.system.clock.call_at(consume_start + hold_ms(minutes), answered)

    def delivery(self, msg: StoredMessage, reconsume_times: int, now: int, outcome: str) -> dict:
        """The ``deliver`` event of one delivery of ``msg`` as attempt ``reconsume_times``."""
        return {"type": "deliver", "ts_ms": now, "key": msg.key, "group": self.group, "topic": msg.topic,
                "queue_id": msg.queue_id, "queue_offset": msg.queue_offset, "queue_topic": msg.queue_topic,
                "commit_log_offset": msg.commit_log_offset, "body_crc": msg.body_crc, "msg_id": msg.msg_id,
                "reconsume_times": reconsume_times, "born_ms": msg.born_ms, "store_ms": msg.store_ms, "outcome": outcome}

    def send_back(self, msg: StoredMessage, reconsume_times: int, level: int = 0) -> None:
        """ConsumeMessageConcurrentlyService.processConsumeResult + DefaultMQPushConsumerImpl.sendMessageBack."""
        system, broker = self.system, self.system.broker
        failing = system.send_back_failure_rate
        rng: random.Random = system.rng
        attempt = msg if msg.reconsume_times == reconsume_times else replace(msg, reconsume_times=reconsume_times)
        if broker.reachable and broker.writable and not (failing and rng.random() < failing):
            broker.send_back(attempt, self.group, self.max_reconsume_times, level)
            return
        if broker.reachable and broker.writable and not (failing and rng.random() < failing):
            broker.send_back(attempt, self.group, self.max_reconsume_times, resend=True)  # 3 + reconsumeTimes
            return
        inc = self.incarnation
        clock = system.clock
        pos_key = (self.group, msg.key)
        system.plan_positions[pos_key] = later_not_stored(system.plan_positions.get(pos_key, NO_PROGRESS), reconsume_times, level)
        held = self.local_retries.setdefault((msg.queue_topic, msg.queue_id), set())
        held.add(msg.queue_offset)

        def local() -> None:
            if inc == self.incarnation and self.alive:
                if self.paused:
                    clock.call_at(clock.now_ms() + 100, local)
                    return
                held.discard(msg.queue_offset)
                self.consume(msg, reconsume_times + 1)

        clock.call_at(clock.now_ms() + system.profile.local_retry_delay_ms, local)
