"""The schedule service's asynchronous delivery (enableScheduleAsyncDeliver) on the simulator and in
the model: a graceful stop right after a re-put may repeat it (HandlePutResultTask had not taken
the completed put when the shutdown persisted), which the model allows in that mode only; a store
that refuses writes makes the level wait, never lose (reference.persistence.async_stop_duplicate)."""

from __future__ import annotations

import json

from hourglass.reports.judge_run import violations
from suites.selftest.simulated.driver import Fault, Send, run_scenario

#: y is re-put at 1002, 2 ms before the graceful stop: within one run of the handle task
SENDS = [Send(0, "x", delay_level=1), Send(2, "y", delay_level=1)]
STOP = [Fault(1004, "stop"), Fault(2000, "start")]


def _judged_as(run, events, async_deliver: bool) -> dict:
    other = json.loads(json.dumps(run))
    other["profile"]["schedule_async_deliver"] = async_deliver
    return violations(other, events)


def test_a_graceful_stop_right_after_an_asynchronous_reput_repeats_it_and_only_that_mode_allows_it(tmp_path):
    run = run_scenario(tmp_path, SENDS, STOP, levels="1s 2s 3s", schedule_async_deliver=True)
    copies = [d["store_ms"] - run.run["started_ms"] for d in run.of_type("deliver") if d["key"] == "y"]
    assert len(copies) == 2 and copies[0] == 1002  # re-put again after the restart
    assert violations(run.run, run.events) == {}
    assert "NO_DUPLICATE" in _judged_as(run.run, run.events, False)  # a synchronous broker persists it


def test_a_synchronous_broker_repeats_nothing_after_the_same_stop(tmp_path):
    run = run_scenario(tmp_path, SENDS, STOP, levels="1s 2s 3s")
    assert sorted(d["key"] for d in run.of_type("deliver")) == ["x", "y"]
    assert violations(run.run, run.events) == {}


def test_a_reput_long_before_the_stop_is_persisted_in_both_modes(tmp_path):
    run = run_scenario(tmp_path, SENDS, [Fault(1500, "stop"), Fault(2500, "start")], levels="1s 2s 3s",
                       schedule_async_deliver=True)
    assert sorted(d["key"] for d in run.of_type("deliver")) == ["x", "y"]


def test_a_store_refusing_writes_holds_the_asynchronous_level_back_without_loss(tmp_path):
    sends = [Send(i * 50, f"a{i}", delay_level=1 + i % 2) for i in range(20)]
    run = run_scenario(tmp_path, sends, [Fault(1000, "disk_full"), Fault(5000, "disk_free")], levels="1s 2s 3s",
                       schedule_async_deliver=True)
    assert violations(run.run, run.events) == {}
    assert {d["key"] for d in run.of_type("deliver")} == {s.key for s in sends}
    assert run.system.broker.schedule.failed_puts > 7  # resent with a growing pause while the store was full
