"""The broker's wall clock stepped under libfaketime (adapters/rocketmq/brokerclock.py,
reference.clock), on real brokers: a step ahead and a step back while delayed messages wait pass
on 4.9.7 and the newest 5.x; on 4.9.2 (java.util.Timer) the step back stalls every level, which
ON_TIME catches. CI runs the step back on 4.9.7; the rest is nightly (about a minute of broker
time each)."""

from __future__ import annotations

import pytest

from harness.catalogue.chaos import clock_ahead_while_due, clock_back_while_due
from suites.adapters.conftest import run_and_check

pytestmark = pytest.mark.realbroker
SLOW = pytest.mark.slow


@pytest.mark.parametrize("system,scenario", [
    pytest.param("rocketmq:4.9.7", clock_back_while_due(), id="4.9.7-clock-back-while-due"),
    pytest.param("rocketmq:4.9.7", clock_ahead_while_due(), id="4.9.7-clock-ahead-while-due", marks=SLOW),
    pytest.param("rocketmq:latest", clock_back_while_due(), id="latest-clock-back-while-due", marks=SLOW),
    pytest.param("rocketmq:latest", clock_ahead_while_due(), id="latest-clock-ahead-while-due", marks=SLOW),
])
def test_a_stepped_broker_clock_delays_or_hastens_within_the_model(system, scenario, tmp_path):
    _, v, _, events = run_and_check(scenario, system, "process", tmp_path)
    assert v["passed"] is True, v
    steps = [e for e in events if e["type"] == "fault" and e["action"] == "clock"]
    assert [s["offset_ms"] for s in steps] == [scenario.faults[0].offset_ms, 0]  # stepped, then healed


@SLOW
def test_the_timer_of_4_9_2_stalls_every_level_after_a_step_back(tmp_path):
    _, v, _, _ = run_and_check(clock_back_while_due(), "rocketmq:4.9.2", "process", tmp_path)
    assert v["invariants"]["ON_TIME"]["passed"] is False, v
    late = [e["key"] for e in v["invariants"]["ON_TIME"]["examples"]]
    assert late and all(k.startswith("CL") for k in late)  # the messages sent after the step
