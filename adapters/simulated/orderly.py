"""A simulated orderly push consumer (clustering): ConsumeMessageOrderlyService as reference.orderly
states it. Each owned queue is consumed in offset order, one message at a time; a LATER suspends the
queue and the same stored copy is consumed again after the suspend time with its reconsume count
raised (in the client only); once the count reached maxReconsumeTimes the message is sent back
through the client's producer, which the broker routes to the DLQ, and the queue moves on. The
queue's offset is committed only past messages that are done, so a consumer that dies (or loses
the queue) redelivers the suspended message as its stored copy, count 0.
"""

from __future__ import annotations

from dataclasses import replace

from hourglass.adapters.simulated.consumers import NO_PROGRESS, SimConsumer
from hourglass.adapters.simulated.defects import Defect
from hourglass.adapters.simulated.store import StoredMessage
from hourglass.reference.plans import CRASH, LATER, answer_batch


class OrderlySimConsumer(SimConsumer):
    def start(self) -> None:
        self.suspended: set[tuple[str, int]] = set()
        super().start()

    def _pull(self, inc: int, at: int) -> None:
        if self.pull_at == at:
            self.pull_at = None
        source = self.system.source()
        if inc != self.incarnation or not self.alive or self.paused or not source.reachable:
            return
        for topic, qid in self.system.owned_queues(self):
            queue = (topic, qid)
            if queue not in self.next_offsets:
                self.next_offsets[queue] = source.consumer_offsets.get((self.group, topic, qid), 0)
            self._drain(queue)
            if not self.alive:
                return

    def _drain(self, queue: tuple[str, int]) -> None:
        """ConsumeRequest.run: the queue's messages in offset order until one suspends it."""
        q = self.system.source().store.queues.get(queue, ())
        while queue not in self.suspended and queue in self.next_offsets and self.next_offsets[queue] < len(q):
            msg = q[self.next_offsets[queue]]
            if not self._consume(queue, msg, msg.reconsume_times):
                return
            if queue in self.next_offsets:
                self.next_offsets[queue] += 1

    def _consume(self, queue: tuple[str, int], msg: StoredMessage, reconsume_times: int, count: int | None = None) -> bool:
        """One delivery: record it, answer by the plan; True when the message is done (the queue
        moves on), False when it suspended the queue or the consumer died. ``count``: the client's
        own count of the message's attempts, when it differs from what the listener is shown."""
        count = reconsume_times if count is None else count
        system = self.system
        pos_key = (self.group, msg.key)
        answer = answer_batch([(msg.plan, system.plan_positions.get(pos_key, NO_PROGRESS), reconsume_times)],
                              orderly_max=self.max_reconsume_times)
        (outcome,), (system.plan_positions[pos_key],) = answer.outcomes, answer.cursors
        self._out.write(self.delivery(msg, reconsume_times, system.clock.now_ms(), outcome))
        if outcome == CRASH:
            self.record("kill")
            self.die(crashed=True)
            return False
        if outcome != LATER:
            return True
        broker = system.broker
        if count >= self.max_reconsume_times and broker.reachable and broker.writable:
            # checkReconsumeTimes: sent back through the producer (handleRetryAndDLQ routes it to the DLQ)
            broker.send_back(replace(msg, reconsume_times=reconsume_times), self.group, self.max_reconsume_times, resend=True)
            return True
        # the defect counts the attempt for the DLQ but shows the listener the stored count
        again = reconsume_times if Defect.ORDERLY_COUNT_NOT_RAISED in broker.defects else reconsume_times + 1
        passes = Defect.ORDERLY_PASSES_FAILING in broker.defects
        if not passes:
            self.suspended.add(queue)
        inc, clock = self.incarnation, system.clock

        def resume() -> None:
            if inc != self.incarnation or not self.alive:
                return
            if self.paused:
                clock.call_at(clock.now_ms() + 100, resume)
                return
            if passes:
                self._consume(queue, msg, again, count + 1)
                return
            self.suspended.discard(queue)
            if queue not in self.next_offsets:  # the queue moved to another member meanwhile
                return
            if self._consume(queue, msg, again, count + 1) and queue in self.next_offsets:
                self.next_offsets[queue] += 1
                self._drain(queue)

        clock.call_at(clock.now_ms() + self.spec.suspend_ms, resume)
        return passes
