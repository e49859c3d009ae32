"""End to end through the PySpark checker (``reports.check.check_runs``): the checker's verdicts on
simulated run directories agree with the checker's in-process judgement of their events
(``reports.judge_run``) — clean runs pass, and each defect is
caught by the invariant that names it. (One Spark job for all runs: slow to start, so one test.)"""

from __future__ import annotations

import pytest

from hourglass.adapters.simulated.defects import Defect
from suites.selftest.simulated.driver import run_scenario
from hourglass.reports.judge_run import violations
from suites.selftest.simulated.scenarios import LEVELS, exposing, random_scenario

pytestmark = pytest.mark.slow


def test_checker_and_judge_agree_on_clean_and_broken_runs(tmp_path):
    check_runs = pytest.importorskip("hourglass.reports.check").check_runs
    runs = {}
    for seed in range(3):
        sends, faults, options = random_scenario(100 + seed)
        runs[f"clean-{seed}"] = (None, run_scenario(tmp_path / f"clean-{seed}", sends, faults, levels=LEVELS,
                                                    run_id=f"clean-{seed}", groups=("g1", "g2"), **options))
    for d in Defect:
        sends, faults, options = exposing(d)
        runs[d.slug] = (d, run_scenario(tmp_path / d.slug, sends, faults, levels=LEVELS, defects=(d,), run_id=d.slug, **options))
    verdicts = {v["run_id"]: v for v in check_runs([r.run_dir for _, r in runs.values()], out_dir=tmp_path / "out")}
    for run_id, (defect, r) in runs.items():
        v = verdicts[run_id]
        failed = {i for i, x in v["invariants"].items() if x["passed"] is False}
        judged = set(violations(r.run, r.events))
        if defect is None:
            assert failed == set() == judged, (run_id, v)
        else:
            assert defect.invariant in failed, (run_id, failed, judged)
            assert defect.invariant in judged
