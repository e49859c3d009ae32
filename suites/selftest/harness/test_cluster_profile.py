"""A cluster topology is part of a scenario's profile (reference.cluster): it reaches the system,
keeps scenarios of different topologies off one shared system, and a system that cannot run it
skips the scenario with the reason."""

from __future__ import annotations

from hourglass.adapters.base import SystemInfo
from hourglass.harness.batch import plan_jobs
from hourglass.harness.catalogue.chaos import CLUSTER, two_masters_one_down
from hourglass.harness.runner import skip_reason
from hourglass.harness.scenario import ConsumerGroup, Message, Profile, Scenario
from hourglass.harness.systems import broker_profile
from hourglass.reference.cluster import broker_targets


def test_the_profile_s_cluster_reaches_the_broker_profile():
    assert broker_profile(two_masters_one_down().profile).cluster == "two-masters"
    assert broker_targets("two-masters") == ("broker", "broker-2") and broker_targets("single") == ("broker",)


def test_scenarios_of_different_topologies_never_share_a_system():
    def plain(name, cluster):
        return Scenario(name, (Message("k", "T"),), (ConsumerGroup("g", ("T",)),), profile=Profile(cluster=cluster))

    jobs = plan_jobs([plain("a", "single"), plain("b", "two-masters"), plain("c", "single")], virtual=False)
    assert sorted(sorted(s.name for s in j.scenarios) for j in jobs) == [["a", "c"], ["b"]]


def test_a_system_without_the_cluster_skips_with_the_reason():
    class OneBroker:
        info = SystemInfo("simulated", "1", "virtual", {})

    class External:
        info = SystemInfo("rocketmq", "5.5.0", "external", {"cluster": "single",
                                                               "cluster_unsupported": "an external cluster is what it is"})

    class TwoMasters:
        info = SystemInfo("rocketmq", "5.5.0", "process", {"cluster": "two-masters"})

        def cannot(self, action, target):
            return None

    for s in CLUSTER:
        assert skip_reason(s, OneBroker()) == f"simulated 1 (virtual runtime) cannot run a {s.profile.cluster} cluster: it runs a single broker"
        assert "an external cluster is what it is" in skip_reason(s, External())
    assert skip_reason(two_masters_one_down(), TwoMasters()) is None


def test_the_simulator_s_slave_serves_and_a_slave_that_re_puts_is_caught(tmp_path):
    """A master and its slave on the simulator (adapters.simulated.system.SlaveView): while the master
    is down the consumer reads the slave's replica and nothing is re-put; a slave that runs the
    schedule service (slave-reputs-while-master-down) makes the master's re-puts repeat: NO_DUPLICATE."""
    import json

    from hourglass.harness.catalogue.chaos import master_down_slave_serves
    from hourglass.harness.verdicts import assert_conforms
    from hourglass.reference.rundir import EVENTS_DIR
    from hourglass.reports.check import check_runs
    from suites.selftest.harness.defect_runs import run_on_simulator

    scenario = master_down_slave_serves()
    clean = run_on_simulator(tmp_path / "clean", scenario)
    broken = run_on_simulator(tmp_path / "broken", scenario, ("slave-reputs-while-master-down",))
    verdicts = {v["run_id"]: v for v in check_runs([clean.run_dir, broken.run_dir])}
    assert_conforms(verdicts[clean.run_id])
    events = [json.loads(line) for f in sorted((clean.run_dir / EVENTS_DIR).glob("*.jsonl")) for line in f.read_text().splitlines()]
    faults = [e for e in events if e["type"] == "fault" and e["target"] == "broker" and e.get("step") == 1]
    down = next(e["ts_ms"] for e in faults if e["action"] == "kill")
    up = next(e["ts_ms"] for e in faults if e["action"] == "ready")
    during = [e for e in events if e["type"] == "deliver" and down < e["ts_ms"] < up]
    assert any(e["key"].startswith("MP") for e in during)  # read from the slave
    assert not any(down < e["store_ms"] < up for e in during if e["key"].startswith("MS"))  # nothing re-put
    assert verdicts[broken.run_id]["invariants"]["NO_DUPLICATE"]["passed"] is False
