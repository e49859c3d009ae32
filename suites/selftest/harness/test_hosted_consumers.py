"""Which consumers run in the system's consumer host (``ConsumerSpec.hosted``, set by
``harness.runner.hosted``): never a group whose death alone a plan asks for (a CRASH answer ends
its process: the broker must see a dead client, which only a process of its own gives) nor one of a
scenario whose faults act on its consumers; a broker's faults leave them be."""

from __future__ import annotations

from pathlib import Path

from hourglass.harness.catalogue.conformance import CONFORMANCE
from hourglass.harness.batch import plan_jobs
from hourglass.harness.runner import consumer_spec
from hourglass.harness.scenario import ConsumerGroup, FaultStep, Message, Scenario


def _scenario(*plans: tuple[str, ...], faults=()) -> Scenario:
    msgs = tuple(Message(f"k{i}", "T", at_ms=0, plan=p) for i, p in enumerate(plans)) + (Message("other", "U", at_ms=0, plan=("CRASH",)),)
    return Scenario("s", msgs, (ConsumerGroup("g", ("T",)), ConsumerGroup("h", ("U",))), faults=faults)


def test_a_group_no_plan_crashes_is_hosted():
    sc = _scenario(("LATER", "OK"), ("OK",))
    assert consumer_spec(sc, sc.consumers[0], 0, Path(".")).hosted


def test_a_group_a_plan_crashes_runs_alone():
    sc = _scenario(("LATER", "OK"), ("OK",))
    assert not consumer_spec(sc, sc.consumers[1], 0, Path(".")).hosted, "group h's topic has a CRASH"
    crashing = _scenario(("OK",), ("CRASH", "OK"))
    assert not consumer_spec(crashing, crashing.consumers[0], 0, Path(".")).hosted


def test_a_scenario_whose_faults_act_on_its_consumers_hosts_nothing_and_a_broker_fault_leaves_them_hosted():
    sc = _scenario(("OK",), faults=(FaultStep(1000, "kill", target="consumer"),))
    assert not consumer_spec(sc, sc.consumers[0], 0, Path(".")).hosted
    sc = _scenario(("OK",), faults=(FaultStep(1000, "kill_restart", target="broker"),))
    assert consumer_spec(sc, sc.consumers[0], 0, Path(".")).hosted


def test_the_conformance_batch_hosts_most_of_its_consumers():
    shared = [s for job in plan_jobs(list(CONFORMANCE), virtual=False) if job.shared for s in job.scenarios]
    groups = [(s, c) for s in shared for c in s.consumers]
    hosted = [c.group for s, c in groups if consumer_spec(s, c, 0, Path(".")).hosted]
    alone = sorted(c.group for s, c in groups if not consumer_spec(s, c, 0, Path(".")).hosted)
    # alone: a group a plan crashes, or one of a scenario that faults its own consumers there (batch-ack-index)
    assert alone == sorted(c.group for s, c in groups if s.crashes(c) or s.faults), alone
    assert any(s.faults for s in shared)
    assert len(hosted) >= 2 * len(alone), (hosted, alone)
