"""The catalogue of injectable defects: bugs a broker fork could ship, as named switches.

Each defect names the invariant of ``reference.contract.INVARIANTS`` that must catch it, and the
scenario shape that exposes it (``suites/selftest/simulated`` runs one per defect). Pass defect
names (or members) to :func:`adapters.simulated.open_simulated`; an unknown name raises
``ValueError`` listing the known ones.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from hourglass.reference.contract import INVARIANTS


@dataclass(frozen=True)
class DefectInfo:
    invariant: str  # the invariant id that must catch it
    what: str  # what the broken broker does
    exposed_by: str  # the scenario that shows it


class Defect(enum.Enum):
    EARLY_DELIVERY = DefectInfo(
        "NOT_EARLY", "the schedule service re-puts a delayed message half its delay early",
        "any delayed message")
    LATE_DELIVERY = DefectInfo(
        "ON_TIME", "the schedule service re-puts a delayed message 10 s after it is due (a broker whose "
        "timer lags: what a host's stall looks like, with no stall of the host)", "any delayed message")
    NO_LEVEL_CLAMPING = DefectInfo(
        "NOT_EARLY", "a delay level above the table's maximum is not clamped: the message is stored "
        "as not delayed and delivered at once", "a send with delay_level > max level")
    WRONG_RETRY_LEVEL = DefectInfo(
        "NOT_EARLY", "retry k is stored at level k instead of 3 + k - 1 (two levels too short)",
        "a plan answering LATER with a table whose levels grow")
    LOST_ON_RESTART = DefectInfo(
        "NO_LOSS", "on restart the schedule offsets jump to the end of each schedule queue: messages "
        "still waiting in the queue are never re-put", "delayed messages pending across a restart")
    DUPLICATE_AFTER_GRACEFUL_RESTART = DefectInfo(
        "NO_DUPLICATE", "graceful shutdown does not persist the schedule offsets: the re-puts since "
        "the last periodic flush are repeated after a graceful restart (stale persisted offset)",
        "re-puts shortly before a graceful stop")
    SKIPPED_DLQ = DefectInfo(
        "DLQ_ROUTING", "a message past maxReconsumeTimes is retried again at the maximum level "
        "instead of going to %DLQ%group", "a plan answering LATER max + 1 times")
    REORDER_WITHIN_LEVEL = DefectInfo(
        "LEVEL_ORDER", "the schedule service holds back every message at an even schedule offset "
        "for 400 ms, so its successor in the same level is re-put first",
        "several messages of one level sent less than 400 ms apart")
    LOST_REPUT_ON_WRITE_FAILURE = DefectInfo(
        "NO_LOSS", "when the re-put of a due message fails to write, the schedule offset still "
        "moves past it (the broker retries nothing); this defect also makes 20% of re-put writes fail "
        "unless the system was opened with its own put_failure_rate", "delayed messages")
    OFFSETS_REWOUND_ON_RESTART = DefectInfo(
        "NO_DUPLICATE", "on restart the schedule offsets are loaded as 0: every message ever re-put "
        "is re-put again", "delayed messages re-put before a restart")

    REPUT_OFFSET_FROM_TASK_START = DefectInfo(
        "NO_DUPLICATE", "after each successful re-put the in-memory schedule offset is set to the task "
        "run's start offset + 1 instead of the entry's offset + 1 (4.9.3, #3966): a backlog re-put in one "
        "task run is re-put again after the next restart (persisted and flushed offsets lag)",
        "a backlog re-put in one task run (the first pass after a start) just before a graceful stop "
        "(persistence: *-graceful-*-duringbacklog)")
    PERSIST_BEFORE_DELIVERY_STOPS = DefectInfo(
        "NO_DUPLICATE", "a graceful shutdown persists the schedule offsets before the delivery tasks stop "
        "(4.9.0-4.9.2: timer.cancel does not wait): the re-puts of the last 300 ms of shutdown are not "
        "persisted and are repeated after the restart", "re-puts falling due while the broker stops "
        "gracefully (persistence: every *-graceful-* scenario with the trickle running)")
    EMPTY_OFFSETS_PERSISTED_BEFORE_LOAD = DefectInfo(
        "NO_DUPLICATE", "a persist timer created before load() writes an empty offset table over "
        "delayOffset.json when the start takes 10 s or more (5.0.0-5.1.1, #6881): every message ever "
        "re-put is re-put again", "a start slowed by a CPU quota (throttled_start) after re-puts; a start "
        "frozen from its exec (slow_start) runs no timer meanwhile (persistence: every *-throttled-* scenario)")

    REPUT_PAUSED_WHILE_PARTITIONED = DefectInfo(
        "ON_TIME", "the schedule service stops while the broker is cut off from its name server (as a "
        "broker that suspends its timers when it loses its registration or role) and catches up only a "
        "first delay after the heal: every message due in a partition is re-put late",
        "delayed messages falling due during a partition (chaos: partition-while-due)")

    STALLED_BY_CLOCK_BACK = DefectInfo(
        "ON_TIME", "the schedule service waits on the wall clock (java.util.Timer, as in 4.9.0-4.9.2): "
        "after the broker's clock steps back every level stalls for the length of the step, so "
        "messages stored after the step are re-put late", "delayed messages sent after a step back "
        "of the broker's clock (chaos: clock-back-while-due)")

    REPUT_BY_COUNTDOWN = DefectInfo(
        "NOT_EARLY", "the schedule service sleeps a head's countdown (due time minus now, on the broker's "
        "wall clock) on the monotonic clock and re-puts it when it wakes without reading the wall clock "
        "again (4.9.2 and earlier schedule the countdown, but java.util.Timer re-tests the wall clock; "
        "4.9.3+ re-test every 100 ms: ScheduleMessageService.DeliverDelayedMessageTimerTask): while the "
        "broker's clock runs slow it re-puts early, while it runs fast late",
        "delayed messages waiting while the broker's clock drifts (chaos: clock-slow-while-due, "
        "clock-fast-while-due)")
    SLAVE_REPUTS_WHILE_MASTER_DOWN = DefectInfo(
        "NO_DUPLICATE", "a slave runs the schedule service while its master is down (from the delay offsets "
        "it copied, the master's last persisted ones) and the master, back, re-puts the same entries again from "
        "its own: a correct slave re-puts nothing (DefaultMessageStore.handleScheduleMessageService runs it on a "
        "master only)", "delayed messages waiting while a master with a slave is down (chaos: "
        "master-down-slave-serves)")

    ASYNC_SKIP_AFTER_RESENDS = DefectInfo(
        "NO_LOSS", "asynchronous delivery (enableScheduleAsyncDeliver) gives up a re-put whose put keeps failing "
        "after scheduleAsyncDeliverMaxResendNum2Blocked * 2 resends and moves the offset past it, although its "
        "message is still readable (PutResultProcess.need2Skip skips only a message it can no longer read): a "
        "store refusing writes for a second loses what falls due", "delayed messages falling due while the store "
        "refuses writes, asynchronous delivery (chaos: async-disk-full-while-due)")
    GROUP_RETRY_MAX_TIMES_WINS = DefectInfo(
        "DLQ_ROUTING", "the broker's send-back takes the subscription group's retryMaxTimes over the client's "
        "maxReconsumeTimes in the request header (AbstractSendMessageProcessor.consumerSendMsgBack lets the header "
        "win for clients from 3.4.9 on)", "a group whose broker-side retryMaxTimes is below its consumer's "
        "maxReconsumeTimes, with plans answering LATER more often (conformance: group-retry-max-times)")
    CHOSEN_LEVEL_IGNORED = DefectInfo(
        "NOT_EARLY", "the broker's send-back ignores the delay level the consumer asked for "
        "(ConsumeConcurrentlyContext.setDelayLevelWhenNextConsume): every retry is stored at 3 + reconsumeTimes, "
        "and a level of -1 retries instead of going to the DLQ", "a plan answering LATER:n with n above "
        "3 + reconsumeTimes (conformance: consumer-chosen-levels)")
    ACK_INDEX_OFF_BY_ONE = DefectInfo(
        "NO_LOSS", "the client takes a batch's ack index one too far (a fork's processConsumeResult that "
        "starts sending back at ackIndex + 2): the first message after the ack index, the one that failed, "
        "is neither retried nor consumed", "a batch consumer whose plan answers LATER inside a batch "
        "(conformance: batch-ack-index)")
    ORDERLY_PASSES_FAILING = DefectInfo(
        "QUEUE_ORDER", "an orderly consumer goes on with the rest of a queue while a failing message waits out "
        "its suspension (a fork's ConsumeMessageOrderlyService that re-submits only the failing message), so "
        "the messages behind it are consumed first", "an orderly group whose plan answers LATER with more "
        "messages in the queue behind it (conformance: orderly-suspend)")
    ORDERLY_COUNT_NOT_RAISED = DefectInfo(
        "NO_DUPLICATE", "an orderly consumer re-consumes a suspended message without raising the reconsume "
        "count its listener sees (checkReconsumeTimes counts the attempt but does not set it on the message): "
        "the same attempt is delivered again and again until maxReconsumeTimes sends it to the DLQ, and the "
        "attempts the plan expects never come", "an orderly group whose plan answers LATER "
        "(conformance: orderly-suspend, orderly-dlq)")
    BROADCAST_FAILURE_RETRIED = DefectInfo(
        "RETRY_SCHEDULE", "a broadcasting consumer retries a message it failed (a fork's processConsumeResult "
        "that treats BROADCASTING as CLUSTERING and re-consumes it 5 s later) where the client must drop it",
        "a broadcasting group whose plan answers LATER (conformance: broadcast-every-instance)")
    CLEAN_UP_RUNS_ONCE = DefectInfo(
        "NO_LOSS", "the client's consume-timeout clean-up runs once, a consumeTimeout after the consumer "
        "started (a fork's ConsumeMessageConcurrentlyService.start scheduling cleanExpireMsg with schedule "
        "instead of scheduleAtFixedRate): a message held past the timeout later is never sent back, its "
        "retry never comes and the listener's late answer consumes it", "a plan answering SLOW "
        "(nightly: consume-timeout, consume-timeout-dlq)")
    TIMER_CHECKPOINT_IGNORED = DefectInfo(
        "NO_DUPLICATE", "the 5.x timer store recovers from the start of its wheel, not from its checkpoint "
        "(TimerMessageStore.recover ignoring timercheck's read time): every timer message ever put is put "
        "again after a restart", "timer messages put long before a broker stop (the timer suite)")
    TIMER_LOST_ON_KILL = DefectInfo(
        "NO_LOSS", "the 5.x timer store keeps its wheel only in memory: a kill -9 loses every timer message "
        "not yet due", "timer messages pending across a kill (the timer suite)")
    POP_UNACKED_NEVER_REVIVED = DefectInfo(
        "NO_LOSS", "the POP revive service never revives a copy nobody answered (a fork's PopReviveService that "
        "revives only checkpoints a changeInvisibleTime wrote): a copy whose invisible time ran out unanswered "
        "is lost", "a POP group whose plan answers SLOW (conformance: pop-unanswered-revived)")
    POP_REVIVE_IGNORES_CHANGE = DefectInfo(
        "NOT_EARLY", "the broker acknowledges a changeInvisibleTime but keeps the pop's checkpoint: the copy is "
        "revived at the pop's own invisible time, before the time the LATER asked for",
        "a POP group with a pop invisible time below 10 s whose plan answers LATER (conformance: pop-later)")
    POP_COUNT_RESET_ON_RESTART = DefectInfo(
        "NO_DUPLICATE", "checkpoints read back after a broker restart revive their copies with reconsume count "
        "0: the attempt the plan expects never comes and attempt 0 is delivered again",
        "a POP group's copy invisible across a broker restart (chaos: pop-broker-restart-while-invisible)")
    POP_WRONG_BACKOFF_STEP = DefectInfo(
        "NOT_EARLY", "a POP consumer's LATER takes the backoff step before its reconsume count's (a fork's "
        "changePopInvisibleTime indexing popDelayLevel as messageDelayLevel, level n at entry n - 1): a second "
        "attempt comes 10 s after the answer instead of 30 s, and a first one's change fails (entry -1), so the "
        "pop's own invisible time stands", "a POP group with a pop invisible time below 10 s whose plan answers "
        "LATER (conformance: pop-later, pop-unanswered-revived)")

    @property
    def invariant(self) -> str:
        return self.value.invariant

    @property
    def slug(self) -> str:
        return self.name.lower().replace("_", "-")


assert all(d.invariant in INVARIANTS for d in Defect)


def parse_defects(defects) -> frozenset[Defect]:
    """Defects from members or names (``EARLY_DELIVERY``, ``early-delivery``, ``early_delivery``)."""
    out = set()
    for d in defects or ():
        if isinstance(d, Defect):
            out.add(d)
            continue
        name = str(d).strip().upper().replace("-", "_")
        if name not in Defect.__members__:
            known = ", ".join(x.slug for x in Defect)
            raise ValueError(f"unknown defect {d!r}: expected one of {known}")
        out.add(Defect[name])
    return frozenset(out)
