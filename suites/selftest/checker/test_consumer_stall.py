"""A consumer that stalled is not a broker that lost (``reports.stalls``): messages missing from the
deliveries while the broker still holds at least as many unconsumed ones in the queues they wait in
(the queue their send stored them in) are undecided, never violations; more missing than those
queues hold stays a loss, saying what they held; a lag in another queue or group, no consume stats,
or none unconsumed, judges on the deliveries alone."""

from __future__ import annotations

import pytest

from hourglass.reference.contract import CONSUME_STATS_SOURCE, CONSUMERS_STOPPED, queue_key
from suites.selftest.checker.runs import GROUP, T0, TOPIC, RunBuilder, check_on_path


def _stats(builder: RunBuilder, at: int, queues: dict[int, tuple[int, int]], group: str = GROUP) -> RunBuilder:
    """A consumeStats snapshot: queue id -> (committed offset, broker max offset)."""
    builder.events.append({"type": "snapshot", "ts_ms": T0 + at, "source": CONSUME_STATS_SOURCE, "group": group,
                           "moment": CONSUMERS_STOPPED,
                           "offsets": {queue_key(TOPIC, "b", q): c for q, (c, _) in queues.items()},
                           "max_offsets": {queue_key(TOPIC, "b", q): m for q, (_, m) in queues.items()}})
    return builder


def _three_sent_one_delivered(run_id: str, queue_id: int | None = None) -> RunBuilder:
    """a delivered, b and c never; ``queue_id``: the queue their sends stored them in (None: not recorded)."""
    stored = {} if queue_id is None else {"queue_id": queue_id, "broker": "b"}
    return (RunBuilder(run_id).send("a", 0, **stored).deliver("a", 10).send("b", 20, **stored).send("c", 30, **stored))


@pytest.fixture(scope="module")
def stall_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("stalls")
    # queue 1 consumed to 3 of 5 stored: 2 unconsumed, 2 missing -> undecided
    _stats(_three_sent_one_delivered("stalled"), 119_000, {0: (1, 1), 1: (3, 5)}).write(root)
    # ... and so when their sends say they wait in queue 1
    _stats(_three_sent_one_delivered("stalled-in-their-queue", queue_id=1), 119_000, {0: (1, 1), 1: (3, 5)}).write(root)
    # the lag is in queue 1, they wait in queue 0, whose consumer consumed all: lost
    _stats(_three_sent_one_delivered("other-queue-held", queue_id=0), 119_000, {0: (1, 1), 1: (3, 5)}).write(root)
    # 1 unconsumed, 2 missing: at least one is lost whichever it is
    _stats(_three_sent_one_delivered("more-missing-than-held"), 119_000, {0: (1, 1), 1: (4, 5)}).write(root)
    # everything stored was consumed: the broker lost them
    _stats(_three_sent_one_delivered("nothing-held"), 119_000, {0: (1, 1), 1: (5, 5)}).write(root)
    # another group's lag says nothing about this group's messages
    _stats(_three_sent_one_delivered("other-group-held"), 119_000, {1: (0, 9)}, group="other").write(root)
    _three_sent_one_delivered("no-stats").write(root)
    return root


@pytest.fixture(scope="module", params=["whole", "bucketed"])
def stall_verdicts(request, spark, stall_root, tmp_path_factory):
    return check_on_path(request.param, [stall_root], tmp_path_factory.mktemp("out"))


@pytest.mark.parametrize("run_id", ["stalled", "stalled-in-their-queue"])
def test_missing_messages_the_broker_still_holds_are_undecided(stall_verdicts, run_id):
    v = stall_verdicts[run_id]
    assert v["passed"] is None, v
    no_loss = v["invariants"]["NO_LOSS"]
    assert no_loss["violations"] == 0 and no_loss["undecided"] == 2 and no_loss["passed"] is None
    reasons = [e["reason"] for e in v["undecided"]["examples"]]
    assert len(reasons) == 2 and all("consumer stalled" in r for r in reasons)
    assert f"2 stored messages group {GROUP} never consumed: {TOPIC} queue 1 (consumed to 3, stored to 5)" in reasons[0]


def test_more_missing_than_the_broker_holds_stays_a_loss(stall_verdicts):
    v = stall_verdicts["more-missing-than-held"]
    assert v["passed"] is False
    no_loss = v["invariants"]["NO_LOSS"]
    assert no_loss["violations"] == 2 and "undecided" not in no_loss
    assert "2 missing, but the broker held only 1 stored messages" in no_loss["examples"][0]["explanation"]


@pytest.mark.parametrize("run_id", ["nothing-held", "other-group-held", "other-queue-held", "no-stats"])
def test_without_unconsumed_messages_of_the_group_missing_is_lost(stall_verdicts, run_id):
    v = stall_verdicts[run_id]
    assert v["passed"] is False
    assert v["invariants"]["NO_LOSS"]["violations"] == 2
    assert "undecided" not in v
