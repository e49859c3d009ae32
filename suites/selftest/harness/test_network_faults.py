"""The partition and latency faults end to end on the simulated broker: both chaos scenarios
conform on a correct broker (sends in the partition time out, deliveries come after the heal), and
a schedule service that stops while the broker is cut off is caught by ON_TIME — through the
partition alone: the same broker passes when nothing cuts it off."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from hourglass.adapters.base import SystemInfo
from suites.selftest.harness.defect_runs import run_on_simulator
from hourglass.harness.catalogue.chaos import latency_while_due, loss_while_due, partition_while_due
from hourglass.harness.faults import expand
from hourglass.harness.runner import skip_reason
from hourglass.harness.scenario import ScenarioError, scenario_from_json
from hourglass.harness.verdicts import assert_conforms, describe
from hourglass.reference.rundir import EVENTS_DIR, HARNESS_EVENTS, consumer_events


_run = run_on_simulator


def _events(run_dir, name=HARNESS_EVENTS):
    return [json.loads(line) for line in (run_dir / EVENTS_DIR / name).read_text().splitlines()]


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory):
    from hourglass.reports.check import check_runs

    tmp = tmp_path_factory.mktemp("net")
    sc = partition_while_due()
    defect = ("reput-paused-while-partitioned",)
    runs = {"clean": _run(tmp / "clean", sc), "latency": _run(tmp / "latency", latency_while_due()),
            "stalled": _run(tmp / "stalled", sc, defect),
            "stalled-no-cut": _run(tmp / "nocut", replace(sc, faults=()), defect),
            "loss": _run(tmp / "loss", loss_while_due()), "stalled-loss": _run(tmp / "stalled-loss", loss_while_due(), defect)}
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


@pytest.mark.parametrize("kind, field, value", [("latency", "delay_ms", 300), ("loss", "loss_percent", 30)])
def test_a_correct_broker_conforms_through_a_slow_or_lossy_network(verdicts, kind, field, value):
    """A loss period is judged as its worst case, a partition (reference.network)."""
    v, runs = verdicts
    assert_conforms(v[kind])
    events = _events(runs[kind].run_dir)
    assert [(e["action"], e.get(field)) for e in events if e["type"] == "fault"
            and e["action"].startswith(kind)] == [(kind, value), (kind + "_end", None)]


def test_a_schedule_service_stopped_by_a_partition_is_caught(verdicts):
    v, _ = verdicts
    assert v["stalled"]["invariants"]["ON_TIME"]["passed"] is False, describe(v["stalled"])
    assert v["stalled-loss"]["invariants"]["ON_TIME"]["passed"] is False, describe(v["stalled-loss"])  # a lossy one too
    assert v["stalled-no-cut"]["passed"] is True, describe(v["stalled-no-cut"])  # the partition is what finds it


def test_a_partition_and_a_latency_expand_into_their_start_and_end():
    steps = partition_while_due().faults + latency_while_due().faults
    assert [(f.action, dict(f.fields).get("delay_ms")) for f in expand(steps)] == [
        ("latency", 300), ("partition", None), ("latency_end", None), ("partition_end", None)]


@pytest.mark.parametrize("scenario, change, match", [
    (partition_while_due, {"target": "consumer"}, r"faults\[0\].target.*broker \(partition acts on the broker's network\)"),
    (partition_while_due, {"duration_ms": 0}, r"faults\[0\].duration_ms.*1..100000"),
    (partition_while_due, {"duration_ms": 150_000}, r"faults\[0\].duration_ms.*120 s channel expiry"),
    (partition_while_due, {"delay_ms": 5}, r"faults\[0\].delay_ms.*only latency takes a delay"),
    (loss_while_due, {"loss_percent": 0}, r"faults\[0\].loss_percent.*the share of packets the loss drops"),
    (loss_while_due, {"duration_ms": 0}, r"faults\[0\].duration_ms.*how long the loss lasts"),
    (loss_while_due, {"action": "partition"}, r"faults\[0\].loss_percent.*only loss takes a share"),
])
def test_a_network_step_is_checked(scenario, change, match):
    raw = json.loads(json.dumps(scenario().to_json()))
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
        info = SystemInfo("rocketmq", "5.5.0", "container")

        def cannot(self, action, target):
            return "not supported by the container runtime yet" if action.startswith("partition") else None

    assert skip_reason(partition_while_due(), NoNet()) == (
        "rocketmq 5.5.0 (container runtime) cannot act on the network of broker: not supported by the container runtime yet")


def test_a_send_back_that_timed_out_in_a_cut_may_store_one_more_retry():
    from hourglass.reference.expected import sent_back_copies

    cut = [{"type": "fault", "ts_ms": 10_000, "action": "loss", "target": "broker", "loss_percent": 30},
           {"type": "fault", "ts_ms": 18_000, "action": "loss_end", "target": "broker"}]
    later = [{"outcome": "LATER", "ts_ms": 12_000}]
    assert sent_back_copies(later, cut) == 2  # its send-back retransmitted, beside the client's re-send
    assert sent_back_copies(later, []) == 1
    assert sent_back_copies([{"outcome": "LATER", "ts_ms": 30_000}], cut) == 1  # long after the cut
