"""Orderly consumption in the model (reference.orderly): the suspend time, the windows of a local
re-consume, the DLQ wait of 4.9.x, the plan cursor of a consumer whose retries are local, and the
run.json field that says which groups consume orderly."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hourglass.adapters.rocketmq.consumer_proc import delivered_attempts
from hourglass.reference.contract import ContractError
from hourglass.reference.expected import build_expected
from hourglass.reference.levels import parse_level_table
from hourglass.reference.orderly import DEFAULT_SUSPEND_MS, LOCK_RETRY_MS, SUSPEND_RANGE_MS, dlq_wait_ms, effective_suspend_ms, queue_of
from hourglass.reference.plans import CRASH, LATER, OK, PlanCursor, answer_batch, next_answer, orderly_next, replay_cursor
from hourglass.reference.profile import parse_profile, profile_to_json

T0 = 1_763_800_000_000
PROFILE = {"message_delay_level": "1s 2s 3s 4s 5s", "max_reconsume_times": 16, "flush_delay_offset_interval_ms": 10_000,
           "slack_ms": 3000, "orderly_groups": {"g": 700}}


@given(st.one_of(st.none(), st.integers(-5, 100_000)))
def test_the_suspend_time_is_the_clients_default_or_clamped(ms):
    got = effective_suspend_ms(ms)
    assert SUSPEND_RANGE_MS[0] <= got <= SUSPEND_RANGE_MS[1]
    if ms is None or ms == -1:
        assert got == DEFAULT_SUSPEND_MS
    elif SUSPEND_RANGE_MS[0] <= ms <= SUSPEND_RANGE_MS[1]:
        assert got == ms


def test_4_9_stores_an_orderly_dlq_copy_after_level_3_plus_the_count():
    table = parse_level_table("1s 2s 3s 4s 5s 6s")
    assert dlq_wait_ms(2, table) == 5000
    assert dlq_wait_ms(16, table) == 6000  # clamped to the table's top


def test_the_profile_names_orderly_groups_and_refuses_a_suspend_time_out_of_range():
    prof = parse_profile(PROFILE)
    assert prof.suspend_ms_of("g") == 700 and prof.suspend_ms_of("h") is None
    assert profile_to_json(prof)["orderly_groups"] == {"g": 700}
    with pytest.raises(ContractError) as e:
        parse_profile({**PROFILE, "orderly_groups": {"g": 5}})
    assert "orderly_groups" in e.value.where and e.value.field == "g"


def _events(again_at: int, faults=()) -> list[dict]:
    def deliver(rt, at, outcome):
        return {"type": "deliver", "ts_ms": T0 + at, "key": "k", "group": "g", "topic": "T", "queue_id": 0, "queue_offset": 0,
                "commit_log_offset": 10, "msg_id": "m", "reconsume_times": rt, "born_ms": T0, "store_ms": T0 + 5,
                "outcome": outcome}
    return [{"type": "send", "ts_ms": T0 + 2, "key": "k", "topic": "T", "status": "SEND_OK", "born_ms": T0,
             "plan": [LATER, OK]}, deliver(0, 20, LATER), deliver(1, again_at, OK), *faults]


def test_an_orderly_retry_is_the_same_queue_a_suspend_time_after_the_later():
    run = {"run_id": "r", "profile": PROFILE}
    rows = {r.attempt: r for r in build_expected(run, _events(720))}
    retry = rows[1]
    assert retry.queue_topic is None and retry.level == 0 and retry.delay_ms == 700
    assert (retry.local_earliest_ms, retry.local_latest_ms) == (T0 + 720, T0 + 720 + 3000)
    assert (retry.earliest_ms, retry.latest_ms) == (retry.local_earliest_ms, retry.local_latest_ms)
    # a concurrent group's retry is stored in %RETRY% at level 3
    conc = {r.attempt: r for r in build_expected({"run_id": "r", "profile": {**PROFILE, "orderly_groups": {}}}, _events(720))}
    assert conc[1].queue_topic == "%RETRY%g" and conc[1].level == 3


def test_a_broker_outage_during_the_suspension_waits_for_the_lock_again():
    down = [{"type": "fault", "ts_ms": T0 + 300, "action": "kill", "target": "broker"},
            {"type": "fault", "ts_ms": T0 + 5000, "action": "start", "target": "broker"},
            {"type": "fault", "ts_ms": T0 + 9000, "action": "ready", "target": "broker"}]
    retry = {r.attempt: r for r in build_expected({"run_id": "r", "profile": PROFILE}, _events(720, down))}[1]
    assert retry.local_latest_ms >= T0 + 9000 + LOCK_RETRY_MS and retry.widened_by


def test_an_orderly_chain_is_answered_again_when_the_stored_copy_comes_back():
    """The retry chain of an orderly consumer lives in the consumer: after its death the stored copy
    (count 0) is delivered again and every attempt it had answered LATER answers LATER again, taking
    no plan entry (found by the generator: a chain cut after two LATERs was answered OK at count 0);
    the plan goes on where it stopped."""
    plan = (LATER, LATER, CRASH, OK)
    cur = PlanCursor()
    answers = []
    for rt in (0, 1, 2, 0, 1, 2):  # LATER, LATER, CRASH; the replacement: the stored copy again
        word, cur, taken = orderly_next(plan, cur, rt, 16)
        answers.append((word, taken))
    assert answers == [(LATER, True), (LATER, True), (CRASH, True), (LATER, False), (LATER, False), (OK, True)]
    assert replay_cursor(plan, [0, 1, 2, 0, 1, 2], orderly_max=16) == cur
    # a concurrent consumer's local re-consume settles the attempt before it
    assert next_answer(plan, replay_cursor(plan, [0, 1]), 0)[0] == OK


@given(st.lists(st.sampled_from([OK, LATER, CRASH]), max_size=6), st.lists(st.integers(0, 4), max_size=10))
def test_an_orderly_consumer_never_answers_ok_to_an_attempt_it_answered_later(plan, rts):
    """... until its chain ended (an OK, or a LATER at maxReconsumeTimes 3: the DLQ)."""
    cur, later, ended = PlanCursor(), set(), False
    for rt in rts:
        word, cur, _ = orderly_next(tuple(plan), cur, rt, 3)
        assert ended or not (rt in later and word == OK)
        if word == LATER:
            later.add(rt)
        ended = ended or word == OK or (word == LATER and rt >= 3)


def test_a_restarted_orderly_consumer_rebuilds_its_cursor_from_its_deliveries(tmp_path):
    f = tmp_path / "consumer-c.jsonl"
    f.write_text('{"type": "deliver", "key": "k", "group": "g", "reconsume_times": 0, "outcome": "LATER"}\n'
                 '{"type": "deliver", "key": "k", "group": "g", "reconsume_times": 1, "outcome": "CRASH"}\n')
    assert delivered_attempts(f, "g") == {"k": [0, 1]}
    assert answer_batch([((LATER, CRASH, OK), replay_cursor((LATER, CRASH, OK), [0, 1], orderly_max=16), 0)],
                        orderly_max=16).outcomes == (LATER,)


def test_an_orderly_chain_that_reached_the_dlq_or_ok_is_acknowledged_when_redelivered():
    """Found by the generator: a consumer that died right after sending a message to the DLQ got the
    stored copy again and ran the chain again, a second DLQ entry."""
    for plan, rts in (((LATER, LATER, LATER), (0, 1, 2)), ((LATER, OK), (0, 1))):
        cur = replay_cursor(plan, list(rts), orderly_max=2)
        assert [orderly_next(plan, cur, rt, 2)[0] for rt in rts] == [OK] * len(rts)


def test_only_a_copy_in_its_own_topic_has_a_queue_order():
    d = {"broker": "b", "topic": "T", "queue_id": 2}
    assert queue_of(d) == ("b", "T", 2) and queue_of({**d, "queue_topic": "T"}) == ("b", "T", 2)
    assert queue_of({**d, "queue_topic": "%RETRY%g"}) is None


def _member(action: str, at: int, name: str = "g-1") -> dict:
    return {"type": "fault", "ts_ms": T0 + at, "action": action, "target": "consumer", "name": name, "group": "g",
            "cause": "scenario"}


def test_a_member_leaving_or_joining_is_no_outage_and_allows_the_moved_chain_to_start_over():
    """A rebalance (an instance leaves gracefully, or joins) is no consumer outage: the group's other
    members go on, so the windows are not widened; the suspended message whose queue moved comes
    back as its stored copy at the new owner, a redelivery NO_DUPLICATE allows (the queue moved);
    without the change it is not allowed."""
    from hourglass.reference.expected import rule_duplicate
    from hourglass.reference.windows import consumer_outages

    assert consumer_outages([_member("stop", 1000), _member("start", 3000)]) == []
    first = {"type": "deliver", "ts_ms": T0 + 720, "key": "k", "group": "g", "topic": "T", "queue_id": 0, "queue_offset": 0,
             "msg_id": "m", "reconsume_times": 0, "born_ms": T0, "store_ms": T0 + 5, "outcome": LATER, "commit_log_offset": 7}
    again = {**first, "ts_ms": T0 + 30_000}
    run = {"run_id": "r", "profile": PROFILE}
    for change in (_member("stop", 1000), _member("start", 2000)):
        assert rule_duplicate(run, [change], first, again).allowed
    assert not rule_duplicate(run, [], first, again).allowed


def test_the_run_waits_for_a_moved_orderly_queue_to_be_handed_over():
    """RebalancePushImpl: the old owner unlocks a queue it still had messages of 20 s after (4.9.x
    unlockDelay), and the new one locks it at its next rebalance (20 s): the drain waits that long
    after a member joined or left once messages flowed (not for the setup's starts)."""
    from hourglass.harness.drain import _orderly_locks_freed_ms
    from hourglass.reference.orderly import handed_over_ms

    send = {"type": "send", "ts_ms": T0 + 100, "key": "k", "topic": "T", "status": "SEND_OK"}
    run = {"profile": PROFILE}
    assert handed_over_ms(T0) == T0 + 60_000
    assert _orderly_locks_freed_ms(run, [_member("start", 0, "g-0"), send]) is None
    assert _orderly_locks_freed_ms(run, [send, _member("stop", 2500), _member("start", 4500)]) == handed_over_ms(T0 + 4500)


def test_a_refused_dlq_send_back_whose_chain_died_ends_consumed_by_the_redelivery():
    """Found by the generator: an orderly message's last allowed attempt answered LATER while the
    broker was paused (checkReconsumeTimes: the DLQ send-back refused, the client would consume it
    again), then the consumer died before that; the stored copy came back and the harness's
    consumer, its chain ended, answered OK. Consumed, not owed to the DLQ; had the send-back been
    stored, the entry read decides it."""
    profile = {**PROFILE, "max_reconsume_times": 1}
    paused = [{"type": "fault", "ts_ms": T0 + 500, "action": "pause", "target": "broker"},
              {"type": "fault", "ts_ms": T0 + 3000, "action": "resume", "target": "broker"}]

    def deliver(rt, at, outcome):
        return {"type": "deliver", "ts_ms": T0 + at, "key": "k", "group": "g", "topic": "T", "queue_id": 0, "queue_offset": 0,
                "commit_log_offset": 10, "msg_id": "m", "reconsume_times": rt, "born_ms": T0, "store_ms": T0 + 5,
                "outcome": outcome}
    send = {"type": "send", "ts_ms": T0 + 2, "key": "k", "topic": "T", "status": "SEND_OK", "born_ms": T0, "plan": [LATER, LATER]}
    died = [deliver(0, 20, LATER), deliver(1, 720, LATER), {"type": "fault", "ts_ms": T0 + 800, "action": "kill",
            "target": "consumer", "group": "g", "name": "g-0", "cause": "died"}, deliver(0, 4000, OK)]
    final = max(build_expected({"run_id": "r", "profile": profile}, [send, *paused, *died]), key=lambda r: r.attempt)
    assert (final.attempt, final.final_state) == (1, "CONSUMED")
    dlq = {"type": "dlq", "ts_ms": T0 + 9000, "key": "k", "group": "g", "msg_id": "m", "reconsume_times": 1, "store_ms": T0 + 900}
    stored = max(build_expected({"run_id": "r", "profile": profile}, [send, *paused, *died, dlq]), key=lambda r: r.attempt)
    assert stored.final_state == "DLQ"
    unpaused = max(build_expected({"run_id": "r", "profile": profile}, [send, *died]), key=lambda r: r.attempt)
    assert unpaused.final_state == "DLQ"  # nothing refused it: the DLQ entry is owed
