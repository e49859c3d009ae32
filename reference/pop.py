"""POP consumption and the 5.x proxy: what a correct broker, proxy and client do with a message a
POP consumer did not ack.

Read at rocketmq-all-5.0.0, 5.1.4, 5.2.0, 5.3.0, 5.3.1 and 5.3.3 (``broker/.../processor/``,
``client/.../impl/consumer/``, ``proxy/...``, ``remoting/.../protocol/subscription/``) and at the
gRPC Java client's java-5.0.8 and java-5.2.1 (apache/rocketmq-clients, ``java/client/...``).

**Broker.** ``PopMessageProcessor.processRequest`` hands a message out for an invisible time and
writes a checkpoint (``appendCheckPoint`` → ``PopBufferMergeService.addCkJustOffset`` →
``putCkToStore``; ``enablePopBufferMerge`` is off by default at every tag) into the revive topic
``rmq_sys_REVIVE_LOG_<cluster>`` as a timer message due a second before its revive time, the pop
time plus the invisible time (``PopCheckPoint.getReviveTime``). An ack is a timer message too, due at
the revive time (``AckMessageProcessor.appendAck``). ``PopReviveService`` reads the revive queue
and revives a checkpoint whose message was not acked only once the scan's end time is more than
``ackTimeInterval`` + 1 s past its revive time (``mergeAndRevive``), the end time moving to now
after 3 s without a new revive message (``consumeReviveMessage``): ``reviveRetry`` puts the message
into the POP retry topic (:func:`pop_retry_topic`) with its reconsume count raised, at once. The
broker itself never routes a POP message to the DLQ. ``ChangeInvisibleTimeProcessor`` writes a
new checkpoint from now and acks the old one (``appendCheckPointThenAckOrigin``; 5.0.0
``appendCheckPoint`` + ``ackOrigin``): the message is revived the new invisible time after the
change.

**The remoting push consumer in POP mode** (``DefaultMQPushConsumer.setClientRebalance(false)``,
a concurrent listener, and the broker's request mode POP for the group and topic:
``QueryAssignmentProcessor.setMessageRequestMode``). A ``RECONSUME_LATER`` makes
``ConsumeMessagePopConcurrentlyService.processConsumeResult`` change the invisible time to
:data:`POP_DELAY_LEVEL_S` at the asked level, or at the reconsume count when none was asked
(``changePopInvisibleTime``). At the consumer's maximum (16 when unset: ``getMaxReconsumeTimes``)
it calls ``checkNeedAckOrDelay`` instead: a message older than twice the last level (4 h) is acked,
a younger one made invisible for the level its age reached. From 5.3.1 ``processPopResult`` acks a
popped message whose count is above the maximum without handing it to the listener: the message
ends there, dropped, never in ``%DLQ%group`` (:func:`remoting_pop_end`).

**The proxy's gRPC consumers.** ``GrpcClientSettingsManager.mergeSubscriptionData`` hands the
client the group's retry policy (``SubscriptionGroupConfig.groupRetryPolicy``, CUSTOMIZED by
default) and ``maxAttempts = retryMaxTimes + 1``. ``ReceiveMessageActivity.receiveMessage`` pops
with the SimpleConsumer's invisible duration (at least ``minInvisibleTimeMillsForRecv``, at most
``maxInvisibleTimeMills``) or, for a PushConsumer (auto-renew), the proxy's default and renews it.
``PopMessageResultFilterImpl`` sends a popped message whose reconsume count reached
``maxAttempts`` to the DLQ (``ProducerProcessor.forwardMessageToDeadLetterQueue``: a send-back with
delay level -1) instead of handing it out. A PushConsumer's FAILURE is a
``changeInvisibleDuration`` to the client's ``RetryPolicy.getNextAttemptDelay(deliveryAttempt)``
(``ProcessQueueImpl.nackMessage``), ``deliveryAttempt`` being the reconsume count + 1
(``GrpcConverter``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping

from hourglass.reference.broadcast import DROPPED  # a message consumed by nobody, in no DLQ: one word for both
from hourglass.reference.cluster import is_broker
from hourglass.reference.contract import POP_REVIVED, PROXY_TARGET, dlq_topic
from hourglass.reference.plans import CRASH, OK, SLOW, PlanOutcome, is_later, later_level

#: Consumption modes of a POP group: the remoting push consumer in POP mode, and the proxy's gRPC
#: SimpleConsumer and PushConsumer.
POP, GRPC_SIMPLE, GRPC_PUSH = "pop", "grpc-simple", "grpc-push"
POP_MODES: tuple[str, ...] = (POP, GRPC_SIMPLE, GRPC_PUSH)
#: What a system must be set up with for a group of a gRPC mode: the proxy in front of its brokers
#: (a ``BrokerProfile.needs`` entry, like the fault families' setups).
PROXY_NEEDED = "proxy"


#: How the proxy runs (ProxyStartup's -pm, ProxyMode): its own process in front of the brokers
#: (cluster), or in the broker's process, the broker started by it (local: ProxyStartup.createBrokerController).
PROXY_CLUSTER, PROXY_LOCAL = "cluster", "local"
PROXY_MODES: tuple[str, ...] = (PROXY_CLUSTER, PROXY_LOCAL)
#: why a proxy in the broker's process takes no fault of its own
PROXY_IN_BROKER = "the proxy runs in the broker's process (proxy_mode local): fault the broker"


def setup_needed(modes) -> frozenset[str]:
    """What a system must be set up with for groups of these consumption ``modes``."""
    return frozenset({PROXY_NEEDED}) if any(m in (GRPC_SIMPLE, GRPC_PUSH) for m in modes) else frozenset()

# --- the broker --------------------------------------------------------------------------------

#: PopAckConstants.ackTimeInterval: a checkpoint is due this long before its revive time, and a
#: checkpoint is revived once the revive scan's end time is this + 1 s past its revive time
#: (PopReviveService.mergeAndRevive).
ACK_TIME_INTERVAL_MS = 1000
#: PopReviveService.mergeAndRevive: ``endTime - reviveTime <= ackTimeInterval + SECOND`` waits.
REVIVE_MARGIN_MS = ACK_TIME_INTERVAL_MS + 1000
#: PopReviveService.consumeReviveMessage: with no new revive message the end time moves to now
#: once it is this far behind.
REVIVE_IDLE_ADVANCE_MS = 3000
#: BrokerConfig.reviveInterval and reviveMaxSlow: an idle revive thread sleeps up to
#: interval x slow between scans.
REVIVE_INTERVAL_MS, REVIVE_MAX_SLOW = 1000, 3
#: PopAckConstants.retryQueueNum: the POP retry topic has one queue (PopReviveService.addRetryTopicIfNotExist).
POP_RETRY_QUEUE_COUNT = 1
#: DefaultMQPushConsumerImpl.BROKER_SUSPEND_MAX_TIME_MILLIS: the remoting consumer's pop long-poll.
REMOTING_POP_LONG_POLL_MS = 15_000
#: ProxyConfig.grpcClientConsumerMaxLongPollingTimeoutMillis: the most a gRPC receive waits (5.1+;
#: ReceiveMessageActivity.receiveMessage caps the client's own long-poll time with it). 5.0.x's
#: grpcClientConsumerLongPollingTimeoutMillis caps it at 30 s (read at rocketmq-all-5.0.0).
GRPC_LONG_POLL_MS = 20_000
GRPC_LONG_POLL_MS_5_0 = 30_000


def revive_time_ms(pop_ms: int, invisible_ms: int) -> int:
    """PopCheckPoint.getReviveTime: the moment a popped, un-acked message becomes due again."""
    return pop_ms + invisible_ms


def pop_retry_topic(group: str, topic: str, v2: bool = False) -> str:
    """KeyBuilder.buildPopRetryTopic: ``%RETRY%<group>_<topic>`` (v1, the default at every tag);
    ``%RETRY%<group>+<topic>`` with ``enableRetryTopicV2`` (5.2.0+). Not the push consumer's
    ``%RETRY%<group>``: a POP group's retries are per topic."""
    return f"%RETRY%{group}{'+' if v2 else '_'}{topic}"


#: The first release whose v1 revive wakes the waiting pops again: measured on 5.5.0 (a revived
#: copy re-popped ~10 ms after its revive, where 5.3.3 waited out the 15 s long-poll), the change of
#: apache/rocketmq#9828 (merged 2025-11-10, after the 5.3.x line; its source is not in the tags read
#: here). 5.4.0 is not measured and is taken as 5.3.x: the wider window.
V1_NOTIFY_AGAIN = (5, 5)


def revived_notifies_pollers(version: tuple[int, ...], v2: bool = False) -> bool:
    """Whether a revived copy is handed out at once to a pop that waits. PopReviveService.reviveRetry
    up to 5.1.x calls ``notifyMessageArriving(topic, cid, -1)``, but the woken pop takes the retry
    topic only by chance (PopMessageProcessor: ``randomQ % 5 == 0``, or when the normal topic left
    room), and measured on 5.1.4 a revived copy was delivered 11.2 s after its store, at the end of
    the long-poll (5.0.0 and 5.1.4 each had a revive that came after a window without the long-poll
    once in a sweep of 5.x); from 5.2.0 to 5.3.3 only a v2 retry topic notifies
    (``PopLongPollingService.notifyMessageArrivingWithRetryTopic``: measured on 5.3.3, re-popped 5-6 s
    after due, at the end of one 15 s long-poll). From :data:`V1_NOTIFY_AGAIN` a v1 revive wakes the
    pops (re-popped ~10 ms after the revive on 5.5.0). Where it does not, the window adds the pop's
    long-poll (:func:`revive_lag_ms`)."""
    return version >= V1_NOTIFY_AGAIN or v2


def revive_lag_ms(long_poll_ms: int, timer_precision_ms: int, notified: bool) -> int:
    """The most a correct broker takes from a message's revive time to handing it out again, on
    an idle host (measured 2.0-4.0 s where the pop is woken, on 5.1.4, 5.5.0 and 5.5.0's proxy, by
    probes outside the harness that the POP suite is to replace): the revive margin plus the idle end-time advance beyond it
    (:data:`REVIVE_MARGIN_MS`, :data:`REVIVE_IDLE_ADVANCE_MS`, counted from the checkpoint's due time
    a second before the revive time), an idle revive thread's sleep, the timer wheel's precision
    (the checkpoint is a timer message), and, where the revive does not wake a waiting pop, the
    pop's long-poll."""
    scan = REVIVE_IDLE_ADVANCE_MS + REVIVE_INTERVAL_MS * REVIVE_MAX_SLOW + timer_precision_ms
    return scan + (0 if notified else long_poll_ms)


@dataclass(frozen=True)
class Redelivery:
    """When the next attempt of a message that was not acked may be handed out: not before
    ``earliest_ms`` (its revive time: ``PopReviveService.mergeAndRevive`` waits for the scan to pass
    it by :data:`REVIVE_MARGIN_MS`) and not after ``latest_ms`` (its revive time + the revive lag +
    the scenario's slack)."""
    earliest_ms: int
    latest_ms: int


def redelivery(invisible_from_ms: int, invisible_ms: int, lag_ms: int, slack_ms: int) -> Redelivery:
    """The window of the next attempt of a message made invisible at ``invisible_from_ms`` for
    ``invisible_ms`` (a pop's time and its invisible time, or a change of the invisible time: the
    change is a new checkpoint from its own moment, ChangeInvisibleTimeProcessor)."""
    due = revive_time_ms(invisible_from_ms, invisible_ms)
    return Redelivery(due, due + lag_ms + slack_ms)


# --- the remoting push consumer in POP mode ----------------------------------------------------

#: DefaultMQPushConsumerImpl.popDelayLevel (s): the invisible time a RECONSUME_LATER asks for, by
#: level index (ConsumeMessagePopConcurrentlyService.changePopInvisibleTime).
POP_DELAY_LEVEL_S: tuple[int, ...] = (10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)
#: DefaultMQPushConsumerImpl.getMaxReconsumeTimes: ``maxReconsumeTimes = -1`` means 16.
DEFAULT_MAX_RECONSUME_TIMES = 16
#: ConsumeMessagePopConcurrentlyService.checkNeedAckOrDelay: a message older than twice the last
#: level is acked at its maximum (dropped).
POP_MAX_AGE_MS = POP_DELAY_LEVEL_S[-1] * 1000 * 2
#: DefaultMQPushConsumerImpl.popInvisibleTime: the invisible time of the consumer's pops, used when
#: within [5 s, 300 s] (popMessage), else 60 s.
DEFAULT_POP_INVISIBLE_MS, POP_INVISIBLE_RANGE_MS = 60_000, (5_000, 300_000)


def pop_invisible_ms(asked_ms: int | None) -> int:
    """DefaultMQPushConsumerImpl.popMessage: the consumer's pop invisible time, the default when
    unset or outside :data:`POP_INVISIBLE_RANGE_MS`."""
    lo, hi = POP_INVISIBLE_RANGE_MS
    return asked_ms if asked_ms is not None and lo <= asked_ms <= hi else DEFAULT_POP_INVISIBLE_MS


def max_reconsume_times(asked: int | None) -> int:
    """DefaultMQPushConsumerImpl.getMaxReconsumeTimes: -1 (or unset) is 16."""
    return DEFAULT_MAX_RECONSUME_TIMES if asked is None or asked == -1 else asked


def later_invisible_ms(reconsume_times: int, delay_level: int = 0) -> int:
    """ConsumeMessagePopConcurrentlyService.changePopInvisibleTime: a LATER asking for no level
    (0) takes the level of its reconsume count; the level indexes :data:`POP_DELAY_LEVEL_S` from 0
    (level n is the table's entry n, not n - 1 as for a delay level), clamped to the last."""
    level = delay_level if delay_level else reconsume_times
    return POP_DELAY_LEVEL_S[min(level, len(POP_DELAY_LEVEL_S) - 1)] * 1000


#: What :func:`at_max` makes of a LATER at the maximum count.
ACKED, CHANGED, UNCHANGED = "acked", "changed", "unchanged"


def at_max(age_ms: int) -> tuple[str, int | None]:
    """ConsumeMessagePopConcurrentlyService.checkNeedAckOrDelay, a LATER at the maximum count
    (``reconsumeTimes >= getMaxReconsumeTimes()``), by the message's age (now - born):
    ``(ACKED, None)`` older than :data:`POP_MAX_AGE_MS` (the message ends, no DLQ); else the level
    after the last one its age reached, ``(CHANGED, invisible ms)``; younger than the first level
    the level is -1 and ``changePopInvisibleTime`` fails on it (an index out of the table), so the
    pop's own invisible time stands: ``(UNCHANGED, None)``."""
    if age_ms > POP_MAX_AGE_MS:
        return ACKED, None
    reached = [i for i, s in enumerate(POP_DELAY_LEVEL_S) if age_ms >= s * 1000]
    if not reached:
        return UNCHANGED, None
    return CHANGED, later_invisible_ms(0, reached[-1] + 1)


def drops_over_max(version: tuple[int, ...]) -> bool:
    """DefaultMQPushConsumerImpl.processPopResult (5.3.1+, apache/rocketmq#8332): a popped message
    whose reconsume count is above the maximum is acked at once, never handed to the listener."""
    return version >= (5, 3, 1)


def remoting_pop_end(version: tuple[int, ...], max_times: int) -> tuple[int, str]:
    """Where a message a remoting POP consumer always answers LATER ends: (deliveries, final
    state). From 5.3.1 it is delivered with reconsume counts 0..max and the next pop acks it:
    ``max + 1`` deliveries, ``DROPPED`` (no DLQ). Before, it comes again at the levels its age
    reaches until it is 4 h old (:func:`at_max`): no end within a run, ``CYCLING``."""
    if drops_over_max(version):
        return max_times + 1, DROPPED
    return -1, "CYCLING"


# --- the proxy and its gRPC consumers ----------------------------------------------------------

#: SubscriptionGroupConfig.retryMaxTimes: the group's retries (16); maxAttempts is one more.
DEFAULT_RETRY_MAX_TIMES = 16
#: CustomizedRetryPolicy.next (ms): the group's default retry policy (GroupRetryPolicyType.CUSTOMIZED).
CUSTOMIZED_NEXT_MS: tuple[int, ...] = tuple(s * 1000 for s in (1, 5, 10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600,
                                                                1200, 1800, 3600, 7200))
#: ExponentialRetryPolicy's defaults: initial 5 s, max 2 h, multiplier 2.
EXPONENTIAL_DEFAULT = (5_000, 7_200_000, 2)
#: ProxyConfig.minInvisibleTimeMillsForRecv and maxInvisibleTimeMills: a SimpleConsumer's
#: invisible duration must lie within (ReceiveMessageActivity.receiveMessage refuses it otherwise).
GRPC_INVISIBLE_RANGE_MS = (10_000, 12 * 3600 * 1000)
#: ProxyConfig.defaultInvisibleTimeMills: a PushConsumer's pops (auto-renewed while it consumes).
GRPC_PUSH_INVISIBLE_MS = 60_000
#: The invisible duration the harness's SimpleConsumer receives with when a scenario names none.
DEFAULT_SIMPLE_INVISIBLE_MS = 15_000


def mode_invisible_ms(mode: str, asked_ms: int | None) -> int:
    """The invisible time a POP group's pops take: the remoting consumer's popInvisibleTime
    (:func:`pop_invisible_ms`), the SimpleConsumer's invisible duration (the harness's default when
    none is asked), the proxy's default for a PushConsumer (renewed while it consumes)."""
    if mode == POP:
        return pop_invisible_ms(asked_ms)
    return GRPC_PUSH_INVISIBLE_MS if mode == GRPC_PUSH else asked_ms or DEFAULT_SIMPLE_INVISIBLE_MS


def mode_max_times(mode: str, consumer_max: int, group_retry_max_times: int | None) -> int:
    """A POP group's maximum: the remoting consumer's maxReconsumeTimes, a gRPC group's retryMaxTimes
    (the broker's default when not set; maxAttempts is one more: :func:`max_attempts`)."""
    if mode == POP:
        return consumer_max
    return group_retry_max_times if group_retry_max_times is not None else DEFAULT_RETRY_MAX_TIMES


def max_attempts(retry_max_times: int = DEFAULT_RETRY_MAX_TIMES) -> int:
    """GrpcClientSettingsManager.mergeSubscriptionData: ``retryMaxTimes + 1`` deliveries."""
    return retry_max_times + 1


def delivery_attempt(reconsume_times: int) -> int:
    """GrpcConverter.buildMessage: a message's delivery attempt is its reconsume count + 1."""
    return reconsume_times + 1


@dataclass(frozen=True)
class RetryPolicy:
    """The group's retry policy as the gRPC client holds it (the server's Settings): CUSTOMIZED
    with ``next_ms``, or EXPONENTIAL with ``initial_ms``, ``max_ms``, ``multiplier``."""
    customized: tuple[int, ...] | None = CUSTOMIZED_NEXT_MS
    exponential: tuple[int, int, int] | None = None

    def next_attempt_delay_ms(self, attempt: int) -> int:
        """CustomizedBackoffRetryPolicy.getNextAttemptDelay: entry ``attempt - 1``, the last one
        beyond; ExponentialBackoffRetryPolicy.getNextAttemptDelay: ``min(initial x
        multiplier^(attempt-1), max)`` (java-5.0.8, java-5.2.1)."""
        if attempt < 1:
            raise ValueError(f"a delivery attempt is >= 1, found {attempt}")
        if self.exponential is not None:
            initial, most, multiplier = self.exponential
            return int(min(initial * multiplier ** (attempt - 1), most))
        steps = self.customized or CUSTOMIZED_NEXT_MS
        return steps[min(attempt, len(steps)) - 1]


def grpc_invisible_ms(asked_ms: int) -> int | None:
    """ReceiveMessageActivity.receiveMessage: a SimpleConsumer's invisible duration, or None when
    the proxy refuses it (outside :data:`GRPC_INVISIBLE_RANGE_MS`: ``ILLEGAL_INVISIBLE_TIME``)."""
    lo, hi = GRPC_INVISIBLE_RANGE_MS
    return asked_ms if lo <= asked_ms <= hi else None


def proxy_routes_to_dlq(reconsume_times: int, attempts: int) -> bool:
    """PopMessageResultFilterImpl.filterMessage: a popped message whose reconsume count reached
    ``maxAttempts`` goes to ``%DLQ%<group>`` (forwardMessageToDeadLetterQueue) instead of the client."""
    return reconsume_times >= attempts


def grpc_end(retry_max_times: int = DEFAULT_RETRY_MAX_TIMES) -> tuple[int, str, str]:
    """Where a message a gRPC consumer never acks ends: delivered ``maxAttempts`` times (reconsume
    counts 0..retryMaxTimes), then the proxy's next pop of it routes it to the DLQ: (deliveries,
    final state, the DLQ topic's format)."""
    return max_attempts(retry_max_times), "DLQ", dlq_topic("{group}")


#: What a gRPC consumer waits after a failed call before the next (ProcessQueueImpl's
#: RECEIVING_FAILURE_BACKOFF_DELAY, ACK_MESSAGE_FAILURE_BACKOFF_DELAY and
#: CHANGE_INVISIBLE_DURATION_FAILURE_BACKOFF_DELAY at java-5.0.8: 1 s; the harness's SimpleConsumer
#: the same), and the client's request timeout (the harness's ClientConfiguration.requestTimeout): an
#: answer recorded this long before an outage may still be in flight when it begins.
GRPC_RETRY_BACKOFF_MS, GRPC_REQUEST_TIMEOUT_MS = 1_000, 10_000
#: How long before a revived copy's store the answer that led to it may have come: a PushConsumer's
#: FAILURE changes the invisible time to its backoff, at most the pop's own invisible time away, and
#: the change may take the client's request timeout.
ANSWER_BEFORE_REVIVE_MS = GRPC_PUSH_INVISIBLE_MS + GRPC_REQUEST_TIMEOUT_MS


def second_copy_allowed(faults, first_store_ms: int, second_store_ms: int, kill_actions=("kill",),
                        grpc_outages=()) -> tuple[bool, str]:
    """Two stored copies of one attempt of a message in a POP group (the later stored at
    ``second_store_ms``): PopReviveService.consumeReviveMessage commits the revive offset after a
    round, so a broker killed between a revive and that commit revives the checkpoint again when it
    is back (the offsets of the revive topic are read back from the last commit); a graceful stop
    commits it (ConsumerOffsetManager.persist at shutdown). Nothing else stores an attempt twice: a
    revive raises the count (reviveRetry), so a second copy with the same count after a graceful
    restart is a broker's fault. ``faults``: the run's fault events."""
    for f in faults:
        if f.get("action") in kill_actions and is_broker(f.get("target")) \
                and first_store_ms <= f["ts_ms"] <= second_store_ms:
            return True, (f"a second revived copy after the broker kill at {f['ts_ms']}: the revive offset was not "
                          "committed (PopReviveService), so the checkpoint was revived again")
    for o in grpc_outages:  # a gRPC group: the proxy's outages as its clients live them (grpc_client_outages)
        if o.down_ms <= second_store_ms and (o.up_ms is None or o.up_ms >= first_store_ms - ANSWER_BEFORE_REVIVE_MS):
            return True, (f"a change of the invisible time the outage ({o.describe()}) cut off was retried by the client "
                          "with the same receipt handle: a second checkpoint (ChangeInvisibleTimeProcessor), revived again")
    return False, (f"a second stored copy of the same attempt (stored at {first_store_ms} and {second_store_ms}) with no "
                   "broker kill in between: a POP revive raises the count (PopReviveService.reviveRetry), and only a "
                   "kill before the revive offset's commit revives a checkpoint twice")


# --- the next attempt of a message, by mode ----------------------------------------------------

#: The answers of a POP group's delivery that do not ack its copy, so the broker hands out the next
#: attempt (:func:`pop_outcome`): a LATER, and a CRASH (no answer at all).
NOT_ACKED: tuple[str, ...] = ("LATER", "CRASH")

#: How attempt k-1 of a message ended for the broker: answered LATER / FAILURE (the client changed
#: its invisible time at the answer), or not answered while it was invisible (a slow answer, a
#: consumer that died: the pop's own invisible time ran out).
ANSWERED_LATER, NOT_ANSWERED = "later", "not-answered"


@dataclass(frozen=True)
class PopGroup:
    """A POP group as the model needs it: its mode, the broker's version, the consumer's pop
    invisible time (remoting POP: ``setPopInvisibleTime``; gRPC simple: the receive's invisible
    duration; gRPC push: the proxy's default), its maximum (remoting: the consumer's
    ``maxReconsumeTimes``; gRPC: the group's ``retryMaxTimes``) and its retry policy (gRPC push)."""
    mode: str
    version: tuple[int, ...]
    invisible_ms: int
    max_times: int = DEFAULT_MAX_RECONSUME_TIMES
    policy: RetryPolicy = RetryPolicy()
    v2: bool = False

    def long_poll_ms(self) -> int:
        if self.mode == POP:
            return REMOTING_POP_LONG_POLL_MS
        return GRPC_LONG_POLL_MS_5_0 if self.version < (5, 1) else GRPC_LONG_POLL_MS

    def lag_ms(self, timer_precision_ms: int) -> int:
        return revive_lag_ms(self.long_poll_ms(), timer_precision_ms, revived_notifies_pollers(self.version, self.v2))


def next_window(group: PopGroup, reconsume_times: int, ended: str, popped_ms: int, answered_ms: int | None,
                timer_precision_ms: int, slack_ms: int, delay_level: int = 0, born_ms: int | None = None) -> Redelivery | None:
    """The window of attempt ``reconsume_times + 1`` of a message whose attempt ``reconsume_times``
    was popped at ``popped_ms`` and ``ended`` as :data:`ANSWERED_LATER` (at ``answered_ms``) or
    :data:`NOT_ANSWERED`; None when there is no next attempt (the message ended: acked at its
    maximum by its age, or routed to the DLQ instead: :func:`remoting_pop_end`, :func:`grpc_end`)."""
    lag = group.lag_ms(timer_precision_ms)
    if ended == NOT_ANSWERED or answered_ms is None:
        return redelivery(popped_ms, group.invisible_ms, lag, slack_ms)
    if group.mode == GRPC_PUSH:  # ProcessQueueImpl.nackMessage
        return redelivery(answered_ms, group.policy.next_attempt_delay_ms(delivery_attempt(reconsume_times)), lag, slack_ms)
    if group.mode == GRPC_SIMPLE:  # no nack: the receive's invisible time runs out
        return redelivery(popped_ms, group.invisible_ms, lag, slack_ms)
    if reconsume_times >= group.max_times:  # ConsumeMessagePopConcurrentlyService.checkNeedAckOrDelay
        age = answered_ms - (born_ms if born_ms is not None else answered_ms)
        # the client reads the age when the listener has returned, just after the answer was recorded:
        # near a level's boundary either level may be taken
        windows = [w for w in (_at_max_window(group, a, popped_ms, answered_ms, lag, slack_ms)
                               for a in (age, age + AT_MAX_ANSWER_SLACK_MS)) if w is not None]
        if not windows:
            return None
        return Redelivery(min(w.earliest_ms for w in windows), max(w.latest_ms for w in windows))
    return redelivery(answered_ms, later_invisible_ms(reconsume_times, delay_level), lag, slack_ms)


#: How long after a deliver event is recorded the client may read the message's age at its maximum
#: (processConsumeResult runs once the listener returned): the age's uncertainty in :func:`next_window`.
AT_MAX_ANSWER_SLACK_MS = 1000


def _at_max_window(group: PopGroup, age_ms: int, popped_ms: int, answered_ms: int, lag: int, slack_ms: int) -> Redelivery | None:
    """checkNeedAckOrDelay at a message's age: acked (None), the pop's own invisible time, or the
    level its age reached (:func:`at_max`)."""
    what, invisible = at_max(age_ms)
    if what == ACKED:
        return None
    if what == UNCHANGED:
        return redelivery(popped_ms, group.invisible_ms, lag, slack_ms)
    return redelivery(answered_ms, invisible, lag, slack_ms)


#: How long past a copy's invisible time a POP consumer's listener holds a ``SLOW`` copy: its result is
#: then dropped by the client (ConsumeRequest.run: ``isPopTimeout`` skips processConsumeResult).
SLOW_HOLD_PAST_MS = 500


def pop_answer(plan: tuple[str, ...], reconsume_times: int) -> str:
    """The plan word a POP consumer answers attempt ``reconsume_times`` with: the plan's entry of
    that attempt (OK beyond the plan). A POP group's attempts are the revives of its copies, one
    count each (:func:`pop_outcome`), so the entry is the attempt's, not the next one unused: an
    attempt the listener never got (its pop timed out in the client first, ``isPopTimeout``) does
    not shift the rest. ``SLOW`` holds the copy past its invisible time, so the client drops the
    answer and the broker revives it at the pop's time (:data:`SLOW_HOLD_PAST_MS`)."""
    return plan[reconsume_times] if reconsume_times < len(plan) else OK


def pop_outcome(plan: tuple[str, ...], group: PopGroup):
    """Where a plan leads in a POP group (``reference.plans.PlanOutcome``): every answer that does
    not ack — a LATER (a change of the invisible time) or a CRASH (no answer: the pop's invisible
    time runs out) — is followed by the revived copy, whose reconsume count is one more
    (PopReviveService.reviveRetry): attempt k is the plan's entry k. The plan ends at its first OK
    (or its end: OK after). A next attempt the group does not hand to the listener ends the message
    instead (:func:`delivered`): ``DROPPED`` for a remoting consumer (5.3.1+ acks it unseen),
    ``DLQ`` for a gRPC group (the proxy dead-letters it). ``asked[k - 1]``: the POP level the LATER
    of attempt k - 1 asked for (0: none, or not a LATER: a ``SLOW`` lets the pop's invisible time run out). A remoting consumer before 5.3.1 at its
    maximum goes on (``checkNeedAckOrDelay`` acks only a message older than 4 h: never within a run)."""
    attempt, asked, crashes = 0, [], [0]
    for word in plan:
        if word == OK or not (word == CRASH or is_later(word)):
            break
        if word == CRASH:
            crashes[attempt] += 1
        asked.append(later_level(word) if is_later(word) and word != SLOW else 0)
        if not delivered(group, attempt + 1):
            return PlanOutcome(attempt, DROPPED if group.mode == POP else "DLQ", tuple(crashes), tuple(asked))
        attempt += 1
        crashes.append(0)
    return PlanOutcome(attempt, "CONSUMED", tuple(crashes), tuple(asked))


def pop_wait_ms(plan: tuple[str, ...], group: PopGroup) -> int:
    """How long after its first pop a POP group's message is done, for an estimate: the invisible
    time before each attempt its plan leads to (:func:`pop_outcome`, :func:`next_window`), the
    revive's lag left out."""
    out = pop_outcome(plan, group)
    t = 0
    for k in range(out.last_attempt):
        word = plan[k]
        answered = ANSWERED_LATER if is_later(word) and word != SLOW else NOT_ANSWERED
        window = next_window(group, k, answered, t, t, 0, 0, out.asked[k])
        t = window.earliest_ms if window is not None else t
    return t


def delivered(group: PopGroup, reconsume_times: int) -> bool:
    """Whether a popped copy with this reconsume count reaches the listener: not above a remoting
    consumer's maximum from 5.3.1 (:func:`drops_over_max`), not at a gRPC group's maxAttempts (the
    proxy routes it to the DLQ: :func:`proxy_routes_to_dlq`)."""
    if group.mode == POP:
        return not (drops_over_max(group.version) and reconsume_times > group.max_times)
    return not proxy_routes_to_dlq(reconsume_times, max_attempts(group.max_times))


# --- the gRPC clients across an outage of the proxy ----------------------------------------------

#: grpc-java's ExponentialBackoffPolicy, the channel's reconnect once its connection broke (the gRPC
#: Java client shades grpc-java: java-5.0.8): initial 1 s, multiplier 1.6, jitter ±20 %, at most 120 s.
RECONNECT_INITIAL_MS, RECONNECT_MULTIPLIER, RECONNECT_JITTER, RECONNECT_MAX_MS = 1_000, 1.6, 0.2, 120_000


def reconnect_lag_ms(outage_ms: int) -> int:
    """How long after the proxy is back a gRPC client's channel may still wait to reconnect, its
    outage having lasted ``outage_ms``: the reconnect attempt spanning the moment it came back is at
    most one backoff interval long, and the n-th interval (at most (1 + jitter) x initial x 1.6^n)
    starts only after the n before it, which together lasted at least (1 - jitter) x initial x
    (1.6^n - 1) / 0.6 <= ``outage_ms``; plus one client retry backoff."""
    lo_sum = (1 - RECONNECT_JITTER) * RECONNECT_INITIAL_MS / (RECONNECT_MULTIPLIER - 1)
    growth = outage_ms / lo_sum + 1  # the largest 1.6^n the n intervals before may reach
    interval = (1 + RECONNECT_JITTER) * RECONNECT_INITIAL_MS * growth
    return int(min(interval, (1 + RECONNECT_JITTER) * RECONNECT_MAX_MS)) + GRPC_RETRY_BACKOFF_MS


def grpc_client_outages(proxy_outages) -> list:
    """The proxy's outages (reference.windows.Outage) as its gRPC clients live them: until their
    channel reconnected (:func:`reconnect_lag_ms` after the proxy was ready again)."""
    from hourglass.reference.windows import Outage

    out = []
    for o in proxy_outages:
        if o.up_ms is None:
            out.append(Outage(o.action, o.down_ms, None, f"proxy {o.action} at {o.down_ms}, never ready again"))
            continue
        back = o.up_ms + reconnect_lag_ms(o.up_ms - o.down_ms)
        out.append(Outage(o.action, o.down_ms, back, f"proxy {o.action} at {o.down_ms}, ready at {o.up_ms}, its gRPC "
                          f"clients reconnected by {back} (grpc-java's reconnect backoff)"))
    return out


#: The proxy resolves the broker of a receipt handle (an ack, a change of the invisible time) and of a
#: receive through its topic-route cache (ClusterMessageService.resolveBrokerAddrInReceiptHandle,
#: TopicRouteService.getBrokerAddr), a Caffeine cache refreshed this long after it was written
#: (ProxyConfig.topicRouteServiceCacheRefreshSeconds, ...ExpiredInSeconds at 5.0.0: 20 s, read at
#: 5.0.0, 5.2.0 and 5.3.3, and in the 5.4.0 and 5.5.0 jars): what it read while a broker was down stands until then, so for that long after the
#: broker is back the proxy answers INVALID_RECEIPT_HANDLE ("cannot find broker") or no route.
PROXY_ROUTE_REFRESH_MS = 20_000


def proxy_route_outages(broker_outages, proxy_mode: str = PROXY_CLUSTER) -> list:
    """A broker's outages as a proxy in its own process (cluster mode) serves them: until its route
    cache was refreshed (:data:`PROXY_ROUTE_REFRESH_MS` after the broker was back). In local mode the
    proxy is the broker's process, restarted with it, its cache empty: none beyond the broker's own."""
    from hourglass.reference.windows import Outage

    if proxy_mode == PROXY_LOCAL:
        return []
    return [Outage(o.action, o.down_ms, o.up_ms + PROXY_ROUTE_REFRESH_MS,
                   f"{o.describe()}; the proxy's route to it refreshed by {o.up_ms + PROXY_ROUTE_REFRESH_MS} "
                   "(TopicRouteService's cache)") for o in broker_outages if o.up_ms is not None]


#: ReceiptHandleProcessor.clearAllHandle (DefaultReceiptHandleManager from 5.3.0), run by the proxy's
#: shutdown: every receipt handle it still renews for a PushConsumer (its receives auto-renew) gets
#: ProxyConfig.invisibleTimeMillisWhenClear as its invisible time (1 s: read at 5.0.0 and 5.3.3, and in the
#: 5.4.0 and 5.5.0 jars), so a copy
#: held through a graceful stop of the proxy may be revived a second after its clear.
PROXY_CLEAR_INVISIBLE_MS = 1_000


def proxy_clear_ms(faults, popped_ms: int, answered_ms: int | None, proxy_mode: str = PROXY_CLUSTER) -> int | None:
    """The earliest a PushConsumer's copy popped at ``popped_ms`` may be revived by a graceful stop
    of the proxy that cleared its receipt handle (:data:`PROXY_CLEAR_INVISIBLE_MS` after the stop
    began, or after the pop when the stopping proxy popped it), its answer at ``answered_ms`` not
    through before the stop began (within the request timeout); None without such a stop. In local
    mode the proxy stops with the first broker. ``faults``: the run's fault events."""
    from hourglass.reference.windows import periods

    target = "broker" if proxy_mode == PROXY_LOCAL else PROXY_TARGET
    for began, stopped, _ in periods(faults, "stop", "stopped", target):
        if stopped is not None and popped_ms <= stopped and (answered_ms is None or began <= answered_ms + GRPC_REQUEST_TIMEOUT_MS):
            return max(began, popped_ms) + PROXY_CLEAR_INVISIBLE_MS
    return None


def proxy_outages_of(faults, proxy_mode: str = PROXY_CLUSTER) -> list:
    """The proxy's outages (reference.windows.Outage) from a run's fault events: its own process's
    (``target: proxy``); in local mode the first broker's, whose process it is."""
    from hourglass.reference.faults import effect
    from hourglass.reference.windows import broker_outages

    faults = list(faults)
    return broker_outages(faults) if proxy_mode == PROXY_LOCAL else effect("proxy", faults)


def pop_outages(mode: str, faults, proxy_mode: str = PROXY_CLUSTER) -> list:
    """What may cut a POP group's copy off its answer or its listener: the brokers' and the
    consumers' outages, and for a gRPC group the proxy's as its clients live them
    (:func:`grpc_client_outages`) and the brokers' as the proxy serves them (:func:`grpc_broker_outages`),
    from a run's fault events."""
    from hourglass.reference.faults import effect

    faults = list(faults)
    out = effect("store", faults) + effect("consumer", faults)
    if mode in (GRPC_SIMPLE, GRPC_PUSH):
        out += grpc_outages(faults, proxy_mode)
    return out


def grpc_outages(faults, proxy_mode: str = PROXY_CLUSTER) -> list:
    """What a gRPC group lives beyond the brokers' own outages: the proxy's as its clients live
    them and the brokers' as the proxy serves them, from a run's fault events."""
    faults = list(faults)
    return grpc_client_outages(proxy_outages_of(faults, proxy_mode)) + grpc_broker_outages(faults, proxy_mode)


def grpc_broker_outages(faults, proxy_mode: str = PROXY_CLUSTER) -> list:
    """The brokers' process outages as a gRPC group lives them through a proxy of its own process
    (:func:`proxy_route_outages`), from a run's fault events."""
    from hourglass.reference.windows import broker_outages

    return proxy_route_outages(broker_outages(list(faults)), proxy_mode)


def answered_after_revive(popped_ms: int, invisible_ms: int, answered_ms: int, next_popped_ms: int) -> str | None:
    """Why a POP group's next attempt may come before the answer of the previous one, or None: that
    answer (at ``answered_ms``) came after the copy's invisible time had run out (popped at
    ``popped_ms``: its revive time, :func:`revive_time_ms`), and the next attempt was popped after it
    (``next_popped_ms``): the broker revived the unanswered copy on its own, as it must
    (PopReviveService), whatever the answer said when it came. A consumer that answers late (one
    starved of CPU on a busy host: it handed the copy to its listener long after the pop) sees
    its copy again first; its answer changes nothing of that."""
    revive = revive_time_ms(popped_ms, invisible_ms)
    if answered_ms <= revive or next_popped_ms < revive:
        return None
    return (f"the previous attempt, popped at {popped_ms}, was answered at {answered_ms}, after its invisible time ran "
            f"out at {revive}: the broker revived it on its own (PopReviveService) before the answer came")


def unplanned_attempt(outages, previous_ok_ms: int | None, delivered_ms: int) -> str | None:
    """Why a POP group's attempt the plan does not lead to may come, or None: an attempt after one
    answered OK (any of its deliveries: a broker killed after a pop pops the copy again), when the ack may have been lost (an outage of the broker, or of the proxy for a gRPC
    group, lasted into the :data:`GRPC_REQUEST_TIMEOUT_MS` after the OK: the copy is revived as the
    next attempt, PopReviveService); an attempt whose previous one was never delivered, when an
    outage (the broker's or the proxy's, or a consumer's death) began before it: the broker popped
    the copy and wrote its checkpoint, and the answer never reached the listener (a proxy or broker
    killed mid-pop, a consumer killed with copies it had popped but not handed to its listener), so
    the copy is revived with its count raised (``previous_ok_ms`` None). ``outages``: the run's
    outages of the broker, the consumers and (gRPC) the proxy, as reference.windows.Outage."""
    for o in outages:  # an outage over the OK's ack: begun by its request timeout, not over before the OK
        if previous_ok_ms is not None and o.down_ms <= previous_ok_ms + GRPC_REQUEST_TIMEOUT_MS \
                and (o.up_ms is None or o.up_ms >= previous_ok_ms):
            return (f"the ack of the OK at {previous_ok_ms} may have been lost: {o.describe()}; the copy was revived "
                    "as the next attempt (PopReviveService)")
        if previous_ok_ms is None and o.down_ms <= delivered_ms:
            return (f"a copy popped before {o.describe()} may never have reached the listener; the broker revived it "
                    "with its count raised (PopReviveService.reviveRetry)")
    return None


#: The broker's record of a revive (5.x ``pop.log``, written with ``enablePopLog``:
#: ``PopReviveService.reviveRetry``, "reviveQueueId=N,retry msg, ck=PopCheckPoint [topic=T, cid=G,
#: ...], msg queueId Q, offset O, reviveDelay=S, result is PutMessageResult [putMessageStatus=PUT_OK,
#: appendMessageResult=AppendMessageResult{..., wroteOffset=W, ...}]" — 5.0 and 5.1 write "retry msg ,"):
#: the copy the checkpoint's pop took (T, Q, O) put again as the copy at commit log offset W
REVIVE_MARKS = ("retry msg",)
_REVIVED = re.compile(r"retry msg ?, ck=PopCheckPoint \[topic=([^,\]]+), cid=([^,\]]+),.*?\], msg queueId (-?\d+), "
                      r"offset (-?\d+),.*?putMessageStatus=PUT_OK.*?wroteOffset=(\d+)")
#: the broker's POP log, as a run's log copies name it (the second broker's under ``broker-2/``)
POP_LOG = "pop.log"


def parse_revived(line: str) -> tuple[str, int, str] | None:
    """(group, commit log offset of the copy put, what was revived) of a ``pop.log`` line recording a
    revive that stored its copy (:data:`REVIVE_MARKS`), None for any other line."""
    m = _REVIVED.search(line)
    if m is None:
        return None
    topic, group, queue, offset, wrote = m.groups()
    return group, int(wrote), f"{topic} queue {queue} offset {offset}"


def popped_unseen(faults: Iterable[Mapping], group: str, deliveries: Iterable[Mapping]) -> str | None:
    """Why a POP group's attempt whose previous one was never delivered may come, from the broker's
    own record: PopReviveService revived a copy of ``group`` as the very copy delivered now (a
    :data:`~reference.contract.POP_REVIVED` fault whose ``commit_log_offset`` is one of
    ``deliveries``'). A revive comes only from a pop's checkpoint, so the previous attempt's copy was
    popped, and its pop's answer never reached the listener (lost with its channel, or past its
    invisible time on arrival: the client drops it, ``ConsumeMessagePopConcurrentlyService``); the
    broker revived it with its count raised, as it must. None when the broker recorded no such revive."""
    offsets = {d.get("commit_log_offset") for d in deliveries} - {None}
    for f in faults:
        if f.get("action") == POP_REVIVED and f.get("group") == group and f.get("commit_log_offset") in offsets:
            return (f"the broker popped the previous attempt and its answer never reached the listener: PopReviveService "
                    f"revived it with its count raised as this copy ({f.get('cause') or 'pop.log'})")
    return None
