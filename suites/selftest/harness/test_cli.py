"""The CLI as CI uses it: exit codes gate on violations, a baseline accepts known ones, a matrix
shows which invariants differ between two systems, and a run can be replayed from its directory."""

from __future__ import annotations

import json

import pytest

from hourglass.harness.cli import main
from hourglass.harness.scenario import ConsumerGroup, Message, Scenario

SCENARIO = Scenario(
    "cli-probe",
    tuple(Message(f"m{i}", "Cli", at_ms=i * 300, delay_level=2) for i in range(4))
    + (Message("dlq", "Cli", plan=("LATER",) * 3),),
    (ConsumerGroup("cg-cli", ("Cli",), max_reconsume_times=2),),
)


@pytest.fixture(scope="module")
def scenario_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("scn") / "cli-probe.json"
    SCENARIO.save(p)
    return p


def test_clean_system_exits_0_and_a_defect_exits_1(scenario_file, tmp_path):
    assert main(["run", "--scenario", str(scenario_file), "--system", "simulated", "--out", str(tmp_path / "clean")]) == 0
    assert main(["run", "--scenario", str(scenario_file), "--system", "simulated[early-delivery]", "--out", str(tmp_path / "bad")]) == 1
    summary = json.loads((tmp_path / "bad" / "summary.json").read_text())
    assert summary["verdicts"][0]["invariants"]["NOT_EARLY"]["passed"] is False
    assert (tmp_path / "bad" / "index.html").read_text().count("FAIL") >= 1


def test_baseline_accepts_a_known_violation_and_the_report_still_lists_it(scenario_file, tmp_path):
    baseline = tmp_path / "accepted.toml"
    baseline.write_text('[[accept]]\ninvariant = "NOT_EARLY"\nreason = "known: this fork delivers early"\n')
    code = main(["run", "--scenario", str(scenario_file), "--system", "simulated[early-delivery]",
                 "--out", str(tmp_path / "out"), "--baseline", str(baseline)])
    assert code == 0
    v = json.loads((tmp_path / "out" / "summary.json").read_text())["verdicts"][0]
    assert v["invariants"]["NOT_EARLY"]["violations"] > 0
    assert "accepted" in json.dumps(v["invariants"]["NOT_EARLY"])


def test_matrix_shows_the_invariant_that_differs(scenario_file, tmp_path):
    code = main(["matrix", "--systems", "simulated,simulated[skipped-dlq]", "--scenario", str(scenario_file), "--out", str(tmp_path)])
    assert code == 1
    m = json.loads((tmp_path / "matrix.json").read_text())
    assert len(m["versions"]) == 2
    assert {d["invariant"] for d in m["differences"]} >= {"DLQ_ROUTING"}
    assert "DLQ_ROUTING" in (tmp_path / "matrix.html").read_text()


def test_replay_runs_the_saved_scenario_again(scenario_file, tmp_path):
    assert main(["run", "--scenario", str(scenario_file), "--system", "simulated", "--out", str(tmp_path / "first")]) == 0
    run_dir = next(p for p in (tmp_path / "first").iterdir() if (p / "scenario.json").exists())
    assert main(["replay", str(run_dir), "--out", str(tmp_path / "again")]) == 0
    again = next(p for p in (tmp_path / "again").iterdir() if (p / "scenario.json").exists())
    assert Scenario.load(again / "scenario.json") == Scenario.load(run_dir / "scenario.json")


def test_repeat_counts_how_often_each_scenario_passed_and_each_invariant_failed(scenario_file, tmp_path):
    code = main(["run", "--scenario", str(scenario_file), "--system", "simulated[early-delivery]", "--repeat", "2",
                 "--out", str(tmp_path / "rep")])
    assert code == 1
    summary = json.loads((tmp_path / "rep" / "repeats.json").read_text())
    probe = summary["scenarios"]["cli-probe"]
    assert (probe["runs"], probe["passed"], probe["broken"]) == (2, 0, 0)
    assert probe["failed_invariants"] == {"NOT_EARLY": 2}
    assert (tmp_path / "rep" / "repeat-01" / "index.html").exists() and (tmp_path / "rep" / "repeat-02" / "index.html").exists()
