"""The hand-made runs: for each invariant, runs that keep it and runs that break it.

Each function returns a :class:`RunBuilder`; its name is the run_id. Windows worked by hand with
the table ``1s 5s 10s`` and slack 3 s: a level-2 message born at 0 (send returned at 5) is due at
5000 and late after 8005.
"""

from __future__ import annotations

from hourglass.reference.contract import POP_REVIVED
from suites.selftest.checker.runs import GROUP, T0, TOPIC, RunBuilder


def clean_mix() -> RunBuilder:
    """Every exercised invariant holds: delayed, undelayed, one retry, two levels in order."""
    return (RunBuilder("clean-mix")
            .send("a", 0, level=2).deliver("a", 5100)
            .send("b", 100, level=2).deliver("b", 5200)
            .send("c", 200, level=0).deliver("c", 210)
            .send("d", 300, level=1, plan=["LATER", "OK"]).deliver("d", 1400, outcome="LATER")
            .deliver("d", 1410 + 10_000 + 50, attempt=1))


def lost() -> RunBuilder:
    return RunBuilder("lost").send("gone", 0, level=1).send("kept", 10).deliver("kept", 20)


def pending_at_end() -> RunBuilder:
    """Sent 1 s before the run ended at level 3: its window is still open."""
    return RunBuilder("pending-at-end", ended=60_000).send("late-sent", 59_000, level=3).send("x", 0).deliver("x", 10)


def unknown_sends() -> RunBuilder:
    """UNKNOWN sends: one delivered (recovered), one never (not lost)."""
    return (RunBuilder("unknown-sends").send("u1", 0, status="UNKNOWN").deliver("u1", 10)
            .send("u2", 100, status="UNKNOWN").send("ok", 200).deliver("ok", 210))


def early() -> RunBuilder:
    return RunBuilder("early").send("hasty", 0, level=2).deliver("hasty", 2000)


def early_clamped() -> RunBuilder:
    """Level 5 on a 3-level table behaves as level 3 (10 s): stored at 6 s is early."""
    return RunBuilder("early-clamped").send("clamp", 0, level=5).deliver("clamp", 6000)


def late_with_kill() -> RunBuilder:
    """Level 1, broker killed and ready again at 2 s: the deadline moves to 2000 + 1000 + 3000;
    stored at 9000 is late, and the kill is the fault that overlaps."""
    return (RunBuilder("late-with-kill").fault(500, "kill").fault(1000, "start").fault(2000, "ready")
            .send("slow", 0, level=1).deliver("slow", 9000))


def late_plain() -> RunBuilder:
    return RunBuilder("late-plain").send("slow", 0, level=1).deliver("slow", 5000)


def level_order_broken() -> RunBuilder:
    """first's send returned at 5, second was born at 100: second must not be stored before first."""
    return (RunBuilder("level-order-broken").send("first", 0, level=2).send("second", 100, level=2)
            .deliver("first", 5300).deliver("second", 5200))


def level_order_kept() -> RunBuilder:
    return (RunBuilder("level-order-kept").send("first", 0, level=2).send("second", 100, level=2)
            .deliver("first", 5050).deliver("second", 5150))


def level_order_unknown_stored_late() -> RunBuilder:
    """late's send timed out in a partition (UNKNOWN) and TCP delivered it after the heal: stored
    after second, born after late's send returned — no LEVEL_ORDER finding (reference.network)."""
    return (RunBuilder("level-order-unknown").fault(0, "partition").fault(2000, "partition_end")
            .send("late", 0, level=2, status="UNKNOWN").send("second", 100, level=2)
            .deliver("late", 9000).deliver("second", 5150))


def retry_gap() -> RunBuilder:
    """Attempt 0 answered LATER, then attempt 2 arrives: attempt 1 is missing."""
    return (RunBuilder("retry-gap").send("r", 0, plan=["LATER", "LATER", "OK"]).deliver("r", 10, outcome="LATER")
            .deliver("r", 10 + 10 + 10_000 + 50, attempt=2))


def retry_after_ok() -> RunBuilder:
    """Attempt 0 answered OK, yet attempt 1 came."""
    return RunBuilder("retry-after-ok").send("r", 0).deliver("r", 10).deliver("r", 10 + 10 + 10_000 + 50, attempt=1)


def pop_revived_after_ok() -> RunBuilder:
    """A POP copy popped at 1000 and answered OK at 1004, revived all the same at 6100 (invisible
    time 5 s): RETRY_SCHEDULE names the OK and the checkpoint's due time (6000)."""
    b = RunBuilder("pop-revived-after-ok", pop_groups={GROUP: {"invisible_ms": 5_000, "release": [5, 5, 0]}})
    return (b.send("p", 0, plan=["OK"]).deliver("p", 10, at=1004, pop_ms=T0 + 1000, queue_topic=TOPIC)
            .deliver("p", 6100, attempt=1, at=6110, pop_ms=T0 + 6105, queue_topic=TOPIC))


def _pop_gap(run_id: str, revived: bool) -> RunBuilder:
    """A POP copy answered LATER at 1004; attempt 1 never reached the listener, attempt 2 did (proof C,
    pop-later). ``revived``: the broker's pop.log recorded the revive that put attempt 2's very copy."""
    b = RunBuilder(run_id, pop_groups={GROUP: {"invisible_ms": 5_000, "release": [5, 5, 0]}})
    b.send("p", 0, plan=["LATER", "LATER", "OK"]).deliver("p", 10, at=1004, pop_ms=T0 + 1000, queue_topic=TOPIC, outcome="LATER")
    b.deliver("p", 12_100, attempt=2, at=12_110, pop_ms=T0 + 12_105, queue_topic=TOPIC, copy=7_700)
    if revived:
        b.fault(12_100, POP_REVIVED, group=GROUP, commit_log_offset=7_700,
                cause="pop.log: %RETRY%g_t queue 0 offset 1")
        b.fault(12_100, POP_REVIVED, group="another-group", commit_log_offset=7_800, cause="pop.log: another group's")
    return b


def _pop_answered_late(run_id: str, next_popped: int) -> RunBuilder:
    """A POP copy popped at 1000 (invisible 5 s: revive time 6000) that its starved consumer answered
    LATER only at 8000; attempt 1 popped at ``next_popped`` (lateB, grpc-simple-redelivery)."""
    b = RunBuilder(run_id, pop_groups={GROUP: {"invisible_ms": 5_000, "release": [5, 5, 0]}})
    b.send("p", 0, plan=["LATER", "OK"]).deliver("p", 10, at=8_000, pop_ms=T0 + 1000, queue_topic=TOPIC, outcome="LATER")
    return b.deliver("p", 6_100, attempt=1, at=next_popped + 10, pop_ms=T0 + next_popped, queue_topic=TOPIC)


def pop_answered_after_revive() -> RunBuilder:
    return _pop_answered_late("pop-answered-after-revive", 6_200)


def pop_popped_before_revive() -> RunBuilder:
    return _pop_answered_late("pop-popped-before-revive", 5_500)


def pop_popped_unseen() -> RunBuilder:
    return _pop_gap("pop-popped-unseen", revived=True)


def pop_gap_unrecorded() -> RunBuilder:
    return _pop_gap("pop-gap-unrecorded", revived=False)


def dlq_kept() -> RunBuilder:
    """max_reconsume_times 1: LATER on attempts 0 and 1 sends it to the DLQ."""
    return (RunBuilder("dlq-kept", max_reconsume_times=1).send("d", 0, plan=["LATER", "LATER"])
            .deliver("d", 10, outcome="LATER").deliver("d", 10 + 10 + 10_000 + 50, attempt=1, outcome="LATER")
            .dlq("d", 30_000, attempt=1))


def dlq_wrong_message() -> RunBuilder:
    return RunBuilder("dlq-wrong-message", max_reconsume_times=1).send("fine", 0).deliver("fine", 10).dlq("fine", 30_000, attempt=0)


def dlq_twice() -> RunBuilder:
    return (RunBuilder("dlq-twice", max_reconsume_times=0).send("d", 0, plan=["LATER"]).deliver("d", 10, outcome="LATER")
            .dlq("d", 30_000, attempt=0).dlq("d", 30_100, attempt=0))


def consumer_duplicate() -> RunBuilder:
    """The same stored copy delivered again after an OK answer, with no crash and no kill."""
    return RunBuilder("consumer-duplicate").send("dup", 0).deliver("dup", 10, copy=7000).deliver("dup", 10, copy=7000, at=500)


def consumer_redelivery_after_crash() -> RunBuilder:
    return (RunBuilder("consumer-redelivery-after-crash").send("c", 0, plan=["CRASH", "OK"])
            .deliver("c", 10, copy=7000, outcome="CRASH").deliver("c", 10, copy=7000, at=2000))


def scheduler_duplicate() -> RunBuilder:
    """A second stored copy of a delayed message's first attempt, with no kill of the broker."""
    return (RunBuilder("scheduler-duplicate").send("s", 0, level=1).deliver("s", 1050, copy=7000)
            .deliver("s", 1060, copy=7100, at=1200))


def reversed_arrival_allowed() -> RunBuilder:
    """A kill -9 right after a re-put (no persist since): the broker re-puts ``r`` again after its
    restart, and that new copy reaches the consumer 40 ms before the old one. ``q`` (same level,
    born after ``r``'s send returned) was stored between the two copies. The attempt's time is
    the old copy's (1050): on time, in order; the new copy is an allowed scheduler duplicate."""
    return (RunBuilder("reversed-arrival-allowed").send("r", 0, level=1).send("q", 100, level=1)
            .fault(5000, "kill").fault(6000, "start").fault(8000, "ready")
            .deliver("q", 1150, copy=7200)
            .deliver("r", 17_050, copy=7100, at=17_060).deliver("r", 1050, copy=7000, at=17_100))


def reversed_arrival_persisted() -> RunBuilder:
    """As above, but the old copy was re-put long before the last persist preceding the kill at
    30 s: the new copy (re-put at 40 s, delivered first) is a scheduler duplicate not allowed.
    A consumer kill between the two deliveries is no cause of the re-put."""
    return (RunBuilder("reversed-arrival-persisted").send("r", 0, level=1).send("q", 100, level=1)
            .fault(30_000, "kill").fault(31_000, "start").fault(33_000, "ready")
            .deliver("q", 1150, copy=7200)
            .deliver("r", 40_050, copy=7100, at=40_060).fault(40_080, "kill", "consumer")
            .deliver("r", 1050, copy=7000, at=40_100))


def integrity_topic() -> RunBuilder:
    """A retry delivered with the retry topic not restored."""
    return (RunBuilder("integrity-topic").send("t", 0, plan=["LATER", "OK"]).deliver("t", 10, outcome="LATER")
            .deliver("t", 10 + 10 + 10_000 + 50, attempt=1, topic="%RETRY%g"))


def integrity_body() -> RunBuilder:
    return RunBuilder("integrity-body").send("b", 0, body_crc=1234).deliver("b", 10, body_crc=999)


def integrity_unknown_key() -> RunBuilder:
    return RunBuilder("integrity-unknown-key").send("a", 0).deliver("a", 10).deliver("stranger", 50)


def timer_kept() -> RunBuilder:
    """A 5.x timer message due 3.5 s after birth (rounded down to the 1 s precision: 3 s)."""
    return RunBuilder("timer-kept").send("tm", 0, deliver_at_ms=T0 + 3500).deliver("tm", 3200)


def timer_too_far() -> RunBuilder:
    """A deliver time four days ahead must be refused (timerMaxDelaySec is three days)."""
    return RunBuilder("timer-too-far").send("far", 0, deliver_at_ms=T0 + 4 * 86_400_000).send("x", 10).deliver("x", 20)


def refused_accepted() -> RunBuilder:
    """A 64-byte body the broker refused as MESSAGE_ILLEGAL (13): a correct broker takes it."""
    return RunBuilder("refused-accepted").send("ok-body", 0, status="FAILED", body_size=64, response_code=13).send("x", 10).deliver("x", 20)


def refused_expected() -> RunBuilder:
    """An empty body the client refused (MESSAGE_ILLEGAL), as the model expects; and a send that
    failed for another reason (no answer code): neither is a violation."""
    return (RunBuilder("refused-expected").send("empty", 0, status="FAILED", body_size=0, response_code=13)
            .send("down", 5, status="FAILED", body_size=64).send("x", 10).deliver("x", 20))


def timer_delay_sec() -> RunBuilder:
    """TIMER_DELAY_SEC 3 counts from the broker's clock at arrival (between born and the answer):
    due at 3 s rounded down, never before born + 2 s."""
    return RunBuilder("timer-delay-sec").send("ts", 0, delay_time_sec=3).deliver("ts", 2600)


def _orderly(run_id: str, b_at: int) -> RunBuilder:
    """An orderly group (suspend 1000 ms) whose queue holds A then B: A answers LATER at 20 and is
    consumed again (its stored copy) at 1030; B, behind it, is first delivered at ``b_at``."""
    return (RunBuilder(run_id, orderly_groups={GROUP: 1000}).send("A", 0, plan=["LATER", "OK"]).send("B", 5)
            .deliver("A", 10, outcome="LATER", at=20, copy=1100)
            .deliver("A", 10, attempt=1, at=1030, copy=1100, queue_topic=TOPIC)
            .deliver("B", 15, at=b_at, copy=1200))


def queue_order_kept() -> RunBuilder:
    return _orderly("queue-order-kept", 1040)


def queue_order_broken() -> RunBuilder:
    """B passes A while A is suspended."""
    return _orderly("queue-order-broken", 500)


ALL = [clean_mix, lost, pending_at_end, unknown_sends, early, early_clamped, late_with_kill, late_plain,
       level_order_broken, level_order_kept, level_order_unknown_stored_late, retry_gap, retry_after_ok, pop_revived_after_ok, pop_popped_unseen,
       pop_gap_unrecorded, pop_answered_after_revive, pop_popped_before_revive, dlq_kept, dlq_wrong_message, dlq_twice,
       consumer_duplicate, consumer_redelivery_after_crash, scheduler_duplicate, reversed_arrival_allowed,
       reversed_arrival_persisted, integrity_topic, integrity_body,
       integrity_unknown_key, timer_kept, timer_too_far, refused_accepted, refused_expected, timer_delay_sec, queue_order_kept, queue_order_broken]
