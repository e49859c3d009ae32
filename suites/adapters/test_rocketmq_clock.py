"""The broker's wall clock stepped under libfaketime (adapters/rocketmq/brokerclock.py,
reference.clock), on real brokers: a step ahead and a step back while delayed messages wait pass
on 4.9.7 and the newest 5.x; on 4.9.2 (java.util.Timer) the step back stalls every level, which
ON_TIME catches. CI runs the step back on 4.9.7; the rest is nightly (about a minute of broker
time each). A drift (the broker launched with its monotonic clock drifting along, brokerclock)
fast and slow while delayed messages wait: CI runs the slow one on 4.9.7, the rest nightly."""

from __future__ import annotations

import pytest

from hourglass.harness.catalogue.chaos import clock_ahead_while_due, clock_back_while_due, clock_fast_while_due, clock_slow_while_due
from suites.adapters.conftest import run_and_check

pytestmark = pytest.mark.realbroker
SLOW = pytest.mark.slow


def _cases(ci, nightly) -> list:
    """Each scenario on 4.9.7 and the newest 5.x: ``ci`` on 4.9.7 in CI, the rest ``slow``."""
    return [pytest.param(system, s, id=f"{system.removeprefix('rocketmq:')}-{s.name}",
                         marks=() if (system, s) == ("rocketmq:4.9.7", ci) else SLOW)
            for system in ("rocketmq:4.9.7", "rocketmq:latest") for s in (ci, nightly)]


@pytest.mark.parametrize("system,scenario", _cases(clock_back_while_due(), clock_ahead_while_due()))
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


@SLOW  # nightly: CI keeps a stepped clock on 4.9.7 (the drift is the same fault's other mode)
@pytest.mark.parametrize("system,scenario", _cases(clock_slow_while_due(), clock_fast_while_due()))
def test_a_drifting_broker_clock_re_puts_on_its_own_clock(system, scenario, tmp_path):
    _, v, _, events = run_and_check(scenario, system, "process", tmp_path)
    assert v["passed"] is True, v
    moves = [e for e in events if e["type"] == "fault" and e["action"] == "clock"]
    drift = scenario.faults[0]
    reached = drift.rate_permille * drift.duration_ms // 1000
    # drifting from 0, back at the true rate near the offset reached, healed to 0
    assert [m.get("rate_permille") for m in moves] == [drift.rate_permille, 0, None]
    assert moves[0]["offset_ms"] == 0 and abs(moves[1]["offset_ms"] - reached) <= abs(reached) // 10
    assert moves[2]["offset_ms"] == 0
