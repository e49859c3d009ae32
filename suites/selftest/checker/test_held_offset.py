"""A periodic persist of the schedule offsets that does not cover the last entry re-put before it is
the broker's, unless the recorded stalls on the schedule path held the broker from that entry's put
to the persist (``reference.stalls.explain_held_offset``, ``reports.stalls.held_offset_reclassify``):
DeliverDelayedMessageTimerTask.syncDeliver moves the offset only once its put returned, so a thread
starved between the two leaves exactly one entry stored and not yet counted. Seen under a starved
5.5.0 broker (the load generator's throttling): kill9-during-delivery convicted of OFFSET_PERSISTENCE
by one entry stored 1.3 s before the persist. Judged on both of the checker's paths."""

from __future__ import annotations

import pytest

from hourglass.reference.contract import FLUSH_MOMENT, PERSISTED_SOURCE
from hourglass.reference.persistence import FLUSH_COVERS_MARGIN_MS
from hourglass.reference.stalls import HOST_CPUS, HOST_OBSERVED, SCHEDULE, explain_held_offset
from suites.selftest.checker.runs import thread_stall, DELAY_MS, T0, RunBuilder, check_on_path

LEVEL = 3
SENT = (0, 300, 600)  # stored again at 10 s, 10.3 s, 10.6 s
LAST_REPUT = SENT[-1] + DELAY_MS[LEVEL]
PERSIST = LAST_REPUT + FLUSH_COVERS_MARGIN_MS + 600  # the last re-put is 1.6 s before the persist: counted
INVARIANT = "OFFSET_PERSISTENCE"


def _stall(from_ms: int, stalled_ms: int, thread: str = "ScheduleMessage", path: str | None = SCHEDULE,
           pressure: bool = True) -> list[dict]:
    return thread_stall(from_ms, stalled_ms, thread, path, pressure)


def test_only_one_entry_held_by_stalls_on_the_schedule_path_over_its_time_is_undecided():
    span = PERSIST - LAST_REPUT
    held = _stall(LAST_REPUT, span)
    covered, why = explain_held_offset(held, 1, T0 + LAST_REPUT, T0 + PERSIST, T0)
    assert covered and f"stored {span} ms before it" in why and "undecided" in why
    # two entries: each re-put waits for the offset's move after the one before it
    covered, why = explain_held_offset(held, 2, T0 + LAST_REPUT, T0 + PERSIST, T0)
    assert not covered and "2 entries uncovered" in why
    # a stall shorter than the time the move had, less the persist's margin
    short = span - FLUSH_COVERS_MARGIN_MS - 200
    covered, why = explain_held_offset(_stall(LAST_REPUT, short), 1, T0 + LAST_REPUT, T0 + PERSIST, T0)
    assert not covered and f"of which recorded stalls explain {short / 1000:.1f} s" in why
    assert not explain_held_offset([], 1, T0 + LAST_REPUT, T0 + PERSIST, T0)[0]
    for off_path in (_stall(LAST_REPUT, span, thread="C2 CompilerThre", path=None),  # never on a message's path
                     _stall(LAST_REPUT, span, thread="PopReviveServic", path="pop"),  # another path's thread
                     _stall(LAST_REPUT, span, pressure=False)):  # a wait the host's pressure does not corroborate
        assert not explain_held_offset(off_path, 1, T0 + LAST_REPUT, T0 + PERSIST, T0)[0]


def _run(name: str, persisted: int, stalls: list[dict]) -> RunBuilder:
    b = RunBuilder(name)
    for i, at in enumerate(SENT):
        b.send(f"k{i}", at, level=LEVEL).deliver(f"k{i}", at + DELAY_MS[LEVEL])
    b.events.append({"type": "snapshot", "ts_ms": T0 + PERSIST, "source": PERSISTED_SOURCE, "moment": FLUSH_MOMENT,
                     "offsets": {str(LEVEL): persisted}})
    b.events.extend(stalls)
    return b


@pytest.fixture(scope="module", params=["whole", "bucketed"])
def verdicts(request, tmp_path_factory):
    root = tmp_path_factory.mktemp("held-offset")
    host = {HOST_OBSERVED: ["run-queue", "psi-cpu"], HOST_CPUS: 2}
    held = _stall(LAST_REPUT - 100, PERSIST - LAST_REPUT + 100)
    for b in (_run("quiet", 2, []), _run("held", 2, held), _run("two-behind", 1, held), _run("covered", 3, [])):
        b.write(root, host=host)
    return check_on_path(request.param, [root], tmp_path_factory.mktemp("out"))


def test_the_checker_leaves_only_the_held_entry_undecided_on_both_paths(verdicts):
    quiet = verdicts["quiet"]["invariants"][INVARIANT]
    assert quiet["violations"] == 1 and "of which recorded stalls explain 0.0 s" in quiet["examples"][0]["explanation"]
    held = verdicts["held"]["invariants"][INVARIANT]
    assert (held["violations"], held.get("undecided"), held["passed"]) == (0, 1, None)
    [why] = [u["reason"] for u in verdicts["held"]["undecided"]["examples"] if u["invariant"] == INVARIANT]
    assert f"delay level {LEVEL}" in why and "schedule path was stalled" in why
    two = verdicts["two-behind"]["invariants"][INVARIANT]
    assert two["violations"] == 1 and "2 entries uncovered" in two["examples"][0]["explanation"]
    assert verdicts["covered"]["invariants"][INVARIANT]["passed"] is True
