"""The consumer's own retry choices, judged alike by the event-by-event judge and the columnar one
(no Spark: the checker's bucket judge and its table path, as test_columns compares them): a retry
waits the level its LATER asked for (``next_level``), and a batch consumer's messages after its ack
index are owed a retry although their plans answered nothing (reference.plans)."""

from __future__ import annotations

import pytest

from hourglass.reports.judge_run import violations
from suites.selftest.checker.runs import GROUP, RunBuilder
from suites.selftest.checker.test_columns import _assert_same


def asked(run_id: str, retry_stored: int) -> RunBuilder:
    """LATER:1 at 20 (level 1 = 1 s, not the broker's level 3 = 10 s): due at 1020, late after 4020."""
    return (RunBuilder(run_id).send("k", 0, plan=["LATER:1", "OK"]).deliver("k", 10, outcome="LATER", at=20, next_level=1)
            .deliver("k", retry_stored, attempt=1))


def batch(run_id: str, retried: tuple[str, ...]) -> RunBuilder:
    """One batch [a, b, c] answered with ack index 0 at 20: b failed (LATER), c was sent back unasked;
    both are owed retry 1 at level 3 (10 s): due at 10020."""
    b = RunBuilder(run_id)
    for key, plan in (("a", None), ("b", ["LATER", "OK"]), ("c", None)):
        b.send(key, 0, plan=plan)
    for i, key in enumerate("abc"):
        b.deliver(key, 10, outcome="OK" if i == 0 else "LATER", at=20, batch_index=i, ack_index=0)
    for key in retried:
        b.deliver(key, 10_030, attempt=1)
    return b


RUNS = {"asked-level-kept": asked("asked-level-kept", 1030),
        "asked-level-ignored": asked("asked-level-ignored", 10_030),  # stored at the broker's own level 3 instead
        "batch-all-retried": batch("batch-all-retried", ("b", "c")),
        "batch-unasked-lost": batch("batch-unasked-lost", ("b",))}


def _found(name: str) -> dict:
    b = RUNS[name]
    run, events = b.run_json(), sorted(b.events, key=lambda e: e["ts_ms"])
    _assert_same(run, events)  # both judging paths alike
    return violations(run, events)


@pytest.mark.parametrize("name", ["asked-level-kept", "batch-all-retried"])
def test_retries_at_the_asked_level_and_after_the_ack_index_pass(name):
    assert _found(name) == {}


def test_a_retry_stored_at_the_brokers_own_level_instead_is_late():
    found = _found("asked-level-ignored")
    assert list(found) == ["ON_TIME"]
    (example,) = found["ON_TIME"]
    assert example["key"] == "k" and example["attempt"] == 1 and example["level"] == 1


def test_a_message_sent_back_by_the_ack_index_that_never_comes_back_is_lost():
    found = _found("batch-unasked-lost")
    assert list(found) == ["NO_LOSS"] and [v["key"] for v in found["NO_LOSS"]] == ["c"]


def _reordered(async_deliver: bool) -> tuple[dict, list[dict]]:
    """A and B of level 1, B born after A's send returned, B stored 80 ms before A (an asynchronous
    head resent after its pause while the entries behind it were put: reference.persistence)."""
    b = RunBuilder("reordered").send("A", 0, level=1).send("B", 100, level=1).deliver("B", 1100).deliver("A", 1180)
    run = b.run_json()
    run["profile"]["schedule_async_deliver"] = async_deliver
    return run, sorted(b.events, key=lambda e: e["ts_ms"])


def test_a_level_reordered_is_a_violation_of_the_synchronous_mode_only():
    for async_deliver, expected in ((False, ["LEVEL_ORDER"]), (True, [])):
        run, events = _reordered(async_deliver)
        _assert_same(run, events)
        assert list(violations(run, events)) == expected, async_deliver


def orderly(run_id: str, b_at: int, a_again_at: int = 1030) -> tuple[dict, list[dict]]:
    """An orderly group (suspend 1000 ms): A (queue offset 1100) answers LATER at 20 and is
    re-consumed (the same stored copy, count raised) at ``a_again_at`` (due from 1020, late after
    4020); B, behind it in the queue, is first delivered at ``b_at``."""
    b = (RunBuilder(run_id).send("A", 0, plan=["LATER", "OK"]).send("B", 5)
         .deliver("A", 10, outcome="LATER", at=20, copy=1100)
         .deliver("A", 10, attempt=1, at=a_again_at, copy=1100, queue_topic=None)
         .deliver("B", 15, at=b_at, copy=1200))
    run = b.run_json()
    run["profile"]["orderly_groups"] = {GROUP: 1000}
    return run, sorted(b.events, key=lambda e: e["ts_ms"])


def test_an_orderly_queue_kept_in_order_passes():
    run, events = orderly("orderly-kept", b_at=1040)
    _assert_same(run, events)
    assert violations(run, events) == {}


def test_a_message_consumed_while_the_one_ahead_of_it_is_suspended_breaks_queue_order():
    run, events = orderly("orderly-passed", b_at=500)
    _assert_same(run, events)
    found = violations(run, events)
    assert list(found) == ["QUEUE_ORDER"]
    (v,) = found["QUEUE_ORDER"]
    assert v["key"] == "B" and v["other_key"] == "A" and "passed a message of its queue" in v["detail"]


def test_an_orderly_re_consume_is_due_a_suspend_time_after_its_later():
    for again_at, expected in ((900, ["NOT_EARLY"]), (4_500, ["ON_TIME"])):
        run, events = orderly(f"orderly-again-{again_at}", b_at=again_at + 10, a_again_at=again_at)
        _assert_same(run, events)
        found = violations(run, events)
        assert list(found) == expected, again_at
        assert found[expected[0]][0]["key"] == "A" and found[expected[0]][0]["attempt"] == 1


def broadcast(run_id: str, retried: bool = False, second_instance: bool = True) -> tuple[dict, list[dict]]:
    """A broadcasting group of two instances (units g@0 and g@1): each gets A and answers LATER
    (dropped: its end) and B (OK); ``retried``: g@0 gets A again as attempt 1; without
    ``second_instance`` g@1 never gets B."""
    b = RunBuilder(run_id, broadcasting_groups={GROUP: 2}).send("A", 0, plan=["LATER", "OK"]).send("B", 5)
    for unit in ("g@0", "g@1"):
        b.deliver("A", 10, outcome="LATER", at=20, copy=1100, group=unit)
        if unit == "g@0" or second_instance:
            b.deliver("B", 15, at=30, copy=1200, group=unit)
    if retried:
        b.deliver("A", 10, attempt=1, at=5_030, copy=1100, group="g@0", queue_topic=None)
    return b.run_json(), sorted(b.events, key=lambda e: e["ts_ms"])


def test_a_broadcast_message_dropped_by_every_instance_passes():
    run, events = broadcast("broadcast-kept")
    _assert_same(run, events)
    assert violations(run, events) == {}


def test_a_broadcast_failure_retried_breaks_the_retry_schedule():
    run, events = broadcast("broadcast-retried", retried=True)
    _assert_same(run, events)
    found = violations(run, events)
    assert list(found) == ["RETRY_SCHEDULE"] and found["RETRY_SCHEDULE"][0]["group"] == "g@0"


def test_a_broadcast_message_an_instance_never_got_is_lost_for_that_instance():
    run, events = broadcast("broadcast-starved", second_instance=False)
    _assert_same(run, events)
    found = violations(run, events)
    assert list(found) == ["NO_LOSS"] and [(v["key"], v["group"]) for v in found["NO_LOSS"]] == [("B", "g@1")]
