"""The ``io_stall`` fault end to end on the simulated broker: its step expands into a stall and a
thaw, a correct broker conforms through it, and a schedule service that drops a re-put whose write
failed is caught by it — the stall alone: the same broker passes when nothing stalls its store."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from hourglass.adapters.simulated.defects import Defect
from hourglass.harness.catalogue.chaos import io_stall_while_due
from hourglass.harness.faults import expand
from hourglass.harness.scenario import ScenarioError, scenario_from_json
from hourglass.harness.verdicts import assert_conforms, describe
from hourglass.reference import faults
from suites.selftest.harness.defect_runs import run_on_simulator


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    from hourglass.reports.check import check_runs

    tmp, sc, defect = tmp_path_factory.mktemp("io"), io_stall_while_due(), (Defect.LOST_REPUT_ON_WRITE_FAILURE,)
    runs = {"clean": run_on_simulator(tmp / "clean", sc), "lossy": run_on_simulator(tmp / "lossy", sc, defect),
            "lossy-no-stall": run_on_simulator(tmp / "nostall", replace(sc, faults=()), defect)}
    by_id = {v["run_id"]: v for v in check_runs([r.run_dir for r in runs.values()])}
    return {k: by_id[r.run_id] for k, r in runs.items()}


def test_a_stall_expands_into_its_freeze_and_thaw_and_needs_a_freezable_store():
    steps = io_stall_while_due().faults
    assert [(f.at_ms, f.action) for f in expand(steps)] == [(4000, "io_stall"), (10000, "io_resume")]
    assert faults.setup_needed(steps) == {"freezable_store"}
    assert faults.primitives_needed(steps) == {("io_stall", "broker"), ("io_resume", "broker")}


def test_a_correct_broker_conforms_through_a_stalled_store(verdicts):
    assert_conforms(verdicts["clean"])


def test_a_re_put_dropped_on_a_failed_write_is_caught_by_the_stall(verdicts):
    assert verdicts["lossy"]["invariants"]["NO_LOSS"]["passed"] is False, describe(verdicts["lossy"])
    assert verdicts["lossy-no-stall"]["passed"] is True, describe(verdicts["lossy-no-stall"])


@pytest.mark.parametrize("change, match", [
    ({"target": "consumer"}, r"faults\[0\].target.*broker \(io_stall stalls the broker's store writes\)"),
    ({"duration_ms": 0}, r"faults\[0\].duration_ms.*1..30000"),
    ({"duration_ms": 30_001}, r"faults\[0\].duration_ms.*1..30000"),
    ({"delay_ms": 5}, r"faults\[0\].delay_ms.*only latency takes a delay"),
])
def test_a_bad_stall_step_is_refused_naming_the_field(change, match):
    raw = json.loads(json.dumps(io_stall_while_due().to_json()))
    raw["faults"][0].update(change)
    with pytest.raises(ScenarioError, match=match):
        scenario_from_json(raw, "x.json")
