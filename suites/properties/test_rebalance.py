"""NO_DUPLICATE and group membership: a consumer joining a group that already has a member moves
queues (rebalance); what the old owner consumed but had not committed is delivered again. The
model allows that redelivery for a rebalance window after the join, and only then."""

from __future__ import annotations

from hourglass.reference.expected import REBALANCE_WINDOW_MS, rule_duplicate

RUN = {"run_id": "r", "scenario": "s", "system": {}, "started_ms": 0, "ended_ms": 0,
       "profile": {"message_delay_level": "1s 2s", "max_reconsume_times": 16, "flush_delay_offset_interval_ms": 10000, "slack_ms": 1000}}


def deliver(ts, outcome="OK"):
    return {"type": "deliver", "ts_ms": ts, "key": "k", "group": "g", "topic": "T", "queue_id": 1, "queue_offset": 7,
            "commit_log_offset": 4096, "msg_id": "m", "reconsume_times": 0, "born_ms": 0, "store_ms": ts - 10, "outcome": outcome}


def start(ts, name, group="g"):
    return {"type": "fault", "ts_ms": ts, "action": "start", "target": "consumer", "name": name, "group": group}


def test_second_member_joining_allows_redelivery_within_the_window():
    faults = [start(100, "g-0"), start(900, "g-1")]
    r = rule_duplicate(RUN, faults, deliver(1_000), deliver(3_000))
    assert r.allowed and r.cause == "consumer" and "joined group" in r.reason


def test_a_lone_member_allows_nothing():
    r = rule_duplicate(RUN, [start(100, "g-0")], deliver(1_000), deliver(3_000))
    assert not r.allowed


def test_join_long_before_is_no_excuse():
    faults = [start(100, "g-0"), start(900, "g-1")]
    r = rule_duplicate(RUN, faults, deliver(1_000), deliver(900 + REBALANCE_WINDOW_MS + 1))
    assert not r.allowed


def test_another_groups_join_is_no_excuse():
    faults = [start(100, "g-0"), start(900, "h-1", group="h"), start(950, "h-2", group="h")]
    assert not rule_duplicate(RUN, faults, deliver(1_000), deliver(3_000)).allowed


def on(member, ts, outcome="OK", **extra):
    return {**deliver(ts, outcome), "member": member, **extra}


def test_a_copy_taken_again_by_another_member_soon_after_its_answer_is_a_rebalance():
    """Seen in a proof run on a starved broker: the retry queue of a two-member group moved from
    member 0 (answered at +0) to member 1 (the same copy at +555 ms), 32 s after member 1 joined:
    past the join's window, but the delivery itself shows the move."""
    faults = [start(100, "g-0"), start(900, "g-1")]
    r = rule_duplicate(RUN, faults, on("g-0", 40_000), on("g-1", 40_555))
    assert r.allowed and r.cause == "consumer" and "rebalance moved its queue" in r.reason


def test_the_same_member_taking_a_copy_again_is_no_rebalance():
    faults = [start(100, "g-0"), start(900, "g-1")]
    assert not rule_duplicate(RUN, faults, on("g-0", 40_000), on("g-0", 40_555)).allowed


def test_a_move_long_after_the_answer_is_no_excuse():
    """The old owner commits its offsets every 5 s: a copy answered a rebalance window before is committed."""
    faults = [start(100, "g-0"), start(900, "g-1")]
    assert not rule_duplicate(RUN, faults, on("g-0", 40_000), on("g-1", 40_001 + REBALANCE_WINDOW_MS)).allowed


def test_pop_copies_move_with_no_member():
    faults = [start(100, "g-0"), start(900, "g-1")]
    r = rule_duplicate(RUN, faults, on("g-0", 40_000, pop_ms=39_990), on("g-1", 40_555, pop_ms=40_500))
    assert not r.allowed


def test_records_without_a_member_are_judged_as_before():
    faults = [start(100, "g-0"), start(900, "g-1")]
    assert not rule_duplicate(RUN, faults, deliver(40_000), deliver(40_555)).allowed
