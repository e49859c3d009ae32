"""The checker on runs of a cluster (reference.cluster), on both judge paths: each broker orders
its own levels, two brokers' commit-log offsets are not one stored copy, a master's restart after
its slave served allows a redelivery, and a retry whose send-back met a broker that was down may
come a send-back timeout later — each case beside the same run without the cluster's reason, which
must fail."""

from __future__ import annotations

import pytest

from hourglass.reference.contract import SEND_BACK_FAILED, SENT_BACK
from hourglass.reference.network import SEND_BACK_FAILS_AFTER_MS
from suites.selftest.checker.runs import GROUP, T0, RunBuilder, check_on_path

A, B = "broker-a", "broker-b"


def _profile(builder: RunBuilder, cluster: str) -> dict:
    return {**builder.run_json()["profile"], "cluster": cluster}


def _order(run_id: str, second_broker: str) -> RunBuilder:
    # b is born after a's send returned, stored before a: out of order only within one broker;
    # c (born after both returned, stored after both) is judged either way
    return (RunBuilder(run_id).send("a", 0, level=2).send("b", 100, level=2).send("c", 200, level=2)
            .deliver("a", 5_400, broker=A).deliver("b", 5_200, broker=second_broker).deliver("c", 5_500, broker=second_broker))


def _two_copies(run_id: str, second_broker: str) -> RunBuilder:
    # the same commit-log offset twice, a consumer restart in between: one copy redelivered if both
    # come from one broker; two copies (and no broker kill) if from two
    return (RunBuilder(run_id).send("c", 0).deliver("c", 100, copy=7, broker=A)
            .fault(2_000, "kill", "consumer").fault(3_000, "start", "consumer")
            .deliver("c", 100, copy=7, at=4_000, broker=second_broker))


def _master_back(run_id: str) -> RunBuilder:
    # consumed (from the slave) while the master was down, delivered again after the master's start
    return (RunBuilder(run_id).send("d", 500).fault(1_000, "kill").deliver("d", 900, at=3_000, copy=5, broker=A)
            .fault(4_000, "start").fault(6_000, "ready").deliver("d", 900, at=7_000, copy=5, broker=A))


def _send_back(run_id: str, outage: bool) -> RunBuilder:
    # a LATER at 20 s; its local re-consume 5 s + a send-back timeout later
    b = RunBuilder(run_id).send("e", 19_000, plan=["LATER", "OK"])
    if outage:
        b.fault(18_000, "kill", "broker-2").fault(30_000, "start", "broker-2").fault(33_000, "ready", "broker-2")
    late = 20_010 + 5_000 + SEND_BACK_FAILS_AFTER_MS - 500
    return b.deliver("e", 19_010, outcome="LATER", at=20_010, copy=9, broker=A).deliver("e", 19_010, attempt=1, at=late, copy=9, broker=A)


def _retry_copies(run_id: str, laters: int, send_back_failed: tuple[int, str, str | None] | None = None,
                  sent_back_at: int | None = None) -> RunBuilder:
    # attempt 0 answered LATER ``laters`` times (the second a redelivery after a consumer restart),
    # attempt 1 stored twice; ``send_back_failed``: (when, group, key) the client logged a send-back
    # failed (reference.network.send_back_failures)
    b = RunBuilder(run_id).send("f", 0, plan=["LATER", "OK"]).deliver("f", 10, outcome="LATER", at=100, copy=11)
    b.fault(200, "kill", "consumer").fault(300, "start", "consumer")
    if laters == 2:
        b.deliver("f", 10, outcome="LATER", at=400, copy=11)
    if sent_back_at is not None:  # when the send-back request left the client (a batch's: once all were answered)
        b.fault(sent_back_at, SENT_BACK, "consumer", group=GROUP, key="f", reconsume_times=0)
    if send_back_failed:
        at, group, key = send_back_failed
        b.fault(at, SEND_BACK_FAILED, "consumer", group=group, **({"key": key} if key else {}))
    return b.deliver("f", 10_100, attempt=1, copy=21).deliver("f", 10_400, attempt=1, copy=22)


def _failover_repeat(run_id: str) -> RunBuilder:
    # a re-put 14.5 s before the master's kill, re-put again after it: older than the killed
    # broker's own last persist (10 s interval), within what an elected replica may have synced
    return (RunBuilder(run_id).send("h", 19_000, level=1).deliver("h", 20_500, at=20_600)
            .fault(35_000, "kill").deliver("h", 36_000, at=36_100)
            .fault(43_000, "start").fault(45_000, "ready"))


_TWO_MASTERS = {"adapter": "handmade", "version": "1.0", "runtime": "none", "cluster": "two-masters",
                "brokers": {"broker": {"name": A, "role": "master"}, "broker-2": {"name": B, "role": "master"}}}


def _late_while_the_other_is_down(run_id: str, stored_on: str) -> RunBuilder:
    # the second master is down from 0 to 20 s; a level-2 message (5 s) sent at 1 s is re-put at 15 s
    return (RunBuilder(run_id).fault(0, "kill", "broker-2").send("m", 1_000, level=2, broker=stored_on)
            .deliver("m", 15_000, broker=stored_on).fault(18_000, "start", "broker-2").fault(20_000, "ready", "broker-2"))


@pytest.fixture(scope="module")
def cluster_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("cluster")
    for _run_id, b in [("order-two-brokers", _order("order-two-brokers", B)), ("order-one-broker", _order("order-one-broker", A))]:
        b.write(root, profile=_profile(b, "two-masters"))
    for run_id, second in [("copies-one-broker", A), ("copies-two-brokers", B)]:
        b = _two_copies(run_id, second)
        b.write(root, profile=_profile(b, "two-masters"))
    b = _master_back("master-back-slave-served")
    b.write(root, profile=_profile(b, "master-slave"))
    _master_back("master-back-single").write(root)
    b = _failover_repeat("failover-replica-resumes")
    b.write(root, profile=_profile(b, "controller"))
    _failover_repeat("restart-resumes-own-offsets").write(root)
    for run_id, broker in [("late-on-the-live-master", A), ("late-on-the-down-master", B)]:
        b = _late_while_the_other_is_down(run_id, broker)
        b.write(root, profile=_profile(b, "two-masters"), system=_TWO_MASTERS)
    _retry_copies("retry-of-each-later", 2).write(root)
    _retry_copies("retry-copy-without-later", 1).write(root)
    # the client logged the send-back failed 5 s after the LATER: the request it gave up on may be
    # stored beside its re-send; a failure of another group, of another key or long after explains nothing
    _retry_copies("retry-copy-send-back-failed", 1, (5_100, GROUP, None)).write(root)
    _retry_copies("retry-copy-send-back-failed-key", 1, (5_100, GROUP, "f")).write(root)
    _retry_copies("retry-copy-other-group-failed", 1, (5_100, "other-group", None)).write(root)
    _retry_copies("retry-copy-other-key-failed", 1, (5_100, GROUP, "g")).write(root)
    _retry_copies("retry-copy-failed-too-late", 1, (100 + SEND_BACK_FAILS_AFTER_MS + 500, GROUP, None)).write(root)
    # a batch's send-back left the client 6.7 s after its LATER and failed 3 s after that (proof C,
    # batch-ack-index): timed from the request, it may have stored one more retry
    _retry_copies("retry-copy-batch-send-back-failed", 1, (100 + 6_700 + 3_000, GROUP, "f"), sent_back_at=100 + 6_700).write(root)
    for run_id, outage in [("send-back-broker-down", True), ("send-back-no-outage", False)]:
        b = _send_back(run_id, outage)
        b.write(root, profile=_profile(b, "two-masters"))
    return root


@pytest.fixture(scope="module", params=["whole", "bucketed"])
def verdicts(request, spark, cluster_root, tmp_path_factory):
    return check_on_path(request.param, [cluster_root], tmp_path_factory.mktemp("out"))


def test_each_broker_orders_its_own_levels(verdicts):
    two = verdicts["order-two-brokers"]["invariants"]["LEVEL_ORDER"]
    assert two["passed"] is True and two["checked"] >= 1, two
    one = verdicts["order-one-broker"]["invariants"]["LEVEL_ORDER"]
    assert one["passed"] is False and one["examples"][0]["key"] == "b"


def test_commit_log_offsets_of_two_brokers_are_two_copies(verdicts):
    assert verdicts["copies-one-broker"]["invariants"]["NO_DUPLICATE"]["passed"] is True  # the consumer restart
    two = verdicts["copies-two-brokers"]["invariants"]["NO_DUPLICATE"]
    assert two["passed"] is False and "new stored copy" in two["examples"][0]["explanation"]


def test_a_master_back_after_its_slave_served_may_redeliver(verdicts):
    assert verdicts["master-back-slave-served"]["invariants"]["NO_DUPLICATE"]["passed"] is True
    single = verdicts["master-back-single"]["invariants"]["NO_DUPLICATE"]
    assert single["passed"] is False  # one broker: no slave served, its start explains nothing


def test_a_send_back_that_met_a_down_broker_may_come_a_timeout_later(verdicts):
    assert verdicts["send-back-broker-down"]["invariants"]["ON_TIME"]["passed"] is True
    assert verdicts["send-back-no-outage"]["invariants"]["ON_TIME"]["passed"] is False
    assert T0  # times are relative to the shared origin


def test_each_later_answer_stores_its_own_retry(verdicts):
    assert verdicts["retry-of-each-later"]["invariants"]["NO_DUPLICATE"]["passed"] is True
    one = verdicts["retry-copy-without-later"]["invariants"]["NO_DUPLICATE"]
    assert one["passed"] is False and one["examples"][0]["attempt"] == 1


def test_a_send_back_the_client_logged_failed_may_store_one_more_retry(verdicts):
    for run_id in ("retry-copy-send-back-failed", "retry-copy-send-back-failed-key", "retry-copy-batch-send-back-failed"):
        assert verdicts[run_id]["invariants"]["NO_DUPLICATE"]["passed"] is True, run_id
    for run_id in ("retry-copy-other-group-failed", "retry-copy-other-key-failed", "retry-copy-failed-too-late"):
        dup = verdicts[run_id]["invariants"]["NO_DUPLICATE"]
        assert dup["passed"] is False and dup["examples"][0]["attempt"] == 1, run_id


def test_a_replica_elected_after_a_kill_may_repeat_re_puts_since_its_last_sync(verdicts):
    assert verdicts["failover-replica-resumes"]["invariants"]["NO_DUPLICATE"]["passed"] is True
    own = verdicts["restart-resumes-own-offsets"]["invariants"]["NO_DUPLICATE"]  # one broker: its own persist
    assert own["passed"] is False and own["examples"][0]["cause"] == "scheduler"


def test_a_message_waits_only_for_the_broker_it_was_stored_on(verdicts):
    live = verdicts["late-on-the-live-master"]["invariants"]["ON_TIME"]
    assert live["passed"] is False and live["examples"][0]["key"] == "m"
    assert verdicts["late-on-the-down-master"]["invariants"]["ON_TIME"]["passed"] is True  # widened by its outage


def test_a_send_back_failure_is_timed_from_the_request_of_that_very_attempt():
    """reference.network.send_back_failures: a batch's send-back leaves the client once the whole
    batch was answered (proof C, batch-ack-index: 6.7 to 9.3 s after the LATER), so its failure is
    timed from its own SENT_BACK — that attempt's, where the judge knows the attempt; else the first
    within a send-back's give-up time of the LATER. A failure far from both belongs to no LATER."""
    from hourglass.reference.network import send_back_failures

    sent = {"action": SENT_BACK, "group": GROUP, "key": "f", "ts_ms": 9_300, "reconsume_times": 0}
    failed = {"action": SEND_BACK_FAILED, "group": GROUP, "key": "f", "ts_ms": 12_300}
    at = send_back_failures([sent, failed])
    assert at(0, GROUP, "f", 0) == 12_300  # its own request left at 9.3 s, failed 3 s later
    assert at(0, GROUP, "f", 1) is None  # another attempt's request
    assert at(0, GROUP, "f") is None  # unknown attempt: 9.3 s is beyond a send-back's give-up time
    assert send_back_failures([dict(sent, ts_ms=6_700), dict(failed, ts_ms=9_700)])(0, GROUP, "f") == 9_700
    assert send_back_failures([failed])(0, GROUP, "f", 0) is None  # no request recorded: timed from the LATER
