"""A message its consumer crashed with (its last delivery answered CRASH), when no consumer of its
group was up again in what the harness recorded, is pending, not lost: its redelivery waits for a
consumer that the harness never saw start (``reports.judge_events.crashed_unrestarted``). Seen
beside the load generator: consumer-redelivery's consumer, 152 s in starting, got its first message
10.5 s after the send, after the run's end, crashed with it, and the system was torn down. Once a
consumer of the group started again and the message still never came, it is a loss; on both
judging paths."""

from __future__ import annotations

import pytest

from hourglass.reports.verdict import exit_code
from suites.selftest.checker.runs import GROUP, RunBuilder, check_on_path


def crashed(run_id: str, restarted_at: int | None) -> RunBuilder:
    b = RunBuilder(run_id, ended=10_000).send("c", 0, plan=["CRASH", "OK"]).send("ok", 10).deliver("ok", 20)
    b.deliver("c", 5, outcome="CRASH", at=12_000)  # after the run's end, on a consumer still running
    b.fault(12_001, "kill", target="consumer", name=GROUP + "-0", group=GROUP, cause="died")
    if restarted_at is not None:
        b.fault(restarted_at, "start", target="consumer", name=GROUP + "-0", group=GROUP, cause="died")
    return b


@pytest.fixture(scope="module", params=["whole", "bucketed"])
def judged(request, tmp_path_factory):
    root = tmp_path_factory.mktemp("crashed")
    crashed("never-up-again", None).write(root)
    crashed("up-again", 20_000).write(root)
    return check_on_path(request.param, [root], tmp_path_factory.mktemp("out"))


def test_a_message_its_consumer_crashed_with_and_never_up_again_is_pending(judged):
    v = judged["never-up-again"]
    no_loss = v["invariants"]["NO_LOSS"]
    assert no_loss["violations"] == 0 and no_loss["passed"] is None and no_loss["undecided"] == 1, no_loss
    (example,) = [e for e in v["undecided"]["examples"] if e["invariant"] == "NO_LOSS"]
    assert example["key"] == "c" and "its consumer died with it (CRASH)" in example["reason"], example
    assert exit_code([v]) == 2


def test_once_a_consumer_of_its_group_was_up_again_a_message_never_redelivered_is_lost(judged):
    no_loss = judged["up-again"]["invariants"]["NO_LOSS"]
    assert no_loss["passed"] is False and no_loss["violations"] == 1, no_loss
