"""Consume timeout: what a correct client does with a message its concurrent listener holds too long.

Read at rocketmq-all-4.9.7 and rocketmq-all-5.3.3 (``client/.../impl/consumer/
ConsumeMessageConcurrentlyService.java``, ``ProcessQueue.java``; ``DefaultMQPushConsumerImpl.java``):

- ``ConsumeMessageConcurrentlyService.ConsumeRequest.run`` stamps each message with its consume start
  (``MessageAccessor.setConsumeStartTimeStamp``) just before it calls the listener: the ``ts_ms`` of
  the harness's ``deliver`` event, written before the listener answers.
- ``ConsumeMessageConcurrentlyService.start`` runs ``cleanExpireMsg`` at a fixed rate, first
  ``consumeTimeout`` minutes after the consumer started and every ``consumeTimeout`` minutes after:
  ``ProcessQueue.cleanExpiredMsg`` looks at the oldest message of each process queue (up to 16) and,
  when its consume started more than ``consumeTimeout`` ago, calls ``sendMessageBack(msg, 3)`` and
  removes it from the queue (the consume offset may move past it). A message whose consume started
  at ``s`` is therefore sent back at the first clean-up after ``s + T``: within ``(s + T, s + 2T]``
  (:func:`sent_back_within`).
- ``sendMessageBack(msg, 3)`` asks for delay level 3 whatever the message's reconsume count (not
  3 + reconsumeTimes): the broker's ``consumerSendMsgBack`` stores the retry at level 3 with the
  count raised, or routes it to the DLQ once the count reached the maximum
  (``reference.retry``), as for a ``LATER:3`` answer (``reference.plans``: the ``SLOW`` word).
- ``cleanExpiredMsg`` returns at once for an orderly consumer (``isConsumeOrderly``): a slow orderly
  listener is never sent back (the scenario vocabulary allows ``SLOW`` in concurrent groups only).
- The listener's own answer, when it comes, finds the message gone from its process queue: an OK
  changes nothing. (A LATER would be sent back a second time on 4.9.x; 5.3.3's
  ``processConsumeResult`` skips a message no longer in its process queue. The harness's held
  listener answers OK.)
"""

from __future__ import annotations

#: DefaultMQPushConsumer.consumeTimeout (minutes).
DEFAULT_CONSUME_TIMEOUT_MIN = 15
#: ScheduledExecutorService.scheduleAtFixedRate refuses a period of 0: a minute is the least.
MIN_CONSUME_TIMEOUT_MIN = 1
#: The harness's bound (a day): a longer one would only hold a run.
MAX_CONSUME_TIMEOUT_MIN = 24 * 60
#: ProcessQueue.cleanExpiredMsg: pushConsumer.sendMessageBack(msg, 3).
TIMEOUT_LEVEL = 3
#: How long past the latest clean-up the harness's held listener keeps holding (the send-back's
#: round trip and the retry's delivery), at most: then it answers OK anyway.
HOLD_MARGIN_MS = 30_000


def effective_timeout_min(minutes: int | None) -> int:
    """A group's consumeTimeout in minutes: its own, or DefaultMQPushConsumer's default."""
    return DEFAULT_CONSUME_TIMEOUT_MIN if minutes is None else minutes


def timeout_ms(minutes: int) -> int:
    return minutes * 60_000


def sent_back_within(consume_start_ms: int, minutes: int) -> tuple[int, int]:
    """(earliest, latest) time the clean-up sends back a message whose consume started at
    ``consume_start_ms`` (ConsumeMessageConcurrentlyService.cleanExpireMsg: every T, from T after the
    consumer's start; ProcessQueue.cleanExpiredMsg: more than T after its consume start)."""
    t = timeout_ms(minutes)
    return consume_start_ms + t + 1, consume_start_ms + 2 * t


def hold_ms(minutes: int) -> int:
    """How long the harness's listener holds a ``SLOW`` message at most: past the latest clean-up
    that sends it back, then it answers OK (it lets go as soon as the message's retry came)."""
    return 2 * timeout_ms(minutes) + HOLD_MARGIN_MS
