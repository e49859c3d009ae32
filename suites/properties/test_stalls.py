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


def waited(subject, from_ms, to_ms, ms, thread="ScheduleMessageTimerThread_1", source=rule.RUN_QUEUE):
    """A thread's wait as the host watch records it (its name cut to 15 characters, as /proc's comm)."""
    return dict(stall(source, subject, from_ms, to_ms, ms), detail=f"thread {thread[:15]}")


def cpu(from_ms, to_ms, some_ms, full_ms=0):
    return stall("psi-cpu", rule.HOST, from_ms, to_ms, some_ms, full_ms=full_ms)


def test_a_path_thread_starved_across_the_due_time_explains_its_lateness_when_the_host_saw_it():
    s = [waited("broker", 11_000, 17_000, 6_000), cpu(11_000, 17_000, 6_000)]
    covered, reason = rule.explain_late(s, 12_000, 14_000, 18_000, 0, path=rule.SCHEDULE)
    assert covered
    assert "run-queue: the broker stalled 5000 ms on its path (ScheduleMessage)" in reason and "+11.0 s" in reason
    assert "undecided" in reason


def test_a_wait_off_the_messages_path_excuses_nothing():
    # the JVM's compiler and sweeper threads, the statistics service: busy, never on a message's path
    # nor the persisting threads (the asynchronous flushes, the timer store's flush: 18.8 s of waits in a
    # passing 5.5.0 run), nor the broker's own name-server client
    for thread in ("C2 CompilerThread0", "Sweeper thread", "StoreStatsService", "VM Thread", "GC Thread#0",
                   "TimerFlushService", "FlushRealTimeService", "FlushConsumeQueueService", "NettyClientSelector_1",
                   "BrokerControllerScheduledThread1", "brokerOutApi_thread_1"):
        s = [waited("broker", 11_000, 17_000, 6_000, thread=thread), cpu(11_000, 17_000, 6_000)]
        covered, reason = rule.explain_late(s, 12_000, 14_000, 18_000, 0, path=rule.SCHEDULE)
        assert not covered, thread
        assert "late by 4.0 s, of which recorded stalls explain 0.0 s" in reason and "no stall on its path" in reason


def test_each_path_counts_its_own_threads():
    # the timer store's dequeue put stalled: a timer message's path, not a delay level's
    s = [waited("broker", 11_000, 17_000, 6_000, thread="TimerDequeuePutMessageService"), cpu(11_000, 17_000, 6_000)]
    assert rule.explain_late(s, 12_000, 14_000, 18_000, 0, path=rule.TIMER)[0]
    assert not rule.explain_late(s, 12_000, 14_000, 18_000, 0, path=rule.SCHEDULE)[0]
    assert not rule.explain_late(s, 12_000, 14_000, 18_000, 0, path=rule.DIRECT)[0]
    # the reput thread's wait is a message not delayed's path; a delayed copy's only from its put (below)
    s = [waited("broker", 11_000, 17_000, 6_000, thread="ReputMessageService"), cpu(11_000, 17_000, 6_000)]
    assert rule.explain_late(s, 12_000, 14_000, 18_000, 0, path=rule.DIRECT)[0]
    assert not any(rule.explain_late(s, 12_000, 14_000, 18_000, 0, path=p)[0] for p in rule.DELAYED_PATHS)


def dispatch_waited(from_ms, to_ms, ms):
    """The dispatch's wait as the host watch records it apart (reference.stalls.thread_paths)."""
    return dict(waited("broker", from_ms, to_ms, ms, thread="ReputMessageService"), path=rule.DISPATCH)


def test_a_delayed_copys_dispatch_holds_it_only_past_its_due_time():
    assert rule.thread_paths("broker", "ReputMessageSer") == (rule.DIRECT, rule.DISPATCH, rule.JVM)
    assert rule.thread_paths("broker", "C2 CompilerThre") == () == rule.thread_paths("broker", "Sweeper thread")
    # put at +10 s, due at +12 s, on time until +14 s, stored at +18 s: late by 4 s
    held = [dispatch_waited(10_000, 17_000, 7_000), cpu(10_000, 17_000, 7_000)]
    covered, reason = rule.explain_late(held, 12_000, 14_000, 18_000, 0, path=rule.SCHEDULE, put_ms=10_000)
    assert covered, reason  # 7 s of waits from its put: out of its queue until +17 s, 5 s past its due time
    assert "stalled 5000 ms on its path (ReputMessageSer)" in reason
    # the dispatch waited 3 s from the put: the copy was in its queue at +13 s, 1 s after its due time
    short = [dispatch_waited(10_000, 13_000, 3_000), cpu(10_000, 13_000, 3_000)]
    covered, reason = rule.explain_late(short, 12_000, 14_000, 18_000, 0, path=rule.SCHEDULE, put_ms=10_000)
    assert not covered and "late by 4.0 s, of which recorded stalls explain 1.0 s" in reason
    # a reput loop's short waits all the while (300 ms of every 500 ms) from a put 5 s before its due time
    busy = [dispatch_waited(t, t + 500, 300) for t in range(5_000, 18_000, 500)] + [cpu(5_000, 18_000, 13_000)]
    covered, reason = rule.explain_late(busy, 10_000, 12_000, 15_000, 0, path=rule.SCHEDULE, put_ms=5_000)
    assert not covered and "explain 1.0 s" in reason, reason  # 6 s of waits, 5 s of them before its due time
    # waits before its put, or without its put known, hold no copy
    assert not rule.explain_late(held, 12_000, 14_000, 18_000, 0, path=rule.SCHEDULE, put_ms=17_500)[0]
    assert not rule.explain_late(held, 12_000, 14_000, 18_000, 0, path=rule.SCHEDULE)[0]
    # a level of 0 s: put when due, every wait of its dispatch after it counts
    zero = [dispatch_waited(12_000, 17_000, 5_000), cpu(12_000, 17_000, 5_000)]
    assert rule.explain_late(zero, 12_000, 14_000, 16_000, 0, path=rule.SCHEDULE, put_ms=12_000)[0]


def test_a_reading_the_host_contradicts_excuses_nothing_and_says_so():
    # one thread's 41.9 s "run-queue wait" while the host's CPU pressure was 12 %: no starved host explains it
    s = [waited("broker", 0, 41_900, 41_900, thread="ScheduleMessageExecutorHandleThread_2"), cpu(0, 41_900, 5_000)]
    covered, reason = rule.explain_late(s, 30_000, 33_000, 36_147, 0, path=rule.SCHEDULE)
    assert not covered
    assert "late by 3.1 s, of which recorded stalls explain 0.0 s" in reason
    assert "a 41900 ms wait of thread ScheduleMessage the host's pressure did not corroborate excuses nothing" in reason


def test_corroboration_scales_with_the_hosts_cpus():
    # one thread waited 4 s on one CPU while the other CPU ran: PSI, averaged over both, saw 2 s
    s = [waited("broker", 10_000, 14_000, 4_000), cpu(10_000, 14_000, 2_000)]
    assert rule.explain_late(s, 10_000, 11_000, 13_000, 0, cpus=2, path=rule.SCHEDULE)[0]
    assert not rule.explain_late(s, 10_000, 11_000, 13_000, 0, cpus=1, path=rule.SCHEDULE)[0]


def test_lateness_beyond_the_stalls_is_a_violation_that_says_how_much_they_explain():
    s = [waited("broker", 12_500, 13_500, 800), cpu(12_500, 13_500, 900)]
    covered, reason = rule.explain_late(s, 12_000, 14_000, 19_000, 0, path=rule.SCHEDULE)
    assert not covered
    assert "late by 5.0 s, of which recorded stalls explain 0.8 s" in reason and "stalled 800 ms" in reason
    assert "no stall on its path was recorded" in rule.explain_late([], 12_000, 14_000, 19_000, 0)[1]


def test_only_the_part_of_a_stall_within_the_attempts_own_wait_counts():
    s = [waited("broker", 10_000, 14_000, 4_000), cpu(10_000, 14_000, 4_000)]  # half of it before the due time
    assert rule.explain(s, 12_000, 20_000).explained_ms == 2_000
    before = [waited("broker", 1_000, 5_000, 4_000), cpu(1_000, 5_000, 4_000)]
    assert rule.explain(before, 12_000, 15_000).explained_ms == 0
    after = [waited("broker", 20_000, 30_000, 9_000), cpu(20_000, 30_000, 9_000)]
    assert rule.explain(after, 12_000, 15_000).series is None


def test_some_pressure_and_the_heartbeat_are_context_full_pressure_counts():
    busy = cpu(12_000, 17_000, 4_900)
    covered, reason = rule.explain_late([busy], 12_000, 14_000, 15_000, 0)
    assert not covered and "cpu pressure 98 %" in reason
    io = stall("psi-io", rule.HOST, 12_000, 17_000, 4_000, full_ms=3_000)
    assert rule.explain_late([io], 12_000, 14_000, 16_500, 0)[0]
    beat = stall(rule.HEARTBEAT, rule.HARNESS, 13_000, 16_000, 3_000)
    assert not rule.explain_late([beat, busy], 12_000, 14_000, 16_500, 0)[0]


def test_a_consumer_stall_explains_a_local_re_consume_not_a_re_put():
    s = [waited("consumer c-0", 12_000, 16_000, 4_000, thread="ConsumeMessageThread_3"), cpu(12_000, 16_000, 4_000)]
    assert rule.explain_late(s, 12_000, 14_000, 17_000, 0, local=True)[0]
    assert not rule.explain_late(s, 12_000, 14_000, 17_000, 0, local=False)[0]
    broker = [waited("broker", 12_000, 16_000, 4_000), cpu(12_000, 16_000, 4_000)]
    assert not rule.explain_late(broker, 12_000, 14_000, 17_000, 0, local=True)[0]
    pulling = [waited("consumer c-0", 12_000, 16_000, 4_000, thread="C1 CompilerThread0"), cpu(12_000, 16_000, 4_000)]
    assert not rule.explain_late(pulling, 12_000, 14_000, 17_000, 0, local=True)[0]


def test_series_are_never_added_together():
    # two sources measuring the same 3 s stall: 3 s explained, not 6
    s = [waited("broker", 12_000, 15_000, 3_000), stall(rule.BROKER_LOG, "broker", 12_000, 15_000, 3_000),
         cpu(12_000, 15_000, 3_000)]
    assert rule.explain(s, 12_000, 20_000).explained_ms == 3_000


@given(st.lists(st.tuples(st.integers(0, 60_000), st.integers(1, 10_000), st.integers(0, 10_000)), max_size=30),
       st.integers(0, 60_000), st.integers(1, 30_000), st.integers(1, 4))
def test_an_excuse_never_exceeds_the_attempts_own_wait_nor_the_stalls_within_it(periods, due, waited_ms, cpus):
    s = [waited("broker", a, a + d, min(n, d)) for a, d, n in periods] + [cpu(a, a + d, d) for a, d, _ in periods]
    e = rule.explain(s, due, due + waited_ms, cpus=cpus)
    assert 0 <= e.explained_ms <= waited_ms
    within = sum(max(0, min(due + waited_ms, a + d) - max(due, a)) for a, d, _ in periods)
    assert e.explained_ms <= within
    more = rule.explain(s + [waited("broker", due, due + 1000, 1000), cpu(due, due + 1000, 1000)], due, due + waited_ms,
                        cpus=cpus)
    assert more.explained_ms >= e.explained_ms


@given(st.integers(0, 30_000), st.integers(1, 20_000), st.integers(0, 20_000))
def test_an_attempt_late_by_more_than_its_stalls_is_always_a_violation(stalled_ms, late_ms, extra_ms):
    due, latest = 10_000, 13_000
    s = [waited("broker", due, due + stalled_ms + 1, stalled_ms), cpu(due, due + stalled_ms + 1, stalled_ms)]
    arrived = latest + stalled_ms + 1 + extra_ms
    covered, reason = rule.explain_late(s, due, latest, arrived, 0, path=rule.SCHEDULE)
    assert not covered and "late by" in reason


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


def test_a_lateness_that_arrived_after_the_host_was_last_watched_is_undecided_and_only_then():
    # the watch lasts until the run's consumers stopped: one that arrived later was not watched
    assert not rule.explain_late([], 12_000, 14_000, 19_000, 0, watched_until_ms=20_000)[0]  # watched throughout
    covered, reason = rule.explain_late([], 12_000, 14_000, 19_000, 0, watched_until_ms=16_000)
    assert covered and "3.0 s after the harness stopped watching the host" in reason and "undecided" in reason
    assert not rule.explain_late([], 12_000, 14_000, 19_000, 0)[0]  # a run that did not say: no blanket rule


_PERIOD = st.tuples(st.sampled_from(["psi-cpu", "psi-io"]), st.integers(0, 60_000), st.integers(-50, 8_000),
                    st.integers(0, 9_000))


@given(st.lists(_PERIOD, max_size=40), st.integers(-1_000, 70_000), st.integers(0, 20_000))
def test_the_psi_index_sums_what_every_period_would(periods, from_ms, length):
    # PsiPeriods bisects to the periods that can overlap a span; the sum must be the one over all of them
    # (the checker's verdicts rest on it), whatever the periods' lengths, overlaps and order
    s = [stall(source, rule.HOST, a, a + n, ms) for source, a, n, ms in periods]
    index = rule.PsiPeriods(s)
    for resource in ("cpu", "io", "memory"):
        every = sum(rule._share(p, int(p["stalled_ms"]), from_ms, from_ms + length)
                    for p in s if p["source"] == f"psi-{resource}")
        assert index.some_ms(resource, from_ms, from_ms + length) == every


def test_a_jvm_wide_pause_excuses_on_every_path_only_as_far_as_the_jvms_threads_waited_for_a_cpu():
    # a 3 s safepoint (the JVM's own log: reference.stalls.parse_safepoint) stops every thread of the broker:
    # on a re-put's path whatever the path, but the host's only as far as the JVM's threads waited for a CPU
    # meanwhile (its JVM series, corroborated): a pause no thread waited through (a frozen or looping thread
    # held the safepoint, a long GC on an idle host) is the broker's own, however busy the host
    line = ('[2026-11-30T01:27:43.000+0000][9.0s] Safepoint "G1CollectForAllocation", Time since last: 1 ns, '
            'Reaching safepoint: 2900000000 ns, Cleanup: 1 ns, At safepoint: 100000000 ns, Total: 3000000000 ns')
    start, end, what = rule.parse_safepoint(line)
    pause = dict(stall(rule.BROKER_LOG, "broker", start, end, end - start), detail=f"safepoint.log: {what}", path=rule.JVM)
    jvm = dict(waited("broker", start, start + 2_000, 2_000, thread="VM Thread"), path=rule.JVM)
    busy = cpu(start, end, 3_000)
    due = start + 500
    for path in (rule.SCHEDULE, rule.TIMER, rule.POP, rule.DIRECT):
        assert rule.explain([pause, jvm, busy], due, end + 1_000, path=path).explained_ms == 1_500  # waited from due on
    assert rule.explain([pause, busy], due, end + 1_000, path=rule.SCHEDULE).explained_ms == 0  # nobody waited
    assert rule.explain([jvm, busy], due, end + 1_000, path=rule.SCHEDULE).explained_ms == 0  # a wait alone: no path
    other = dict(jvm, subject="broker-2")
    assert rule.explain([pause, other, busy], due, end + 1_000, path=rule.SCHEDULE).explained_ms == 0  # another JVM's
    idle = cpu(start, end, 0)
    assert rule.explain([pause, jvm, idle], due, end + 1_000, path=rule.SCHEDULE).explained_ms == 0  # not corroborated


def test_a_put_report_and_a_jvm_wide_pause_of_one_broker_are_two_series_weighed_apart():
    # proof C: the broker's put report (no path) and its safepoint (the JVM path) in one wait: the
    # checker compared their series' names (None against "jvm") and crashed on every run of the batch
    put = stall(rule.BROKER_LOG, "broker", 12_000, 13_000, 1_000)
    pause = dict(stall(rule.BROKER_LOG, "broker", 12_000, 14_000, 2_000), path=rule.JVM)
    jvm = dict(waited("broker", 12_000, 14_000, 2_000, thread="VM Thread"), path=rule.JVM)
    got = rule.explain([put, pause, jvm, cpu(12_000, 14_000, 2_000)], 12_000, 15_000, path=rule.SCHEDULE)
    assert got.explained_ms == 2_000 and got.series == (rule.BROKER_LOG, "broker", rule.JVM)
