"""A message never delivered by the run's end whose window closed before it by no more than the
recorded stalls on its path explain may be late beyond the end on a starved broker: its NO_LOSS (and
its missing DLQ entry) is undecided by the host, never a loss; one missing far beyond its stalls is
lost (reports.stalls.late_beyond_end_reclassify, NoLoss.undecided). Judged in process
(reports.judge_run.findings), as the checker's driver applies the same units' rules. Seen under the
load generator on 5.5.0: the retries of batch-ack-index and consumer-chosen-levels still in the
broker's schedule queue when the run ended, while its schedule threads waited for a CPU."""

from __future__ import annotations

from hourglass.reference import stalls as rule
from hourglass.reports.judge_run import findings
from suites.selftest.checker.runs import T0, RunBuilder

OBSERVED = {rule.HOST_OBSERVED: ["psi-cpu", "run-queue"], rule.HOST_CPUS: 2}


def _run(ended: int, stalled_ms: int, thread: str = "ScheduleMessage") -> tuple[dict, list[dict]]:
    """Level 1 sent at 0 (due at 1000, its window closes at 4000), never delivered; the run ends at
    ``ended``; the broker's ``thread`` waited ``stalled_ms`` for a CPU from 1000 on, the host saw it."""
    b = RunBuilder("r", ended=ended).send("lost", 0, level=1).send("ok", 10).deliver("ok", 20)
    for source, extra in ((rule.RUN_QUEUE, {"detail": f"thread {thread}"}), ("psi-cpu", {"full_ms": 0})):
        b.events.append({"type": "stall", "ts_ms": T0 + 1000 + stalled_ms, "source": source,
                         "subject": "broker" if source == rule.RUN_QUEUE else rule.HOST, "from_ms": T0 + 1000,
                         "stalled_ms": stalled_ms, **extra})
    return {**b.run_json(), "host": OBSERVED}, b.events


def test_a_message_the_stalls_on_its_path_may_have_made_late_beyond_the_end_is_undecided():
    run, events = _run(ended=8_000, stalled_ms=6_000)  # closed 4 s before the end; 6 s of stall after its due time
    violations, pending = findings(run, events)
    assert [v for v in violations if v["invariant"] == "NO_LOSS"] == []
    (p,) = [p for p in pending if p["invariant"] == "NO_LOSS"]
    assert p["key"] == "lost" and p["cause"] == "host"
    # its window closed at 4005 (the send returned at 5)
    assert p["detail"].startswith("never delivered by the run's end, which came 3995 ms after its window closed")
    assert "ScheduleMessage" in p["detail"] and p["detail"].endswith("whether the broker lost it is undecided")


def test_missing_beyond_the_stalls_or_off_its_path_stays_a_loss():
    for run, events in (_run(ended=60_000, stalled_ms=6_000), _run(ended=8_000, stalled_ms=6_000, thread="C2 CompilerThre")):
        violations, _ = findings(run, events)
        (v,) = [v for v in violations if v["invariant"] == "NO_LOSS"]
        assert v["key"] == "lost"


def test_the_missing_dlq_entry_of_a_message_whose_missing_delivery_is_undecided_is_undecided_alike():
    """Seen under a starved broker: a batch consumer started 75 s into its run and pulled none of its
    messages (its queues' lag said so: NO_LOSS undecided), and the DLQ entry of the one whose first
    answer was LATER:-1 was judged missing. The entry is owed only once that attempt was delivered:
    undecided for the delivery's reason, whichever rule made the delivery undecided."""
    lagging = RunBuilder("lag", ended=60_000).send("dlq", 0, plan=["LATER:-1"]).send("ok", 10).deliver("ok", 20)
    lagging.events.append({"type": "snapshot", "ts_ms": T0 + 59_000, "source": "consumeStats", "moment": "consumers_stopped",
                           "group": "g", "offsets": {"T/b/0": 1}, "max_offsets": {"T/b/0": 2}})
    late = RunBuilder("late", ended=8_000).send("dlq", 0, level=1, plan=["LATER:-1"])
    late.events.append({"type": "stall", "ts_ms": T0 + 7_000, "source": rule.RUN_QUEUE, "subject": "broker",
                        "from_ms": T0 + 1000, "stalled_ms": 6_000, "detail": "thread ScheduleMessage"})
    late.events.append({"type": "stall", "ts_ms": T0 + 7_000, "source": "psi-cpu", "subject": rule.HOST,
                        "from_ms": T0 + 1000, "stalled_ms": 6_000, "full_ms": 0})
    for b, cause in ((lagging, None), (late, "host")):
        violations, pending = findings({**b.run_json(), "host": OBSERVED}, b.events)
        assert [v["invariant"] for v in violations] == [], (b.run_id, violations)
        loss, entry = (next(p for p in pending if p["invariant"] == name and p["key"] == "dlq") for name in ("NO_LOSS", "DLQ_ROUTING"))
        assert entry.get("cause") == cause and loss["detail"] in entry["detail"]
        assert entry["detail"].startswith("the attempt that owes the entry was never delivered")
    # delivered and answered LATER:-1, its entry missing: the broker's loss, whatever the lag (no
    # consumer's lag explains what the broker owes after the delivery)
    kept = RunBuilder("kept", ended=60_000).send("dlq", 0, plan=["LATER:-1"]).deliver("dlq", 20, outcome="LATER", next_level=-1)
    kept.events.append(lagging.events[-1])
    violations, _ = findings({**kept.run_json(), "host": OBSERVED}, kept.events)
    assert [v["invariant"] for v in violations] == ["NO_LOSS", "DLQ_ROUTING"]


def test_a_dlq_entry_owed_by_an_answer_after_the_dlq_was_read_is_pending_not_lost():
    """Proof C (2026-11-29, 5.5.0): dlq-default's drain gave up on a late retry, the DLQ was read at
    the run's end, and the shared system's consumer went on retrying the message for 100 s more,
    its last LATER answered after that read: its entry could not be in it. Pending (the harness's
    blind spot), never "found 0"; answered before the read, the missing entry is the broker's loss."""
    from hourglass.reference.retry import DLQ_READ_MS

    def run(answered: int) -> tuple[dict, list[dict]]:
        b = RunBuilder("dlq", max_reconsume_times=1, ended=20_000).send("d", 0, plan=["LATER", "LATER"])
        b.deliver("d", 20, outcome="LATER").deliver("d", 10_040, attempt=1, outcome="LATER", at=answered)  # level 3: 10 s
        return {**b.run_json(), "host": OBSERVED, DLQ_READ_MS: T0 + 19_000}, b.events

    violations, pending = findings(*run(answered=19_500))
    assert violations == []
    (p,) = [p for p in pending if p["key"] == "d"]
    assert p["invariant"] == "DLQ_ROUTING" and p["attempt"] == 1
    assert p["detail"] == f"its last attempt was answered at {T0 + 19_500}, after the DLQ was read at {T0 + 19_000} (the run's end): its entry could not be seen"
    violations, _ = findings(*run(answered=18_000))
    assert sorted(v["invariant"] for v in violations) == ["DLQ_ROUTING", "NO_LOSS"]
