"""Orderly consumption: what a correct client and broker do with a message an orderly consumer fails.

Read at rocketmq-all-4.9.7 and rocketmq-all-5.3.3 (``client/.../impl/consumer/
ConsumeMessageOrderlyService.java``, ``ProcessQueue.java``; ``broker/.../processor/
SendMessageProcessor.java``):

- ``ConsumeMessageOrderlyService.ConsumeRequest.run`` consumes one queue at a time (the queue's lock
  object), only while the client holds the broker's lock on it (clustering:
  ``processQueue.isLocked() && !isLockExpired()``), taking the lowest offsets first
  (``ProcessQueue.takeMessages``): nothing behind a message in its queue is consumed before that
  message's answer ends it (:func:`queue_of`; the checker's QUEUE_ORDER, ``reports.queue_order``).
- ``processConsumeResult``, ``SUSPEND_CURRENT_QUEUE_A_MOMENT`` (an exception or a null answer too):
  ``checkReconsumeTimes`` raises the message's reconsume count in the client
  (``msg.setReconsumeTimes(r + 1)``), puts it back (``makeMessageToConsumeAgain``) and consumes it
  again after the suspend time (``submitConsumeRequestLater``, clamped to [10, 30000] ms:
  :func:`effective_suspend_ms`). The retry is the *same stored copy*, re-consumed locally: attempt
  k of the model, due ``suspend`` after the answer of attempt k-1 (``reference.expected``).
- Once the count reached ``maxReconsumeTimes`` (``r >= max``), the failing attempt is sent back
  through the client's producer to ``%RETRY%group`` (``sendMessageBack``), which the broker routes
  to the DLQ (``SendMessageProcessor.handleRetryAndDLQ``) and the queue moves on: M + 1 attempts,
  as for a concurrent consumer (``reference.plans.plan_outcome``). How it reaches the DLQ differs:
  4.9.x sends ``RECONSUME_TIME = r`` and routes on ``r >= max``, but its ``setProperties`` puts the
  client's ``DELAY = 3 + r`` back after ``setDelayTimeLevel(0)``, so the DLQ copy waits that level
  first (:func:`dlq_wait_ms`); 5.0.0 routes on ``r > max`` with the same ``r`` and sends it to
  ``%RETRY%`` instead, for ever (apache/rocketmq#6163); from 5.1.1 the client sends ``r + 1``, a
  group holding an unexpired queue lock goes to the DLQ at once, and ``DELAY = -1`` stores it now.
- ``maxReconsumeTimes = -1`` means ``Integer.MAX_VALUE`` here (``getMaxReconsumeTimes``): the
  harness always passes the scenario's figure.
"""

from __future__ import annotations

from hourglass.reference.levels import LevelTable

#: DefaultMQPushConsumer.suspendCurrentQueueTimeMillis.
DEFAULT_SUSPEND_MS = 1000
#: ConsumeMessageOrderlyService.submitConsumeRequestLater clamps the suspend time to this range.
SUSPEND_RANGE_MS = (10, 30_000)
#: ConsumeMessageOrderlyService.tryLockLaterAndReconsume: a queue whose lock the broker refused (or
#: could not answer: it was down) is tried again this long after.
LOCK_RETRY_MS = 3000
#: ConsumeMessageOrderlyService / ProcessQueue.REBALANCE_LOCK_INTERVAL: the client re-locks its
#: queues every 20 s (lockMQPeriodically); a broker that lost its locks (restarted) grants them
#: again at the latest then.
LOCK_INTERVAL_MS = 20_000
#: RebalanceLockManager.REBALANCE_LOCK_MAX_LIVE_TIME (broker, 4.9.x and 5.x): a queue lock lives 60 s
#: after its holder last refreshed it, and the broker frees none when a client's connection closes;
#: only a graceful shutdown unlocks (unlockAllMQ). A consumer that dies holds its queues that long.
DEAD_HOLDER_LOCK_MS = 60_000


def effective_suspend_ms(suspend_ms: int | None) -> int:
    """ConsumeMessageOrderlyService.submitConsumeRequestLater: -1 (or unset) is the consumer's
    default, and the time is clamped to :data:`SUSPEND_RANGE_MS`."""
    if suspend_ms is None or suspend_ms == -1:
        suspend_ms = DEFAULT_SUSPEND_MS
    lo, hi = SUSPEND_RANGE_MS
    return min(max(suspend_ms, lo), hi)


def dlq_wait_ms(max_reconsume_times: int, table: LevelTable) -> int:
    """How long after its last LATER an orderly message may take to appear in ``%DLQ%group``: on
    4.9.x SendMessageProcessor.asyncSendMessage installs the client's properties after
    handleRetryAndDLQ, so the DLQ copy keeps ``DELAY = 3 + r`` (r = maxReconsumeTimes) and waits
    that level (clamped) in SCHEDULE_TOPIC_XXXX; 5.1.1+ stores it at once. The run waits this long
    before it reads the DLQ (the later of the two: the model does not know the version)."""
    return table.delay_ms(min(3 + max_reconsume_times, table.max_level))


#: RebalancePushImpl.UNLOCK_DELAY_TIME_MILLS: a queue that leaves a member in a rebalance while its
#: process queue still holds messages is unlocked this long after (4.9.x unlockDelay; 5.x
#: tryRemoveOrderMessageQueue unlocks at once unless a consume runs, and forces it after this long).
UNLOCK_DELAY_MS = 20_000
#: RebalanceService.waitInterval: a member that could not lock a queue it was allotted
#: (updateProcessQueueTableInRebalance: ``isOrder && !lock(mq)``) tries again at its next rebalance.
REBALANCE_INTERVAL_MS = 20_000


def handed_over_ms(change_ms: int) -> int:
    """When the queues an orderly group's membership change at ``change_ms`` moved (a member joined
    or left) are consumed again at the latest: the old owner unlocks them (:data:`UNLOCK_DELAY_MS`)
    and the new one locks them at a rebalance (:data:`REBALANCE_INTERVAL_MS` apart: the one just
    after the unlock is due may come before it, the next one does not). A suspended
    message whose queue moved is the stored copy again at its new owner (count 0: the chain starts
    over, a redelivery NO_DUPLICATE allows after the change). The run waits this long; timing
    windows are anchored at the LATER answered after it."""
    return change_ms + UNLOCK_DELAY_MS + 2 * REBALANCE_INTERVAL_MS


def locks_freed_ms(death_ms: int) -> int:
    """When the queues of an orderly consumer that died at ``death_ms`` are consumed again at the
    latest: its locks expire (:data:`DEAD_HOLDER_LOCK_MS` after their last refresh, at most its
    death) and a member takes them at its next lockAll (:data:`LOCK_INTERVAL_MS`) or retry. The run
    waits this long; timing windows are anchored at the LATER answered after it anyway."""
    return death_ms + DEAD_HOLDER_LOCK_MS + LOCK_INTERVAL_MS


def send_back_refused(later_ms: int | None, outages) -> bool:
    """ConsumeMessageOrderlyService.checkReconsumeTimes: the send-back of a message past
    maxReconsumeTimes (answered LATER at ``later_ms``) fails while the broker is down, frozen or
    cut off (one of ``outages``, ``reference.windows.Outage``); the client then suspends the queue
    and consumes the message again with its count raised instead of sending it to the DLQ."""
    if later_ms is None:
        return False
    return any(o.down_ms <= later_ms and (o.up_ms is None or later_ms <= o.up_ms) for o in outages)


def queue_of(delivery: dict) -> tuple | None:
    """The queue whose order an orderly consumer keeps for this delivery: (broker, topic, queue id)
    of a copy in the application topic (its first attempt's stored copy), or ``None`` for a copy in
    ``%RETRY%`` or ``%DLQ%`` (those queues have their own order, not the message's)."""
    qt = delivery.get("queue_topic")
    if qt is not None and qt != delivery.get("topic"):
        return None
    return (delivery.get("broker"), delivery.get("topic"), delivery.get("queue_id"))
