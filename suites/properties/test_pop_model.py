"""reference.pop: the POP and gRPC retry contract, rule by rule, against the figures read in
RocketMQ's source (the methods each rule names), and the chains the rules make together."""

from __future__ import annotations

import json

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from hourglass.reference import pop


def test_retry_topics_are_per_group_and_topic():
    assert pop.pop_retry_topic("cg", "orders") == "%RETRY%cg_orders"
    assert pop.pop_retry_topic("cg", "orders", v2=True) == "%RETRY%cg+orders"


@pytest.mark.parametrize("version, v2, notified", [((5, 0, 0), False, False), ((5, 1, 4), False, False), ((5, 2, 0), False, False),
                                                   ((5, 3, 3), False, False), ((5, 3, 3), True, True), ((5, 4, 0), False, False),
                                                   ((5, 5, 0), False, True)])
def test_a_v1_revive_is_handed_out_at_once_only_from_5_5(version, v2, notified):
    assert pop.revived_notifies_pollers(version, v2) is notified


def test_the_revive_lag_adds_the_long_poll_only_where_no_poller_is_woken():
    woken = pop.revive_lag_ms(pop.REMOTING_POP_LONG_POLL_MS, 1000, notified=True)
    assert woken == 3000 + 3000 + 1000
    assert pop.revive_lag_ms(pop.REMOTING_POP_LONG_POLL_MS, 1000, notified=False) == woken + 15_000
    assert pop.revive_lag_ms(pop.GRPC_LONG_POLL_MS, 1000, notified=False) == woken + 20_000


@given(st.integers(0, 10**13), st.integers(1, 10**8), st.integers(0, 10**5), st.integers(0, 10**5))
def test_a_redelivery_is_not_due_before_the_invisible_time_ends(at, invisible, lag, slack):
    w = pop.redelivery(at, invisible, lag, slack)
    assert w.earliest_ms == at + invisible == pop.revive_time_ms(at, invisible)
    assert w.latest_ms - w.earliest_ms == lag + slack


@pytest.mark.parametrize("reconsume_times, level, seconds", [(0, 0, 10), (1, 0, 30), (2, 0, 60), (15, 0, 7200), (40, 0, 7200),
                                                              (0, 2, 60), (5, 1, 30), (0, 99, 7200)])
def test_a_later_changes_the_invisible_time_by_the_pop_table(reconsume_times, level, seconds):
    # level n is the table's entry n (from 0), not n - 1 as a delay level would be
    assert pop.later_invisible_ms(reconsume_times, level) == seconds * 1000


@pytest.mark.parametrize("age_s, outcome", [(5, (pop.UNCHANGED, None)), (10, (pop.CHANGED, 30_000)), (29, (pop.CHANGED, 30_000)), (59, (pop.CHANGED, 60_000)),
                                            (60, (pop.CHANGED, 120_000)), (7200, (pop.CHANGED, 7_200_000)),
                                            (14_400, (pop.CHANGED, 7_200_000)), (14_401, (pop.ACKED, None))])
def test_a_later_at_the_maximum_goes_by_the_message_age(age_s, outcome):
    assert pop.at_max(age_s * 1000) == outcome


@pytest.mark.parametrize("asked, used", [(None, 60_000), (-1, 60_000), (4_999, 60_000), (5_000, 5_000), (300_000, 300_000),
                                         (300_001, 60_000)])
def test_the_remoting_consumers_pop_invisible_time(asked, used):
    assert pop.pop_invisible_ms(asked) == used


@given(st.integers(0, 40))
def test_a_remoting_pop_message_always_failed_is_dropped_after_max_plus_one_deliveries_from_5_3_1(max_times):
    assert pop.remoting_pop_end((5, 3, 1), max_times) == (max_times + 1, "DROPPED")
    assert pop.remoting_pop_end((5, 3, 0), max_times) == (-1, "CYCLING")
    assert pop.max_reconsume_times(-1) == pop.max_reconsume_times(None) == 16


def test_the_default_customized_policy_backs_off_by_attempt_from_one_second():
    policy = pop.RetryPolicy()
    assert [policy.next_attempt_delay_ms(a) for a in (1, 2, 3, 4, 18, 19, 100)] == [1000, 5000, 10_000, 30_000, 7_200_000,
                                                                                     7_200_000, 7_200_000]
    with pytest.raises(ValueError):
        policy.next_attempt_delay_ms(0)


def test_the_exponential_policy_doubles_from_its_initial_up_to_its_max():
    policy = pop.RetryPolicy(customized=None, exponential=pop.EXPONENTIAL_DEFAULT)
    assert [policy.next_attempt_delay_ms(a) for a in (1, 2, 3, 11, 12, 40)] == [5000, 10_000, 20_000, 5_120_000, 7_200_000, 7_200_000]


@given(st.integers(0, 40))
def test_a_grpc_message_never_acked_is_delivered_max_attempts_times_then_dead_lettered(retry_max_times):
    attempts = pop.max_attempts(retry_max_times)
    delivered = []
    reconsume_times = 0
    while not pop.proxy_routes_to_dlq(reconsume_times, attempts):
        delivered.append(pop.delivery_attempt(reconsume_times))
        reconsume_times += 1  # PopReviveService.reviveRetry raises the count at each revive
    assert delivered == list(range(1, retry_max_times + 2))
    assert pop.grpc_end(retry_max_times) == (len(delivered), "DLQ", "%DLQ%{group}")


@pytest.mark.parametrize("asked, used", [(9_999, None), (10_000, 10_000), (43_200_000, 43_200_000), (43_200_001, None)])
def test_a_simple_consumers_invisible_duration_is_bounded_by_the_proxy(asked, used):
    assert pop.grpc_invisible_ms(asked) == used


LATEST = (5, 5, 0)


def test_a_remoting_later_makes_the_next_attempt_due_the_pop_table_after_the_answer():
    g = pop.PopGroup(pop.POP, LATEST, invisible_ms=60_000, max_times=2)
    lag = g.lag_ms(1000)
    assert lag == 7000  # 5.5.0: a v1 revive wakes the waiting pop (5.2.0-5.4.x: + the 15 s long-poll)
    assert pop.PopGroup(pop.POP, (5, 3, 3), invisible_ms=60_000).lag_ms(1000) == 7000 + 15_000
    w = pop.next_window(g, 0, pop.ANSWERED_LATER, popped_ms=1000, answered_ms=1500, timer_precision_ms=1000, slack_ms=500)
    assert (w.earliest_ms, w.latest_ms) == (11_500, 11_500 + lag + 500)
    w = pop.next_window(g, 1, pop.ANSWERED_LATER, popped_ms=20_000, answered_ms=20_100, timer_precision_ms=1000, slack_ms=0)
    assert w.earliest_ms == 50_100


def test_a_message_not_answered_comes_back_after_its_pops_invisible_time():
    for mode in pop.POP_MODES:
        g = pop.PopGroup(mode, LATEST, invisible_ms=20_000)
        w = pop.next_window(g, 0, pop.NOT_ANSWERED, popped_ms=5000, answered_ms=None, timer_precision_ms=1000, slack_ms=0)
        assert w.earliest_ms == 25_000 and w.latest_ms == 25_000 + g.lag_ms(1000)


def test_a_grpc_push_failure_backs_off_by_its_delivery_attempt():
    g = pop.PopGroup(pop.GRPC_PUSH, LATEST, invisible_ms=pop.GRPC_PUSH_INVISIBLE_MS)
    starts = [pop.next_window(g, rt, pop.ANSWERED_LATER, 0, 100, 1000, 0).earliest_ms for rt in range(4)]
    assert starts == [1100, 5100, 10_100, 30_100]
    assert pop.GRPC_LONG_POLL_MS == g.long_poll_ms() > pop.REMOTING_POP_LONG_POLL_MS
    # 5.0.x's proxy caps a receive's long poll at 30 s (grpcClientConsumerLongPollingTimeoutMillis)
    assert pop.PopGroup(pop.GRPC_PUSH, (5, 0, 0), invisible_ms=pop.GRPC_PUSH_INVISIBLE_MS).long_poll_ms() == 30_000


@pytest.mark.parametrize("version, after_max", [((5, 3, 1), False), ((5, 3, 0), True)])
def test_a_remoting_copy_above_the_maximum_reaches_the_listener_only_before_5_3_1(version, after_max):
    g = pop.PopGroup(pop.POP, version, invisible_ms=60_000, max_times=2)
    assert [pop.delivered(g, rt) for rt in range(4)] == [True, True, True, after_max]


def test_at_the_maximum_the_remoting_consumer_goes_by_age_and_a_grpc_group_by_its_attempts():
    g = pop.PopGroup(pop.POP, (5, 3, 0), invisible_ms=60_000, max_times=1)
    w = pop.next_window(g, 1, pop.ANSWERED_LATER, popped_ms=40_000, answered_ms=40_000, timer_precision_ms=1000, slack_ms=0, born_ms=0)
    assert w.earliest_ms == 40_000 + 60_000  # 40 s old: the level after 30 s, 60 s
    old = pop.next_window(g, 1, pop.ANSWERED_LATER, popped_ms=0, answered_ms=pop.POP_MAX_AGE_MS + 1, timer_precision_ms=1000,
                          slack_ms=0, born_ms=0)
    assert old is None  # acked: the message ends
    grpc = pop.PopGroup(pop.GRPC_SIMPLE, LATEST, invisible_ms=10_000, max_times=2)
    assert [pop.delivered(grpc, rt) for rt in range(4)] == [True, True, True, False]


# --- the chains a POP group's plan makes, and the expected table of a POP group ------------------

from hourglass.reference.contract import ContractError  # noqa: E402
from hourglass.reference.expected import build_expected, rule_duplicate  # noqa: E402
from hourglass.reference.profile import parse_profile  # noqa: E402
from hourglass.reference.windows import Outage  # noqa: E402

T0 = 1_763_800_000_000


def _pop_run(invisible_ms=5_000, release=(5, 5, 0), max_rt=16):
    return {"run_id": "r", "profile": {"message_delay_level": "1s 2s 3s", "max_reconsume_times": max_rt,
                                       "flush_delay_offset_interval_ms": 10_000, "slack_ms": 3000,
                                       "pop_groups": {"g": {"invisible_ms": invisible_ms, "release": list(release)}}}}


def _deliver(key, ts, rt, outcome, pop_ms, store=None, clo=0, **kw):
    return {"type": "deliver", "ts_ms": ts, "key": key, "group": "g", "topic": "T", "queue_id": -1, "queue_offset": 0,
            "queue_topic": "T", "commit_log_offset": clo, "msg_id": "m", "reconsume_times": rt, "born_ms": T0,
            "store_ms": ts if store is None else store, "outcome": outcome, "pop_ms": pop_ms, **kw}


@pytest.mark.parametrize("plan, release, last, state", [
    (("LATER", "OK"), (5, 5, 0), 1, "CONSUMED"),
    (("SLOW", "OK"), (5, 5, 0), 1, "CONSUMED"),
    (("SLOW", "LATER", "OK"), (5, 5, 0), 1, "DROPPED"),  # the LATER at the maximum leaves nothing to deliver
    (("LATER", "SLOW"), (5, 5, 0), 1, "DROPPED"),  # max 1: the copy with count 2 is acked unseen (5.3.1+)
    (("LATER", "SLOW"), (5, 1, 4), 2, "CONSUMED"),  # before 5.3.1 it reaches the listener, which answers OK
    ((), (5, 5, 0), 0, "CONSUMED"),
])
def test_each_attempt_not_acked_is_followed_by_the_revived_one(plan, release, last, state):
    out = pop.pop_outcome(plan, pop.PopGroup(pop.POP, release, 5_000, max_times=1))
    assert (out.last_attempt, out.final_state) == (last, state)


@given(st.lists(st.sampled_from(["OK", "LATER", "SLOW", "LATER:2"]), max_size=8).map(tuple), st.integers(0, 10))
def test_a_pop_attempt_is_answered_by_its_own_entry(plan, rt):
    assert pop.pop_answer(plan, rt) == (plan[rt] if rt < len(plan) else "OK")


def test_a_later_is_due_the_pop_level_after_the_answer_and_a_slow_copy_its_invisible_time_after_its_pop():
    events = [{"type": "send", "ts_ms": T0, "key": "a", "topic": "T", "delay_level": 0, "status": "SEND_OK", "born_ms": T0,
               "plan": ["LATER", "SLOW", "OK"]},
              _deliver("a", T0 + 300, 0, "LATER", T0 + 250),
              _deliver("a", T0 + 12_000, 1, "LATER", T0 + 11_990, clo=100, timed_out=True)]
    rows = {r.attempt: r for r in build_expected(_pop_run(), events)}
    assert [rows[k].queue_topic for k in (1, 2)] == ["%RETRY%g_T"] * 2
    one, two = rows[1], rows[2]
    assert (one.anchor_ms, one.delay_ms, one.earliest_ms) == (T0 + 300, 10_000, T0 + 10_300)  # changePopInvisibleTime
    assert one.latest_ms == T0 + 10_300 + pop.revive_lag_ms(15_000, 1000, True) + 3000
    assert (two.anchor_ms, two.delay_ms, two.earliest_ms) == (T0 + 11_990, 5_000, T0 + 16_990)  # the pop's own time
    assert two.final and two.final_state == "CONSUMED"


def test_on_5_3_3_the_window_adds_the_long_poll():
    events = [{"type": "send", "ts_ms": T0, "key": "a", "topic": "T", "delay_level": 0, "status": "SEND_OK", "born_ms": T0,
               "plan": ["LATER"]}, _deliver("a", T0 + 300, 0, "LATER", T0 + 250)]
    row = next(r for r in build_expected(_pop_run(release=(5, 3, 3)), events) if r.attempt == 1)
    assert row.latest_ms == T0 + 10_300 + 7_000 + 15_000 + 3000


def test_a_second_revived_copy_needs_a_broker_kill_in_between():
    run = _pop_run()
    first, second = _deliver("a", T0 + 1000, 1, "OK", T0 + 990), _deliver("a", T0 + 9000, 1, "OK", T0 + 8990, clo=500)
    assert not rule_duplicate(run, [], first, second).allowed
    restart = [{"type": "fault", "ts_ms": T0 + 3000, "action": "stop", "target": "broker"},
               {"type": "fault", "ts_ms": T0 + 5000, "action": "start", "target": "broker"}]
    assert not rule_duplicate(run, restart, first, second).allowed  # a graceful stop commits the revive offset
    kill = [{"type": "fault", "ts_ms": T0 + 3000, "action": "kill", "target": "broker"}]
    assert rule_duplicate(run, kill, first, second).allowed


def test_pop_wait_sums_the_invisible_times_the_plan_runs_through():
    remoting = pop.PopGroup(pop.POP, (5, 5, 0), 5_000)
    assert pop.pop_wait_ms(("LATER", "LATER", "OK"), remoting) == 10_000 + 30_000
    assert pop.pop_wait_ms(("SLOW", "LATER:2", "OK"), remoting) == 5_000 + 60_000
    assert pop.pop_wait_ms((), remoting) == 0
    push = pop.PopGroup(pop.GRPC_PUSH, (5, 5, 0), pop.GRPC_PUSH_INVISIBLE_MS, max_times=2)
    assert pop.pop_wait_ms(("LATER", "LATER", "OK"), push) == 1_000 + 5_000  # CustomizedRetryPolicy
    simple = pop.PopGroup(pop.GRPC_SIMPLE, (5, 5, 0), 10_000, max_times=2)
    assert pop.pop_wait_ms(("LATER", "LATER", "LATER"), simple) == 20_000  # the third copy popped is dead-lettered


def test_a_grpc_message_never_acked_goes_to_the_dlq_at_max_attempts():
    simple = pop.PopGroup(pop.GRPC_SIMPLE, (5, 5, 0), 10_000, max_times=2)
    out = pop.pop_outcome(("LATER",) * 5, simple)
    assert (out.last_attempt, out.final_state) == (2, "DLQ")  # deliveries 1..3 = retryMaxTimes + 1


def test_a_grpc_simple_row_is_anchored_at_the_pop_and_a_push_row_at_the_answer():
    def rows(mode, invisible):
        run = _pop_run(invisible_ms=invisible)
        run["profile"]["pop_groups"]["g"].update(mode=mode, max_times=2)
        events = [{"type": "send", "ts_ms": T0, "key": "a", "topic": "T", "delay_level": 0, "status": "SEND_OK",
                   "born_ms": T0, "plan": ["LATER", "LATER", "LATER"]},
                  _deliver("a", T0 + 300, 0, "LATER", T0 + 250), _deliver("a", T0 + 13_000, 1, "LATER", T0 + 12_990, clo=9)]
        return {r.attempt: r for r in build_expected(run, events)}

    simple = rows(pop.GRPC_SIMPLE, 10_000)
    assert (simple[1].anchor_ms, simple[1].earliest_ms) == (T0 + 250, T0 + 10_250)
    assert simple[2].final and simple[2].final_state == "DLQ"
    push = rows(pop.GRPC_PUSH, pop.GRPC_PUSH_INVISIBLE_MS)
    assert (push[1].anchor_ms, push[1].earliest_ms, push[2].earliest_ms) == (T0 + 300, T0 + 1_300, T0 + 18_000)


@pytest.mark.parametrize("entry, field", [({"invisible_ms": 100, "release": [5, 5, 0]}, "invisible_ms"),
                                          ({"invisible_ms": 5000, "release": "5.5.0"}, "release"),
                                          ("5000", "g")])
def test_a_bad_pop_group_in_run_json_is_named(entry, field):
    p = _pop_run()["profile"]
    p["pop_groups"] = {"g": entry}
    with pytest.raises(ContractError) as e:
        parse_profile(p)
    assert e.value.field == field


def test_near_a_level_boundary_at_the_maximum_either_level_may_be_taken():
    # the client reads the message's age when the listener has returned: 9.5 s at the recorded answer may be
    # 10 s (the first level reached: 30 s) when checkNeedAckOrDelay runs
    g = pop.PopGroup(pop.POP, (5, 1, 4), 5_000, max_times=1)
    w = pop.next_window(g, 1, pop.ANSWERED_LATER, popped_ms=9_000, answered_ms=9_500, timer_precision_ms=1000, slack_ms=0,
                        born_ms=0)
    assert w.earliest_ms == 9_000 + 5_000  # the pop's own invisible time (younger than 10 s)
    assert w.latest_ms == 9_500 + 30_000 + g.lag_ms(1000)  # or the first level's 30 s


def test_each_mode_takes_its_own_invisible_time_and_maximum():
    assert pop.mode_invisible_ms(pop.POP, None) == pop.DEFAULT_POP_INVISIBLE_MS
    assert pop.mode_invisible_ms(pop.POP, 1_000) == pop.DEFAULT_POP_INVISIBLE_MS  # outside the client's range
    assert pop.mode_invisible_ms(pop.GRPC_SIMPLE, None) == pop.DEFAULT_SIMPLE_INVISIBLE_MS
    assert pop.mode_invisible_ms(pop.GRPC_SIMPLE, 20_000) == 20_000
    assert pop.mode_invisible_ms(pop.GRPC_PUSH, 20_000) == pop.GRPC_PUSH_INVISIBLE_MS
    assert pop.mode_max_times(pop.POP, 3, 1) == 3  # the consumer's maxReconsumeTimes
    assert pop.mode_max_times(pop.GRPC_PUSH, 3, 1) == 1  # the group's retryMaxTimes
    assert pop.mode_max_times(pop.GRPC_SIMPLE, 3, None) == pop.DEFAULT_RETRY_MAX_TIMES


# --- the gRPC clients across the proxy's outages (reference.pop.reconnect_lag_ms, unplanned_attempt) ---

@given(st.integers(0, 600_000), st.lists(st.floats(-1.0, 1.0), min_size=40, max_size=40))
def test_a_grpc_channel_reconnects_within_the_bound_after_the_proxy_is_back(outage_ms, jitters):
    # grpc-java's ExponentialBackoffPolicy: attempt 0 at once, then each interval initial x 1.6^i (capped), jittered
    at, current = 0.0, float(pop.RECONNECT_INITIAL_MS)
    for j in jitters:
        if at >= outage_ms:
            break
        at += current * (1 + pop.RECONNECT_JITTER * j)
        current = min(current * pop.RECONNECT_MULTIPLIER, pop.RECONNECT_MAX_MS)
    assume(at >= outage_ms)
    assert at - outage_ms + pop.GRPC_RETRY_BACKOFF_MS <= pop.reconnect_lag_ms(outage_ms)


def test_the_reconnect_bound_grows_with_the_outage_and_stops_at_the_backoffs_maximum():
    lags = [pop.reconnect_lag_ms(d) for d in (0, 3_000, 10_000, 60_000, 10**8)]
    assert lags == sorted(lags) and lags[0] < 3_000 < lags[2]
    assert lags[-1] == 144_000 + pop.GRPC_RETRY_BACKOFF_MS


def _proxy_faults(down, ready):
    return [{"type": "fault", "ts_ms": down, "action": "kill", "target": "proxy"},
            {"type": "fault", "ts_ms": ready - 10, "action": "start", "target": "proxy"},
            {"type": "fault", "ts_ms": ready, "action": "ready", "target": "proxy"}]


def test_a_lost_ack_or_a_lost_pop_is_allowed_only_next_to_an_outage():
    outages = pop.grpc_client_outages([Outage("kill", T0 + 5_000, T0 + 9_000)])
    assert outages[0].up_ms == T0 + 9_000 + pop.reconnect_lag_ms(4_000)
    assert pop.unplanned_attempt(outages, T0 + 1_000, T0 + 20_000) is not None  # OK 4 s before the kill: ack in flight
    assert pop.unplanned_attempt(outages, T0 - 6_000, T0 + 20_000) is None  # acked long before
    assert pop.unplanned_attempt(outages, None, T0 + 20_000) is not None  # a pop the kill cut off
    assert pop.unplanned_attempt(outages, None, T0 + 4_000) is None  # before any outage
    assert pop.unplanned_attempt([], T0, T0 + 20_000) is None


def _retry_after_ok(ok: dict, faults=()) -> int:
    """RETRY_SCHEDULE's violations when a SimpleConsumer's copy comes again after ``ok``."""
    from hourglass.reports.judge_events import judge_bucket

    run = _pop_run(invisible_ms=10_000)
    run["profile"]["pop_groups"]["g"].update(mode=pop.GRPC_SIMPLE, max_times=2)
    events = [{"type": "send", "ts_ms": T0, "key": "a", "topic": "T", "delay_level": 0, "status": "SEND_OK", "born_ms": T0,
               "plan": []}, ok, _deliver("a", T0 + 10_400, 1, "OK", T0 + 10_390, clo=9), *faults]
    rows = judge_bucket(run, events, T0 + 60_000, 1000)
    return len([r for r in rows if r[2] == "v" and json.loads(r[8])["invariant"] == "RETRY_SCHEDULE"])


@pytest.mark.parametrize("killed, violations", [(True, 0), (False, 1)])
def test_an_attempt_after_an_ok_passes_retry_schedule_only_when_the_proxy_may_have_lost_the_ack(killed, violations):
    faults = _proxy_faults(T0 + 2_000, T0 + 6_000) if killed else []
    assert _retry_after_ok(_deliver("a", T0 + 300, 0, "OK", T0 + 250), faults) == violations


def test_a_proxy_outage_widens_a_grpc_window_by_the_clients_reconnect():
    run = _pop_run(invisible_ms=pop.GRPC_PUSH_INVISIBLE_MS)
    run["profile"]["pop_groups"]["g"].update(mode=pop.GRPC_PUSH, max_times=2)
    events = [{"type": "send", "ts_ms": T0, "key": "a", "topic": "T", "delay_level": 0, "status": "SEND_OK", "born_ms": T0,
               "plan": ["LATER", "OK"]}, _deliver("a", T0 + 300, 0, "LATER", T0 + 250)]
    plain = {r.attempt: r for r in build_expected(run, events)}[1]
    down, ready = T0 + 500, T0 + 6_000
    widened = {r.attempt: r for r in build_expected(run, events + _proxy_faults(down, ready))}[1]
    assert plain.widened_by is None and widened.widened_by
    assert widened.latest_ms >= max(plain.latest_ms, ready + pop.reconnect_lag_ms(ready - down))


def test_in_local_mode_the_brokers_outage_is_the_proxys():
    faults = [{"type": "fault", "ts_ms": T0, "action": "kill", "target": "broker"},
              {"type": "fault", "ts_ms": T0 + 3_000, "action": "start", "target": "broker"},
              {"type": "fault", "ts_ms": T0 + 4_000, "action": "ready", "target": "broker"}]
    assert pop.proxy_outages_of(faults) == []
    local = pop.proxy_outages_of(faults, pop.PROXY_LOCAL)
    assert [(o.down_ms, o.up_ms) for o in local] == [(T0, T0 + 4_000)]
    assert max(o.up_ms for o in pop.pop_outages(pop.GRPC_PUSH, faults, pop.PROXY_LOCAL)) == T0 + 4_000 + pop.reconnect_lag_ms(4_000)


def test_an_ok_answered_while_the_proxy_was_already_stopping_may_lose_its_ack():
    # seen on 5.5.0: a graceful stop of the proxy took 41 s, the SimpleConsumer's OK came inside it
    stopping = [Outage("stop", T0, T0 + 47_000)]
    assert pop.unplanned_attempt(stopping, T0 + 9_600, T0 + 73_000) is not None
    assert pop.unplanned_attempt(stopping, T0 + 50_000, T0 + 73_000) is None  # acked after it was back


def test_a_second_copy_of_a_grpc_attempt_is_allowed_only_next_to_a_proxy_outage():
    # seen on 5.5.0: a FAILURE 155 ms before a proxy kill -9; its change of the invisible time retried after
    kill = pop.grpc_client_outages([Outage("kill", T0 + 155, T0 + 8_725)])
    assert pop.second_copy_allowed([], T0 + 3_316, T0 + 15_520, grpc_outages=kill)[0]
    assert not pop.second_copy_allowed([], T0 + 3_316, T0 + 15_520)[0]
    far = pop.grpc_client_outages([Outage("kill", T0 - 600_000, T0 - 590_000)])
    assert not pop.second_copy_allowed([], T0 + 3_316, T0 + 15_520, grpc_outages=far)[0]


def _broker_kill(down, ready):
    return [{"type": "fault", "ts_ms": down, "action": "kill", "target": "broker"},
            {"type": "fault", "ts_ms": ready - 10, "action": "start", "target": "broker"},
            {"type": "fault", "ts_ms": ready, "action": "ready", "target": "broker"}]


def test_after_a_brokers_restart_its_proxy_serves_it_only_once_its_route_cache_refreshed():
    # seen on 5.3.3 and 5.4.0: acks refused (INVALID_RECEIPT_HANDLE) up to 20 s and more after the broker was ready
    faults = _broker_kill(T0, T0 + 20_000)
    route = pop.grpc_broker_outages(faults)
    assert [(o.down_ms, o.up_ms) for o in route] == [(T0, T0 + 20_000 + pop.PROXY_ROUTE_REFRESH_MS)]
    assert pop.grpc_broker_outages(faults, pop.PROXY_LOCAL) == []  # restarted with the broker: its cache empty
    ok_after_ready = T0 + 30_000
    assert pop.unplanned_attempt(pop.pop_outages(pop.GRPC_SIMPLE, faults), ok_after_ready, T0 + 45_000) is not None
    assert pop.unplanned_attempt(pop.pop_outages(pop.POP, faults), ok_after_ready, T0 + 45_000) is None  # no proxy


def test_a_copy_popped_before_a_broker_kill_may_be_popped_again_though_its_listener_answered_after():
    # seen on 5.4.0 (local mode): a PushConsumer answered at +21 s a copy it popped at +14 s; the broker was killed at +16 s
    run = _pop_run()
    kill = _broker_kill(T0 + 16_000, T0 + 30_000)
    first, again = _deliver("a", T0 + 21_000, 0, "LATER", T0 + 14_000), _deliver("a", T0 + 36_000, 0, "LATER", T0 + 35_900)
    assert rule_duplicate(run, kill, first, again).allowed
    popped_after = dict(first, pop_ms=T0 + 20_000)  # popped from the restarted broker: its offset was committed
    assert not rule_duplicate(run, kill, popped_after, again).allowed


def test_an_ok_whose_ack_the_proxy_refused_is_revived_like_a_later():
    from hourglass.reference.expected import sent_back_copies

    refused = _deliver("a", T0, 0, "OK", T0, ack_failed="BadRequestException: INVALID_RECEIPT_HANDLE")
    assert sent_back_copies([refused, _deliver("a", T0 + 9_000, 0, "OK", T0 + 9_000)]) == 1
    assert sent_back_copies([refused, dict(refused, ts_ms=T0 + 9_000)]) == 2  # popped twice, refused twice: two revives


@pytest.mark.parametrize("refused, violations", [(True, 0), (False, 1)])
def test_an_attempt_after_a_refused_ack_passes_retry_schedule(refused, violations):
    ok = _deliver("a", T0 + 300, 0, "OK", T0 + 250, **({"ack_failed": "INVALID_RECEIPT_HANDLE"} if refused else {}))
    assert _retry_after_ok(ok) == violations


def test_a_change_still_in_flight_when_the_broker_is_killed_may_leave_the_pops_own_invisible_time():
    # seen on 5.4.0: a PushConsumer's FAILURE 42 ms before a broker kill came back 60 s after its pop
    run = _pop_run(invisible_ms=pop.GRPC_PUSH_INVISIBLE_MS)
    run["profile"]["pop_groups"]["g"].update(mode=pop.GRPC_PUSH, max_times=2)
    events = [{"type": "send", "ts_ms": T0, "key": "a", "topic": "T", "delay_level": 0, "status": "SEND_OK", "born_ms": T0,
               "plan": ["LATER", "OK"]}, _deliver("a", T0 + 300, 0, "LATER", T0 + 250)]
    row = {r.attempt: r for r in build_expected(run, events + _broker_kill(T0 + 342, T0 + 20_000))}[1]
    assert row.latest_ms >= T0 + 250 + pop.GRPC_PUSH_INVISIBLE_MS
    far = {r.attempt: r for r in build_expected(run, events + _broker_kill(T0 + 15_000, T0 + 20_000))}[1]
    assert far.latest_ms < T0 + 250 + pop.GRPC_PUSH_INVISIBLE_MS  # killed after the change was done


def test_a_graceful_stop_of_the_proxy_may_revive_a_held_pushconsumer_copy_a_second_after_its_clear():
    # seen on 5.0.0: a FAILURE answered during the proxy's 31 s graceful stop came back 4.4 s later, before its 5 s backoff
    stop = [{"type": "fault", "ts_ms": T0 + 1_000, "action": "stop", "target": "proxy"},
            {"type": "fault", "ts_ms": T0 + 32_000, "action": "stopped", "target": "proxy"}]
    assert pop.proxy_clear_ms(stop, T0 + 30_000, T0 + 30_040) == T0 + 30_000 + pop.PROXY_CLEAR_INVISIBLE_MS
    assert pop.proxy_clear_ms(stop, T0 + 33_000, T0 + 33_040) is None  # popped after the proxy was gone
    assert pop.proxy_clear_ms(stop, T0 - 20_000, T0 - 19_000) is None  # answered long before the stop began
    run = _pop_run(invisible_ms=pop.GRPC_PUSH_INVISIBLE_MS)
    run["profile"]["pop_groups"]["g"].update(mode=pop.GRPC_PUSH, max_times=3)
    events = [{"type": "send", "ts_ms": T0, "key": "a", "topic": "T", "delay_level": 0, "status": "SEND_OK", "born_ms": T0,
               "plan": ["LATER", "LATER", "OK"]}, _deliver("a", T0 + 300, 0, "LATER", T0 + 250),
              _deliver("a", T0 + 30_040, 1, "LATER", T0 + 30_000, clo=9)]
    plain = {r.attempt: r for r in build_expected(run, events)}[2]
    cleared = {r.attempt: r for r in build_expected(run, events + stop)}[2]
    assert plain.earliest_ms == T0 + 30_040 + pop.RetryPolicy().next_attempt_delay_ms(2)
    assert cleared.earliest_ms == T0 + 30_000 + pop.PROXY_CLEAR_INVISIBLE_MS and "clearAllHandle" in cleared.widened_by


# --- the broker's own record of a revive (reference.pop.parse_revived, popped_unseen) ---

_REVIVE_533 = ("2026-11-30 09:03:02 INFO PopReviveService_1 - reviveQueueId=1,retry msg, ck=PopCheckPoint "
               "[topic=%RETRY%pop-later_cg-poplater_pop-later_PopLater, cid=pop-later_cg-poplater, queueId=0, startOffset=3, "
               "bitMap=0, num=1, reviveTime=1795989790000, reviveOffset=9, diff=[0], brokerName=hg-broker, rePutTimes=0], "
               "msg queueId 0, offset 3, reviveDelay=1, result is PutMessageResult [putMessageStatus=PUT_OK, "
               "appendMessageResult=AppendMessageResult{status=PUT_OK, wroteOffset=88123, wroteBytes=612, "
               "msgId='7F00000100004E8B0000000000015839', storeTimestamp=1795989791020, logicsOffset=4, pagecacheRT=0, "
               "msgNum=1}, remotePut=false] ")


def test_a_revive_in_the_brokers_pop_log_names_its_group_and_the_copy_it_put():
    group, wrote, what = pop.parse_revived(_REVIVE_533)
    assert (group, wrote) == ("pop-later_cg-poplater", 88123)
    assert what == "%RETRY%pop-later_cg-poplater_pop-later_PopLater queue 0 offset 3"
    assert pop.parse_revived(_REVIVE_533.replace("retry msg,", "retry msg ,"))[1] == 88123  # 5.0 and 5.1
    assert pop.parse_revived(_REVIVE_533.replace("putMessageStatus=PUT_OK", "putMessageStatus=FLUSH_DISK_TIMEOUT")
                             .replace("status=PUT_OK", "status=UNKNOWN_ERROR")) is None  # stored nothing
    assert pop.parse_revived("2026-11-30 09:03:02 INFO PopReviveService_1 - reviveQueueId=1, ck listSize=2") is None


def test_a_gap_is_the_broker_reviving_a_pop_only_for_the_very_copy_delivered():
    revived = [{"action": "pop_revived", "group": "g", "commit_log_offset": 88123, "cause": "pop.log: t queue 0 offset 3"}]
    assert "PopReviveService" in pop.popped_unseen(revived, "g", [{"commit_log_offset": 88123}])
    assert pop.popped_unseen(revived, "other", [{"commit_log_offset": 88123}]) is None
    assert pop.popped_unseen(revived, "g", [{"commit_log_offset": 88124}]) is None
    assert pop.popped_unseen(revived, "g", [{}]) is None
