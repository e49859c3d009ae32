"""The version matrix for the user about to upgrade (reports.matrix): each scenario x invariant
compared old -> new as a regression, a fix, unchanged, undecided (a side that says nothing of its
version) or one-sided; per-invariant counts; links to both runs' reports; the text both command
lines print and the exit code of ``python -m hourglass.reports matrix``.

The checked runs are hand-made: run.json by the checker tests' RunBuilder, verdict.json by the
checker's own ``build_verdict`` (no Spark), report.html a stub the links must reach."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

from hourglass.reference.contract import INVARIANTS
from hourglass.reports.cli import main as reports_main
from hourglass.reports.matrix import compare, load_checked_dirs, summary_text, write_matrix
from hourglass.reports.stalls import HOST_STALL_CAUSE
from hourglass.reports.verdict import BROKEN, EXIT_CODES, PASSED, UNDECIDED, VIOLATED, broken_verdict, build_verdict
from suites.selftest.checker.runs import RunBuilder


def checked_run(root: Path, version: str, scenario: str, failing: dict | None = None, accepted: tuple = (),
                stalled: tuple = (), broken: str | None = None, report: bool = True) -> Path:
    """A checked run of ``scenario`` on ``version`` below ``root/version``: ``failing`` invariant ->
    its number of violations (those in ``accepted`` accepted by a baseline); ``stalled``: invariants
    undecided because the host stalled; ``broken``: why the run could not be read."""
    run_id = f"{scenario}-{version}"
    d = RunBuilder(run_id).write(root / version, scenario=scenario, system={"adapter": "rocketmq", "version": version})
    violations = [{"invariant": inv, "key": f"{inv.lower()}-{i}", "attempt": 0, "detail": f"{inv} broken on {version}",
                   **({"accepted": True, "accepted_reason": f"known on {version}"} if inv in accepted else {})}
                  for inv, n in (failing or {}).items() for i in range(n)]
    pending = [{"invariant": inv, "key": "late", "detail": "the host stalled", "cause": HOST_STALL_CAUSE} for inv in stalled]
    verdict = (broken_verdict(run_id, broken) if broken else
               build_verdict(run_id, {"messages": 4}, {inv: 4 for inv in INVARIANTS}, violations, pending, [], []))
    (d / "verdict.json").write_text(json.dumps(verdict))
    if report:
        (d / "report.html").write_text(f"<html>report of {run_id}</html>")
    return d


def rows(m: dict, comparison: int = 0) -> dict[tuple[str, str], dict]:
    return {(r["scenario"], r["invariant"]): r for r in m["comparisons"][comparison]["rows"]}


@pytest.fixture
def upgrade(tmp_path):
    """1.0 -> 2.0: ``breaks`` regresses NOT_EARLY, ``mends`` fixes NO_LOSS, ``steady`` passes on both,
    ``gone`` ran on 1.0 only."""
    for version in ("1.0", "2.0"):
        checked_run(tmp_path / "runs", version, "breaks", failing={"NOT_EARLY": 2} if version == "2.0" else None)
        checked_run(tmp_path / "runs", version, "mends", failing={"NO_LOSS": 3} if version == "1.0" else None)
        checked_run(tmp_path / "runs", version, "steady")
    checked_run(tmp_path / "runs", "1.0", "gone")
    return tmp_path / "runs"


def test_a_regression_and_a_fix_point_the_way_the_versions_were_given(upgrade, tmp_path):
    m = write_matrix([str(upgrade / "1.0"), str(upgrade / "2.0")], str(tmp_path / "page"))
    assert m["versions"] == ["rocketmq 1.0", "rocketmq 2.0"]
    by = rows(m)
    assert by[("breaks", "NOT_EARLY")]["class"] == "regression" and by[("mends", "NO_LOSS")]["class"] == "fix"
    assert {r["class"] for k, r in by.items() if k not in {("breaks", "NOT_EARLY"), ("mends", "NO_LOSS")}} == {"unchanged"}
    assert {(d["scenario"], d["invariant"]) for d in m["differences"]} == {("breaks", "NOT_EARLY"), ("mends", "NO_LOSS")}
    # given new -> old, the same runs read the other way round
    back = write_matrix([str(upgrade / "2.0"), str(upgrade / "1.0")], str(tmp_path / "back"))
    assert back["versions"] == ["rocketmq 2.0", "rocketmq 1.0"]
    assert rows(back)[("breaks", "NOT_EARLY")]["class"] == "fix" and rows(back)[("mends", "NO_LOSS")]["class"] == "regression"


def test_within_one_tree_versions_are_ordered_by_number_not_by_name(tmp_path):
    for version in ("10.0", "9.1"):  # by name 10.0 sorts first
        checked_run(tmp_path, version, "s", failing={"NO_LOSS": 1} if version == "10.0" else None)
    m = compare(load_checked_dirs([str(tmp_path)]))
    assert m["versions"] == ["rocketmq 9.1", "rocketmq 10.0"]
    assert rows(m)[("s", "NO_LOSS")]["class"] == "regression"


def test_more_than_two_versions_compare_each_step_and_first_to_last(tmp_path):
    for version, failing in (("1.0", None), ("2.0", {"NO_LOSS": 1}), ("3.0", None)):
        checked_run(tmp_path, version, "s", failing=failing)
    m = compare(load_checked_dirs([str(tmp_path / v) for v in ("1.0", "2.0", "3.0")]))
    spans = [(c["older"], c["newer"], c["span"]) for c in m["comparisons"]]
    assert spans == [("rocketmq 1.0", "rocketmq 3.0", "first-to-last"), ("rocketmq 1.0", "rocketmq 2.0", "step"),
                     ("rocketmq 2.0", "rocketmq 3.0", "step")]
    assert [rows(m, i)[("s", "NO_LOSS")]["class"] for i in range(3)] == ["unchanged", "regression", "fix"]


def test_unchanged_rows_are_folded_after_regressions_fixes_undecided_and_one_sided(upgrade, tmp_path):
    checked_run(upgrade, "1.0", "stalls")
    checked_run(upgrade, "2.0", "stalls", stalled=("ON_TIME",))
    m = write_matrix([str(upgrade / "1.0"), str(upgrade / "2.0")], str(tmp_path / "page"))
    page = (tmp_path / "page" / "matrix.html").read_text()
    n = m["comparisons"][0]["counts"]["unchanged"]
    assert n == 4 * len(INVARIANTS) - 3  # steady, breaks, mends and stalls, all but their three moved rows
    folded = page.index("<details>")
    assert f"<summary>{n} unchanged rows" in page
    marks = [page.index(s) for s in ("Regressions:", "Fixes:", "Undecided:", "One-sided:")]
    assert marks == sorted(marks) and marks[-1] < folded
    assert page.index(">steady<") > folded  # an all-agreeing scenario appears only inside the fold
    assert [r["class"] for r in m["comparisons"][0]["rows"]][:3] == ["regression", "fix", "undecided"]


def test_a_scenario_run_on_one_side_only_is_listed_apart_and_never_a_difference(upgrade, tmp_path):
    m = write_matrix([str(upgrade / "1.0"), str(upgrade / "2.0")], str(tmp_path / "page"))
    c = m["comparisons"][0]
    assert [(o["scenario"], o["only_on"]) for o in c["one_sided"]] == [("gone", "rocketmq 1.0")]
    assert c["counts"]["one-sided"] == 1
    assert not any(r["scenario"] == "gone" for r in c["rows"]) and not any(d["scenario"] == "gone" for d in m["differences"])
    assert "gone: ran on rocketmq 1.0 only" in (tmp_path / "page" / "matrix.html").read_text()


@pytest.mark.parametrize("newer", [{"stalled": ("ON_TIME",)}, {"broken": "events.jsonl: line 3 is torn"}])
def test_a_host_stalled_or_broken_side_is_undecided_not_a_difference(tmp_path, newer):
    checked_run(tmp_path, "1.0", "s")
    checked_run(tmp_path, "2.0", "s", **newer)
    m = write_matrix([str(tmp_path / "1.0"), str(tmp_path / "2.0")], str(tmp_path / "page"))
    moved = {k: r for k, r in rows(m).items() if r["class"] != "unchanged"}
    expected = {("s", "ON_TIME")} if "stalled" in newer else {("s", inv) for inv in INVARIANTS}
    assert set(moved) == expected and {r["class"] for r in moved.values()} == {"undecided"}
    assert m["differences"] == [] and m["status"] == UNDECIDED
    assert [d["invariant"] for d in m["host_stalled"]] == (["ON_TIME"] if "stalled" in newer else [])
    assert "says nothing of the version" in (tmp_path / "page" / "matrix.html").read_text()


def test_a_failure_accepted_on_both_sides_is_unchanged_and_shown_as_accepted(tmp_path):
    for version in ("1.0", "2.0"):
        checked_run(tmp_path, version, "known", failing={"NO_DUPLICATE": 2}, accepted=("NO_DUPLICATE",))
        checked_run(tmp_path, version, "new-known", failing={"NO_LOSS": 1} if version == "2.0" else None, accepted=("NO_LOSS",))
    m = write_matrix([str(tmp_path / "1.0"), str(tmp_path / "2.0")], str(tmp_path / "page"))
    by = rows(m)
    assert by[("known", "NO_DUPLICATE")]["class"] == "unchanged"
    assert by[("known", "NO_DUPLICATE")]["newer"]["state"] == "accepted"
    # passed, then failed but accepted by the newer's baseline: a regression, shown, not gating
    assert by[("new-known", "NO_LOSS")]["class"] == "regression" and by[("new-known", "NO_LOSS")]["accepted"]
    assert m["status"] == PASSED and m["exit_code"] == EXIT_CODES[PASSED]
    page = (tmp_path / "page" / "matrix.html").read_text()
    assert "accepted (2)" in page and "accepted by the baseline: does not gate</summary>known on 2.0" in page
    text = summary_text(m)
    assert "1 regression (1 accepted by the baseline)" in text
    assert "  regression: new-known NO_LOSS [accepted by the baseline: does not gate]: no_loss-0" in text


def test_counts_are_per_invariant_and_violations_are_never_summed_across_invariants(tmp_path):
    checked_run(tmp_path, "1.0", "s")
    checked_run(tmp_path, "2.0", "s", failing={"NO_LOSS": 3, "NOT_EARLY": 2})
    m = write_matrix([str(tmp_path / "1.0"), str(tmp_path / "2.0")], str(tmp_path / "page"))
    by_inv = m["comparisons"][0]["by_invariant"]
    assert by_inv["NO_LOSS"]["regression"] == 1 and by_inv["NOT_EARLY"]["regression"] == 1
    assert sum(by["regression"] for by in by_inv.values()) == 2
    assert set(m["scenarios"]["s"]) == set(INVARIANTS)  # no whole-run row that adds them up
    assert [m["scenarios"]["s"][i]["rocketmq 2.0"]["violations"] for i in ("NO_LOSS", "NOT_EARLY")] == [3, 2]
    page = (tmp_path / "page" / "matrix.html").read_text()
    assert "FAIL (3)" in page and "FAIL (2)" in page and "FAIL (5)" not in page
    text = summary_text(m)
    assert "  NO_LOSS: 1 regression" in text and "  NOT_EARLY: 1 regression" in text


def test_each_cell_links_to_its_runs_report_relative_to_the_page(upgrade, tmp_path):
    out = tmp_path / "elsewhere" / "page"
    m = write_matrix([str(upgrade / "1.0"), str(upgrade / "2.0")], str(out))
    row = rows(m)[("breaks", "NOT_EARLY")]
    for side, version in (("older", "1.0"), ("newer", "2.0")):
        link = row[side]["report"]
        assert not Path(link).is_absolute()
        assert (out / link).resolve() == (upgrade / version / f"breaks-{version}" / "report.html").resolve()
    hrefs = re.findall(r"href='([^']+)'", (out / "matrix.html").read_text())
    assert len(hrefs) >= 2 * len(m["comparisons"][0]["rows"])  # both cells of every row
    assert all((out / unquote(h)).is_file() for h in hrefs)
    assert {"breaks-1.0", "breaks-2.0"} <= {Path(unquote(h)).parent.name for h in hrefs}


def test_a_run_without_a_report_gets_no_link(tmp_path):
    checked_run(tmp_path, "1.0", "s", report=False)
    checked_run(tmp_path, "2.0", "s")
    m = write_matrix([str(tmp_path / "1.0"), str(tmp_path / "2.0")], str(tmp_path / "page"))
    row = rows(m)[("s", "NO_LOSS")]
    assert row["older"]["report"] is None and row["newer"]["report"]


def test_reports_matrix_prints_the_classification_and_each_regression(upgrade, tmp_path, capsys):
    code = reports_main(["matrix", str(upgrade / "1.0"), str(upgrade / "2.0"), "--out", str(tmp_path / "page")])
    out = capsys.readouterr().out
    assert code == EXIT_CODES[VIOLATED]
    lines = out.splitlines()
    assert lines[0] == f"matrix of rocketmq 1.0, rocketmq 2.0: {tmp_path / 'page' / 'matrix.html'}"
    unchanged = 3 * len(INVARIANTS) - 2
    assert lines[1] == (f"rocketmq 1.0 -> rocketmq 2.0: 1 regression, 1 fix, {unchanged} unchanged, 0 undecided "
                        "(scenario x invariant); 1 one-sided (scenarios)")
    regression = next(x for x in lines if x.startswith("  regression:"))
    assert regression.startswith("  regression: breaks NOT_EARLY: not_early-0 attempt 0: NOT_EARLY broken on 2.0")
    assert "  one-sided: gone ran on rocketmq 1.0 only" in lines
    assert not re.search(r"[{}\[\]]|\bNone\b|\bTrue\b|\bFalse\b", out)  # text, no Python reprs


def test_reports_matrix_exits_by_the_comparison(tmp_path, capsys):
    def code(name: str, older: dict, newer: dict) -> int:
        checked_run(tmp_path / name, "1.0", "s", **older)
        checked_run(tmp_path / name, "2.0", "s", **newer)
        return reports_main(["matrix", str(tmp_path / name / "1.0"), str(tmp_path / name / "2.0"),
                             "--out", str(tmp_path / name / "page")])

    assert code("regression", {}, {"failing": {"NO_LOSS": 1}}) == EXIT_CODES[VIOLATED] == 1
    assert code("fix", {"failing": {"NO_LOSS": 1}}, {}) == EXIT_CODES[PASSED] == 0
    assert code("unchanged", {}, {}) == 0
    assert code("stalled", {}, {"stalled": ("ON_TIME",)}) == EXIT_CODES[UNDECIDED] == 2
    assert code("both", {"stalled": ("ON_TIME",)}, {"failing": {"NO_LOSS": 1}}) == 1  # a regression wins
    checked_run(tmp_path / "one", "1.0", "s")
    assert reports_main(["matrix", str(tmp_path / "one"), "--out", str(tmp_path / "one-page")]) == EXIT_CODES[BROKEN] == 3
    assert "at least 2 versions" in capsys.readouterr().err and not (tmp_path / "one-page" / "matrix.json").exists()
    assert reports_main(["matrix", str(tmp_path / "nowhere"), "--out", str(tmp_path / "p2")]) == 3
    checked_run(tmp_path / "fix", "3.0", "s")
    (tmp_path / "fix" / "2.0" / "s-2.0" / "run.json").unlink()  # two versions readable, one run not
    capsys.readouterr()
    assert reports_main(["matrix", str(tmp_path / "fix"), "--out", str(tmp_path / "p3")]) == 3
    assert "s-2.0: field 'run.json'" in capsys.readouterr().err
    # a verdict.json file names its run directory
    verdicts = [str(tmp_path / "regression" / v / f"s-{v}" / "verdict.json") for v in ("1.0", "2.0")]
    assert reports_main(["matrix", *verdicts, "--out", str(tmp_path / "p4")]) == 1


def test_harness_matrix_prints_the_same_text_in_the_order_of_systems(tmp_path, monkeypatch, capsys):
    import hourglass.harness.cli as cli

    versions = {"simulated[early-delivery]": "1.0", "simulated": "2.0"}  # the order of --systems: old -> new

    def fake_run_system(system, scenarios, args, out):
        version = versions[system]
        d = checked_run(out, version, "probe", failing={"NO_LOSS": 1} if version == "2.0" else None)
        verdict = json.loads((d / "verdict.json").read_text())
        return [dict(verdict, run_dir=str(d))]

    monkeypatch.setattr(cli, "run_system", fake_run_system)
    code = cli.main(["matrix", "--systems", "simulated[early-delivery],simulated", "--out", str(tmp_path / "m")])
    assert code == 1  # the runs' verdicts: the newer violated
    out = capsys.readouterr().out
    m = json.loads((tmp_path / "m" / "matrix.json").read_text())
    assert m["versions"] == ["rocketmq 1.0", "rocketmq 2.0"]
    assert summary_text(m, tmp_path / "m" / "matrix.html") in out
    assert "  regression: probe NO_LOSS: no_loss-0 attempt 0: NO_LOSS broken on 2.0" in out
    assert not re.search(r"[{}\[\]]|\bNone\b|\bTrue\b|\bFalse\b|=", out.split("matrix of", 1)[1])


def test_the_runs_say_their_times_as_offsets_from_their_start(tmp_path):
    """The pre-upgrade user reads "observed at t+3.200 s", not "observed at 1795713246374"."""
    for version in ("1.0", "2.0"):
        d = checked_run(tmp_path / "runs", version, "s", failing={"NO_LOSS": 1} if version == "2.0" else None)
    started = json.loads((d / "run.json").read_text())["started_ms"]
    verdict = json.loads((d / "verdict.json").read_text())
    verdict["invariants"]["NO_LOSS"]["examples"][0]["explanation"] = f"k attempt 0: run ended at {started + 3200}"
    (d / "verdict.json").write_text(json.dumps(verdict))
    m = write_matrix([str(tmp_path / "runs" / "1.0"), str(tmp_path / "runs" / "2.0")], str(tmp_path / "page"))
    assert rows(m)[("s", "NO_LOSS")]["newer"]["explanation"] == "k attempt 0: run ended at t+3.200 s"
    assert str(started + 3200) not in (tmp_path / "page" / "matrix.html").read_text()
