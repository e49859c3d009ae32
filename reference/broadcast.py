"""Broadcasting consumption: what a correct client does for each instance of a broadcasting group.

Read at rocketmq-all-4.9.7 and rocketmq-all-5.3.3 (``client/.../impl/consumer/
DefaultMQPushConsumerImpl.java``, ``ConsumeMessageConcurrentlyService.java``,
``RebalanceImpl.java``, ``consumer/store/LocalFileOffsetStore.java``):

- ``RebalanceImpl.rebalanceByTopic``, ``case BROADCASTING``: every instance takes every queue of
  its topics, so each message is owed to every instance: each is a judging unit of its own
  (``reference.modes.unit_group``).
- ``DefaultMQPushConsumerImpl.copySubscription``: no ``%RETRY%group`` subscription.
  ``ConsumeMessageConcurrentlyService.processConsumeResult``, ``case BROADCASTING``: a failed
  message is dropped ("BROADCASTING, the message consume failed, drop it") and the offset moves past
  it: no send-back, no retry, no DLQ. A LATER is the message's end for that instance
  (:data:`DROPPED`, :func:`broadcast_outcome`); an attempt after it is a violation (RETRY_SCHEDULE).
- ``DefaultMQPushConsumerImpl.start``: the offsets live in the client (``LocalFileOffsetStore``:
  ``${rocketmq.client.localOffsetStoreDir}/<clientId>/<group>/offsets.json``), persisted every
  ``persistConsumerOffsetInterval`` (5 s) and at shutdown: an instance that dies redelivers what it
  consumed since its last persist (the consumer redelivery NO_DUPLICATE allows after a death), and
  one restarted under another client id (instance name) starts again from its
  ``consumeFromWhere``.
"""

from __future__ import annotations

from hourglass.reference.plans import CRASH, LATER, PlanOutcome, answer_word

#: The final state of a message an instance of a broadcasting group answered LATER: dropped.
DROPPED = "DROPPED"


def broadcast_outcome(plan: tuple[str, ...]) -> PlanOutcome:
    """Where a plan leads in one instance of a broadcasting group: its first answer that is not a
    CRASH ends the message (``OK``: consumed; ``LATER``: dropped), on attempt 0."""
    crashes = 0
    for word in plan:
        outcome = answer_word(word)
        if outcome == CRASH:
            crashes += 1
            continue
        return PlanOutcome(0, DROPPED if outcome == LATER else "CONSUMED", (crashes,))
    return PlanOutcome(0, "CONSUMED", (crashes,))
