"""Walking a tree of runs: each real directory once (a symlink loop neither recurses nor judges a
run twice), directories as named (a broker store's %DLQ%group, a space), and a directory holding
events without run.json is said, not skipped."""

from __future__ import annotations

import json

import pytest

from hourglass.reference.rundir import RUN_JSON, VERDICT_JSON
from hourglass.reports.matrix import load_checked
from suites.selftest.checker.runs import RunBuilder


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("tree")
    RunBuilder("genuine").send("a", 0).deliver("a", 10).write(root)
    (root / "sub").mkdir()
    (root / "sub" / "loop").symlink_to("..", target_is_directory=True)
    orphan = RunBuilder("orphan").send("a", 0).deliver("a", 10).write(root)
    (orphan / RUN_JSON).unlink()
    # a broker's store kept beside the runs (the harness's _systems/): RocketMQ names a DLQ's consume
    # queue directory %DLQ%<group>, and a run may sit below a directory with a space or a '%' in its name
    (root / "_systems" / "job06" / "store" / "consumequeue" / "%DLQ%g" / "0").mkdir(parents=True)
    RunBuilder("below-odd-names").send("a", 0).deliver("a", 10).write(root / "100% busy" / "x y")
    return root


@pytest.fixture(scope="module")
def tree_verdicts(spark, tree):
    from hourglass.reports.check import check_runs

    return check_runs([tree])  # outputs into the run directories, as `reports check DIR` writes them


def test_a_symlink_loop_judges_each_run_once(tree, tree_verdicts):
    assert [v["run_id"] for v in tree_verdicts].count("genuine") == 1
    verdict = json.loads((tree / "genuine" / VERDICT_JSON).read_text())
    assert verdict["passed"] is True and "broken" not in verdict


def test_directories_named_with_a_percent_sign_or_a_space_are_walked_as_named(tree, tree_verdicts):
    assert json.loads((tree / "100% busy" / "x y" / "below-odd-names" / VERDICT_JSON).read_text())["passed"] is True


def test_events_without_run_json_are_a_broken_run_naming_the_directory(tree, tree_verdicts):
    broken = [v for v in tree_verdicts if v["run_id"] == "orphan"]
    assert len(broken) == 1 and f"{tree / 'orphan'}: expected {RUN_JSON} beside its events" in broken[0]["broken"]
    assert not (tree / "orphan" / VERDICT_JSON).exists()  # not a run directory: nothing written into it


def test_the_matrix_reads_each_checked_run_once(tree, tree_verdicts):
    assert [run["run_id"] for run, _ in load_checked([str(tree)])] == ["below-odd-names", "genuine"]
