"""A POP copy answered OK and revived all the same (RETRY_SCHEDULE: "never answered LATER") is the
broker's loss of the ack, unless the recorded stalls on the broker's POP path held the broker for all
of the time the ack had to be stored before the copy's checkpoint was due (``reference.stalls
.explain_held_ack``, ``reports.stalls.held_ack_reclassify``). Seen under a starved 5.5.0 broker (the
load generator's throttling): PL1 popped at +61.902 s, answered OK at +61.906 s (the remoting
consumer's ack is asynchronous and the client logged no failure), revived at +69.56 s as attempt 3."""

from __future__ import annotations

from hourglass.reference.stalls import HOST_CPUS, HOST_OBSERVED, POP, SAMPLE_MS, explain_held_ack
from hourglass.reports import judge_run
from hourglass.reports.rows import ACKED_FIELD, REVIVE_FIELD
from hourglass.reports.stalls import HOST_STALL_CAUSE
from suites.selftest.checker.runs import thread_stall, GROUP, T0, RunBuilder

INVISIBLE_MS = 5_000
POP_AT, OK_AT = 61_902, 61_906
REVIVE_AT = POP_AT + INVISIBLE_MS


def _stall(from_ms: int, stalled_ms: int, thread: str = "AckMessageThrea", path: str | None = POP,
           pressure: bool = True) -> list[dict]:
    return thread_stall(from_ms, stalled_ms, thread, path, pressure)


def test_only_stalls_on_the_pop_path_over_all_of_the_acks_time_leave_the_revive_undecided():
    span = REVIVE_AT - OK_AT
    covered, why = explain_held_ack(_stall(OK_AT - 500, span + 1_000), T0 + OK_AT, T0 + REVIVE_AT, T0)
    assert covered and f"had {span} ms to be stored" in why and "undecided" in why
    covered, why = explain_held_ack(_stall(OK_AT, span - SAMPLE_MS - 200), T0 + OK_AT, T0 + REVIVE_AT, T0)
    assert not covered and f"of which recorded stalls explain {(span - SAMPLE_MS - 200) / 1000:.1f} s" in why
    # an OK close to (or after) the checkpoint's due time, no stall recorded: nothing excuses the revive
    for acked in (REVIVE_AT - SAMPLE_MS // 2, REVIVE_AT + 300):
        assert not explain_held_ack([], T0 + acked, T0 + REVIVE_AT, T0)[0]
    for off_path in (_stall(OK_AT, span, thread="C2 CompilerThre", path=None),  # never on a message's path
                     _stall(OK_AT, span, thread="ScheduleMessage", path="schedule"),  # another path's worst thread
                     _stall(OK_AT, span, pressure=False)):  # a wait the host's pressure does not corroborate
        assert not explain_held_ack(off_path, T0 + OK_AT, T0 + REVIVE_AT, T0)[0]


def _revived_after_ok(stalls: list[dict]) -> RunBuilder:
    b = RunBuilder("held-ack", pop_groups={GROUP: {"invisible_ms": INVISIBLE_MS, "release": [5, 5, 0]}})
    b.send("PL1", 0, plan=["OK"]).deliver("PL1", 100, outcome="OK", at=OK_AT, pop_ms=T0 + POP_AT, queue_topic="T")
    b.deliver("PL1", REVIVE_AT + 2_600, attempt=1, at=REVIVE_AT + 2_700, pop_ms=T0 + REVIVE_AT + 2_650, queue_topic="T")
    b.events.extend(stalls)
    return b


def test_the_judging_names_the_ok_and_the_checkpoint_and_weighs_the_stalls_of_that_time():
    run = dict(_revived_after_ok([]).run_json(), host={HOST_OBSERVED: ["run-queue", "psi-cpu"], HOST_CPUS: 2})
    quiet = _revived_after_ok([])
    found, _ = judge_run.findings(run, quiet.events)
    [v] = [v for v in found if v["invariant"] == "RETRY_SCHEDULE"]
    assert (v[ACKED_FIELD], v[REVIVE_FIELD]) == (T0 + OK_AT, T0 + REVIVE_AT)
    assert "never answered LATER" in v["detail"] and "of which recorded stalls explain 0.0 s" in v["detail"]
    held = _revived_after_ok(_stall(OK_AT - 200, REVIVE_AT - OK_AT + 1_000))
    found, pending = judge_run.findings(run, held.events)
    assert not [v for v in found if v["invariant"] == "RETRY_SCHEDULE"]
    assert [(p["invariant"], p["cause"]) for p in pending if p["invariant"] == "RETRY_SCHEDULE"] == [("RETRY_SCHEDULE", HOST_STALL_CAUSE)]
