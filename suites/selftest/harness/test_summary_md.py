"""``summary.md`` beside each system's ``index.html``: a header with the count per status, one row
per run with its status, failed invariants and the first explanation of each failure."""

from __future__ import annotations

import json

from hourglass.reference.contract import INVARIANTS
from hourglass.harness.cli import main
from hourglass.harness.summary import batch_seconds, markdown_summary


def _v(scenario, **over) -> dict:
    inv = {n: {"passed": True, "checked": 3, "violations": 0, "examples": []} for n in INVARIANTS}
    v = {"run_id": f"{scenario}-sim-20260101T000000", "scenario": scenario, "passed": True, "invariants": inv}
    v.update(over)
    return v


def test_counts_statuses_and_explains_each_failure():
    bad = _v("early", passed=False)
    bad["invariants"]["NOT_EARLY"] = {"passed": False, "checked": 4, "violations": 2,
                                      "examples": [{"explanation": "hasty attempt 0: came | early; 900 ms early"}]}
    bad["invariants"]["NO_LOSS"] = {"passed": False, "checked": 4, "violations": 1, "examples": [{"explanation": "gone attempt 0: never delivered"}]}
    broken = _v("nobroker", passed=None, broken="AdapterError: broker never ready")
    md = markdown_summary("simulated[early-delivery]", [_v("ok"), bad, broken, _v("open", passed=None)], 12.3)
    lines = md.splitlines()
    assert "4 runs in 12 s: ✅ 1 passed, ❌ 1 violated, ⏳ 1 undecided, ⚠️ 1 broken" in md
    row = next(line for line in lines if line.startswith("| early |"))
    assert "❌ violated" in row and "NOT_EARLY (2/4)" in row and "NO_LOSS (1/4)" in row
    assert "gone attempt 0: never delivered<br>hasty attempt 0: came \\| early; 900 ms early" in row  # a pipe cannot break the table
    assert "⚠️ broken" in next(line for line in lines if line.startswith("| nobroker |"))
    assert "broker never ready" in md
    assert all(line.count(" | ") == 3 for line in lines if line.startswith("| ") and "---" not in line)


def test_the_seconds_of_a_batch_include_its_check():
    """On the simulator the runs take no time, the check most of it: "11 runs in 0 s" was false."""
    assert batch_seconds(0.2, 74.6) == "75 s (running 0 s, checking 75 s)"
    assert "1 runs in 75 s (running 0 s, checking 75 s):" in markdown_summary("simulated", [_v("ok")], 0.2, 74.6)


def test_the_cli_writes_summary_md_beside_index_html(tmp_path):
    out = tmp_path / "out"
    assert main(["run", "--suite", "conformance", "--scenario-name", "each-level", "--system", "simulated[early-delivery]",
                 "--out", str(out)]) == 1
    md = (out / "summary.md").read_text()
    assert (out / "index.html").is_file()
    assert "❌ 1 violated" in md and "| each-level | ❌ violated |" in md
    assert "checking" in md.splitlines()[2]  # the header's seconds include the check


def test_a_skipped_scenario_is_counted_and_listed_with_its_reason_never_as_a_pass(tmp_path):
    """A nightly on a host without root skipped the partition scenarios and its summaries still
    read "19 passed" of 21: each summary now counts the skipped ones and says why."""
    out = tmp_path / "out"
    assert main(["run", "--suite", "conformance", "--suite", "nightly", "--scenario-name", "each-level",
                 "--scenario-name", "two-masters-one-down", "--system", "simulated", "--out", str(out)]) == 0
    md = (out / "summary.md").read_text()
    assert "1 runs in" in md and "✅ 1 passed, ⏭️ 1 skipped" in md.splitlines()[2]
    row = next(line for line in md.splitlines() if line.startswith("| two-masters-one-down |"))
    assert "⏭️ skipped" in row and "cannot run a two-masters cluster" in row
    page = (out / "index.html").read_text()
    assert "1 runs, 1 skipped;" in page and '<h2 id="skipped">1 skipped' in page and "two-masters-one-down</b>: " in page
    summary = json.loads((out / "summary.json").read_text())
    assert [v["scenario"] for v in summary["verdicts"]] == ["each-level"]
    assert summary["skipped"][0]["scenario"] == "two-masters-one-down" and "two-masters" in summary["skipped"][0]["reason"]
    assert summary["hourglass_version"].startswith("0.")
    run = json.loads(next(out.glob("*/run.json")).read_text())
    assert run["hourglass_version"] == summary["hourglass_version"]
