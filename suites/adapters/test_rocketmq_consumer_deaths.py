"""Consumer deaths against a real broker: recorded when they happen, one kill/start pair per death.

A consumer process that answers ``CRASH`` writes its own ``kill`` (``cause: died``) right after the
``CRASH`` delivery; one killed from outside (not by the harness) is recorded by the exit watch when
it notices (``cause: exited``, with the exit code); the restart writes the replacement's ``start``.
All of them land in the consumer's own events file.
"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from hourglass.adapters.base import ConsumerSpec
from hourglass.harness.runner import ScenarioRun
from hourglass.harness.scenario import ConsumerGroup, Message, Profile, Scenario
from hourglass.reference.rundir import EVENTS_DIR, consumer_events
from suites.adapters.conftest import PROFILE, process_first_runtimes, wait_for_events

pytestmark = pytest.mark.realbroker


@pytest.fixture(scope="module", params=process_first_runtimes())
def runtime_name(request) -> str:
    """The process runtime in CI; the container runtime (the same faults, another launcher) nightly."""
    return request.param


#: a death is recorded by the process that sees it, at once: a kill follows its cause by at most this
RECORDED_WITHIN_MS = 2_000


def _faults(events: list[dict], name: str) -> list[dict]:
    return [e for e in events if e["type"] == "fault" and e["target"] == "consumer" and e.get("name") == name]


def test_two_crash_answers_give_two_kill_start_pairs_at_the_crash_times(shared_system, names, tmp_path):
    topic, group = names["topic"], names["group"]
    msgs = (Message(f"{names['key']}-early", topic, at_ms=0, plan=("CRASH", "OK")),
            Message(f"{names['key']}-late", topic, at_ms=8_000, plan=("CRASH", "OK")))
    scenario = Scenario("consumer-crash-twice", msgs, (ConsumerGroup(group, (topic,)),),
                        profile=Profile(message_delay_level=PROFILE.message_delay_level), drain_margin_ms=1_000)
    started = time.monotonic()
    result = ScenarioRun(scenario, shared_system, tmp_path / "run", owns_consumers=True).execute()
    took_s = time.monotonic() - started
    assert result.error is None and result.drained, result
    name = f"{group}-0"
    path = tmp_path / "run" / EVENTS_DIR / consumer_events(name)
    own = [json.loads(line) for line in path.read_text().splitlines()]
    crashes = [e for e in own if e["type"] == "deliver" and e["outcome"] == "CRASH"]
    assert [c["key"] for c in crashes] == [m.key for m in msgs]
    faults = _faults(own, name)
    assert [(f["action"], f["cause"]) for f in faults] == [("kill", "died"), ("start", "died")] * 2, faults
    for crash, kill, start in zip(crashes, faults[0::2], faults[1::2]):
        assert 0 <= kill["ts_ms"] - crash["ts_ms"] <= RECORDED_WITHIN_MS, (crash, kill)
        assert start["ts_ms"] >= kill["ts_ms"] and start["group"] == group
        assert own.index(kill) == own.index(crash) + 1, "nothing is delivered to a consumer after its death"
    assert faults[1]["ts_ms"] < crashes[1]["ts_ms"], "the first replacement started before the second crash"
    print(f"two crashes 8 s apart: run took {took_s:.1f} s; kill lag "
          f"{[k['ts_ms'] - c['ts_ms'] for c, k in zip(crashes, faults[0::2])]} ms")


def test_a_consumer_killed_from_outside_is_recorded_by_the_exit_watch(shared_system, names, tmp_path):
    shared_system.create_topic(names["topic"])
    name = names["consumer"]
    shared_system.start_consumer(ConsumerSpec(name, names["group"], (names["topic"],), 16, tmp_path))
    path = tmp_path / consumer_events(name)
    try:
        killed_ms = time.time_ns() // 1_000_000
        os.kill(shared_system.consumers[name].proc.pid, signal.SIGKILL)  # not the harness's kill: the OS's
        events = wait_for_events(path, lambda ev: _faults(ev, name), 10, what="the exit watch's kill")
        (kill,) = _faults(events, name)
        assert (kill["action"], kill["cause"], kill["exit_code"]) == ("kill", "exited", -signal.SIGKILL)
        assert 0 <= kill["ts_ms"] - killed_ms <= RECORDED_WITHIN_MS, kill
        assert shared_system.poll_consumers() == [name]
        faults = _faults(wait_for_events(path, lambda ev: True, 1), name)
        assert [(f["action"], f["cause"]) for f in faults] == [("kill", "exited"), ("start", "exited")]
        assert shared_system.consumers[name].alive() and shared_system.poll_consumers() == []
    finally:
        shared_system.stop_consumers()
    assert len(_faults(wait_for_events(path, lambda ev: True, 1), name)) == 2, "a stop the harness asked for is no death"
