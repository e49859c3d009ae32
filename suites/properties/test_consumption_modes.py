"""The consumer's own retry choices (reference.plans, reference.retry): the delay level a LATER asks
for (ConsumeConcurrentlyContext.setDelayLevelWhenNextConsume) and a batch answered with an ack index
(ConsumeMessageConcurrentlyService.processConsumeResult)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hourglass.reference.contract import ContractError, validate_event
from hourglass.reference.expected import build_expected
from hourglass.reference.plans import (CRASH, LATER, OK, answer_word, by_ack_index, is_later, later_level, later_word, parse_plan,
                             plan_outcome, with_ack_laters)
from hourglass.reference.retry import asked_retry_level, clamped_level, send_back_route

T0 = 1_763_800_000_000
TABLE = "1s 2s 3s 4s 5s 6s 7s 8s 9s 10s"
words = st.one_of(st.sampled_from([OK, LATER, CRASH]), st.integers(-3, 30).map(later_word))
plans = st.lists(words, max_size=12).map(tuple)


def test_a_later_word_says_the_level_it_asks_for():
    assert [later_level(w) for w in (LATER, "LATER:0", "LATER:7", "LATER:-1")] == [0, 0, 7, -1]
    assert is_later("LATER:7") and not is_later(OK) and not is_later(CRASH)
    assert answer_word("LATER:7") == LATER and answer_word(CRASH) == CRASH
    assert parse_plan(["LATER:9", "OK"]) == ("LATER:9", OK)


@pytest.mark.parametrize("word", ["LATER:", "LATER:x", "LATER:2147483648", "later:3", "LATER:+3", "OK:1"])
def test_a_malformed_later_word_is_refused_naming_its_place(word):
    with pytest.raises(ContractError) as e:
        parse_plan([OK, word], "events: send of key 'k'")
    assert e.value.field == "plan[1]" and e.value.found == word


def test_the_event_contract_takes_later_words_in_a_plan_and_the_asked_level_on_a_delivery():
    send = {"type": "send", "ts_ms": T0, "key": "k", "topic": "T", "status": "SEND_OK", "plan": ["LATER:9", "OK"]}
    assert validate_event(send) is send
    with pytest.raises(ContractError, match="LATER:<"):
        validate_event({**send, "plan": ["LATER:nine"]})


@given(st.integers(1, 40), st.integers(-5, 60), st.integers(1, 40))
def test_the_broker_takes_an_asked_level_as_given_and_zero_as_its_own_choice(k, asked, max_level):
    level = asked_retry_level(k, asked)
    assert level == (asked if asked > 0 else 3 + k - 1)
    assert clamped_level(level, max_level) == min(level, max_level)


@given(plans, st.integers(0, 20))
def test_a_plan_ends_in_the_dlq_at_its_first_later_below_zero_or_past_the_maximum(plan, max_rt):
    out = plan_outcome(plan, max_rt)
    answered = plan[:next((i for i, w in enumerate(plan) if w == OK), len(plan))]  # an OK ends the message
    laters = [w for w in answered if is_later(w)]
    dlq_at = next((i for i, w in enumerate(laters) if i >= max_rt or later_level(w) < 0), None)
    assert out.final_state == ("DLQ" if dlq_at is not None else "CONSUMED")
    assert out.last_attempt == (dlq_at if dlq_at is not None else len(laters))
    assert out.asked == tuple(later_level(w) for w in laters[:out.last_attempt])


def test_the_clients_resend_ignores_the_asked_level_and_a_dlq_request():
    """DefaultMQPushConsumerImpl.sendMessageBack's fallback asks for 3 + reconsumeTimes."""
    table = tuple(range(1000, 19_000, 1000))
    assert send_back_route("g", 0, 16, table, True, True, delay_level=9).level == 9
    prod = send_back_route("g", 0, 16, table, False, True, delay_level=9)
    assert (prod.topic, prod.level) == ("%RETRY%g", 3)
    assert send_back_route("g", 0, 16, table, False, True, delay_level=-1).topic == "%RETRY%g"


@given(plans, st.dictionaries(st.integers(0, 6), st.integers(-1, 12), max_size=3))
def test_laters_by_the_ack_index_take_no_plan_entry(plan, sent_back):
    effective = with_ack_laters(plan, sent_back)
    assert with_ack_laters(plan, {}) == plan
    # the plan's own words keep their order; what was put in is a LATER at each sent-back attempt reached
    own = list(effective)
    attempt = 0
    for w in effective:
        if attempt in sent_back and w == later_word(sent_back[attempt]):
            own.remove(w)
        attempt += is_later(w)
    assert tuple(own) == plan[:len(own)]


def test_a_delivery_after_the_first_failing_one_of_its_batch_is_sent_back_by_the_ack_index():
    assert not by_ack_index({"batch_index": 1, "ack_index": 0})  # the failing one: its own plan
    assert by_ack_index({"batch_index": 2, "ack_index": 0})
    assert not by_ack_index({"batch_index": 3, "ack_index": 3}) and not by_ack_index({})


def _run(events: list[dict]) -> list:
    run = {"run_id": "r", "scenario": "s", "system": {}, "started_ms": T0, "ended_ms": T0 + 120_000,
           "profile": {"message_delay_level": TABLE, "max_reconsume_times": 16, "flush_delay_offset_interval_ms": 10000,
                       "slack_ms": 3000}}
    return sorted(build_expected(run, events), key=lambda a: (a.key, a.attempt))


def _deliver(key: str, at: int, attempt: int, outcome: str, **extra) -> dict:
    return {"type": "deliver", "ts_ms": T0 + at, "key": key, "group": "g", "topic": "T", "queue_id": 0,
            "queue_offset": at, "msg_id": key, "reconsume_times": attempt, "born_ms": T0, "store_ms": T0 + at - 5,
            "outcome": outcome, **extra}


def test_the_model_waits_the_asked_level_and_routes_minus_one_to_the_dlq():
    sends = [{"type": "send", "ts_ms": T0, "key": k, "topic": "T", "status": "SEND_OK", "plan": plan, "born_ms": T0}
             for k, plan in (("nine", ["LATER:9", "OK"]), ("big", ["LATER:99", "OK"]), ("dlq", ["LATER", "LATER:-1"]))]
    laters = [_deliver("nine", 100, 0, LATER, next_level=9), _deliver("big", 100, 0, LATER, next_level=99),
              _deliver("dlq", 100, 0, LATER), _deliver("dlq", 3200, 1, LATER, next_level=-1)]
    rows = {(a.key, a.attempt): a for a in _run(sends + laters)}
    nine, big = rows[("nine", 1)], rows[("big", 1)]
    assert (nine.requested_level, nine.level, nine.delay_ms, nine.earliest_ms) == (9, 9, 9000, T0 + 100 + 9000)
    assert (big.requested_level, big.level, big.clamped, big.delay_ms) == (99, 10, True, 10_000)
    assert rows[("dlq", 1)].final and rows[("dlq", 1)].final_state == "DLQ" and ("dlq", 2) not in rows


def test_a_send_back_that_may_have_failed_widens_the_asked_retry_to_the_clients_resend():
    send = {"type": "send", "ts_ms": T0, "key": "k", "topic": "T", "status": "SEND_OK", "plan": ["LATER:9", "OK"], "born_ms": T0}
    failed = {"type": "fault", "ts_ms": T0 + 5200, "action": "send_back_failed", "target": "consumer", "group": "g", "key": "k"}
    retry = {(a.key, a.attempt): a for a in _run([send, _deliver("k", 100, 0, LATER, next_level=9), failed])}[("k", 1)]
    assert retry.earliest_ms == T0 + 100 + 3000  # the re-send's 3 + 0 = level 3
    assert "re-send" in retry.widened_by


def test_a_message_sent_back_by_the_ack_index_gets_one_more_attempt_its_plan_answers():
    """Batch [a, b, c] with b failing (ack index 0): c is sent back unasked at b's level 4, and its
    plan's OK answers its retry."""
    sends = [{"type": "send", "ts_ms": T0, "key": k, "topic": "T", "status": "SEND_OK", "plan": p, "born_ms": T0}
             for k, p in (("a", ["OK"]), ("b", ["LATER:4", "OK"]), ("c", ["OK"]))]
    batch = [_deliver("a", 100, 0, OK, batch_index=0, ack_index=0),
             _deliver("b", 100, 0, LATER, batch_index=1, ack_index=0, next_level=4),
             _deliver("c", 100, 0, LATER, batch_index=2, ack_index=0, next_level=4)]
    rows = {(a.key, a.attempt): a for a in _run(sends + batch)}
    assert ("a", 1) not in rows
    for key in ("b", "c"):
        assert rows[(key, 1)].level == 4 and rows[(key, 1)].final and rows[(key, 1)].final_state == "CONSUMED"


def test_a_call_of_the_listener_is_answered_up_to_the_first_message_that_is_not_ok():
    """reference.plans.answer_batch: the rule both consumers (real and simulated) answer by."""
    from hourglass.reference.plans import PlanCursor, answer_batch

    fresh = PlanCursor()
    later = answer_batch([((OK,), fresh, 0), (("LATER:5", OK), fresh, 0), ((OK,), fresh, 0)])
    assert (later.outcomes, later.ack_index, later.level, later.crashed) == ((OK, LATER, LATER), 0, 5, False)
    assert later.cursors[2].settled == {0} and later.cursors[2].used == 0  # sent back unasked: no entry taken
    crash = answer_batch([((OK,), fresh, 0), ((CRASH, OK), fresh, 0), ((OK,), fresh, 0)])
    assert (crash.outcomes, crash.crashed) == ((OK, CRASH), True)
    ok = answer_batch([((OK,), fresh, 0), ((), fresh, 1)])
    assert (ok.outcomes, ok.ack_index) == ((OK, OK), 1)
    orderly = answer_batch([((LATER, OK), fresh, 0)], orderly_max=16)
    assert orderly.outcomes == (LATER,) and 0 in orderly.cursors[0].repeat  # its retry lives in the consumer


def test_a_slow_attempt_is_a_later_asking_level_three_sent_back_a_consume_timeout_later():
    """reference.timeout: ProcessQueue.cleanExpiredMsg sends a message held past consumeTimeout back
    with sendMessageBack(msg, 3), at the first clean-up (every timeout, from the consumer's start)
    more than a timeout after its consume started: within (s + T, s + 2T]; its retry waits level 3
    from there, whatever its reconsume count."""
    from hourglass.reference.plans import SLOW, plan_outcome

    assert is_later(SLOW) and later_level(SLOW) == 3 and answer_word(SLOW) == LATER
    out = plan_outcome((LATER, SLOW, OK), 16)
    assert (out.last_attempt, out.asked, out.timed_out) == (2, (0, 3), frozenset({1}))
    assert plan_outcome((LATER, SLOW), 1).final_state == "DLQ"
    send = {"type": "send", "ts_ms": T0, "key": "k", "topic": "T", "status": "SEND_OK", "plan": [LATER, SLOW, OK], "born_ms": T0}
    events = [send, _deliver("k", 100, 0, LATER), _deliver("k", 3200, 1, LATER, next_level=3, timed_out=True)]
    run = {"run_id": "r", "scenario": "s", "system": {}, "started_ms": T0, "ended_ms": T0 + 300_000,
           "profile": {"message_delay_level": TABLE, "max_reconsume_times": 16, "flush_delay_offset_interval_ms": 10000,
                       "slack_ms": 3000, "consume_timeouts": {"g": 1}}}
    rows = {(a.key, a.attempt): a for a in build_expected(run, events)}
    retry = rows[("k", 2)]
    assert retry.level == 3 and retry.requested_level == 3  # not 3 + 1
    assert retry.earliest_ms == T0 + 3200 + 60_000 + 1 + 3000
    assert retry.latest_ms == T0 + 3200 + 120_000 + 3000 + 3000
    assert rows[("k", 1)].earliest_ms == T0 + 100 + 3000  # the plain LATER before it: its own level, at once
    validate_event(events[2], "a held attempt's deliver event")


def test_a_held_listener_answers_ok_after_the_clean_up_sent_it_back():
    """reference.plans.answer_batch: a SLOW is recorded LATER (the send-back is the clean-up's) and
    the call is answered consumed: the listener returns CONSUME_SUCCESS once it let go."""
    from hourglass.reference.plans import SLOW, PlanCursor, answer_batch

    held = answer_batch([((SLOW, OK), PlanCursor(), 0)])
    assert (held.outcomes, held.held, held.ack_index, held.level) == ((LATER,), True, 0, 3)
    assert held.cursors[0].settled == {0} and held.cursors[0].used == 1
    assert not answer_batch([((LATER, OK), PlanCursor(), 0)]).held



def test_a_dlq_request_whose_send_back_failed_is_a_retry_unless_the_dlq_holds_it():
    """reference.retry.send_back_route: the client's re-send after a failed send-back asks for 3 +
    reconsumeTimes, never the DLQ at once (seen on 5.0.0, which refuses every retry's send-back:
    'look message by offset failed to check the topic name'). With the failure logged and no DLQ
    entry read, the plan goes on; an entry read says the send-back was stored after all."""
    from hourglass.reference.plans import resent_instead

    assert resent_instead((LATER, CRASH, "LATER:-1", OK), 1) == (LATER, CRASH, LATER, OK)
    assert resent_instead((LATER,), 3) == (LATER,)
    send = {"type": "send", "ts_ms": T0, "key": "k", "topic": "T", "status": "SEND_OK", "plan": [LATER, "LATER:-1"], "born_ms": T0}
    laters = [_deliver("k", 100, 0, LATER), _deliver("k", 3200, 1, LATER, next_level=-1)]
    failed = {"type": "fault", "ts_ms": T0 + 3205, "action": "send_back_failed", "target": "consumer", "group": "g"}
    dlq = {"type": "dlq", "ts_ms": T0 + 9000, "key": "k", "group": "g", "msg_id": "k", "reconsume_times": 1, "store_ms": T0 + 3300}
    assert [(a.attempt, a.final_state) for a in _run([send, *laters])][-1] == (1, "DLQ")
    assert [(a.attempt, a.final_state) for a in _run([send, *laters, failed])][-1] == (2, "CONSUMED")
    assert [(a.attempt, a.final_state) for a in _run([send, *laters, failed, dlq])][-1] == (1, "DLQ")
