"""No observation, no pass: a run that recorded no events, or fewer sends than its scenario lists,
is broken (or undecided when the harness was interrupted), never passed."""

from __future__ import annotations

import pytest

from suites.selftest.checker.runs import RunBuilder, check_on_path


@pytest.fixture(scope="module")
def observation_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("no-observation")
    RunBuilder("empty").write(root)
    RunBuilder("faults-only").fault(100, "kill").fault(200, "start").write(root)
    RunBuilder("short-of-sends").send("a", 0).deliver("a", 10).write(root, planned_sends=3)
    RunBuilder("short-but-interrupted").send("a", 0).deliver("a", 10).write(root, planned_sends=3, ended_ms=0)
    RunBuilder("all-sends").send("a", 0).deliver("a", 10).send("b", 20).deliver("b", 30).write(root, planned_sends=2)
    return root


@pytest.fixture(scope="module", params=["whole", "bucketed"])
def observation_verdicts(request, spark, observation_root, tmp_path_factory):
    return check_on_path(request.param, [observation_root], tmp_path_factory.mktemp("out"))


def test_a_run_without_events_is_broken(observation_verdicts):
    v = observation_verdicts["empty"]
    assert v["passed"] is None
    assert "no events recorded in" in v["broken"] and "empty/events.jsonl" in v["broken"]
    assert "the harness recorded nothing" in v["broken"]


def test_a_run_without_sends_is_broken(observation_verdicts):
    v = observation_verdicts["faults-only"]
    assert v["passed"] is None and "0 sends" in v["broken"]


def test_fewer_sends_than_planned_is_broken(observation_verdicts):
    v = observation_verdicts["short-of-sends"]
    assert v["passed"] is None and "the harness recorded 1 of 3 sends" in v["broken"]


def test_fewer_sends_than_planned_in_an_interrupted_run_is_undecided(observation_verdicts):
    v = observation_verdicts["short-but-interrupted"]
    assert v["passed"] is None and "broken" not in v
    assert "the harness recorded 1 of 3 sends" in v["interrupted"]


def test_every_planned_send_recorded_passes(observation_verdicts):
    assert observation_verdicts["all-sends"]["passed"] is True
