"""Network faults between the clients and the broker: what a correct broker does with delayed
messages and retries while it is cut off or slow (the ``partition``/``partition_end`` and
``latency``/``latency_end`` fault events of ``target: broker``).

The rule, method by method:

- ScheduleMessageService.DeliverDelayedMessageTimerTask runs inside the broker and writes to its
  own store: a partition does not stop it, so every re-put keeps its time. ON_TIME and NOT_EARLY
  judge ``store_ms``, so neither window moves; only the deliveries (the consumers' pulls) wait for
  the heal. Nothing may be lost and no offset is restored: no scheduler duplicate is allowed.
- DefaultMQProducerImpl.sendDefaultImpl / NettyRemotingAbstract.invokeSyncImpl: a send during a
  partition times out (``UNKNOWN``), but its request is in the client's socket and TCP retransmits
  it — also after NettyRemotingClient.invokeSync closed the channel on the timeout
  (clientCloseSocketIfTimeout; the kernel still sends what was queued before the FIN) — so the
  first retransmission after the heal may still be stored then (seen on 4.9.7: 6 s after an 8 s
  partition). The next send connects anew and fails (``FAILED``, RemotingConnectException: its SYN
  is dropped, nothing was sent). Retransmissions back off exponentially from the initial RTO, so the
  first one after a partition of length D comes at most D + :data:`INITIAL_RTO_MS` after the heal.
  For ``UNKNOWN`` sends only, a partition is an outage up to that bound
  (:func:`unknown_send_outages`); it widens no other window, and an ``UNKNOWN`` send's return
  bounds no other message's store (LEVEL_ORDER, ``reports.level_order``).
- DefaultMQPushConsumerImpl.sendMessageBack: a send-back during a partition times out
  (:data:`SEND_BACK_TIMEOUT_MS`), then the client's re-send through its own producer does
  (:data:`CLIENT_SEND_TIMEOUT_MS`), then ConsumeMessageConcurrentlyService re-consumes the same
  stored copy locally 5 s later (``reference.plans.later_not_stored``): the local window of a
  ``LATER`` answered in a partition is later by :data:`SEND_BACK_FAILS_AFTER_MS`
  (:func:`local_retry_lag_ms`).
- PullMessageService: the consumers' pulls fail until the heal (then retried after
  ``pullTimeDelayMillsWhenException``, 3 s), and a long poll answered during the partition reaches
  the client by TCP retransmission after it: deliveries come late, their ``store_ms`` does not.
- A partition longer than the broker's channel expiry (ClientHousekeepingService: 120 s without a
  heartbeat) drops the clients from their groups, and a name server drops the broker after 120 s
  (RouteInfoManager.scanNotActiveBroker): group membership and routes change, which this rule does
  not state. Scenarios keep partitions below :data:`MAX_PARTITION_MS`.
- Packet loss (``loss``/``loss_end``, ``loss_percent`` of every packet in and out of the broker
  dropped at random): TCP retransmits what is dropped, backing off from the initial RTO, so any
  request or answer may come seconds late or time out; the schedule service does not see it. Its
  worst case is every packet dropped: a loss period is judged as a partition of the same period
  (:func:`partitions`), which bounds what a correct broker may do and asks nothing more.
- Latency (netem delay of ``delay_ms`` on every packet the broker sends): store times are the
  broker's own, so windows do not move; a retry is stored when its send-back arrives, one round trip
  (2 × ``delay_ms``) after the ``LATER`` (:func:`send_back_lag_ms`); an ``UNKNOWN`` send in a latency
  period may be stored up to its end + ``delay_ms`` + the initial RTO.

- A send-back in flight during a partition or a loss period may succeed late: TCP retransmits the
  request after the heal and the broker stores the retry then, up to the send-back's timeout
  (:data:`SEND_BACK_TIMEOUT_MS`) after the ``LATER`` (:func:`send_back_lag_ms`).
- A send-back that timed out in a partition (or a loss period) may still be stored when TCP
  retransmits it after the heal, beside what the client did on the timeout: its re-send through its
  own producer (a second stored copy of the retry) or the local re-consume. Each ``LATER`` answered
  in a cut, or up to :data:`SEND_BACK_FAILS_AFTER_MS` before it, may store one more copy of its
  retry (:func:`send_back_may_repeat`).

- A send-back the client itself reports failed, whatever the cause (a broker that did not answer
  within :data:`SEND_BACK_TIMEOUT_MS` because the host starved it, a write the client's own I/O
  thread did not finish in time): DefaultMQPushConsumerImpl.sendMessageBack logs it at ERROR
  (4.9.x "sendMessageBack Exception, <group>"; 5.x "Failed to send message back,
  consumerGroup=<group>, …, message=MessageExt […KEYS=<key>…]") and re-sends the retry through its
  own producer (delay level 3 + reconsumeTimes, the broker's own choice for level 0). The request it
  gave up on may still reach the broker and be stored: one more copy of the retry (seen on 4.9.7
  on a starved host: "send request … failed" after 5 s, two copies re-put 100 ms apart). The retry
  is stored when the re-send is, up to :data:`CLIENT_SEND_TIMEOUT_MS` after the failure; if the
  re-send fails too, the local re-consume comes 5 s after that. The harness reads these lines from
  the run's copy of the client's log (:func:`parse_send_back_failure`) and records each as a
  ``fault`` :data:`SEND_BACK_FAILED` of target ``consumer`` (``group``; ``key`` where the client
  logged it); a ``LATER`` of that group (and key) answered up to :data:`SEND_BACK_FAILS_AFTER_MS`
  before it (the log's own resolution earlier) is one whose send-back failed then
  (:func:`send_back_failures`): it may repeat, and its retry and local re-consume may come that
  much later than the ``LATER`` plus :data:`CLIENT_SEND_TIMEOUT_MS`.
"""

from __future__ import annotations

import re
from typing import Callable, Iterable, Mapping

from hourglass.reference.contract import SEND_BACK_FAILED, SENT_BACK
from hourglass.reference.faults.network import (  # noqa: F401 (the family owns the names)
    LATENCY, LATENCY_END, LOSS, LOSS_END, MAX_DELAY_MS, MAX_LOSS_PERCENT, MAX_PARTITION_MS, NET_ACTIONS, NET_END,
    NET_START, PARTITION, PARTITION_END)
from hourglass.reference.windows import Outage, periods

#: TCP_TIMEOUT_INIT (Linux): the initial retransmission timeout, an upper bound of the first RTO
INITIAL_RTO_MS = 1_000
#: DefaultMQPushConsumerImpl.sendMessageBack: consumerSendMessageBack's timeout
SEND_BACK_TIMEOUT_MS = 5_000
#: DefaultMQProducer.sendMsgTimeout of the client's internal producer (the re-send)
CLIENT_SEND_TIMEOUT_MS = 3_000
#: how much later than usual a send-back that meets a partition gives up
SEND_BACK_FAILS_AFTER_MS = SEND_BACK_TIMEOUT_MS + CLIENT_SEND_TIMEOUT_MS
#: DefaultMQPushConsumerImpl.sendMessageBack's ERROR line, 4.9.x (the group only) and 5.x (the
#: group, and the message with its keys), and ConsumeMessageOrderlyService.sendMessageBack's (an
#: orderly consumer's send to the DLQ, 4.9.x and 5.x: "sendMessageBack exception, group: <group> msg:
#: MessageExt […KEYS=<key>…]"); group 1: the group, group 2: the message
SEND_BACK_FAILURE_MARKS = ("sendMessageBack Exception, ", "Failed to send message back, consumerGroup=",
                           "sendMessageBack exception, group: ")
_SEND_BACK_FAILURE = re.compile("(?:" + "|".join(map(re.escape, SEND_BACK_FAILURE_MARKS)) + r")([^\s,]+)(.*)")
#: DefaultMQProducerImpl.sendDefaultImpl's WARN line when a send failed and is sent again at once
#: (``retryTimesWhenSendFailed``), 4.9.x and 5.x: "sendKernelImpl exception, resend at once,
#: InvokeID: …, RT: …ms, Broker: MessageQueue [topic=%RETRY%<group>, …]". On a group's retry topic
#: it is a send-back's: the client's own producer re-sending it (ConsumeMessageOrderlyService.
#: sendMessageBack, an orderly consumer's send to the DLQ; the fallback re-send of
#: DefaultMQPushConsumerImpl.sendMessageBack), and the request it gave up on may have been stored:
#: seen beside the load generator, an orderly group's send to the DLQ timed out after 3002 ms on a
#: starved broker, was sent again at once, and the message had two DLQ entries. No key: it is
#: matched to the group's LATERs by time (:func:`send_back_failures`)
RESEND_MARK = "sendKernelImpl exception, resend at once"
_RESENT = re.compile(re.escape(RESEND_MARK) + r".*\[topic=%RETRY%([^\s,\]]+)")
_LOGGED_KEYS = re.compile(r"KEYS=([^,}\s]+)")
#: how far before its time a log line may have been written (RocketMQ's own patterns print seconds)
LOG_RESOLUTION_MS = 1_000


def partitions(faults: Iterable[Mapping], target: str = "broker") -> list[tuple[int, int | None]]:
    """The periods in which ``target`` was cut off from every client and the name server, or may
    have been (a loss period: its worst case), in time order."""
    faults = list(faults)
    return sorted(((a, b) for start, end in ((PARTITION, PARTITION_END), (LOSS, LOSS_END))
                   for a, b, _ in periods(faults, start, end, target)), key=lambda p: p[0])


def send_back_meets(periods: Iterable[tuple[int, int | None]]):
    """A function of a ``LATER``'s ``ts_ms``: whether its send-back (and the client's re-send after
    it, :data:`SEND_BACK_FAILS_AFTER_MS` in all) may have met one of ``periods`` (start, end or None):
    answered in one, or up to that long before it."""
    periods = list(periods)

    def meets(ts_ms: int) -> bool:
        return any(a - SEND_BACK_FAILS_AFTER_MS <= ts_ms and (b is None or ts_ms <= b) for a, b in periods)

    return meets


def parse_send_back_failure(line: str) -> tuple[str, str | None] | None:
    """(group, key or None) of a client log line that reports a failed send-back
    (DefaultMQPushConsumerImpl.sendMessageBack, 4.9.x and 5.x), or a send-back re-sent at once by
    the client's own producer (:data:`RESEND_MARK`), None for any other line."""
    m = _SEND_BACK_FAILURE.search(line)
    if m is None:
        resent = _RESENT.search(line)
        return (resent.group(1), None) if resent else None
    keys = _LOGGED_KEYS.search(m.group(2))
    key = keys.group(1) if keys else None
    return m.group(1), key


def send_back_failures(faults: Iterable[Mapping]) -> Callable[..., int | None]:
    """A function of a ``LATER``'s ``ts_ms``, group and key (and its attempt, where known): when the
    client logged its send-back failed (the latest such :data:`SEND_BACK_FAILED` event of its group,
    of its key where the line named one, at most :data:`SEND_BACK_FAILS_AFTER_MS` after the request
    left the client), or None. The request leaves when the consumer recorded it (``SENT_BACK``: of
    that key, group and attempt from the ``LATER`` on; without the attempt, the first within that
    much of the ``LATER``), else at the ``LATER``: a batch's answers are sent back once the whole
    batch was answered (seen under proof C: batch-ack-index's send-backs left 6.7 to 9.3 s after
    their LATERs and failed 3 s later)."""
    failed: dict[str, list[tuple[int, str | None]]] = {}
    sent: dict[tuple[str, str], list[tuple[int, int | None]]] = {}
    for f in faults:
        if f.get("action") == SEND_BACK_FAILED and f.get("group"):
            failed.setdefault(f["group"], []).append((int(f["ts_ms"]), f.get("key")))
        elif f.get("action") == SENT_BACK and f.get("group") and f.get("key"):
            sent.setdefault((f["group"], f["key"]), []).append((int(f["ts_ms"]), f.get("reconsume_times")))
    if not failed:
        return lambda ts_ms, group, key, attempt=None: None

    def at(ts_ms: int, group: str | None, key: str | None, attempt: int | None = None) -> int | None:
        mine = sent.get((group or "", key or ""), ())
        left = min((t for t, k in mine if t >= ts_ms and (k == attempt if attempt is not None
                                                            else t <= ts_ms + SEND_BACK_FAILS_AFTER_MS)), default=ts_ms)
        return max((t for t, k in failed.get(group or "", ())
                    if ts_ms - LOG_RESOLUTION_MS <= t <= left + SEND_BACK_FAILS_AFTER_MS and (k is None or k == key)),
                   default=None)

    return at


def send_back_may_repeat(faults: Iterable[Mapping], target: str = "broker"):
    """A function of a ``LATER``'s ``ts_ms`` (and group and key): whether its send-back may have
    failed and still be stored beside the client's own re-send (one more stored copy of its retry):
    it :func:`send_back_meets` a partition or loss period (TCP retransmits it after the heal), or the
    client logged it failed (:func:`send_back_failures`)."""
    faults = list(faults)
    meets, failed = send_back_meets(partitions(faults, target)), send_back_failures(faults)

    def repeats(ts_ms: int, group: str | None = None, key: str | None = None) -> bool:
        return meets(ts_ms) or failed(ts_ms, group, key) is not None

    return repeats


def _failed_lag(failed, ts_ms: int, group: str | None, key: str | None) -> int:
    """How much later than its ``LATER`` a logged send-back failure sends the retry (or re-consumes)."""
    t = failed(ts_ms, group, key)
    return 0 if t is None else max(0, t - ts_ms) + CLIENT_SEND_TIMEOUT_MS


def unknown_send_outages(faults: Iterable[Mapping], target: str = "broker") -> list[Outage]:
    """NettyRemotingAbstract.invokeSyncImpl + TCP retransmission: for ``UNKNOWN`` sends only, each
    partition is an outage until the retransmission after its heal (heal + its length +
    :data:`INITIAL_RTO_MS`), each latency period until its end + ``delay_ms`` + the initial RTO."""
    faults = list(faults)
    out = [Outage(PARTITION, a, None if b is None else b + (b - a) + INITIAL_RTO_MS)
           for a, b in partitions(faults, target)]
    out += [Outage(LATENCY, a, None if b is None else b + int(f.get("delay_ms") or 0) + INITIAL_RTO_MS)
            for a, b, f in periods(faults, LATENCY, LATENCY_END, target)]
    return sorted(out, key=lambda o: o.down_ms)


def local_retry_lag_ms(faults: Iterable[Mapping], target: str = "broker"):
    """DefaultMQPushConsumerImpl.sendMessageBack: a function of a ``LATER``'s ``ts_ms`` giving how
    much later than usual its local re-consume may come (:data:`SEND_BACK_FAILS_AFTER_MS` when the
    send-back met a partition: answered in it, or up to that long before it, :func:`send_back_meets`;
    until the client's re-send gave up when the client logged the send-back failed:
    :func:`send_back_failures`)."""
    faults = list(faults)
    meets, failed = send_back_meets(partitions(faults, target)), send_back_failures(faults)

    def lag(ts_ms: int, group: str | None = None, key: str | None = None) -> int:
        return max(SEND_BACK_FAILS_AFTER_MS if meets(ts_ms) else 0, _failed_lag(failed, ts_ms, group, key))

    return lag


def send_back_lag_ms(faults: Iterable[Mapping], target: str = "broker"):
    """SendMessageProcessor.asyncConsumerSendMsgBack stores the retry when the send-back arrives: a
    function of a ``LATER``'s ``ts_ms`` giving how much later than its ``ts_ms`` that may be (one
    round trip, 2 × ``delay_ms``, in a latency period; up to its timeout, :data:`SEND_BACK_TIMEOUT_MS`,
    when the request was in flight during a partition or a loss period — TCP retransmits it after
    the heal and the send-back succeeds late, nothing logged: seen on 4.9.7, a retry stored ~3.3 s
    after a LATER answered 2.3 s before the end of a 30 % loss; when the client logged the
    send-back failed, until its re-send through its own producer may have been stored:
    :func:`send_back_failures`)."""
    faults = list(faults)
    slow = [(a, b, int(f.get("delay_ms") or 0)) for a, b, f in periods(faults, LATENCY, LATENCY_END, target)]
    cuts = partitions(faults, target)
    failed = send_back_failures(faults)

    def lag(ts_ms: int, group: str | None = None, key: str | None = None) -> int:
        in_cut = any(a - SEND_BACK_TIMEOUT_MS <= ts_ms and (b is None or ts_ms <= b) for a, b in cuts)
        return max(max((2 * d for a, b, d in slow if a <= ts_ms and (b is None or ts_ms <= b)), default=0),
                   SEND_BACK_TIMEOUT_MS if in_cut else 0, _failed_lag(failed, ts_ms, group, key))

    return lag
