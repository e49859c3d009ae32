"""The partition and latency faults end to end on the simulated broker: both chaos scenarios
conform on a correct broker (sends in the partition time out, deliveries come after the heal), and
a schedule service that stops while the broker is cut off is caught by ON_TIME — through the
partition alone: the same broker passes when nothing cuts it off."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from adapters.base import SystemInfo
from suites.selftest.harness.defect_runs import run_on_simulator
from harness.catalogue.chaos import latency_while_due, partition_while_due
from harness.faults import expand
from harness.runner import skip_reason
from harness.scenario import ScenarioError, scenario_from_json
from harness.verdicts import assert_conforms, describe
from reference.rundir import EVENTS_DIR, HARNESS_EVENTS, consumer_events


_run = run_on_simulator


def _events(run_dir, name=HARNESS_EVENTS):
    return [json.loads(line) for line in (run_dir / EVENTS_DIR / name).read_text().splitlines()]


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    from reports.check import check_runs

    tmp = tmp_path_factory.mktemp("net")
    sc = partition_while_due()
    defect = ("reput-paused-while-partitioned",)
    runs = {"clean": _run(tmp / "clean", sc), "latency": _run(tmp / "latency", latency_while_due()),
            "stalled": _run(tmp / "stalled", sc, defect),
            "stalled-no-cut": _run(tmp / "nocut", replace(sc, faults=()), defect)}
    by_id = {v["run_id"]: v for v in check_runs([r.run_dir for r in runs.values()])}
    return {k: by_id[r.run_id] for k, r in runs.items()}, runs


def test_a_correct_broker_conforms_through_a_partition(verdicts):
    v, runs = verdicts
    assert_conforms(v["clean"])
    events = _events(runs["clean"].run_dir)
    cut = [e for e in events if e["type"] == "fault" and e["action"].startswith("partition")]
    assert [e["action"] for e in cut] == ["partition", "partition_end"]
    start, end = cut[0]["ts_ms"], cut[1]["ts_ms"]
    sends = [e for e in events if e["type"] == "send"]
    assert {e["status"] for e in sends if start <= e["ts_ms"] <= end} == {"UNKNOWN"}  # cut off
    files = sorted((runs["clean"].run_dir / EVENTS_DIR).glob(consumer_events("*")))
    delivered = [e for f in files for e in _events(runs["clean"].run_dir, f.name) if e["type"] == "deliver"]
    assert delivered and not any(start < e["ts_ms"] < end for e in delivered)  # nothing reaches a consumer in the cut
    assert any(start < e["store_ms"] < end for e in delivered)  # though re-puts went on in it


def test_a_correct_broker_conforms_through_latency(verdicts):
    v, runs = verdicts
    assert_conforms(v["latency"])
    events = _events(runs["latency"].run_dir)
    assert [(e["action"], e.get("delay_ms")) for e in events if e["type"] == "fault"
            and e["action"].startswith("latency")] == [("latency", 300), ("latency_end", None)]


def test_a_schedule_service_stopped_by_a_partition_is_caught(verdicts):
    v, _ = verdicts
    assert v["stalled"]["invariants"]["ON_TIME"]["passed"] is False, describe(v["stalled"])
    assert v["stalled-no-cut"]["passed"] is True, describe(v["stalled-no-cut"])  # the partition is what finds it


def test_a_partition_and_a_latency_expand_into_their_start_and_end():
    steps = partition_while_due().faults + latency_while_due().faults
    assert [(f.action, f.delay_ms) for f in expand(steps)] == [
        ("latency", 300), ("partition", None), ("latency_end", None), ("partition_end", None)]


@pytest.mark.parametrize("change, match", [
    ({"target": "consumer"}, r"faults\[0\].target.*broker \(partition acts on the broker's network\)"),
    ({"duration_ms": 0}, r"faults\[0\].duration_ms.*1..100000"),
    ({"duration_ms": 150_000}, r"faults\[0\].duration_ms.*120 s channel expiry"),
    ({"delay_ms": 5}, r"faults\[0\].delay_ms.*only latency takes a delay"),
])
def test_a_partition_step_is_checked(change, match):
    raw = json.loads(json.dumps(partition_while_due().to_json()))
    raw["faults"][0].update(change)
    with pytest.raises(ScenarioError, match=match):
        scenario_from_json(raw, "x.json")


def test_a_latency_needs_its_delay():
    raw = json.loads(json.dumps(latency_while_due().to_json()))
    raw["faults"][0]["delay_ms"] = 0
    with pytest.raises(ScenarioError, match=r"faults\[0\].delay_ms.*the delay the latency adds"):
        scenario_from_json(raw, "x.json")
    raw["faults"][0]["delay_ms"] = 5000
    with pytest.raises(ScenarioError, match=r"faults\[0\].delay_ms"):
        scenario_from_json(raw, "x.json")


def test_a_system_that_cannot_cut_its_network_skips_the_scenario_with_the_reason():
    class NoNet:
        info = SystemInfo("rocketmq", "5.5.0", "container", {"network_faults": "not supported by the container runtime yet"})

    assert skip_reason(partition_while_due(), NoNet()) == (
        "rocketmq 5.5.0 (container runtime) cannot act on the network of broker: not supported by the container runtime yet")
