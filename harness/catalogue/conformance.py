"""The conformance catalogue: every rule of the model as a scenario against the broker.

All scenarios use an 18-level *compressed* table (waits of seconds, so retry levels 3..18 exist as
in the default table) unless the rule is about the table itself. None of them faults the broker,
so a batch runs them concurrently on one broker per table.
"""

from __future__ import annotations

from hourglass.harness.catalogue.limits import LIMITS
from hourglass.harness.scenario import COMPRESSED_LEVELS, ConsumerGroup, FaultStep, Message, Profile, Scenario
from hourglass.reference.levels import parse_level_table
from hourglass.reference.profile import LOCAL_RETRY_DELAY_MS
from hourglass.reference.modes import BROADCASTING, ORDERLY
from hourglass.reference.orderly import dlq_wait_ms
from hourglass.reference.contract import GRPC, POP_CONSUMPTION
from hourglass.reference.pop import (ANSWERED_LATER, GRPC_PUSH, GRPC_PUSH_INVISIBLE_MS, GRPC_SIMPLE, POP, PopGroup,
                                     next_window)
from hourglass.reference.profile import TIMER_PRECISION_MS

LATER, OK, CRASH, SLOW = "LATER", "OK", "CRASH", "SLOW"


def _one_group(name: str, topic: str, max_reconsume_times: int | None = None, instances: int = 1) -> tuple[ConsumerGroup, ...]:
    return (ConsumerGroup(f"cg-{name}", (topic,), instances=instances, max_reconsume_times=max_reconsume_times),)


def each_level() -> Scenario:
    """Every level of the table delays by exactly its delay (two messages per level)."""
    msgs = tuple(Message(f"L{lv:02d}-{i}", "Levels", at_ms=i * 300, delay_level=lv) for lv in range(1, 19) for i in range(2))
    return Scenario("each-level", msgs, _one_group("levels", "Levels"), description=each_level.__doc__)


def level_zero() -> Scenario:
    """Level 0 and negative levels are not delayed."""
    msgs = tuple(Message(f"Z{lv}-{i}", "Zero", at_ms=i * 200, delay_level=lv) for lv in (0, -1) for i in range(3))
    return Scenario("level-zero", msgs, _one_group("zero", "Zero"), description=level_zero.__doc__)


def above_max() -> Scenario:
    """A level above the table's maximum behaves as the maximum (18)."""
    msgs = tuple(Message(f"A{lv}", "AboveMax", at_ms=i * 200, delay_level=lv) for i, lv in enumerate((18, 19, 25, 100)))
    return Scenario("above-max", msgs, _one_group("above", "AboveMax"), description=above_max.__doc__)


def level_order_burst() -> Scenario:
    """A burst into one level is re-put in send order (one schedule queue per level)."""
    msgs = tuple(Message(f"B{i:03d}", "Burst", at_ms=i * 5, delay_level=3 if i % 3 else 2) for i in range(120))
    return Scenario("level-order-burst", msgs, _one_group("burst", "Burst"), description=level_order_burst.__doc__)


def retry_then_ok() -> Scenario:
    """LATER k times then OK: reconsume_times 0..k, each retry at level 3 + k - 1. The group runs two
    instances: a retry comes back through %RETRY%group's one queue to whichever instance holds it,
    not always the one that answered the attempt before (each answers it where the group's plan
    stopped)."""
    msgs = tuple(Message(f"R{k}-{i}", "Retry", at_ms=i * 150, plan=(LATER,) * k + (OK,)) for k in (1, 2, 4) for i in range(2))
    return Scenario("retry-then-ok", msgs, _one_group("retry", "Retry", instances=2), description=retry_then_ok.__doc__)


def retry_of_delayed() -> Scenario:
    """A delayed message that is answered LATER is retried at the retry level, not its own."""
    msgs = tuple(Message(f"D{lv}", "DelayedRetry", at_ms=lv * 100, delay_level=lv, plan=(LATER, OK)) for lv in (1, 5, 9))
    return Scenario("retry-of-delayed", msgs, _one_group("dretry", "DelayedRetry"), description=retry_of_delayed.__doc__)


def dlq_default() -> Scenario:
    """Failing 17 times with the default maxReconsumeTimes (16) lands in %DLQ%group once."""
    msgs = (Message("DLQ16-0", "DlqDefault", plan=(LATER,) * 17), Message("DLQ16-ok", "DlqDefault", at_ms=100, plan=(LATER,) * 16 + (OK,)))
    return Scenario("dlq-default", msgs, _one_group("dlq16", "DlqDefault"), description=dlq_default.__doc__)


def dlq_small() -> Scenario:
    """With maxReconsumeTimes = 2 the third failure goes to the DLQ; two failures do not."""
    msgs = tuple(Message(f"DLQ2-{i}", "DlqSmall", at_ms=i * 100, plan=(LATER,) * 3) for i in range(3)) + (
        Message("DLQ2-ok", "DlqSmall", at_ms=400, plan=(LATER, LATER, OK)),
    )
    return Scenario("dlq-small", msgs, _one_group("dlq2", "DlqSmall", max_reconsume_times=2), description=dlq_small.__doc__)


def consumer_redelivery() -> Scenario:
    """A consumer that dies mid-consume gets the same stored copy again (not a new attempt)."""
    msgs = (Message("C-0", "Crash", plan=(CRASH, OK)), Message("C-1", "Crash", at_ms=200, delay_level=2, plan=(CRASH, OK)))
    return Scenario("consumer-redelivery", msgs, _one_group("crash", "Crash"), description=consumer_redelivery.__doc__)


def consumer_chosen_levels() -> Scenario:
    """LATER:n (ConsumeConcurrentlyContext.setDelayLevelWhenNextConsume): the retry waits level n as
    given (9, 1, 10 then 2), 0 is the broker's choice (3 + reconsumeTimes), a level above the table's
    maximum is clamped to it, -1 sends the message to %DLQ%group at once (also after a retry)."""
    plans = {"CL-9": ("LATER:9", OK), "CL-1": ("LATER:1", OK), "CL-0": ("LATER:0", OK), "CL-max": ("LATER:25", OK),
             "CL-mix": ("LATER:10", "LATER:2", OK), "CL-dlq": ("LATER:-1",), "CL-dlq2": (LATER, "LATER:-1")}
    msgs = tuple(Message(key, "Chosen", at_ms=i * 150, plan=plan) for i, (key, plan) in enumerate(plans.items()))
    return Scenario("consumer-chosen-levels", msgs, _one_group("chosen", "Chosen"), description=consumer_chosen_levels.__doc__)


def group_retry_max_times() -> Scenario:
    """The broker's retryMaxTimes for the group (SubscriptionGroupConfig: 1 here) does not decide
    the DLQ: the client's maxReconsumeTimes (16) travels in the send-back header and wins
    (AbstractSendMessageProcessor.consumerSendMsgBack, clients from 3.4.9 on)."""
    msgs = tuple(Message(f"GR{n}", "GroupRetry", at_ms=n * 100, plan=(LATER,) * n + (OK,)) for n in (1, 2, 3))
    group = (ConsumerGroup("cg-groupretry", ("GroupRetry",), retry_max_times=1),)
    return Scenario("group-retry-max-times", msgs, group, description=group_retry_max_times.__doc__)


#: how long a batch consumer is paused while its backlog is sent (then pulled in batches)
BATCH_BACKLOG_MS = 3000


def batch_ack_index() -> Scenario:
    """A batch consumer (consumeMessageBatchMaxSize 4) answers each batch with an ack index: the
    messages up to it are consumed, every one after it is sent back (processConsumeResult), at the
    level the failing message asked for — to the DLQ for all of them after a LATER:-1. The consumer
    is paused while the backlog is sent, so the pulls after it hand out full batches."""
    plans = {1: (LATER, OK), 2: ("LATER:5", OK), 3: (OK,), 0: (OK,)}
    msgs = tuple(Message(f"BA{i:02d}", "Batch", at_ms=200 + i * 20, plan=plans[i % 4] if i != 13 else ("LATER:-1",))
                 for i in range(24))
    group = (ConsumerGroup("cg-batch", ("Batch",), batch_size=4),)
    faults = (FaultStep(0, "pause", "consumer"), FaultStep(BATCH_BACKLOG_MS, "resume", "consumer"))
    return Scenario("batch-ack-index", msgs, group, faults, description=batch_ack_index.__doc__)


def orderly_suspend() -> Scenario:
    """An orderly consumer (MessageListenerOrderly, suspend 1000 ms by default) consumes each queue in
    order: a LATER suspends the queue, the same stored copy comes again a suspend time later with its
    reconsume count raised, and nothing behind it in its queue is consumed before it is done
    (ConsumeMessageOrderlyService: QUEUE_ORDER)."""
    plans = {0: (LATER, LATER, OK), 5: (LATER, LATER, OK), 10: (LATER, LATER, OK), 3: (LATER, OK)}
    msgs = tuple(Message(f"OS{i:02d}", "Orderly", at_ms=i * 50, plan=plans.get(i, ())) for i in range(16))
    group = (ConsumerGroup("cg-orderly", ("Orderly",), mode=ORDERLY),)
    return Scenario("orderly-suspend", msgs, group, description=orderly_suspend.__doc__)


def orderly_dlq() -> Scenario:
    """An orderly consumer with maxReconsumeTimes 2 (suspend 300 ms) sends a message whose third
    attempt fails to %DLQ%group through its producer (checkReconsumeTimes, SendMessageProcessor.
    handleRetryAndDLQ; 4.9.x stores the DLQ copy after level 3 + 2 first: the run waits for it) and
    goes on with the queue; two failures and an OK consume it."""
    plans = {0: (LATER,) * 3, 3: (LATER,) * 3, 1: (LATER, LATER, OK)}
    msgs = tuple(Message(f"OD{i}", "OrderlyDlq", at_ms=i * 50, plan=plans.get(i, ())) for i in range(8))
    group = (ConsumerGroup("cg-orderlydlq", ("OrderlyDlq",), max_reconsume_times=2, mode=ORDERLY, suspend_ms=300),)
    wait = dlq_wait_ms(2, parse_level_table(COMPRESSED_LEVELS))
    return Scenario("orderly-dlq", msgs, group, description=orderly_dlq.__doc__, drain_margin_ms=wait + 3_000)


#: how long a broadcasting run watches after its last message ended for a retry a correct client never
#: makes (a clustering client's local re-consume would come LOCAL_RETRY_DELAY_MS after its LATER)
BROADCAST_WATCH_MS = LOCAL_RETRY_DELAY_MS + 3_000


def broadcast_every_instance() -> Scenario:
    """A broadcasting group of three instances (MessageModel.BROADCASTING): each instance gets every
    message, delayed or not, and a message an instance answers LATER is dropped by that instance's
    client (ConsumeMessageConcurrentlyService.processConsumeResult): no retry, no DLQ."""
    plans = {2: (LATER,), 5: (LATER, OK), 8: (LATER, LATER, OK)}
    msgs = tuple(Message(f"BR{i:02d}", "Broadcast", at_ms=i * 80, delay_level=2 if i % 3 == 0 else 0, plan=plans.get(i, ()))
                 for i in range(12))
    group = (ConsumerGroup("cg-broadcast", ("Broadcast",), instances=3, mode=BROADCASTING),)
    return Scenario("broadcast-every-instance", msgs, group, description=broadcast_every_instance.__doc__,
                    drain_margin_ms=BROADCAST_WATCH_MS)


def pop_later() -> Scenario:
    """A POP group (the remoting push consumer in POP mode, 5.x; pop invisible time 5 s): a LATER
    changes the copy's invisible time to the POP table's level of its reconsume count (10 s, then
    30 s: ConsumeMessagePopConcurrentlyService.changePopInvisibleTime) and the broker revives it
    that long after the answer as the next attempt, with its count raised (PopReviveService), not
    before and within the revive's lag after; a delayed message is popped once due."""
    plans = {0: (LATER, OK), 1: (LATER, LATER, OK), 3: (LATER, OK)}
    msgs = tuple(Message(f"PL{i}", "PopLater", at_ms=i * 100, delay_level=2 if i == 3 else 0, plan=plans.get(i, ()))
                 for i in range(5))
    group = (ConsumerGroup("cg-poplater", ("PopLater",), mode=POP, pop_invisible_ms=5_000),)
    return Scenario("pop-later", msgs, group, requires=(POP_CONSUMPTION,), description=pop_later.__doc__)


def pop_unanswered_revived() -> Scenario:
    """A POP group (pop invisible time 5 s, maxReconsumeTimes 1) whose listener holds copies past
    their invisible time (SLOW): the client drops the late answer (ConsumeRequest.run, isPopTimeout)
    and the broker revives each copy its invisible time after its pop as the next attempt; a LATER
    at the maximum leaves the invisible time as it is (checkNeedAckOrDelay: the message is younger
    than the first level), and from 5.3.1 the copy above the maximum is acked by the client unseen:
    the message ends there, in no DLQ (processPopResult)."""
    plans = {0: (SLOW, OK), 1: (SLOW, LATER), 2: (LATER, SLOW)}
    msgs = tuple(Message(f"PU{i}", "PopUnanswered", at_ms=i * 100, plan=plans.get(i, ())) for i in range(4))
    group = (ConsumerGroup("cg-popunanswered", ("PopUnanswered",), max_reconsume_times=1, mode=POP, pop_invisible_ms=5_000),)
    return Scenario("pop-unanswered-revived", msgs, group, requires=(POP_CONSUMPTION,),
                    description=pop_unanswered_revived.__doc__)


def _grpc_dlq_margin(mode: str, invisible_ms: int, retry_max_times: int) -> int:
    """How long a gRPC run waits after its last LATER for the proxy's DLQ entry: the copy is revived
    once more (the last invisible time or backoff and the revive's lag, reference.pop.next_window on
    a release whose revive does not wake the pop) and dead-lettered when popped (PopMessageResultFilterImpl)."""
    group = PopGroup(mode, (5, 3, 3), invisible_ms, retry_max_times)
    window = next_window(group, retry_max_times, ANSWERED_LATER, 0, 0, TIMER_PRECISION_MS, 3_000)
    return window.latest_ms


def grpc_simple_redelivery() -> Scenario:
    """The gRPC SimpleConsumer through the proxy (5.x; invisible duration 10 s, the group's
    retryMaxTimes 2): a message it does not ack comes again its invisible duration after the
    receive, its delivery attempt one more (GrpcConverter: reconsume count + 1), and the proxy
    dead-letters it at maxAttempts = retryMaxTimes + 1 (PopMessageResultFilterImpl) instead of
    handing it out a fourth time."""
    plans = {0: (LATER, OK), 1: (LATER, LATER, OK), 2: (LATER,) * 3}
    msgs = tuple(Message(f"GS{i}", "GrpcSimple", at_ms=i * 100, plan=plans.get(i, ())) for i in range(4))
    group = (ConsumerGroup("cg-grpcsimple", ("GrpcSimple",), retry_max_times=2, mode=GRPC_SIMPLE, pop_invisible_ms=10_000),)
    return Scenario("grpc-simple-redelivery", msgs, group, requires=(GRPC,), description=grpc_simple_redelivery.__doc__,
                    drain_margin_ms=_grpc_dlq_margin(GRPC_SIMPLE, 10_000, 2))


def grpc_push_backoff() -> Scenario:
    """The gRPC PushConsumer through the proxy (5.x; the group's retryMaxTimes 2): a FAILURE (LATER)
    changes the copy's invisible time to the group's retry policy's backoff of its delivery attempt
    (CustomizedRetryPolicy 1 s, 5 s, 10 s, …: ProcessQueueImpl.nackMessage), so the next attempt comes
    that long after the answer; at maxAttempts the proxy dead-letters it."""
    plans = {0: (LATER, OK), 1: (LATER, LATER, OK), 2: (LATER,) * 3}
    msgs = tuple(Message(f"GP{i}", "GrpcPush", at_ms=i * 100, plan=plans.get(i, ())) for i in range(4))
    group = (ConsumerGroup("cg-grpcpush", ("GrpcPush",), retry_max_times=2, mode=GRPC_PUSH),)
    return Scenario("grpc-push-backoff", msgs, group, requires=(GRPC,), description=grpc_push_backoff.__doc__,
                    drain_margin_ms=_grpc_dlq_margin(GRPC_PUSH, GRPC_PUSH_INVISIBLE_MS, 2))


def custom_table() -> Scenario:
    """A custom 3-level table: its own delays, clamping to level 3, retries clamped to level 3."""
    prof = Profile(message_delay_level="2s 4s 6s")
    msgs = tuple(Message(f"T{lv}", "Custom", at_ms=lv * 100, delay_level=lv) for lv in (1, 2, 3, 5)) + (
        Message("T-retry", "Custom", at_ms=600, plan=(LATER, LATER, OK)),
    )
    return Scenario("custom-table", msgs, _one_group("custom", "Custom"), profile=prof, description=custom_table.__doc__)


def timer_messages() -> Scenario:
    """5.x timer messages arrive at their deliver time (precision 1 s), not before."""
    msgs = tuple(Message(f"TM{d}", "Timer", at_ms=i * 100, deliver_after_ms=d) for i, d in enumerate((1500, 3000, 7000, 12000)))
    return Scenario("timer-messages", msgs, _one_group("timer", "Timer"), requires=("timer",), description=timer_messages.__doc__)


CONFORMANCE: tuple[Scenario, ...] = tuple(
    f()
    for f in (
        each_level,
        level_zero,
        above_max,
        level_order_burst,
        retry_then_ok,
        retry_of_delayed,
        dlq_default,
        dlq_small,
        consumer_redelivery,
        custom_table,
        timer_messages,
        consumer_chosen_levels,
        batch_ack_index,
        group_retry_max_times,
        orderly_suspend,
        orderly_dlq,
        broadcast_every_instance,
        pop_later,
        pop_unanswered_revived,
        grpc_simple_redelivery,
        grpc_push_backoff,
    )
) + LIMITS

assert all(s.profile.message_delay_level == COMPRESSED_LEVELS or s.name == "custom-table" for s in CONFORMANCE)
