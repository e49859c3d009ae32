"""The clean simulator keeps every invariant over many random scenarios with faults, runs
deterministically from its seed, and offers the adapter protocol's capabilities."""

from __future__ import annotations

import pytest

from hourglass.adapters.base import BrokerProfile, DlqReading, OffsetFlushWatching, Pausable, Snapshotting, System
from hourglass.adapters.simulated import open_simulated
from hourglass.reports.judge_run import violations
from suites.selftest.simulated.driver import Fault, Send, run_scenario
from suites.selftest.simulated.scenarios import LEVELS, random_scenario

SEEDS = range(40)


@pytest.mark.parametrize("seed", SEEDS)
def test_clean_simulator_keeps_every_invariant(seed, tmp_path):
    sends, faults, options = random_scenario(seed)
    run = run_scenario(tmp_path, sends, faults, levels=LEVELS, groups=("g1", "g2"), **options)
    assert run.of_type("deliver"), "the scenario delivered nothing"
    assert violations(run.run, run.events) == {}, (faults, options)


def test_same_seed_same_run(tmp_path):
    sends, faults, options = random_scenario(7)
    a = run_scenario(tmp_path / "a", sends, faults, levels=LEVELS, **options)
    b = run_scenario(tmp_path / "b", sends, faults, levels=LEVELS, **options)
    assert a.events == b.events


def test_simulator_offers_the_adapter_capabilities():
    s = open_simulated(BrokerProfile())
    for capability in (System, Pausable, DlqReading, Snapshotting, OffsetFlushWatching):
        assert isinstance(s, capability), capability.__name__


def test_kill9_repeats_reputs_since_the_last_flush_and_loses_nothing(tmp_path):
    sends = [Send(i * 100, f"k{i}", delay_level=1) for i in range(30)]
    run = run_scenario(tmp_path, sends, [Fault(2500, "kill"), Fault(3500, "start")], levels=LEVELS)
    copies: dict[str, set[int]] = {}
    for d in run.of_type("deliver"):
        copies.setdefault(d["key"], set()).add(d["commit_log_offset"])
    sent_ok = {s["key"] for s in run.of_type("send") if s["status"] == "SEND_OK"}
    assert len(sent_ok) >= 20 and set(copies) == sent_ok  # nothing lost
    assert any(len(c) > 1 for c in copies.values()), "a kill -9 before the first flush repeats re-puts"
    assert violations(run.run, run.events) == {}  # ... and the model allows exactly those


def test_graceful_restart_repeats_nothing(tmp_path):
    sends = [Send(i * 100, f"k{i}", delay_level=1) for i in range(30)]
    run = run_scenario(tmp_path, sends, [Fault(2500, "stop"), Fault(3500, "start")], levels=LEVELS)
    keys = [d["key"] for d in run.of_type("deliver")]
    sent_ok = [s["key"] for s in run.of_type("send") if s["status"] == "SEND_OK"]
    assert len(sent_ok) >= 20 and sorted(keys) == sorted(sent_ok)


def test_sends_to_a_stopped_broker_fail_and_to_a_paused_one_are_unknown(tmp_path):
    sends = [Send(1000, "down"), Send(3000, "paused")]
    faults = [Fault(500, "stop"), Fault(2000, "start"), Fault(2900, "pause"), Fault(9000, "resume")]
    run = run_scenario(tmp_path, sends, faults, levels=LEVELS, unknown_stored_rate=1.0)
    status = {s["key"]: s["status"] for s in run.of_type("send")}
    assert status == {"down": "FAILED", "paused": "UNKNOWN"}
    delivered = {d["key"]: d for d in run.of_type("deliver")}
    assert "down" not in delivered
    assert delivered["paused"]["store_ms"] >= max(f["ts_ms"] for f in run.of_type("fault") if f["action"] == "resume")
    assert violations(run.run, run.events) == {}  # recovered, within its widened window


def test_a_message_due_during_an_outage_comes_one_first_delay_after_ready(tmp_path):
    run = run_scenario(tmp_path, [Send(0, "k", delay_level=2)], [Fault(500, "kill"), Fault(5000, "start")], levels=LEVELS)
    ready = [f["ts_ms"] for f in run.of_type("fault") if f["action"] == "ready"][-1]
    (d,) = run.of_type("deliver")
    assert d["store_ms"] == ready + 1000


def test_timer_messages_come_at_their_rounded_deliver_time_and_too_far_is_refused(tmp_path):
    sends = [Send(0, "t", deliver_after_ms=4500), Send(10, "far", deliver_after_ms=4 * 24 * 3600 * 1000),
             Send(20, "lvl", delay_level=1, deliver_after_ms=60_000)]
    run = run_scenario(tmp_path, sends, levels=LEVELS)
    status = {s["key"]: s for s in run.of_type("send")}
    assert status["far"]["status"] == "FAILED"
    delivered = {d["key"]: d for d in run.of_type("deliver")}
    t = status["t"]["deliver_at_ms"]
    assert t - 1000 <= delivered["t"]["store_ms"] < t + 100
    assert delivered["lvl"]["store_ms"] - status["lvl"]["born_ms"] < 2000  # the level won
    assert violations(run.run, run.events) == {}


def test_send_back_failures_take_the_producer_then_the_local_path(tmp_path):
    sends = [Send(i * 10, f"k{i}", plan=("LATER", "OK")) for i in range(20)]
    run = run_scenario(tmp_path, sends, levels=LEVELS, send_back_failure_rate=0.5, seed=4)
    retries = [d for d in run.of_type("deliver") if d["reconsume_times"] == 1]
    assert len({d["key"] for d in retries}) == 20
    local = [d for d in retries if d["queue_topic"] == "T"]  # re-consumed locally: the same stored copy
    assert local, "with half the send-backs and re-sends failing some retries are local"
    assert violations(run.run, run.events) == {}
