"""``python -m hourglass list`` shows every suite's scenarios with their wait, faults and
requirements; ``--scenario-name`` (repeatable, shell globs) picks scenarios of the selected suites,
and a name that matches nothing is a usage error (64) before anything runs."""

from __future__ import annotations

import json

from hourglass.harness.catalogue.chaos import SHORT
from hourglass.harness.catalogue.conformance import CONFORMANCE
from hourglass.harness.cli import main
from hourglass.harness.summary import scenario_wait_ms


def test_list_shows_each_suite_scenario_wait_faults_and_requirements(capsys):
    assert main(["list", "--suite", "conformance", "--suite", "chaos"]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}
    assert f"conformance: {len(CONFORMANCE)} scenarios" in out and "chaos: 4 scenarios" in out
    assert set(lines) == {s.name for s in CONFORMANCE + SHORT}
    each = next(s for s in CONFORMANCE if s.name == "each-level")
    assert f"wait {scenario_wait_ms(each) / 1000:6.1f} s" in lines["each-level"]
    assert "faults: yes" in lines["kill9-during-delivery"] and "faults: no" in lines["each-level"]
    assert "requires: timer" in lines["timer-messages"] and "requires: -" in lines["each-level"]
    assert "requires: pop" in lines["pop-later"]
    assert "requires: process faults" in lines["kill9-during-delivery"]  # a family a runtime or host may refuse


def test_list_names_the_cluster_and_fault_families_a_scenario_needs(capsys):
    """``requires: -`` for a partition scenario sent nightly users looking for why it was skipped."""
    assert main(["list", "--suite", "nightly"]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line.startswith("  ")}
    assert lines["slave-down"].endswith("requires: a master-slave cluster, process faults")
    assert any(line.endswith("network faults") for line in lines.values())


def test_list_without_a_suite_lists_them_all(capsys):
    assert main(["list", "--count", "2"]) == 0
    out = capsys.readouterr().out
    assert all(f"{name}:" in out for name in ("conformance", "chaos", "nightly", "generated"))


def test_scenario_name_globs_pick_from_the_selected_suites(tmp_path):
    out = tmp_path / "out"
    assert main(["run", "--suite", "conformance", "--scenario-name", "level-z*", "--scenario-name", "custom-table",
                 "--system", "simulated", "--out", str(out)]) == 0
    ran = sorted(v["scenario"] for v in json.loads((out / "summary.json").read_text())["verdicts"])
    assert ran == ["custom-table", "level-zero"]


def test_a_scenario_name_matching_nothing_is_a_usage_error(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", "--suite", "chaos", "--scenario-name", "kill9-*", "--scenario-name", "no-such-*",
                 "--system", "simulated", "--out", str(out)]) == 64
    err = capsys.readouterr().err
    assert "--scenario-name no-such-*" in err and "kill9-during-delivery" in err
    assert not out.exists()  # nothing ran
