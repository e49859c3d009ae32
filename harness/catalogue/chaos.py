"""The chaos catalogue: the contract must hold through broker, name-server and consumer faults.

Each scenario's tolerance comes from the model, not from a number raised until it passes: an
outage widens the window of what was due during it (``ON_TIME``), a kill -9 allows the re-puts
since the last offset flush to repeat (``NO_DUPLICATE``), a consumer crash allows a redelivery.
The ``SHORT`` set runs in the main job and in CI; ``NIGHTLY`` adds the long ones.
"""

from __future__ import annotations

from dataclasses import replace

from hourglass.harness.scenario import ConsumerGroup, FaultStep, Message, Profile, Scenario
from hourglass.reference.contract import ASYNC_DELIVER, GRPC, POP_CONSUMPTION, PROXY_TARGET, TIMER
from hourglass.reference.pop import GRPC_PUSH, GRPC_SIMPLE, POP, PROXY_LOCAL
from hourglass.reference.cluster import CONTROLLER, MASTER_SLAVE, TWO_MASTERS
from hourglass.reference.clock import CLOCK_DRIFT
from hourglass.reference.modes import BROADCASTING, ORDERLY
from hourglass.harness.catalogue.conformance import BROADCAST_WATCH_MS

LATER, OK, CRASH, SLOW = "LATER", "OK", "CRASH", "SLOW"


def _group(name: str, topic: str) -> tuple[ConsumerGroup, ...]:
    return (ConsumerGroup(f"cg-{name}", (topic,)),)


def kill9_during_level_delivery() -> Scenario:
    """kill -9 of the broker while level-4 messages are being re-put; restart at once."""
    msgs = tuple(Message(f"K{i:03d}", "Kill9", at_ms=i * 40, delay_level=4) for i in range(60))
    faults = (FaultStep(at_ms=4_800, action="kill_restart"),)
    return Scenario("kill9-during-delivery", msgs, _group("kill9", "Kill9"), faults, description=kill9_during_level_delivery.__doc__)


def graceful_restart_while_due() -> Scenario:
    """Graceful restart while messages of two levels fall due (offsets flushed on shutdown)."""
    msgs = tuple(Message(f"G{i:03d}", "Graceful", at_ms=i * 50, delay_level=3 + i % 3, plan=(LATER, OK) if i % 5 == 0 else ()) for i in range(40))
    faults = (FaultStep(at_ms=3_500, action="restart", duration_ms=2_000),)
    return Scenario("graceful-restart-while-due", msgs, _group("graceful", "Graceful"), faults, description=graceful_restart_while_due.__doc__)


def outage_short() -> Scenario:
    """Broker down (kill -9) for 6 s across the due times of levels 2..5."""
    msgs = tuple(Message(f"O{i:03d}", "Outage", at_ms=i * 30, delay_level=2 + i % 4) for i in range(40))
    faults = (FaultStep(at_ms=1_500, action="outage", duration_ms=6_000),)
    return Scenario("outage-short", msgs, _group("outage", "Outage"), faults, description=outage_short.__doc__)


def outage_long() -> Scenario:
    """Broker down 40 s: everything falls due while it is down and comes after ready."""
    msgs = tuple(Message(f"OL{i:03d}", "OutageLong", at_ms=i * 30, delay_level=1 + i % 10, plan=(LATER, OK) if i % 7 == 0 else ()) for i in range(50))
    faults = (FaultStep(at_ms=2_000, action="outage", duration_ms=40_000),)
    return Scenario("outage-long", msgs, _group("outagelong", "OutageLong"), faults, description=outage_long.__doc__)


def repeated_crashes() -> Scenario:
    """Three kill -9 restarts in a row while messages of several levels are in flight."""
    msgs = tuple(Message(f"RC{i:03d}", "Repeated", at_ms=i * 100, delay_level=1 + i % 8) for i in range(60))
    faults = tuple(FaultStep(at_ms=t, action="kill_restart") for t in (3_000, 12_000, 21_000))
    return Scenario("repeated-crashes", msgs, _group("repeated", "Repeated"), faults, description=repeated_crashes.__doc__)


def namesrv_loss() -> Scenario:
    """The name server is killed for 8 s; the broker keeps scheduling, clients keep their routes."""
    msgs = tuple(Message(f"N{i:03d}", "Namesrv", at_ms=i * 50, delay_level=2 + i % 3) for i in range(30))
    faults = (FaultStep(at_ms=1_000, action="outage", target="namesrv", duration_ms=8_000),)
    return Scenario("namesrv-loss", msgs, _group("namesrv", "Namesrv"), faults, description=namesrv_loss.__doc__)


def consumer_crash_mid_consume() -> Scenario:
    """Consumers die mid-consume (CRASH) on delayed and retried messages; each is redelivered."""
    msgs = (
        Message("CC-0", "ConsumerCrash", delay_level=2, plan=(CRASH, OK)),
        Message("CC-1", "ConsumerCrash", at_ms=100, plan=(LATER, CRASH, OK)),
        Message("CC-2", "ConsumerCrash", at_ms=200, delay_level=1),
    )
    return Scenario("consumer-crash", msgs, _group("ccrash", "ConsumerCrash"), description=consumer_crash_mid_consume.__doc__)


def consumer_killed() -> Scenario:
    """The consumer process is killed (kill -9) while messages fall due, then started again."""
    msgs = tuple(Message(f"CK{i:02d}", "ConsumerKill", at_ms=i * 100, delay_level=2 + i % 2) for i in range(20))
    faults = (FaultStep(at_ms=2_500, action="outage", target="consumer", duration_ms=4_000),)
    return Scenario("consumer-killed", msgs, _group("ckill", "ConsumerKill"), faults, description=consumer_killed.__doc__)


def broker_paused() -> Scenario:
    """The broker is frozen (SIGSTOP / docker pause) for 6 s while messages fall due."""
    msgs = tuple(Message(f"P{i:03d}", "Paused", at_ms=i * 50, delay_level=2 + i % 3) for i in range(30))
    faults = (FaultStep(at_ms=1_500, action="pause", duration_ms=6_000),)
    return Scenario("broker-paused", msgs, _group("paused", "Paused"), faults, description=broker_paused.__doc__)


#: a 5.x broker first checks its disk 60 s after it started (DefaultMessageStore.addScheduleTask:
#: cleanFilesPeriodically): a store filled earlier is not noticed, so the fill comes after that
DISK_NOTICED_AFTER_START_MS = 62_000


def disk_full_while_due() -> Scenario:
    """The broker's store fills up for 8 s while level-2 and level-3 messages fall due and some are
    retried: sends and send-backs are refused, due messages are re-put late (never dropped), and
    nothing is lost once space returns (reference.disk)."""
    t0 = DISK_NOTICED_AFTER_START_MS - 6_000
    msgs = tuple(Message(f"DF{i:03d}", "DiskFull", at_ms=t0 + i * 250, delay_level=2 + i % 2,
                         plan=(LATER, OK) if i % 6 == 0 else ()) for i in range(60))
    faults = (FaultStep(at_ms=DISK_NOTICED_AFTER_START_MS + 2_000, action="disk_full", duration_ms=8_000),)
    return Scenario("disk-full-while-due", msgs, _group("diskfull", "DiskFull"), faults, description=disk_full_while_due.__doc__)


def async_disk_full_while_due() -> Scenario:
    """disk-full-while-due with the schedule service's asynchronous delivery: a re-put refused by
    the full store blocks its level and is resent with a growing pause (PutResultProcess.doResend),
    so the level waits for the space to return and loses nothing."""
    base = disk_full_while_due()
    msgs = tuple(replace(m, key="A" + m.key, topic="AsyncDiskFull") for m in base.messages)
    return Scenario("async-disk-full-while-due", msgs, _group("asyncdiskfull", "AsyncDiskFull"), base.faults,
                    profile=replace(base.profile, schedule_async_deliver=True), requires=(ASYNC_DELIVER,),
                    description=async_disk_full_while_due.__doc__)


#: the broker's diskSpaceWarningLevelRatio of the fill-by-ratio scenarios, and the ratio they fill to:
#: above the warning level, with room left on the disk (reference.disk)
DISK_WARNING_PERCENT, DISK_FILL_PERCENT = 85, 92


def disk_ratio_while_due() -> Scenario:
    """disk-full-while-due, the store filled to 92 % of its partition, above the broker's
    diskSpaceWarningLevelRatio (85 % here), not to the last byte: the broker refuses writes as the
    ratio says, though the disk has room (DefaultMessageStore.CleanCommitLogService); due messages are
    re-put late, never dropped."""
    base = disk_full_while_due()
    msgs = tuple(replace(m, key="R" + m.key, topic="DiskRatio") for m in base.messages)
    faults = tuple(replace(f, action="disk_fill", fill_percent=DISK_FILL_PERCENT) for f in base.faults)
    return Scenario("disk-ratio-while-due", msgs, _group("diskratio", "DiskRatio"), faults,
                    profile=replace(base.profile, disk_warning_percent=DISK_WARNING_PERCENT),
                    description=disk_ratio_while_due.__doc__)


def disk_ratio_timers_while_due() -> Scenario:
    """5.x timer messages falling due while the store is filled above its warning ratio: the timer
    store's puts are refused and retried (TimerMessageStore.doPut); once space returns they come,
    late, never dropped."""
    base = disk_ratio_while_due()
    msgs = tuple(Message(f"RT{i:03d}", "DiskRatioTimer", at_ms=m.at_ms, deliver_after_ms=6_000 + (i % 4) * 1_000)
                 for i, m in enumerate(base.messages[:40]))
    return Scenario("disk-ratio-timers-while-due", msgs, _group("diskratiotimer", "DiskRatioTimer"), base.faults,
                    profile=base.profile, requires=(TIMER,), description=disk_ratio_timers_while_due.__doc__)


#: when io-stall-while-due freezes the broker's store, and for how long (reference.faults.io)
IO_STALL_AT_MS, IO_STALL_MS = 4_000, 6_000


def io_stall_while_due() -> Scenario:
    """The broker's store is frozen for 6 s while level-2 and level-3 messages fall due and some are
    retried, and sends go on: the first put waits for the thaw (its send may time out), later sends
    and send-backs are refused, due messages are re-put after the thaw (late, never dropped), and
    nothing is repeated (reference.faults.io)."""
    msgs = tuple(Message(f"IO{i:03d}", "IoStall", at_ms=i * 200, delay_level=2 + i % 2,
                         plan=(LATER, OK) if i % 5 == 0 else ()) for i in range(50))
    faults = (FaultStep(at_ms=IO_STALL_AT_MS, action="io_stall", duration_ms=IO_STALL_MS),)
    return Scenario("io-stall-while-due", msgs, _group("iostall", "IoStall"), faults, description=io_stall_while_due.__doc__)


#: when partition-while-due cuts the broker off, and for how long (well below the 120 s channel expiry)
PARTITION_AT_MS, PARTITION_MS = 3_500, 8_000


def partition_while_due() -> Scenario:
    """The broker is cut off from every client and the name server for 8 s while level-3..6
    messages fall due: sends in the partition time out (UNKNOWN; a retransmitted one may be stored
    after the heal), the schedule service re-puts on time, deliveries and retries come after the heal,
    nothing is lost and nothing repeated (reference.network). Retries (LATER) are answered only after
    the heal here; loss-while-due answers them in the cut (a send-back that times out there may be
    stored beside the client's re-send, which the model allows)."""
    before = tuple(Message(f"PD{i:03d}", "Partition", at_ms=i * 100, delay_level=3 + i % 4,
                           plan=(LATER, OK) if i % 4 == 3 and i >= 10 else ()) for i in range(30))
    during = tuple(Message(f"PU{i:03d}", "Partition", at_ms=PARTITION_AT_MS + 500 + i * 3_000, delay_level=2)
                   for i in range(2))
    after = tuple(Message(f"PA{i:03d}", "Partition", at_ms=PARTITION_AT_MS + PARTITION_MS + 1_500 + i * 100,
                          delay_level=2 + i % 3) for i in range(10))
    faults = (FaultStep(at_ms=PARTITION_AT_MS, action="partition", duration_ms=PARTITION_MS),)
    return Scenario("partition-while-due", before + during + after, _group("partition", "Partition"), faults,
                    description=partition_while_due.__doc__)


def latency_while_due() -> Scenario:
    """Everything the broker sends is delayed by 300 ms for 8 s while messages of levels 2..5 fall
    due and some are retried: store times do not move (windows unchanged), deliveries come later,
    nothing is lost or repeated (reference.network)."""
    msgs = tuple(Message(f"LT{i:03d}", "Latency", at_ms=i * 150, delay_level=2 + i % 4,
                         plan=(LATER, OK) if i % 5 == 0 else ()) for i in range(60))
    faults = (FaultStep(at_ms=2_000, action="latency", duration_ms=8_000, delay_ms=300),)
    return Scenario("latency-while-due", msgs, _group("latency", "Latency"), faults, description=latency_while_due.__doc__)


#: loss-while-due: the share of packets dropped, and for how long
LOSS_PERCENT, LOSS_MS = 30, 8_000


def loss_while_due() -> Scenario:
    """30 % of the packets in and out of the broker are dropped for 8 s while level-3..6 messages
    fall due, some retried and some sent in it: TCP retransmits, so sends and pulls come late or time
    out (UNKNOWN, maybe stored later), a send-back that timed out may be stored beside the client's
    re-send, the schedule service re-puts on time; nothing is lost (reference.network: a loss period
    is judged as a partition, its worst case)."""
    before = tuple(Message(f"LS{i:03d}", "Loss", at_ms=i * 100, delay_level=3 + i % 4,
                           plan=(LATER, OK) if i % 4 == 3 else ()) for i in range(40))
    during = tuple(Message(f"LD{i:03d}", "Loss", at_ms=PARTITION_AT_MS + 500 + i * 500, delay_level=2 + i % 3,
                           plan=(LATER, OK) if i % 5 == 4 else ()) for i in range(14))
    faults = (FaultStep(at_ms=PARTITION_AT_MS, action="loss", duration_ms=LOSS_MS, loss_percent=LOSS_PERCENT),)
    return Scenario("loss-while-due", before + during, _group("loss", "Loss"), faults, description=loss_while_due.__doc__)


#: when the clock scenarios step the broker's clock, and by how much (reference.clock): the step
#: back is longer than a level-1 wait and the slack together, so a stalled schedule service shows
CLOCK_STEP_AT_MS, CLOCK_AHEAD_MS = 6_000, 5_000
CLOCK_BACK_AT_MS, CLOCK_BACK_MS = 9_000, -6_000


def clock_ahead_while_due() -> Scenario:
    """The broker's wall clock steps 5 s ahead while level-6..9 messages wait: a correct broker
    re-puts what was waiting up to 5 s early in true time (on time in its own clock), and what is
    sent after the step on time; nothing is lost or repeated (reference.clock)."""
    before = tuple(Message(f"CA{i:03d}", "ClockAhead", at_ms=i * 200, delay_level=6 + i % 4,
                           plan=(LATER, OK) if i % 7 == 3 else ()) for i in range(20))
    after = tuple(Message(f"CB{i:03d}", "ClockAhead", at_ms=CLOCK_STEP_AT_MS + 1_000 + i * 200, delay_level=2 + i % 3)
                  for i in range(10))
    faults = (FaultStep(at_ms=CLOCK_STEP_AT_MS, action="clock", offset_ms=CLOCK_AHEAD_MS),)
    return Scenario("clock-ahead-while-due", before + after, _group("clockahead", "ClockAhead"), faults,
                    description=clock_ahead_while_due.__doc__)


def clock_back_while_due() -> Scenario:
    """The broker's wall clock steps 6 s back while level-8..10 messages wait: those stored more
    than 6 s before the step are re-put up to 6 s late, those stored in the last 6 s at once
    (correctDeliverTimestamp: their due time is more than a level's delay ahead), and messages
    sent after the step on time — a schedule service that waits on the wall clock stalls them
    (reference.clock)."""
    before = tuple(Message(f"CK{i:03d}", "ClockBack", at_ms=i * 250, delay_level=8 + i % 3) for i in range(20))
    after = tuple(Message(f"CL{i:03d}", "ClockBack", at_ms=CLOCK_BACK_AT_MS + 1_000 + i * 200, delay_level=1 + i % 3,
                          plan=(LATER, OK) if i % 5 == 2 else ()) for i in range(15))
    faults = (FaultStep(at_ms=CLOCK_BACK_AT_MS, action="clock", offset_ms=CLOCK_BACK_MS),)
    return Scenario("clock-back-while-due", before + after, _group("clockback", "ClockBack"), faults,
                    description=clock_back_while_due.__doc__)


#: when the drift scenarios make the broker's clock run fast or slow, at what rate and for how long
#: (reference.clock): each reaches an offset of 9-10 s, more than a level's wait and the slack
CLOCK_DRIFT_AT_MS = 2_000
CLOCK_FAST_PERMILLE, CLOCK_FAST_MS = 900, 10_000
CLOCK_SLOW_PERMILLE, CLOCK_SLOW_MS = -500, 20_000


def clock_fast_while_due() -> Scenario:
    """The broker's wall clock runs 1.9 times the true rate for 10 s while level-6..9 messages wait
    and others are sent: a correct broker re-puts each when its own clock reads the due time, early
    in true time by what the clock gained over the wait; nothing is lost or repeated
    (reference.clock; the heal steps the clock 9 s back)."""
    before = tuple(Message(f"DF{i:03d}", "ClockFast", at_ms=i * 200, delay_level=6 + i % 4,
                           plan=(LATER, OK) if i % 7 == 3 else ()) for i in range(15))
    during = tuple(Message(f"DG{i:03d}", "ClockFast", at_ms=CLOCK_DRIFT_AT_MS + 1_000 + i * 400, delay_level=2 + i % 4)
                   for i in range(15))
    faults = (FaultStep(at_ms=CLOCK_DRIFT_AT_MS, action=CLOCK_DRIFT, duration_ms=CLOCK_FAST_MS,
                        rate_permille=CLOCK_FAST_PERMILLE),)
    return Scenario("clock-fast-while-due", before + during, _group("clockfast", "ClockFast"), faults,
                    description=clock_fast_while_due.__doc__)


def clock_slow_while_due() -> Scenario:
    """The broker's wall clock runs at half the true rate for 20 s while level-8..10 messages wait
    and others are sent: a correct broker re-puts each when its own clock reads the due time, late in
    true time by what the clock lost over the wait (up to twice the delay) — a schedule service that
    sleeps a head's countdown on the monotonic clock re-puts early (reference.clock)."""
    before = tuple(Message(f"DS{i:03d}", "ClockSlow", at_ms=i * 250, delay_level=8 + i % 3) for i in range(15))
    during = tuple(Message(f"DT{i:03d}", "ClockSlow", at_ms=CLOCK_DRIFT_AT_MS + 1_000 + i * 500, delay_level=1 + i % 5,
                           plan=(LATER, OK) if i % 5 == 2 else ()) for i in range(15))
    faults = (FaultStep(at_ms=CLOCK_DRIFT_AT_MS, action=CLOCK_DRIFT, duration_ms=CLOCK_SLOW_MS,
                        rate_permille=CLOCK_SLOW_PERMILLE),)
    return Scenario("clock-slow-while-due", before + during, _group("clockslow", "ClockSlow"), faults,
                    description=clock_slow_while_due.__doc__)



#: when the cluster scenarios take a broker down, and for how long (reference.cluster): after the
#: brokers' first offset flush (10 s after their start), so the restart resumes from persisted offsets
CLUSTER_DOWN_AT_MS, CLUSTER_DOWN_MS = 12_000, 8_000


def batch_crash_then_kill9() -> Scenario:
    """A batch consumer (batch size 4) dies inside a batch (a CRASH after consumed messages it never
    acknowledged: the whole batch comes again, the acked part answered OK without a plan entry),
    and the broker is killed -9 while the batches' retries wait at levels 3 and 5."""
    plans = {0: (OK,), 1: (LATER, OK), 2: ("LATER:5", OK), 3: (OK,)}
    msgs = tuple(Message(f"BC{i:02d}", "BatchCrash", at_ms=200 + i * 20, plan=plans[i % 4] if i not in (6, 17) else (CRASH, OK))
                 for i in range(24))
    group = (ConsumerGroup("cg-batchcrash", ("BatchCrash",), batch_size=4),)
    faults = (FaultStep(0, "pause", "consumer"), FaultStep(2_000, "resume", "consumer"), FaultStep(4_500, "kill_restart"))
    return Scenario("batch-crash-then-kill9", msgs, group, faults, description=batch_crash_then_kill9.__doc__)


def orderly_kill9_in_suspension() -> Scenario:
    """The broker is killed -9 while an orderly consumer's queues are suspended (suspend 4 s): the
    broker forgets its queue locks and consumer offsets since its last flush; the client re-consumes
    the suspended messages once it holds the lock again (ConsumeMessageOrderlyService.
    tryLockLaterAndReconsume), still in queue order, and redelivers what the broker forgot."""
    msgs = tuple(Message(f"OK{i:02d}", "OrderlyKill", at_ms=i * 50, plan=(LATER, LATER, OK) if i % 3 == 0 else ())
                 for i in range(12))
    group = (ConsumerGroup("cg-orderlykill", ("OrderlyKill",), mode=ORDERLY, suspend_ms=4_000),)
    return Scenario("orderly-kill9-in-suspension", msgs, group, (FaultStep(2_500, "kill_restart"),),
                    description=orderly_kill9_in_suspension.__doc__)


def orderly_consumer_crash() -> Scenario:
    """An orderly consumer dies (CRASH) on a suspended message's local re-consume: the reconsume count
    it raised died with it, so its replacement gets the stored copy again (count 0, answered LATER
    again: the retry chain starts over), once the dead client's queue locks expired on the broker
    (RebalanceLockManager: 60 s, none freed when a connection closes), and every queue stays in order."""
    msgs = (Message("OC-0", "OrderlyCrash", plan=(LATER, CRASH, OK)), Message("OC-1", "OrderlyCrash", at_ms=100, plan=(LATER, OK)),
            *(Message(f"OC-{i}", "OrderlyCrash", at_ms=100 + i * 50) for i in range(2, 10)))
    group = (ConsumerGroup("cg-orderlycrash", ("OrderlyCrash",), mode=ORDERLY, suspend_ms=500),)
    return Scenario("orderly-consumer-crash", msgs, group, description=orderly_consumer_crash.__doc__)


def chosen_levels_restart() -> Scenario:
    """Retries at the levels the consumer asked for (LATER:n) wait in SCHEDULE_TOPIC_XXXX while the
    broker restarts gracefully; the group's broker-side retryMaxTimes (1) is below its client's
    maxReconsumeTimes (3), which wins: -1 still goes to the DLQ at once, a fourth LATER to the DLQ
    after three retries, and each retry comes at its asked level's time, later only by the outage."""
    plans = {"CR-6": ("LATER:6", OK), "CR-2": ("LATER:2", LATER, OK), "CR-dlq": (LATER, "LATER:-1"),
             "CR-max": ("LATER:4", LATER, LATER, LATER), "CR-0": ("LATER:0", OK)}
    msgs = tuple(Message(key, "ChosenRestart", at_ms=i * 150, plan=plan) for i, (key, plan) in enumerate(plans.items())) + tuple(
        Message(f"CR-plain{i}", "ChosenRestart", at_ms=800 + i * 100, delay_level=3) for i in range(4))
    group = (ConsumerGroup("cg-chosenrestart", ("ChosenRestart",), max_reconsume_times=3, retry_max_times=1),)
    return Scenario("chosen-levels-restart", msgs, group, (FaultStep(3_000, "restart", duration_ms=2_000),),
                    description=chosen_levels_restart.__doc__)


def orderly_rebalance() -> Scenario:
    """An orderly group of two: its second member leaves (graceful stop: it unlocks its queues) while
    queues it holds are suspended, and joins again while the first member's are: each time queues
    move, the new owner locks them once the old one let go (RebalancePushImpl.
    removeUnnecessaryMessageQueue: at once, or 20 s after when messages were still in its process
    queue) and takes a suspended message again as its stored copy (count 0: the chain starts over),
    every queue in order throughout. A second wave of messages after the join meets the settled
    group. (Plans are LATERs then OK: each member keeps its own plan positions, and those answer the
    same whichever member asks.)"""
    first = tuple(Message(f"OR-{i:02d}", "OrderlyRebalance", at_ms=i * 50, plan=(LATER, LATER, LATER, OK) if i % 5 == 0 else ())
                  for i in range(16))  # one failing message in each of the topic's 4 queues (sent round robin)
    second = tuple(Message(f"OR-{i:02d}", "OrderlyRebalance", at_ms=6_000 + (i - 16) * 50,
                           plan=(LATER, OK) if i % 3 == 1 else ()) for i in range(16, 28))
    group = (ConsumerGroup("cg-orderlyrebalance", ("OrderlyRebalance",), instances=2, mode=ORDERLY, suspend_ms=2_000,
                           leave_at_ms=2_500, join_at_ms=4_500),)
    return Scenario("orderly-rebalance", first + second, group, description=orderly_rebalance.__doc__)


def consume_timeout() -> Scenario:
    """A concurrent consumer (consumeTimeout 1 minute) holds messages past the timeout (SLOW), on a
    first attempt, on a retry and after a delay: the client's clean-up (ProcessQueue.cleanExpiredMsg,
    every minute) sends each back at level 3 (not 3 + reconsumeTimes) one to two minutes after its
    consume started, its reconsume count raised, and the messages behind it in its queue are
    consumed meanwhile; the listener's late OK changes nothing."""
    plans = {0: (SLOW, OK), 1: (LATER, SLOW, OK), 2: (SLOW,)}
    msgs = tuple(Message(f"CT-{i}", "ConsumeTimeout", at_ms=i * 100, delay_level=2 if i == 2 else 0, plan=plans.get(i, ()))
                 for i in range(10))
    group = (ConsumerGroup("cg-timeout", ("ConsumeTimeout",), consume_timeout_min=1),)
    return Scenario("consume-timeout", msgs, group, description=consume_timeout.__doc__)


def consume_timeout_dlq() -> Scenario:
    """A message held past the consumeTimeout (1 minute) on its last allowed attempt
    (maxReconsumeTimes 1) goes to the DLQ from the clean-up's send-back, as a LATER would; one held
    on its first attempt is retried once."""
    msgs = (Message("CD-0", "TimeoutDlq", plan=(LATER, SLOW)), Message("CD-1", "TimeoutDlq", at_ms=100, plan=(SLOW, OK)),
            *(Message(f"CD-{i}", "TimeoutDlq", at_ms=100 + i * 50) for i in range(2, 6)))
    group = (ConsumerGroup("cg-timeoutdlq", ("TimeoutDlq",), max_reconsume_times=1, consume_timeout_min=1),)
    return Scenario("consume-timeout-dlq", msgs, group, description=consume_timeout_dlq.__doc__)


def broadcast_instance_crash() -> Scenario:
    """One instance of a broadcasting group of two dies (CRASH) on a message, as its twin does on its
    own copy: each restarts under its own client id and resumes from the offsets its client persisted
    (LocalFileOffsetStore, every 5 s), redelivering what it consumed since; a LATER is still dropped."""
    msgs = tuple(Message(f"BC-{i:02d}", "BroadcastCrash", at_ms=i * 100, delay_level=1 if i % 2 else 0,
                         plan=(CRASH, OK) if i == 6 else (LATER, OK) if i in (3, 9) else ()) for i in range(12))
    group = (ConsumerGroup("cg-bcrash", ("BroadcastCrash",), instances=2, mode=BROADCASTING),)
    return Scenario("broadcast-instance-crash", msgs, group, description=broadcast_instance_crash.__doc__,
                    drain_margin_ms=BROADCAST_WATCH_MS)


def _pop_in_hand(prefix: str, topic: str) -> tuple[Message, ...]:
    """POP copies in every state at once: held past their invisible time (SLOW: unanswered until their
    revive), answered LATER (their changed invisible time running), and plain ones consumed at once."""
    plans = ((SLOW, OK), (LATER, OK), (), (SLOW, LATER, OK), (LATER, SLOW, OK))
    return tuple(Message(f"{prefix}{i}", topic, at_ms=i * 100, plan=plans[i % len(plans)]) for i in range(10))


def pop_broker_kill_while_invisible() -> Scenario:
    """The broker is killed -9 while a POP group's copies are invisible (pop invisible time 8 s,
    LATERs at 10 s) and back 3 s later: the checkpoints are stored messages of the revive topic, so
    every copy is revived after the restart as its next attempt, late only by the outage; the
    revive offset and the pop offsets since their last commit may make a copy come twice."""
    group = (ConsumerGroup("cg-popkill", ("PopKill",), mode=POP, pop_invisible_ms=8_000),)
    return Scenario("pop-broker-kill-while-invisible", _pop_in_hand("PK", "PopKill"), group,
                    (FaultStep(2_500, "outage", duration_ms=3_000),), requires=(POP_CONSUMPTION,),
                    description=pop_broker_kill_while_invisible.__doc__)


def pop_broker_restart_while_invisible() -> Scenario:
    """The broker restarts gracefully while a POP group's copies are invisible (pop invisible time
    8 s): each is revived after the restart once due, as its next attempt (the count raised,
    PopReviveService.reviveRetry) and once only (the revive offset committed at the stop)."""
    group = (ConsumerGroup("cg-poprestart", ("PopRestart",), mode=POP, pop_invisible_ms=8_000),)
    return Scenario("pop-broker-restart-while-invisible", _pop_in_hand("PR", "PopRestart"), group,
                    (FaultStep(2_500, "restart", duration_ms=2_000),), requires=(POP_CONSUMPTION,),
                    description=pop_broker_restart_while_invisible.__doc__)


def pop_broker_restart_while_revive_due() -> Scenario:
    """The broker restarts gracefully just as a POP group's revives fall due (pop invisible time 5 s,
    the restart 5.5 s in, down 3 s): a revive the stop cut short is made after the start, once, with
    the count raised."""
    group = (ConsumerGroup("cg-popdue", ("PopDue",), mode=POP, pop_invisible_ms=5_000),)
    return Scenario("pop-broker-restart-while-revive-due", _pop_in_hand("PD", "PopDue"), group,
                    (FaultStep(5_500, "restart", duration_ms=3_000),), requires=(POP_CONSUMPTION,),
                    description=pop_broker_restart_while_revive_due.__doc__)


def pop_clock_ahead_while_invisible() -> Scenario:
    """The broker's wall clock steps 5 s ahead while a POP group's copies are invisible (pop
    invisible time 8 s, LATERs at 10 s): their checkpoints are due in the broker's clock (timer
    messages of the revive topic, PopReviveService), so a correct broker revives them up to 5 s
    early in true time, each once, as its next attempt (reference.clock, reference.pop)."""
    group = (ConsumerGroup("cg-popclock", ("PopClock",), mode=POP, pop_invisible_ms=8_000),)
    return Scenario("pop-clock-ahead-while-invisible", _pop_in_hand("PT", "PopClock"), group,
                    (FaultStep(at_ms=2_500, action="clock", offset_ms=CLOCK_AHEAD_MS),), requires=(POP_CONSUMPTION,),
                    description=pop_clock_ahead_while_invisible.__doc__)


def _grpc_in_hand(prefix: str) -> tuple[tuple[Message, ...], tuple[ConsumerGroup, ...]]:
    """A SimpleConsumer (invisible duration 10 s) and a PushConsumer (the default retry policy: 1 s,
    5 s, ...) of their own topics, each with copies in every state at once: answered LATER (invisible,
    or backing off), LATER twice, and plain ones acked at once."""
    plans = ((LATER, OK), (), (LATER, LATER, OK), (OK,))
    msgs = tuple(Message(f"{prefix}{kind}{i}", f"{prefix}Grpc{kind}", at_ms=i * 150, plan=plans[i % len(plans)])
                 for kind in ("S", "P") for i in range(8))
    groups = (ConsumerGroup(f"cg-{prefix.lower()}s", (f"{prefix}GrpcS",), mode=GRPC_SIMPLE, pop_invisible_ms=10_000),
              ConsumerGroup(f"cg-{prefix.lower()}p", (f"{prefix}GrpcP",), mode=GRPC_PUSH))
    return msgs, groups


def grpc_proxy_kill_while_invisible() -> Scenario:
    """5.x's proxy is killed -9 while its gRPC consumers' copies are invisible or backing off, and
    started 3 s later: the checkpoints are the broker's, so every copy comes again as its next
    attempt, late only by the outage and the clients' reconnect (grpc-java's backoff); an ack or a
    pop the kill cut off may bring one attempt more, or skip one (reference.pop.unplanned_attempt)."""
    msgs, groups = _grpc_in_hand("GK")
    return Scenario("grpc-proxy-kill-while-invisible", msgs, groups,
                    (FaultStep(2_500, "outage", target=PROXY_TARGET, duration_ms=3_000),), requires=(GRPC,),
                    description=grpc_proxy_kill_while_invisible.__doc__)


def grpc_proxy_restart_while_invisible() -> Scenario:
    """5.x's proxy restarts gracefully while its gRPC consumers' copies are invisible or backing off:
    as its kill, without the kill's cut-off pops."""
    msgs, groups = _grpc_in_hand("GR")
    return Scenario("grpc-proxy-restart-while-invisible", msgs, groups,
                    (FaultStep(2_500, "restart", target=PROXY_TARGET, duration_ms=2_000),), requires=(GRPC,),
                    description=grpc_proxy_restart_while_invisible.__doc__)


def grpc_broker_kill_while_invisible() -> Scenario:
    """The broker behind 5.x's proxy is killed -9 while the gRPC consumers' copies are invisible or
    backing off, and back 3 s later: every copy is revived after the restart as its next attempt,
    late only by the outage (reference.pop, as pop-broker-kill-while-invisible)."""
    msgs, groups = _grpc_in_hand("GB")
    return Scenario("grpc-broker-kill-while-invisible", msgs, groups, (FaultStep(2_500, "outage", duration_ms=3_000),),
                    requires=(GRPC,), description=grpc_broker_kill_while_invisible.__doc__)


def grpc_local_broker_kill_while_invisible() -> Scenario:
    """The proxy in the broker's process (local mode: ProxyStartup starts the broker), killed -9
    with it while the gRPC consumers' copies are invisible or backing off, and back 3 s later: the
    broker's outage is the proxy's, so every copy comes again as its next attempt, late by the
    outage and the clients' reconnect (reference.pop.proxy_outages_of)."""
    msgs, groups = _grpc_in_hand("GL")
    return Scenario("grpc-local-broker-kill-while-invisible", msgs, groups, (FaultStep(2_500, "outage", duration_ms=3_000),),
                    profile=Profile(proxy_mode=PROXY_LOCAL), requires=(GRPC,),
                    description=grpc_local_broker_kill_while_invisible.__doc__)


def _waiting(prefix: str, topic: str) -> tuple[Message, ...]:
    """90 messages over 9 s, levels 3..8 (every sixth retried once): at ``CLUSTER_DOWN_AT_MS`` the
    later half of them waits in the schedule queues."""
    return tuple(Message(f"{prefix}{i:03d}", topic, at_ms=i * 100, delay_level=3 + i % 6,
                         plan=(LATER, OK) if i % 6 == 5 else ()) for i in range(90))


def _down_outage(prefix: str, topic: str, count: int, target: str) -> tuple[tuple[Message, ...], tuple[FaultStep, ...]]:
    """``target`` killed (-9) at ``CLUSTER_DOWN_AT_MS`` for ``CLUSTER_DOWN_MS``, and ``count`` level-2..4
    messages sent while it is down, from 1 s after the kill, 400 ms apart."""
    during = tuple(Message(f"{prefix}{i:03d}", topic, at_ms=CLUSTER_DOWN_AT_MS + 1_000 + i * 400, delay_level=2 + i % 3)
                   for i in range(count))
    return during, (FaultStep(at_ms=CLUSTER_DOWN_AT_MS, action="outage", target=target, duration_ms=CLUSTER_DOWN_MS),)


def two_masters_one_down() -> Scenario:
    """Two masters of two broker names; the second is killed (-9) for 8 s while level-3..8
    messages spread over both fall due, some retried: what the killed broker holds is re-put after
    it is back, the other goes on; sends to the killed one fail (FAILED) until the producer's route
    drops it; a retry whose send-back meets it is re-sent through the client's producer; nothing is
    lost (reference.cluster)."""
    before = _waiting("TM", "TwoMasters")
    during, faults = _down_outage("TD", "TwoMasters", 10, "broker-2")
    return Scenario("two-masters-one-down", before + during, _group("twomasters", "TwoMasters"), faults,
                    profile=Profile(cluster=TWO_MASTERS), description=two_masters_one_down.__doc__)


def master_down_slave_serves() -> Scenario:
    """A master and its slave; the consumer is frozen (SIGSTOP) from 9 s to 15 s while plain
    messages are sent (some to be retried), and the master is killed (-9) at 12 s for 8 s while
    level-3..8 messages wait: the consumer wakes up with the master gone and pulls the plain
    messages from the slave (a consumer that starts while the master is down cannot: it reads its
    offsets from the master, RemoteBrokerOffsetStore.fetchConsumeOffsetFromBroker), a retry's
    send-back cannot reach a master so the client re-consumes it locally, the slave re-puts
    nothing, the delayed messages come after the master is back, and what was consumed from the
    slave may come again once the master is back (its own consume offsets); nothing is lost
    (reference.cluster)."""
    delayed = _waiting("MS", "MasterSlave")
    plain = tuple(Message(f"MP{i:03d}", "MasterSlave", at_ms=9_500 + i * 50, plan=(LATER, OK) if i % 5 == 4 else ())
                  for i in range(30))
    faults = (FaultStep(at_ms=9_000, action="pause", target="consumer", duration_ms=6_000),
              FaultStep(at_ms=CLUSTER_DOWN_AT_MS, action="outage", target="broker", duration_ms=CLUSTER_DOWN_MS))
    return Scenario("master-down-slave-serves", delayed + plain, _group("masterslave", "MasterSlave"), faults,
                    profile=Profile(cluster=MASTER_SLAVE), description=master_down_slave_serves.__doc__)


def slave_down() -> Scenario:
    """A master and its slave; the slave is killed (-9) for 8 s while messages of levels 2..5 fall
    due: an ASYNC_MASTER does not wait for its slave, so nothing a client sees changes
    (reference.cluster)."""
    msgs = tuple(Message(f"SD{i:03d}", "SlaveDown", at_ms=i * 80, delay_level=2 + i % 4,
                         plan=(LATER, OK) if i % 5 == 4 else ()) for i in range(40))
    faults = (FaultStep(at_ms=2_000, action="outage", target="broker-2", duration_ms=CLUSTER_DOWN_MS),)
    return Scenario("slave-down", msgs, _group("slavedown", "SlaveDown"), faults,
                    profile=Profile(cluster=MASTER_SLAVE), description=slave_down.__doc__)


def controller_failover_while_due() -> Scenario:
    """5.x controller mode: two replicas of one broker name; the master is killed (-9) at 12 s
    while level-3..8 messages wait (some retried) and comes back 8 s later as a replica: the
    controller elects the other at once, which re-puts from the delay offsets it synced (re-puts
    made since then may come twice, and each LATER answer of a twice-delivered attempt stores its
    own retry), sends go to the new master once the producer's route has it; nothing is lost
    (reference.cluster)."""
    before = _waiting("CF", "Failover")
    during, faults = _down_outage("CD", "Failover", 15, "broker")
    return Scenario("controller-failover-while-due", before + during, _group("failover", "Failover"), faults,
                    profile=Profile(cluster=CONTROLLER), description=controller_failover_while_due.__doc__)


#: the cluster scenarios (a system with a second broker; the simulator runs master-slave only, and
#: skips the others with the reason)
CLUSTER: tuple[Scenario, ...] = (two_masters_one_down(), master_down_slave_serves(), slave_down(),
                                 controller_failover_while_due())

SHORT: tuple[Scenario, ...] = (kill9_during_level_delivery(), graceful_restart_while_due(), consumer_crash_mid_consume(),
                               broadcast_instance_crash())
NIGHTLY: tuple[Scenario, ...] = SHORT + (
    outage_short(),
    outage_long(),
    repeated_crashes(),
    namesrv_loss(),
    consumer_killed(),
    broker_paused(),
    disk_full_while_due(),
    io_stall_while_due(),
    partition_while_due(),
    latency_while_due(),
    loss_while_due(),
    clock_ahead_while_due(),
    clock_back_while_due(),
    clock_fast_while_due(),
    clock_slow_while_due(),
    batch_crash_then_kill9(),
    async_disk_full_while_due(),
    disk_ratio_while_due(),
    disk_ratio_timers_while_due(),
    orderly_kill9_in_suspension(),
    orderly_consumer_crash(),  # waits out the dead client's queue locks (60 s): nightly
    chosen_levels_restart(),
    orderly_rebalance(),  # a queue in handover may wait out an unlock delay and two rebalances (60 s): nightly
    consume_timeout(),  # the clean-up runs every consumeTimeout, a minute at least: nightly
    consume_timeout_dlq(),
    pop_broker_kill_while_invisible(),
    pop_broker_restart_while_invisible(),
    pop_broker_restart_while_revive_due(),
    pop_clock_ahead_while_invisible(),
    grpc_proxy_kill_while_invisible(),
    grpc_proxy_restart_while_invisible(),
    grpc_broker_kill_while_invisible(),
    grpc_local_broker_kill_while_invisible(),
) + CLUSTER
