"""POP consumption on the simulated broker (``reference.pop``): the broker's checkpoints and revive,
and the remoting push consumer in POP mode.

The broker (:class:`PopService`, a part of :class:`~adapters.simulated.broker.SimBroker`) moves a
group's offset at the pop and writes a checkpoint due at the pop time plus the invisible time
(PopMessageProcessor.appendCheckPoint, PopCheckPoint.getReviveTime); an ack removes it
(AckMessageProcessor), a change of the invisible time moves it from now (ChangeInvisibleTimeProcessor);
the revive service puts an un-acked copy into the POP retry topic with its count raised, a revive
margin and a scan after it is due (PopReviveService.mergeAndRevive, reviveRetry). The checkpoints are
stored messages: they outlive a restart, a kill -9 included, and the revive goes on from them.

The consumer (:class:`PopSimConsumer`) pops its queues and the group's POP retry topics, answers each
attempt by its plan entry (reference.pop.pop_answer; ConsumeMessagePopConcurrentlyService): OK acks, a
LATER changes the invisible time to the POP level's (reference.pop.later_invisible_ms; at its maximum
checkNeedAckOrDelay, reference.pop.at_max), a SLOW holds it past its invisible time (no answer). A copy
above the maximum is acked unseen (5.3.1+ processPopResult). The simulator is the newest release the model knows: a revive wakes the waiting pops.

The proxy's gRPC consumers (``grpc-simple``, ``grpc-push``) pop the same way: a SimpleConsumer's LATER
does not ack (its invisible duration runs out), a PushConsumer's changes the invisible time to the
group's retry policy's backoff of its delivery attempt (ProcessQueueImpl.nackMessage), and the proxy
dead-letters a copy popped at maxAttempts (PopMessageResultFilterImpl) instead of handing it out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hourglass.adapters.simulated.consumers import SimConsumer
from hourglass.adapters.simulated.defects import Defect
from hourglass.adapters.simulated.store import StoredMessage
from hourglass.reference.plans import CRASH, OK, SLOW, answer_word, is_later, later_level
from hourglass.reference.contract import dlq_topic
from hourglass.reference.pop import (ACKED, CHANGED, GRPC_PUSH, POP, REVIVE_MARGIN_MS, V1_NOTIFY_AGAIN, PopGroup, at_max,
                                     delivered, delivery_attempt, later_invisible_ms, mode_invisible_ms, mode_max_times,
                                     pop_answer, pop_retry_topic)

#: How long the simulated revive scan takes after the margin (measured 0-2 s beyond it on 5.5.0).
REVIVE_SCAN_MS = (0, 2000)


@dataclass
class Checkpoint:
    """One popped copy not acked yet: the copy, the count it was popped with, its revive time, and
    whether it was read back after a restart (the defect ``pop-count-reset-on-restart``)."""
    msg: StoredMessage
    group: str
    reconsume_times: int
    revive_ms: int
    changed: bool = False
    reloaded: bool = False


class PopService:
    """The POP side of the simulated broker (its store, clock, defects, ``at`` and ``put``)."""

    def pop_init(self) -> None:
        self.checkpoints: dict[tuple[str, int], Checkpoint] = {}  # (group, commit-log offset) -> checkpoint

    def pop(self, group: str, msg: StoredMessage, reconsume_times: int, invisible_ms: int) -> None:
        """PopMessageProcessor: the copy is handed out and its checkpoint written."""
        ck = Checkpoint(msg, group, reconsume_times, self.wall_ms() + invisible_ms)
        self.checkpoints[(group, msg.commit_log_offset)] = ck
        self._revive_later(ck)

    def ack(self, group: str, msg: StoredMessage) -> bool:
        """AckMessageProcessor: the checkpoint is gone (False: the broker did not answer)."""
        if not self.reachable:
            return False
        self.checkpoints.pop((group, msg.commit_log_offset), None)
        return True

    def change_invisible(self, group: str, msg: StoredMessage, invisible_ms: int) -> bool:
        """ChangeInvisibleTimeProcessor: a new checkpoint due ``invisible_ms`` from now."""
        ck = self.checkpoints.get((group, msg.commit_log_offset))
        if not self.reachable or ck is None:
            return False
        if Defect.POP_REVIVE_IGNORES_CHANGE not in self.defects:
            ck.revive_ms, ck.changed = self.wall_ms() + invisible_ms, True
            self._revive_later(ck)
        return True

    def _revive_later(self, ck: Checkpoint) -> None:
        revive_ms = ck.revive_ms
        lag = REVIVE_MARGIN_MS + self.rng.randint(*REVIVE_SCAN_MS)
        self.at(self._true_ms(revive_ms) + lag, lambda: self._revive(ck, revive_ms))

    def _revive(self, ck: Checkpoint, revive_ms: int) -> None:
        """PopReviveService.reviveRetry: an un-acked copy whose revive time this is goes to the POP
        retry topic with its count raised (a checkpoint changed since waits for its new time)."""
        key = (ck.group, ck.msg.commit_log_offset)
        if self.checkpoints.get(key) is not ck or ck.revive_ms != revive_ms or self.wall_ms() < revive_ms:
            return  # acked, changed since, or not due in the broker's clock (it stepped back: waited for again)
        if Defect.POP_UNACKED_NEVER_REVIVED in self.defects and not ck.changed:
            return  # the copy nobody answered stays invisible for ever
        del self.checkpoints[key]
        count = 0 if ck.reloaded and Defect.POP_COUNT_RESET_ON_RESTART in self.defects else ck.reconsume_times + 1
        topic = pop_retry_topic(ck.group, ck.msg.topic)
        self.store.create_topic(topic, 1)
        self.put(replace(ck.msg, reconsume_times=count, delay_level=0, deliver_ms=0, real_topic=""), topic, 0)

    def pop_after_clock_change(self) -> None:
        """The revive service compares the broker's clock: every checkpoint is due again on the new
        line (the first of the two tasks that finds it due revives it)."""
        for ck in self.checkpoints.values():
            self._revive_later(ck)

    def pop_after_restart(self) -> None:
        """The revive service reads the checkpoints back from the revive topic and goes on."""
        for ck in self.checkpoints.values():
            ck.reloaded = True
            self._revive_later(ck)


class PopSimConsumer(SimConsumer):
    """The remoting push consumer in POP mode (DefaultMQPushConsumer.setClientRebalance(false))."""

    def __init__(self, system, spec) -> None:
        super().__init__(system, spec)
        self.subscriptions = tuple(spec.topics) + tuple(pop_retry_topic(spec.group, t) for t in spec.topics)
        self.invisible_ms = mode_invisible_ms(spec.mode, spec.pop_invisible_ms)
        self.model = PopGroup(spec.mode, V1_NOTIFY_AGAIN, self.invisible_ms,
                              mode_max_times(spec.mode, self.max_reconsume_times, spec.group_retry_max_times))

    def commit(self) -> None:
        """The broker moves a POP group's offset at each pop: nothing is committed by the client."""

    def _pull(self, inc: int, at: int) -> None:
        if self.pull_at == at:
            self.pull_at = None
        broker = self.system.broker
        if inc != self.incarnation or not self.alive or self.paused or not broker.reachable:
            return
        if self.model.mode != POP and not self.system.proxy_up:  # a gRPC consumer receives through the proxy
            return
        for topic, qid in self.system.owned_queues(self):
            q = broker.store.queues.get((topic, qid), ())
            offsets = broker.consumer_offsets
            while offsets.get((self.group, topic, qid), 0) < len(q):
                msg = q[offsets.get((self.group, topic, qid), 0)]
                offsets[(self.group, topic, qid)] = msg.queue_offset + 1  # moved at the pop
                self._pop(msg)
                if not self.alive:
                    return

    def _pop(self, msg: StoredMessage) -> None:
        system, broker = self.system, self.system.broker
        rt = msg.reconsume_times
        broker.pop(self.group, msg, rt, self.invisible_ms)
        if not delivered(self.model, rt):  # processPopResult (5.3.1+): above the maximum, acked unseen
            if self.model.mode != POP:  # PopMessageResultFilterImpl: the proxy dead-letters it
                broker.store.create_topic(dlq_topic(self.group), 1)
                broker.put(replace(msg, delay_level=0, deliver_ms=0, real_topic=""), dlq_topic(self.group), 0)
            broker.ack(self.group, msg)
            return
        word = pop_answer(msg.plan, rt)
        outcome, level = answer_word(word), later_level(word) if is_later(word) and word != SLOW else 0
        now = system.clock.now_ms()
        self._out.write({**self.delivery(msg, rt, now, outcome), "pop_ms": broker.wall_ms(),
                         **({"next_level": level} if level else {}), **({"timed_out": True} if word == SLOW else {})})
        if outcome == CRASH:
            self.record("kill")
            self.die(crashed=True)
        elif outcome == OK:
            broker.ack(self.group, msg)
        elif self.model.mode == GRPC_PUSH:  # ProcessQueueImpl.nackMessage: the policy's backoff from now
            attempt = delivery_attempt(rt)
            if Defect.POP_WRONG_BACKOFF_STEP in broker.defects:
                attempt -= 1  # the step before (attempt 1: none, at once)
            broker.change_invisible(self.group, msg, self.model.policy.next_attempt_delay_ms(attempt) if attempt else 0)
        elif word != SLOW and self.model.mode == POP:  # a SLOW is held past the invisible time: the client drops its answer
            self._later(msg, rt, level, now)

    def _later(self, msg: StoredMessage, rt: int, level: int, now: int) -> None:
        """ConsumeMessagePopConcurrentlyService.processConsumeResult: the invisible time changed to the
        POP level's, or at the maximum by the message's age (checkNeedAckOrDelay)."""
        broker = self.system.broker
        if rt >= self.max_reconsume_times:
            what, invisible = at_max(now - msg.born_ms)
            if what == ACKED:
                broker.ack(self.group, msg)
            elif what == CHANGED:
                broker.change_invisible(self.group, msg, invisible)
            return  # UNCHANGED: the pop's own invisible time stands
        if Defect.POP_WRONG_BACKOFF_STEP in broker.defects and not level:
            if rt >= 1:  # level n at entry n - 1; level 0 (the count 0) fails in the client: unchanged
                broker.change_invisible(self.group, msg, later_invisible_ms(rt - 1))
            return
        broker.change_invisible(self.group, msg, later_invisible_ms(rt, level))
