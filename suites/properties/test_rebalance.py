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
