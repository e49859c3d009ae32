"""The consumer's own retry choices, judged alike on both judging paths (whole runs and bucketed):
a retry waits the level its LATER asked for (``next_level``), and a batch consumer's messages after
its ack index are owed a retry although their plans answered nothing (reference.plans)."""

from __future__ import annotations

import pytest

from suites.selftest.checker.runs import RunBuilder, check_on_path


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


@pytest.fixture(scope="module", params=["whole", "bucketed"])
def judged(request, spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("modes")
    asked("asked-level-kept", 1030).write(root)
    asked("asked-level-ignored", 10_030).write(root)  # stored at the broker's own level 3 instead
    batch("batch-all-retried", ("b", "c")).write(root)
    batch("batch-unasked-lost", ("b",)).write(root)
    return check_on_path(request.param, [root], tmp_path_factory.mktemp("out"))


def _failed(v: dict) -> dict:
    return {k: e["violations"] for k, e in v["invariants"].items() if e.get("passed") is False}


def test_a_retry_at_the_level_its_later_asked_for_passes(judged):
    assert judged["asked-level-kept"]["passed"] is True


def test_a_retry_stored_at_the_brokers_own_level_instead_is_late(judged):
    v = judged["asked-level-ignored"]
    assert _failed(v) == {"ON_TIME": 1}
    (example,) = v["invariants"]["ON_TIME"]["examples"]
    assert example["key"] == "k" and example["attempt"] == 1 and example["level"] == 1


def test_a_batch_whose_messages_after_the_ack_index_all_come_back_passes(judged):
    v = judged["batch-all-retried"]
    assert v["passed"] is True and v["attempts"] == 5


def test_a_message_sent_back_by_the_ack_index_that_never_comes_back_is_lost(judged):
    v = judged["batch-unasked-lost"]
    assert _failed(v) == {"NO_LOSS": 1}
    assert v["invariants"]["NO_LOSS"]["examples"][0]["key"] == "c"
