"""The expected table: one row per attempt the plan leads to, windows that follow the rules, bad
input named by field and value."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hourglass.reference.contract import ContractError
from hourglass.reference.expected import EXPECTED_COLUMNS, ExpectedAttempt, build_expected, build_expected_rows, rule_duplicate
from hourglass.reference.plans import CRASH, LATER, OK, plan_outcome
from hourglass.reference.profile import parse_profile

T0 = 1_763_800_000_000
LEVELS = "1s 2s 3s 4s 5s"


def run(**profile):
    p = {"message_delay_level": LEVELS, "max_reconsume_times": 16, "flush_delay_offset_interval_ms": 10_000, "slack_ms": 3000}
    p.update(profile)
    return {"run_id": "r", "profile": p}


def send(key, ts, level=0, plan=None, status="SEND_OK", born=None, **kw):
    e = {"type": "send", "ts_ms": ts, "key": key, "topic": "T", "delay_level": level, "status": status,
         "born_ms": ts - 2 if born is None else born, **kw}
    if plan:
        e["plan"] = list(plan)
    return e


def deliver(key, ts, rt, outcome, store=None, group="g", clo=0, queue_topic="T"):
    return {"type": "deliver", "ts_ms": ts, "key": key, "group": group, "topic": "T", "queue_id": 0,
            "queue_offset": 0, "queue_topic": queue_topic, "commit_log_offset": clo, "msg_id": "m",
            "reconsume_times": rt, "born_ms": T0, "store_ms": ts if store is None else store, "outcome": outcome}


plans = st.lists(st.sampled_from([OK, LATER, CRASH]), max_size=25).map(tuple)


@given(plans, st.integers(-2, 9), st.integers(0, 17), st.sampled_from(["SEND_OK", "UNKNOWN", "FAILED"]))
def test_one_row_per_attempt_the_plan_leads_to(plan, level, max_rt, status):
    rows = build_expected(run(max_reconsume_times=max_rt), [send("k", T0, level, plan, status)])
    out = plan_outcome(plan or (OK,), max_rt)
    assert [r.attempt for r in rows] == list(range(out.last_attempt + 1))
    assert [r.final for r in rows] == [False] * out.last_attempt + [True]
    assert {r.final_state for r in rows} == {out.final_state} and {r.send_status for r in rows} == {status}
    first = rows[0]
    assert first.level == (0 if level <= 0 else min(level, 5)) and first.clamped == (level > 5)
    assert first.earliest_ms == T0 - 2 + first.delay_ms  # born + delay: never due before its delay
    assert first.latest_ms == T0 + first.delay_ms + 3000
    for r in rows[1:]:
        assert r.requested_level == 3 + r.attempt - 1 and r.level == min(r.requested_level, 5)
        assert r.earliest_ms is None  # no LATER observed yet


@given(st.lists(st.integers(1, 20_000), min_size=1, max_size=6))
def test_retries_are_anchored_at_the_later_they_follow(gaps):
    plan = (LATER,) * len(gaps) + (OK,)
    events, t = [send("k", T0, 1, plan)], T0
    for k, gap in enumerate(gaps):
        t += gap
        events.append(deliver("k", t, k, LATER))
    rows = build_expected(run(), events)
    t = T0
    for k, gap in enumerate(gaps, start=1):
        t += gap
        r = rows[k]
        assert r.anchor_ms == t and r.earliest_ms == t + r.delay_ms and r.latest_ms == t + r.delay_ms + 3000
        assert r.local_earliest_ms == t + 5000 and r.queue_topic == "%RETRY%g"


def test_an_outage_over_the_due_time_widens_the_window_to_ready_plus_first_delay():
    faults = [{"type": "fault", "ts_ms": T0 + 500, "action": "kill", "target": "broker"},
              {"type": "fault", "ts_ms": T0 + 600, "action": "start", "target": "broker"},
              {"type": "fault", "ts_ms": T0 + 9000, "action": "ready", "target": "broker"}]
    (row,) = build_expected(run(), [send("k", T0, 2)] + faults)
    assert row.latest_ms == T0 + 9000 + 1000 + 3000 and "kill" in row.widened_by


def test_timer_rows_use_the_rounded_deliver_time_and_flag_too_far_ones():
    rows = build_expected(run(), [send("t", T0 + 10, deliver_at_ms=T0 + 5500, born=T0),
                                  send("far", T0 + 20, deliver_at_ms=T0 + 4 * 86_400_000, born=T0)])
    t, far = rows
    assert t.earliest_ms == T0 + 5000 and t.level == 0 and t.deliver_at_ms == T0 + 5500
    assert far.expected_rejection and "timerMaxDelaySec" in far.expected_rejection


def test_rows_and_objects_agree():
    events = [send("a", T0, 2, (LATER, OK)), deliver("a", T0 + 2100, 0, LATER)]
    objs = build_expected(run(), events)
    assert [tuple(getattr(o, c) for c in EXPECTED_COLUMNS) for o in objs] == build_expected_rows(run(), events)
    assert objs[1] == ExpectedAttempt(*build_expected_rows(run(), events)[1])


def test_per_group_max_reconsume_times_wins_over_the_profile():
    events = [send("k", T0, 0, (LATER,) * 3), deliver("k", T0 + 1, 0, LATER, group="small")]
    rows = build_expected(run(max_reconsume_times_by_group={"small": 2}), events)
    assert rows[-1].final_state == "DLQ" and rows[-1].attempt == 2


@pytest.mark.parametrize("field,value,needle", [
    ("message_delay_level", "1s  5s", "message_delay_level"),
    ("message_delay_level", 5, "message_delay_level"),
    ("max_reconsume_times", -2, "max_reconsume_times"),
    ("flush_delay_offset_interval_ms", -1, "flush_delay_offset_interval_ms"),
    ("slack_ms", -5, "slack_ms"),
    ("slack_ms", "3s", "slack_ms"),
])
def test_bad_profile_fields_are_named_with_their_value(field, value, needle):
    with pytest.raises(ContractError) as e:
        build_expected(run(**{field: value}), [])
    assert needle in str(e.value) and repr(value) in str(e.value)


def test_missing_profile_field_is_named():
    p = run()["profile"]
    del p["slack_ms"]
    with pytest.raises(ContractError, match="slack_ms"):
        parse_profile(p)


def test_unknown_plan_word_in_a_send_is_named():
    with pytest.raises(ContractError) as e:
        build_expected(run(), [send("k", T0, 0, ("OK", "NACK"))])
    assert "'NACK'" in str(e.value) and "'k'" in str(e.value)


def test_duplicate_rulings():
    first = deliver("k", T0 + 1000, 0, OK, clo=10)
    again = deliver("k", T0 + 9000, 0, OK, clo=10)
    assert not rule_duplicate(run(), [], first, again).allowed
    crash = dict(first, outcome=CRASH)
    assert rule_duplicate(run(), [], crash, again).allowed
    other_crash = deliver("x", T0 + 2000, 0, CRASH, clo=99)
    assert rule_duplicate(run(), [other_crash], first, again).allowed
    crash_fault = {"type": "fault", "ts_ms": T0 + 2000, "action": "crash", "target": "consumer", "group": "g"}
    assert rule_duplicate(run(), [crash_fault], first, again).allowed
    assert not rule_duplicate(run(), [dict(crash_fault, group="other")], first, again).allowed
    kill = {"type": "fault", "ts_ms": T0 + 5000, "action": "kill", "target": "consumer"}
    assert rule_duplicate(run(), [kill], first, again).allowed
    copy = deliver("k", T0 + 9000, 0, OK, clo=500)
    ruling = rule_duplicate(run(), [kill], first, copy)
    assert ruling.cause == "scheduler" and not ruling.allowed


def test_a_local_retry_window_widens_over_a_consumer_pause():
    events = [send("k", T0, 0, (LATER, OK)), deliver("k", T0 + 100, 0, LATER),
              {"type": "fault", "ts_ms": T0 + 200, "action": "pause", "target": "consumer"},
              {"type": "fault", "ts_ms": T0 + 20_000, "action": "resume", "target": "consumer"}]
    retry = build_expected(run(), events)[1]
    assert retry.local_earliest_ms == T0 + 5100 and retry.local_latest_ms == T0 + 20_000 + 3000
    assert retry.latest_ms == T0 + 100 + 3000 + 3000  # the broker's window does not move for a consumer


def test_a_repeated_later_anchors_the_earliest_at_the_first_and_the_latest_at_the_last():
    events = [send("k", T0, 0, (LATER, OK)), deliver("k", T0 + 100, 0, LATER), deliver("k", T0 + 4000, 0, LATER)]
    retry = build_expected(run(), events)[1]
    assert retry.earliest_ms == T0 + 100 + 3000 and retry.latest_ms == T0 + 4000 + 3000 + 3000
    assert retry.local_earliest_ms == T0 + 5100 and retry.local_latest_ms == T0 + 4000 + 5000 + 3000
