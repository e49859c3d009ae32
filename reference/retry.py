"""Consumer retry: the retry topic, the level of each retry, the DLQ, and the send-back failure path.

A consumer answering ``RECONSUME_LATER`` to attempt k-1 (reconsume_times = k-1) makes the client
send the message back; the broker stores retry k (reconsume_times = k) in ``%RETRY%group`` with
delay level ``3 + (k - 1)`` (clamped to the table), or in ``%DLQ%group`` when k-1 has reached
``maxReconsumeTimes``.
"""

from __future__ import annotations

from dataclasses import dataclass

from hourglass.reference.cluster import REGISTERED_WITHIN_MS
from hourglass.reference.contract import dlq_topic, retry_topic

__all__ = ["retry_topic", "dlq_topic", "requested_retry_level", "retry_level", "asked_retry_level", "clamped_level", "goes_to_dlq",
           "goes_to_dlq_on_resend", "SendBackRoute", "send_back_route", "DLQ_QUEUE_COUNT", "DLQ_ROUTABLE_WITHIN_MS", "DLQ_READ_MS",
           "dlq_bound"]

#: AbstractSendMessageProcessor.DLQ_NUMS_PER_GROUP (4.9.x): the DLQ topic has one queue.
DLQ_QUEUE_COUNT = 1
#: How long after the send-back that routes a message to the DLQ the name server may still not know
#: ``%DLQ%group`` (a reader finds no route): TopicConfigManager.createTopicInSendMessageBackMethod
#: registers a new topic at once (registerIncrementBrokerData / registerSingleTopicAll), and if that
#: registration fails (a starved broker, a name server that did not answer) the broker's periodic
#: registration brings it (:data:`reference.cluster.REGISTERED_WITHIN_MS`).
DLQ_ROUTABLE_WITHIN_MS = REGISTERED_WITHIN_MS
#: run.json: when the harness began reading the run's DLQ (its end). A DLQ entry is owed in that
#: read only by a final attempt answered before it: a shared system's consumer goes on after the
#: run's end (a drain that gave up on a late attempt), and an answer it gave then sends its copy to
#: a DLQ already read — not seen, so pending, never lost.
DLQ_READ_MS = "dlq_read_ms"


def requested_retry_level(attempt: int) -> int:
    """SendMessageProcessor.asyncConsumerSendMsgBack (4.9.x): delayLevel 0 from the client means
    ``3 + reconsumeTimes`` of the failed attempt, so retry ``attempt`` asks for ``3 + attempt - 1``."""
    if attempt < 1:
        raise ValueError(f"retry attempt must be >= 1, found {attempt}")
    return 3 + attempt - 1


def retry_level(attempt: int, max_level: int) -> int:
    """CommitLog.asyncPutMessage (4.9.x): the requested retry level clamped to the table's maximum."""
    return min(requested_retry_level(attempt), max_level)


def asked_retry_level(attempt: int, asked: int) -> int:
    """SendMessageProcessor.asyncConsumerSendMsgBack (4.9.x), AbstractSendMessageProcessor.consumerSendMsgBack
    (5.x): the delay level the send-back header carries (ConsumeConcurrentlyContext.delayLevelWhenNextConsume)
    is used as given when above 0, and 0 is the broker's choice, ``3 + reconsumeTimes``."""
    return asked if asked > 0 else requested_retry_level(attempt)


def clamped_level(requested: int, max_level: int) -> int:
    """CommitLog.asyncPutMessage (4.9.x), HookUtils.transformDelayLevelMessage (5.x): a delay level
    above the table's maximum is stored at the maximum."""
    return min(requested, max_level)


def goes_to_dlq(failed_reconsume_times: int, max_reconsume_times: int, delay_level: int = 0) -> bool:
    """SendMessageProcessor.asyncConsumerSendMsgBack (4.9.x): reconsumeTimes >= maxReconsumeTimes,
    or a negative delayLevel from the client (send straight to the DLQ), routes to ``%DLQ%group``."""
    return failed_reconsume_times >= max_reconsume_times or delay_level < 0


def goes_to_dlq_on_resend(new_reconsume_times: int, max_reconsume_times: int) -> bool:
    """SendMessageProcessor.handleRetryAndDLQ (4.9.x): a retry the client re-sends through its own
    producer carries reconsume_times k = failed + 1 in the header and goes to the DLQ when
    k >= maxReconsumeTimes: one attempt earlier than the broker's send-back path."""
    return new_reconsume_times >= max_reconsume_times


@dataclass(frozen=True)
class SendBackRoute:
    """How a LATER answer is carried out: ``broker`` (consumerSendMsgBack stored the retry),
    ``producer`` (send-back failed, the client re-sent the retry through its own producer),
    ``local`` (both failed: the client re-consumes the same stored copy after 5 s with
    reconsume_times + 1 and the same queue offset), and the topic the retry is stored in."""

    via: str
    topic: str | None  # %RETRY%group or %DLQ%group; None for a local re-consume
    reconsume_times: int  # of the new attempt
    level: int  # the clamped delay level of the new attempt (0 for DLQ and local)
    delay_ms: int  # the wait before the new attempt is due


def send_back_route(group: str, failed_reconsume_times: int, max_reconsume_times: int,
                    table_delays_ms: tuple[int, ...], send_back_ok: bool, producer_ok: bool,
                    local_retry_delay_ms: int = 5000, delay_level: int = 0) -> SendBackRoute:
    """DefaultMQPushConsumerImpl.sendMessageBack + ConsumeMessageConcurrentlyService.processConsumeResult
    (4.9.x): broker send-back, else a re-send by the client's producer to %RETRY%group with level
    3 + reconsumeTimes (the broker applies the DLQ rule to it), else a local re-consume in 5 s."""
    k = failed_reconsume_times + 1
    if not send_back_ok and not producer_ok:
        return SendBackRoute("local", None, k, 0, local_retry_delay_ms)
    via = "broker" if send_back_ok else "producer"
    if (goes_to_dlq(failed_reconsume_times, max_reconsume_times, delay_level) if send_back_ok
            else goes_to_dlq_on_resend(k, max_reconsume_times)):
        return SendBackRoute(via, dlq_topic(group), k, 0, 0)
    # the client's re-send (sendMessageBack's fallback) asks for 3 + reconsumeTimes whatever the context asked
    requested = asked_retry_level(k, delay_level if send_back_ok else 0)
    level = clamped_level(requested, len(table_delays_ms))
    return SendBackRoute(via, retry_topic(group), k, level, table_delays_ms[level - 1] if level else 0)


def dlq_bound(expected, deliveries) -> dict[str, tuple[set[str], int]]:
    """Per group, the keys a DLQ entry is owed for so far and when the last of them was sent back:
    each message whose plan ends in the DLQ (``expected``: ``reference.expected`` rows, final with
    ``final_state`` DLQ) whose final attempt was answered ``LATER`` (``deliveries``: ``deliver``
    events): SendMessageProcessor.asyncConsumerSendMsgBack routes it to ``%DLQ%group`` then."""
    final = {(a.key, a.group, a.attempt) for a in expected if a.final and a.final_state == "DLQ"}
    out: dict[str, tuple[set[str], int]] = {}
    for d in deliveries:
        if d.get("type") == "deliver" and d.get("outcome") == "LATER" \
                and (d["key"], d["group"], d["reconsume_times"]) in final:
            keys, last = out.get(d["group"], (set(), 0))
            keys.add(d["key"])
            out[d["group"]] = (keys, max(last, int(d["ts_ms"])))
    return out

