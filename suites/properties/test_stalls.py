"""reference.stalls: which late attempts the host's recorded stalls explain, and which they do not."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hourglass.reference import stalls as rule


def stall(source, subject, from_ms, to_ms, stalled_ms, full_ms=None):
    e = {"type": "stall", "ts_ms": to_ms, "source": source, "subject": subject, "from_ms": from_ms, "stalled_ms": stalled_ms}
    if full_ms is not None:
        e["full_ms"] = full_ms
    return e


def test_a_broker_starved_across_the_due_time_explains_its_lateness():
    s = [stall(rule.RUN_QUEUE, "broker", 11_000, 17_000, 6_000)]
    covered, reason = rule.explain_late(s, 12_000, 14_000, 18_000, 0)
    assert covered
    assert "run-queue: the broker stalled 5000 ms" in reason and "+11.0 s" in reason and "undecided" in reason


def test_lateness_beyond_every_stall_stays_a_violation_and_says_what_was_recorded():
    s = [stall(rule.RUN_QUEUE, "broker", 12_500, 13_500, 800)]
    covered, reason = rule.explain_late(s, 12_000, 14_000, 19_000, 0)
    assert not covered
    assert "5000 ms late, beyond the stalls recorded meanwhile" in reason and "they explain 800 ms" in reason
    assert "no stall of the host or the broker" in rule.explain_late([], 12_000, 14_000, 19_000, 0)[1]


def test_only_the_part_of_a_stall_after_the_due_time_counts():
    s = [stall(rule.RUN_QUEUE, "broker", 10_000, 14_000, 4_000)]  # half of it before the due time
    assert rule.cover(s, 12_000, 14_000).deadline_ms == 16_000


def test_a_stall_before_the_due_time_or_after_the_arrival_explains_nothing():
    before = stall(rule.RUN_QUEUE, "broker", 1_000, 5_000, 4_000)
    assert not rule.explain_late([before], 12_000, 14_000, 15_000, 0)[0]
    after = stall(rule.RUN_QUEUE, "broker", 20_000, 30_000, 9_000)
    c = rule.cover([after], 12_000, 14_000)
    assert c.deadline_ms == 14_000 and c.series is None


def test_some_pressure_is_context_only_full_pressure_and_the_heartbeat_count():
    busy = stall("psi-cpu", rule.HOST, 12_000, 17_000, 4_900, full_ms=0)
    covered, reason = rule.explain_late([busy], 12_000, 14_000, 15_000, 0)
    assert not covered and "cpu pressure 98 %" in reason
    io = stall("psi-io", rule.HOST, 12_000, 17_000, 4_000, full_ms=3_000)
    assert rule.explain_late([io], 12_000, 14_000, 16_500, 0)[0]
    beat = stall(rule.HEARTBEAT, rule.HARNESS, 13_000, 16_000, 3_000)
    assert rule.explain_late([beat], 12_000, 14_000, 16_500, 0)[0]


def test_a_consumer_stall_explains_a_local_re_consume_not_a_re_put():
    s = [stall(rule.RUN_QUEUE, "consumer c-0", 12_000, 16_000, 4_000)]
    assert rule.explain_late(s, 12_000, 14_000, 17_000, 0, local=True)[0]
    assert not rule.explain_late(s, 12_000, 14_000, 17_000, 0, local=False)[0]
    broker = [stall(rule.RUN_QUEUE, "broker", 12_000, 16_000, 4_000)]
    assert not rule.explain_late(broker, 12_000, 14_000, 17_000, 0, local=True)[0]


def test_series_are_never_added_together():
    # two sources measuring the same 3 s stall: the deadline moves by 3 s, not 6
    s = [stall(rule.RUN_QUEUE, "broker", 12_000, 15_000, 3_000), stall(rule.BROKER_LOG, "broker", 12_000, 15_000, 3_000)]
    assert rule.cover(s, 12_000, 14_000).deadline_ms == 17_000


@given(st.floats(0.0, 0.9), st.integers(500, 5_000), st.integers(1, 600))
def test_a_subject_stalled_a_share_f_of_the_time_gets_at_most_slack_over_one_minus_f(f, slack, periods):
    due = 10_000
    s = [stall(rule.RUN_QUEUE, "broker", due + i * 1000, due + (i + 1) * 1000, int(1000 * f)) for i in range(periods)]
    c = rule.cover(s, due, due + slack)
    assert c.deadline_ms - due <= slack / (1 - f) + 1000  # one sample's worth of granularity
    assert c.deadline_ms >= due + slack


@given(st.lists(st.tuples(st.integers(0, 60_000), st.integers(1, 10_000), st.integers(0, 10_000)), max_size=30),
       st.integers(0, 60_000), st.integers(0, 10_000))
def test_the_cover_never_shrinks_a_window_and_grows_with_more_stalls(periods, due, slack):
    s = [stall(rule.RUN_QUEUE, "broker", a, a + d, min(n, d)) for a, d, n in periods]
    base = rule.cover(s, due, due + slack)
    assert base.deadline_ms >= due + slack
    more = rule.cover(s + [stall(rule.RUN_QUEUE, "broker", due, due + 1000, 1000)], due, due + slack)
    assert more.deadline_ms >= base.deadline_ms


# --- the broker's own stall reports (RocketMQ 4.9.7, 5.3.3 log lines) ---------------------------
LINES = {
    # CommitLog.putMessage, 5.x (AppendMessageResult with pagecacheRT), harness 4.x logback pattern alike
    "2026-11-25 13:01:02,419 WARN  RocketmqStore - [NOTIFYME]putMessage in lock cost time(ms)=6419, bodyLength=120 "
    "AppendMessageResult=AppendMessageResult{status=PUT_OK, wroteOffset=1, pagecacheRT=6419}": (6419, "a put held"),
    # DefaultMessageStore.putMessage (5.x)
    "2026-11-25 13:01:02,810 WARN StoreScheduledThread1 - DefaultMessageStore#putMessage: CommitLog#putMessage cost "
    "6810ms, topic=T, bodyLength=120": (6810, "a put took"),
    # PullRequestHoldService.run, 4.9.x and 5.x
    "2026-11-25 13:01:20,000 INFO  RocketmqBroker - [NOTIFYME] check hold request cost 17484 ms.": (17484, "pull hold"),
    "2026-11-25 13:01:20,000 WARN PullRequestHoldService - PullRequestHoldService: check hold pull request cost 5001ms":
        (5001, "pull hold"),
}


def test_the_brokers_own_stall_reports_are_read_at_their_time():
    for line, (cost, what) in LINES.items():
        found = rule.parse_log_stall(line, 0)
        assert found is not None, line
        start, end, text = found
        assert end - start == cost and what in text
    start, end, _ = rule.parse_log_stall(next(iter(LINES)), 3600)  # a broker in UTC+1
    assert end == 1795611662419 - 3_600_000


def test_rocketmqs_own_pattern_in_gmt_plus_8_without_milliseconds_is_read_too():
    # %d{yyy-MM-dd HH:mm:ss,GMT+8} (rmq.broker.logback.xml, 5.3.3): seen in a 5.5.0 store.log
    line = ("2026-11-25 22:46:12 WARN ScheduleMessageTimerThread_16 - DefaultMessageStore#putMessage: "
            "CommitLog#putMessage cost 2202ms, topic=%RETRY%dlq-small_cg-dlq2, bodyLength=64")
    start, end, _ = rule.parse_log_stall(line, rule.ROCKETMQ_LOG_UTC_OFFSET_S)
    assert end == 1795617972000 and end - start == 2202  # 14:46:12 UTC


def test_a_logs_zone_is_read_from_its_last_line_and_when_it_was_written():
    last = rule.log_time_ms("2026-11-25 22:46:12 INFO x - y")
    assert rule.log_utc_offset_s(last, 1795617972000 + 3_000) == 8 * 3600  # written 3 s after its last line
    assert rule.log_utc_offset_s(last - 8 * 3_600_000, 1795617972000 + 200_000) == 0
    assert rule.log_utc_offset_s(last, last + 9 * 3_600_000 + 1_800_000) == -int(9.5 * 3600)  # UTC-9:30


def test_short_stalls_and_other_lines_are_not_stall_reports():
    assert rule.parse_log_stall("2026-11-25 13:01:02,419 WARN x - [NOTIFYME]putMessage in lock cost time(ms)=12", 0) is None
    assert rule.parse_log_stall("2026-11-25 13:01:02,419 INFO x - register broker cost 9999 ms", 0) is None
    assert rule.parse_log_stall("no time here putMessage in lock cost time(ms)=6419", 0) is None


def test_a_run_that_did_not_record_its_host_says_so():
    assert "did not record its host" in rule.not_observed(None)
    assert rule.not_observed({rule.HOST_OBSERVED: ["psi-cpu"]}) is None
    assert rule.not_observed({rule.HOST_VIRTUAL: "virtual"}) is None
    assert rule.not_observed({rule.HOST_NOT_OBSERVED: "external"}) == "external"


def test_a_lateness_that_arrived_after_the_host_was_last_watched_is_undecided_not_a_violation():
    # a shared system's consumers deliver after the run's end, when no stall is recorded any more
    assert not rule.explain_late([], 12_000, 14_000, 19_000, 0, observed_until_ms=20_000)[0]  # watched throughout
    covered, reason = rule.explain_late([], 12_000, 14_000, 19_000, 0, observed_until_ms=16_000)
    assert covered and "3.0 s after the harness stopped watching the host" in reason and "undecided" in reason
