"""Consumer retry on the simulated broker (``reference.retry``): a message sent back goes to
``%RETRY%group`` at its retry level, or to the DLQ, as SendMessageProcessor rules it; and the DLQ
read back."""

from __future__ import annotations

from dataclasses import replace

from hourglass.adapters.simulated.defects import Defect
from hourglass.adapters.simulated.store import StoredMessage
from hourglass.reference.retry import dlq_topic, goes_to_dlq, goes_to_dlq_on_resend, requested_retry_level, retry_topic

#: SubscriptionGroupConfig.retryQueueNums.
RETRY_QUEUES = 1


class ConsumerRetry:
    """The send-back and DLQ side of :class:`~adapters.simulated.broker.SimBroker` (its store,
    profile, defects and ``put``)."""

    def send_back(self, msg: StoredMessage, group: str, max_reconsume_times: int, delay_level: int = 0,
                  resend: bool = False) -> StoredMessage:
        """SendMessageProcessor.asyncConsumerSendMsgBack (4.9.x): retry k in %RETRY%group at the
        level the consumer asked for (``delay_level`` > 0) or 3 + (k - 1), or the DLQ when the failed
        attempt reached maxReconsumeTimes (or the consumer asked for a level below 0).
        ``resend``: the client's own producer re-sent it (handleRetryAndDLQ: DLQ when k >= max)."""
        failed = msg.reconsume_times
        if Defect.CHOSEN_LEVEL_IGNORED in self.defects:
            delay_level = 0
        if Defect.GROUP_RETRY_MAX_TIMES_WINS in self.defects and group in self.group_retry_max_times:
            max_reconsume_times = self.group_retry_max_times[group]
        if resend:
            to_dlq = goes_to_dlq_on_resend(failed + 1, max_reconsume_times)
        else:
            to_dlq = goes_to_dlq(failed, max_reconsume_times, delay_level)
        if to_dlq and Defect.SKIPPED_DLQ in self.defects:
            to_dlq, delay_level = False, self.profile.max_level
        proto = replace(msg, reconsume_times=failed + 1, deliver_ms=0, real_topic="")
        if to_dlq:
            self.store.create_topic(dlq_topic(group), 1)
            return self.put(replace(proto, delay_level=0), dlq_topic(group), 0)
        if delay_level <= 0:
            delay_level = requested_retry_level(failed + 1)
            if Defect.WRONG_RETRY_LEVEL in self.defects:
                delay_level = failed + 1
        self.store.create_topic(retry_topic(group), RETRY_QUEUES)
        return self.put(replace(proto, delay_level=delay_level), retry_topic(group), 0)

    def read_dlq(self, group: str) -> list[StoredMessage]:
        return list(self.store.queues.get((dlq_topic(group), 0), ()))
