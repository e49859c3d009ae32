"""Fault targets resolved once (adapters/parts.py): every system answers ``cannot(action, target)``
with None or the reason in words, the same reason its fault verb raises and its ``info.details``
records; no broker is started here."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from hourglass.adapters.base import AdapterError, BrokerProfile, OffsetFlushWatching
from hourglass.adapters.parts import BROKER_ONLY
from hourglass.reference.faults.io import STALL
from hourglass.reference.faults import asked_actions
from hourglass.reference.faults.process import START_PAUSED
from hourglass.adapters.rocketmq import brokerclock, disk
from hourglass.adapters.rocketmq.container import ContainerRuntime
from hourglass.adapters.rocketmq.external import ExternalRuntime
from hourglass.adapters.rocketmq.external_system import NO_CLOCK_COMMAND, NO_NETWORK_COMMANDS, ExternalRocketMQSystem
from hourglass.adapters.rocketmq.local import LocalRocketMQSystem
from hourglass.adapters.rocketmq.machine import NO_CLOCK, NO_DRIFT, NO_NETWORK, NOT_FILLABLE
from hourglass.adapters.rocketmq.process import ProcessRuntime
from hourglass.adapters.rocketmq.provision import Distribution
from hourglass.adapters.rocketmq.runtime import Runtime, StartsItsComponents
from hourglass.adapters.simulated import open_simulated
from hourglass.reference.clock import CLOCK, CLOCK_DRIFT
from hourglass.reference.cluster import MASTER_SLAVE
from hourglass.reference.disk import FILL, FREE
from hourglass.reference.network import LATENCY, LOSS, NET_ACTIONS, PARTITION


class NoProcesses(StartsItsComponents):
    """A process runtime that never launches anything (the system is not set up)."""

    name = "process"


def _dist(tmp_path: Path) -> Distribution:
    return Distribution("rocketmq:5.5.0", "5.5.0", tmp_path / "lib")


def _local(tmp_path: Path, **profile) -> LocalRocketMQSystem:
    needs = frozenset(name for name in ("drifting_clock", "own_clock") if profile.pop(name, False))
    return LocalRocketMQSystem(_dist(tmp_path), NoProcesses(), tmp_path / "system", BrokerProfile(**profile, needs=needs))


def _external(tmp_path: Path, commands: dict[str, str]) -> ExternalRocketMQSystem:
    return ExternalRocketMQSystem(_dist(tmp_path), ExternalRuntime(commands), tmp_path / "system", BrokerProfile(),
                                  "127.0.0.1:9876")


def test_every_runtime_implements_every_call_the_system_makes_on_it():
    wanted = {n for n, v in vars(Runtime).items() if inspect.isfunction(v)}
    assert {"pid", "note", "processes", "use_distribution", "cannot", "run"} <= wanted
    for runtime in (ProcessRuntime, ContainerRuntime, ExternalRuntime):
        assert not {n for n in wanted if not callable(getattr(runtime, n, None))}, runtime


def test_the_simulator_answers_every_fault_on_its_broker_and_the_process_faults_elsewhere():
    system = open_simulated(BrokerProfile())
    for action in asked_actions():
        assert system.cannot(action, "broker") is None, action
        assert system.cannot(action, "broker") is None
    for target in ("namesrv", "consumer", "proxy"):
        assert system.cannot("kill", target) is None and system.cannot(START_PAUSED, target) is None
        assert system.cannot(FILL, target) == system.cannot(PARTITION, target) == system.cannot(CLOCK, target) == BROKER_ONLY
        assert system.cannot(LATENCY, target) is not None
    assert "unknown target 'broker-2'" in system.cannot("kill", "broker-2")
    assert "no primitive fault" in system.cannot("explode", "broker")
    with pytest.raises(AdapterError, match="cannot disk_full namesrv: " + BROKER_ONLY):
        system.perform(FILL, "namesrv")
    with pytest.raises(AdapterError, match="unknown target 'broker-2'"):
        system.kill("broker-2")


def test_the_simulators_slave_takes_its_process_faults_only():
    system = open_simulated(BrokerProfile(cluster=MASTER_SLAVE))
    assert all(system.cannot(a, "broker-2") is None for a in ("kill", "stop", "start", "pause", "resume", START_PAUSED))
    assert system.cannot(FILL, "broker-2") == system.cannot(CLOCK_DRIFT, "broker-2") == BROKER_ONLY
    system.setup()
    system.kill("broker-2")
    assert not system.slave.up
    system.start("broker-2")
    system.kill("broker")
    assert system.source() is system.slave.view  # the slave serves the reads while the master is down


def test_a_local_rocketmq_system_says_why_it_cannot_fill_cut_or_move_what_it_did_not_set_up(tmp_path):
    system = _local(tmp_path)
    assert isinstance(system, OffsetFlushWatching)
    for target in ("namesrv", "broker", "consumer"):
        assert all(system.cannot(a, target) is None for a in ("kill", "stop", "start", "pause", "resume", START_PAUSED))
    assert system.cannot(FILL, "broker") == NOT_FILLABLE
    assert all(system.cannot(a, "broker") == NO_NETWORK for a in NET_ACTIONS)
    assert system.cannot(CLOCK, "broker") == NO_CLOCK and system.cannot(CLOCK_DRIFT, "broker") == NO_DRIFT
    assert system.cannot(FILL, "namesrv") == system.cannot(LOSS, "consumer") == BROKER_ONLY
    assert system.cannot("kill", "broker-2") == "target 'broker-2': expected one of namesrv, broker, consumer (cluster single)"
    assert system.cannot(FILL, "broker") is not None and system.cannot("pause", "broker") is None
    with pytest.raises(AdapterError, match="cannot disk_full broker: " + NOT_FILLABLE):
        system.perform(FILL, "broker")
    with pytest.raises(AdapterError, match="cannot make the clock of broker drift: not a broker launched to drift"):
        system.set_clock_rate("broker", 0, 500)
    system.perform(FREE, "broker")  # nothing filled: nothing to free


def test_the_reasons_a_local_system_records_are_the_ones_it_answers(tmp_path, monkeypatch):
    system = _local(tmp_path)
    details = system.info.details
    monkeypatch.setattr(disk, "unavailable", lambda: "no loop devices here")
    system.store.mount(details)
    system.net.make("virtual", details)
    monkeypatch.setattr(brokerclock, "unavailable", lambda runtime: None)
    system.broker_clock.make("process", True, details)  # a cmd: system launches its broker itself
    assert system.cannot(FILL, "broker") == details["disk_faults"] == "no loop devices here"
    assert system.cannot(PARTITION, "broker") == details["network_faults"] == "network faults are not supported by the virtual runtime"
    assert system.cannot(CLOCK, "broker") == system.cannot(CLOCK_DRIFT, "broker") == details["clock_faults"]
    assert "its clock is not the harness's to step" in details["clock_faults"]


def test_a_local_systems_clock_under_its_control_steps_and_drifts_only_when_launched_to(tmp_path, monkeypatch):
    monkeypatch.setattr(brokerclock, "unavailable", lambda runtime: None)
    for drifting, drift in ((False, NO_DRIFT), (True, None)):
        system = _local(tmp_path / str(drifting), drifting_clock=drifting)
        system.broker_clock.make("process", False, system.info.details)
        assert system.cannot(CLOCK, "broker") is None and system.cannot(CLOCK_DRIFT, "broker") == drift
        system.set_clock("broker", 1500)
        assert system.broker_clock.file.read_text() == "+1.500\n"


def test_a_second_broker_takes_its_process_faults_only(tmp_path):
    system = _local(tmp_path, cluster=MASTER_SLAVE)
    assert set(system.parts) == {"namesrv", "broker", "broker-2", "consumer"}
    assert all(system.cannot(a, "broker-2") is None for a in ("kill", "stop", "start", "pause", "resume"))
    assert system.cannot(FILL, "broker-2") == system.cannot(CLOCK, "broker-2") == BROKER_ONLY


def test_an_external_cluster_without_fault_commands_can_fault_its_consumers_only(tmp_path):
    system = _external(tmp_path, {})
    assert not isinstance(system, OffsetFlushWatching)
    assert system.cannot("kill", "broker") == "no fault command for 'kill:broker' (given: none; give them in --faults)"
    assert system.cannot(START_PAUSED, "namesrv") == "no fault command for 'start:namesrv' (given: none; give them in --faults)"
    assert "'disk_full:broker'" in system.cannot(FILL, "broker")
    assert system.cannot(PARTITION, "broker") == NO_NETWORK_COMMANDS and system.cannot(CLOCK, "broker") == NO_CLOCK_COMMAND
    # a family the first broker has no faculty for is named as such, not as the other parts' rule
    assert system.cannot(STALL, "broker") == "this system performs no io fault (io_stall) on broker"
    assert system.cannot(STALL, "namesrv") == BROKER_ONLY
    assert system.cannot("kill", "consumer") is None and system.cannot("pause", "consumer") is None
    assert "expected one of namesrv, broker, consumer" in system.cannot("kill", "broker-2")
    with pytest.raises(AdapterError, match="no fault command for 'kill:broker'"):
        system.kill("broker")


def test_an_external_cluster_with_fault_commands_does_those_faults_only(tmp_path):
    done = tmp_path / "done"
    system = _external(tmp_path, {"kill:broker": f"echo kill >> {done}", "start:broker": "true",
                                  "disk_full:broker": f"echo full >> {done}"})
    assert system.cannot("kill", "broker") is None and system.cannot("start", "broker") is None
    assert system.cannot(FILL, "broker") is None
    assert "'disk_free:broker' (given: disk_full:broker, kill:broker, start:broker;" in system.cannot(FREE, "broker")
    assert "'stop:broker'" in system.cannot("stop", "broker") and system.cannot("kill", "namesrv")
    system.kill("broker")
    system.perform(FILL, "broker")
    assert done.read_text() == "kill\nfull\n"
    with pytest.raises(AdapterError, match="'disk_free:broker'"):
        system.perform(FREE, "broker")


class _Sleeper:
    """A stand-in consumer process: a ``sleep`` in a process group of its own (as a consumer's JVM)."""

    def __init__(self, name: str):
        import subprocess

        self.name = name
        self.proc = subprocess.Popen(["sleep", "60"], start_new_session=True)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def state(self) -> str:
        return Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()

    def ask_to_stop(self) -> None:
        self.proc.terminate()

    def stopped_by(self, deadline: float) -> None:
        self.proc.wait()


def test_a_runs_consumer_faults_on_a_shared_system_act_on_its_own_consumers_only(tmp_path):
    """harness.batch.shares_a_system: a run whose faults only stop, kill, start, pause or resume its
    consumers shares its profile's system; there its FaultDriver's target ``consumer`` is its own
    consumers (PartsSystem.with_members -> ConsumerMembers), and the other runs' keep running."""
    import os
    import signal
    import time

    from hourglass.adapters.rocketmq.clientlink import HostedConsumer
    from hourglass.adapters.rocketmq.consumers import ConsumerMembers

    system = _local(tmp_path)
    consumers = system.part("consumer")
    mine, theirs = _Sleeper("a_cg-0"), _Sleeper("b_cg-0")
    consumers.procs.update({"a_cg-0": mine, "b_cg-0": theirs})
    try:
        view = system.with_members("consumer", frozenset({"a_cg-0"}))
        assert isinstance(view.part("consumer"), ConsumerMembers) and view.part("broker") is system.part("broker")
        assert view.info is system.info and view.cannot("pause", "consumer") is None
        assert view.cannot("partition", "consumer")  # only its processes' verbs

        def states() -> tuple[str, str]:
            time.sleep(0.2)  # the signal is delivered asynchronously
            return mine.state(), theirs.state()

        view.pause("consumer")
        assert states() == ("T", "S")  # stopped; the other run's still sleeping
        view.resume("consumer")
        assert states() == ("S", "S")
        view.kill("consumer")
        assert not mine.alive() and theirs.alive() and consumers.stopped == {"a_cg-0"}
        view.wait_ready("consumer")  # killed by the harness: not waited for
        # a consumer in the shared host is never signalled apart (it would stop every run's)
        hosted = HostedConsumer.__new__(HostedConsumer)
        hosted.spec = type("Spec", (), {"name": "c_cg-0"})()
        consumers.procs["c_cg-0"] = hosted
        with pytest.raises(AdapterError, match="share a consumer host"):
            system.with_members("consumer", frozenset({"c_cg-0"})).pause("consumer")
        with pytest.raises(AdapterError, match="no members"):
            system.with_members("broker", frozenset({"x"}))
    finally:
        consumers.procs.clear()
        for p in (mine, theirs):
            if p.alive():
                os.kill(p.proc.pid, signal.SIGCONT)
                p.kill()
