"""Consumer retry laws: the retry level sequence, the DLQ after max + 1 failures, the send-back
failure paths (SendMessageProcessor / DefaultMQPushConsumerImpl / ConsumeMessageConcurrentlyService)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hourglass.reference.contract import ContractError
from hourglass.reference.plans import CRASH, LATER, OK, PlanCursor, later_not_stored, next_answer, parse_plan, plan_outcome, replay_cursor
from hourglass.reference.profile import effective_max_reconsume_times
from hourglass.reference.expected import build_expected
from hourglass.reference.retry import dlq_bound, goes_to_dlq, requested_retry_level, retry_level, send_back_route

plans = st.lists(st.sampled_from([OK, LATER, CRASH]), max_size=40).map(tuple)


@given(st.integers(1, 40), st.integers(1, 40))
def test_retry_levels_start_at_3_and_never_decrease(max_level, k):
    assert requested_retry_level(1) == 3
    assert retry_level(k, max_level) <= retry_level(k + 1, max_level) <= max_level
    assert retry_level(k, max_level) == min(3 + k - 1, max_level)


@given(st.integers(0, 40), st.integers(0, 20))
def test_n_failures_end_in_the_dlq_exactly_when_n_exceeds_max(n, max_rt):
    out = plan_outcome((LATER,) * n, max_rt)
    assert out.final_state == ("DLQ" if n >= max_rt + 1 else "CONSUMED")
    assert out.last_attempt == min(n, max_rt)


@given(plans, st.integers(0, 20))
def test_outcome_attempts_count_laters_and_crashes_stay_in_their_attempt(plan, max_rt):
    out = plan_outcome(plan, max_rt)
    assert len(out.crashes) == out.last_attempt + 1
    assert sum(out.crashes) <= plan.count(CRASH)


def test_max_reconsume_times_minus_one_means_16_and_the_consumer_wins():
    assert effective_max_reconsume_times(-1) == 16
    assert effective_max_reconsume_times(3, group_value=16) == 3
    assert effective_max_reconsume_times(None, group_value=5) == 5


def test_level_minus_one_sends_straight_to_the_dlq():
    assert goes_to_dlq(0, 16, delay_level=-1)
    r = send_back_route("g", 0, 16, (1000,) * 18, send_back_ok=True, producer_ok=True, delay_level=-1)
    assert r.topic == "%DLQ%g" and r.via == "broker"


def test_send_back_failure_takes_the_producer_then_the_local_path():
    table = tuple(range(1000, 19_000, 1000))
    assert send_back_route("g", 0, 16, table, True, True).topic == "%RETRY%g"
    prod = send_back_route("g", 0, 16, table, False, True)
    assert (prod.via, prod.topic, prod.level, prod.reconsume_times) == ("producer", "%RETRY%g", 3, 1)
    local = send_back_route("g", 4, 16, table, False, False)
    assert (local.via, local.topic, local.reconsume_times, local.delay_ms) == ("local", None, 5, 5000)


def test_the_producer_path_goes_to_the_dlq_one_attempt_earlier():
    table = (1000,) * 18
    assert send_back_route("g", 15, 16, table, True, True).topic == "%RETRY%g"  # broker: 15 < 16
    assert send_back_route("g", 15, 16, table, False, True).topic == "%DLQ%g"  # header says 16 >= 16


def test_unknown_plan_word_is_named():
    with pytest.raises(ContractError) as e:
        parse_plan(["OK", "RETRY"])
    assert "plan[1]" in str(e.value) and "'RETRY'" in str(e.value)


@given(plans)
def test_redeliveries_of_settled_attempts_do_not_fork_the_plan(plan):
    """Delivering every settled attempt a second time yields the same answers as delivering once."""
    once, twice = [], []
    for words, repeat in ((once, False), (twice, True)):
        cursor, attempt, history = PlanCursor(), 0, []
        for _ in range(len(plan) + 1):
            word, cursor, _ = next_answer(plan, cursor, attempt)
            history.append(attempt)
            words.append(word)
            if repeat and word != CRASH:
                dup, cursor, from_plan = next_answer(plan, cursor, attempt)
                history.append(attempt)
                assert (dup, from_plan) == (OK, False)
            if word == OK:
                break
            attempt += word == LATER
        assert replay_cursor(plan, history) == cursor
    assert once == twice


def test_a_later_whose_send_back_failed_is_repeated_on_redelivery_until_its_local_retry_comes():
    plan = (LATER, LATER, OK)
    word, cursor, _ = next_answer(plan, PlanCursor(), 0)
    assert word == LATER
    cursor = later_not_stored(cursor, 0)  # send-back and re-send failed: only a local re-consume
    assert next_answer(plan, cursor, 0)[:1] == (LATER,)  # the consumer died: the copy comes again
    word, cursor, from_plan = next_answer(plan, cursor, 1)  # the local re-consume (attempt 1)
    assert (word, from_plan) == (LATER, True)
    assert next_answer(plan, cursor, 0)[0] == OK  # attempt 0 is settled now


@given(max_rt=st.integers(0, 3), laters=st.integers(0, 5))
def test_a_dlq_entry_is_owed_once_the_last_allowed_attempt_was_answered_later(max_rt, laters):
    run = {"run_id": "r", "profile": {"message_delay_level": "1s 2s 3s 4s 5s 6s", "max_reconsume_times": max_rt,
                                     "flush_delay_offset_interval_ms": 10_000, "slack_ms": 1_000}}
    send = {"type": "send", "ts_ms": 0, "born_ms": 0, "key": "k", "topic": "T", "delay_level": 0, "status": "SEND_OK",
            "plan": ["LATER"] * laters}
    delivered = [{"type": "deliver", "ts_ms": 1_000 * (a + 1), "key": "k", "group": "g", "topic": "T", "queue_id": 0,
                  "queue_offset": a, "msg_id": "m", "reconsume_times": a, "born_ms": 0, "store_ms": 1_000 * a + 900,
                  "outcome": "LATER"} for a in range(min(laters, max_rt + 1))]
    owed = dlq_bound(build_expected(run, [send, *delivered]), delivered)
    # goes_to_dlq: the LATER of attempt max_rt sends it to %DLQ%g
    if laters > max_rt:
        assert owed == {"g": ({"k"}, 1_000 * (max_rt + 1))}
    else:
        assert owed == {}
    assert dlq_bound(build_expected(run, [send, *delivered[:max_rt]]), delivered[:max_rt]) == {}
