"""The disk_full fault end to end on the simulated broker: the chaos scenario conforms on a correct
broker, and catches a schedule service that drops a re-put it could not write — through the full
store alone (no random write failures) — while the same broker passes when the store never fills."""

from __future__ import annotations

from dataclasses import replace

import pytest

from suites.selftest.harness.defect_runs import run_on_simulator
from hourglass.harness.catalogue.chaos import disk_full_while_due
from hourglass.harness.runner import skip_reason
from hourglass.harness.scenario import ScenarioError, scenario_from_json
from hourglass.harness.verdicts import assert_conforms, describe
from hourglass.reference.rundir import EVENTS_DIR, HARNESS_EVENTS


_run = run_on_simulator


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    from hourglass.reports.check import check_runs

    tmp = tmp_path_factory.mktemp("disk")
    sc = disk_full_while_due()
    runs = {"clean": _run(tmp / "clean", sc), "lossy": _run(tmp / "lossy", sc, ("lost-reput-on-write-failure",)),
            "lossy-no-fill": _run(tmp / "nofill", replace(sc, faults=()), ("lost-reput-on-write-failure",))}
    by_id = {v["run_id"]: v for v in check_runs([r.run_dir for r in runs.values()])}
    return {k: by_id[r.run_id] for k, r in runs.items()}, runs


def test_a_correct_broker_conforms_through_a_full_store(verdicts):
    v, runs = verdicts
    assert_conforms(v["clean"])
    import json

    events = [json.loads(line) for line in (runs["clean"].run_dir / EVENTS_DIR / HARNESS_EVENTS).read_text().splitlines()]
    assert [e["action"] for e in events if e["type"] == "fault" and e["target"] == "broker"
            and e["action"].startswith("disk")] == ["disk_full", "disk_free"]
    assert any(e["type"] == "send" and e["status"] == "FAILED" for e in events)  # the full store refused sends


def test_a_re_put_dropped_on_a_failed_write_is_caught_by_the_full_store(verdicts):
    v, _ = verdicts
    assert v["lossy"]["invariants"]["NO_LOSS"]["passed"] is False, describe(v["lossy"])
    assert v["lossy-no-fill"]["passed"] is True, describe(v["lossy-no-fill"])  # the fill is what finds it


def test_only_the_broker_has_a_store_to_fill():
    import json

    raw = json.loads(json.dumps(disk_full_while_due().to_json()))
    raw["faults"][0]["target"] = "consumer"
    with pytest.raises(ScenarioError, match=r"faults\[0\].target.*broker \(disk_full fills the broker's store\)"):
        scenario_from_json(raw, "x.json")


def test_a_system_that_cannot_fill_its_store_skips_the_scenario_with_the_reason():
    class NoDisk:
        from hourglass.adapters.base import SystemInfo
        info = SystemInfo("rocketmq", "5.5.0", "process")

        def cannot(self, action, target):
            return "mounting a size-limited store (tmpfs) needs root" if action.startswith("disk_") else None

    assert skip_reason(disk_full_while_due(), NoDisk()) == ("rocketmq 5.5.0 (process runtime) cannot fill the store of "
                                                            "broker: mounting a size-limited store (tmpfs) needs root")
