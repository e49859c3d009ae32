"""A run the harness could not finish observing is undecided, never a violation.

A harness killed mid-run leaves ``ended_ms: 0`` (or no ``ended_ms``) in run.json; one stopped by
SIGINT/SIGTERM writes ``interrupted`` (the reason) and maybe ``last_observed_ms``. Such a run is
judged up to its last observation: what depends on an absence (a message not yet final, a DLQ entry
not yet read) is pending; what was observed (early, late, duplicate, corrupt, out of level order)
is still a violation. Both paths: runs judged whole, and the bucketed path for big runs.
"""

from __future__ import annotations

import json

import pytest

from hourglass.reports.cli import main
from suites.selftest.checker import cases
from suites.selftest.checker.runs import T0, RunBuilder, check_on_path


def _dlq_not_read() -> RunBuilder:
    """dlq-kept without its DLQ entry: the DLQ is read at the end of a run, never reached."""
    b = cases.dlq_kept()
    b.run_id = "dlq-not-read"
    b.events = [e for e in b.events if e["type"] != "dlq"]
    return b


def _all_consumed() -> RunBuilder:
    b = RunBuilder("all-consumed").send("a", 0).deliver("a", 10)
    return b


@pytest.fixture(scope="module")
def interrupted_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("interrupted")
    cases.lost().write(root, ended_ms=0)  # as a killed harness leaves run.json: never completed
    cases.early().write(root, ended_ms=0)
    _dlq_not_read().write(root, ended_ms=None)
    _all_consumed().write(root, interrupted="stopped by SIGTERM", last_observed_ms=T0 + 50_000)
    return root


@pytest.fixture(scope="module", params=["whole", "bucketed"])
def interrupted_verdicts(request, spark, interrupted_root, tmp_path_factory):
    return check_on_path(request.param, [interrupted_root], tmp_path_factory.mktemp("out"))


def test_an_unfinished_message_of_an_interrupted_run_is_pending_not_lost(interrupted_verdicts):
    v = interrupted_verdicts["lost"]
    assert v["passed"] is None
    assert v["invariants"]["NO_LOSS"]["violations"] == 0
    assert v["invariants"]["NO_LOSS"]["undecided"] == 1
    assert [e["key"] for e in v["undecided"]["examples"]] == ["gone"]
    last = T0 + 20 + 10  # kept's delivery: the last event of the run
    assert "run.json has no end" in v["interrupted"] and f"last observed event at {last}" in v["interrupted"]
    assert str(2**62) not in json.dumps(v)


def test_an_observed_violation_of_an_interrupted_run_still_counts(interrupted_verdicts):
    v = interrupted_verdicts["early"]
    assert v["passed"] is False and v["invariants"]["NOT_EARLY"]["violations"] == 1
    assert v["interrupted"]


def test_a_dlq_entry_not_yet_read_is_pending(interrupted_verdicts):
    v = interrupted_verdicts["dlq-not-read"]
    assert v["passed"] is None
    assert v["invariants"]["DLQ_ROUTING"]["violations"] == 0 and v["invariants"]["DLQ_ROUTING"]["undecided"] == 1
    assert v["invariants"]["NO_LOSS"]["violations"] == 0


def test_an_interrupted_run_never_passes_and_says_why(interrupted_verdicts):
    v = interrupted_verdicts["all-consumed"]
    assert v["passed"] is None
    assert v["interrupted"].startswith("stopped by SIGTERM") and str(T0 + 50_000) in v["interrupted"]
    assert all(e["violations"] == 0 for e in v["invariants"].values())


def test_an_interrupted_run_is_not_a_violation_for_the_cli(spark, tmp_path):
    root = tmp_path / "runs"
    cases.lost().write(root, ended_ms=0)
    assert main(["check", str(root), "--out", str(tmp_path / "out")]) == 2
