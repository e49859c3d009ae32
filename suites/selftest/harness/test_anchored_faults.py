"""Fault steps timed from what the broker did (``after``), ``slow_start``, and the snapshots
around every stop — on the simulated broker, in virtual time.

Tolerance: an anchored step fires when the runner observes its anchor. A ``ready`` is the runner's
own event (exact); a flush is seen by polling every ``ANCHOR_POLL_MS``; a re-put when its delivery
arrives (the simulated consumer pulls ``PULL_LATENCY_MS`` after the store) and the runner's next
look at the events files (``ANCHOR_POLL_MS``).
"""

from __future__ import annotations

import json
from dataclasses import replace

from hourglass.adapters.simulated import DEFAULT_START_MS
from hourglass.adapters.simulated.broker import STARTUP_MS
from hourglass.adapters.simulated.consumers import PULL_LATENCY_MS
from hourglass.adapters.rundir import read_events
from hourglass.harness.anchors import ANCHOR_POLL_MS
from hourglass.harness.batch import BatchOptions, run_batch
from hourglass.harness.scenario import COMPRESSED_LEVELS, ConsumerGroup, FaultAnchor, FaultStep, Message, Profile, Scenario
from hourglass.harness.systems import SystemSpec
from hourglass.reference.profile import FIRST_FLUSH_DELAY_MS
from hourglass.reference.rundir import EVENTS_DIR, RUN_JSON

REPUT_TOLERANCE_MS = PULL_LATENCY_MS[1] + ANCHOR_POLL_MS
FLUSH_TOLERANCE_MS = ANCHOR_POLL_MS


def _events(run_dir) -> list[dict]:
    return read_events(run_dir / EVENTS_DIR)  # every events file of the run


def _harness_events(run_dir) -> list[dict]:
    return [json.loads(line) for line in (run_dir / EVENTS_DIR / "harness.jsonl").read_text().splitlines() if line.strip()]


def _broker_faults(events) -> list[dict]:
    return [e for e in events if e["type"] == "fault" and e["target"] == "broker"]


def _run(tmp_path, scenario: Scenario):
    (res,), errors = run_batch([scenario], BatchOptions(SystemSpec("simulated"), tmp_path, progress=False))
    assert not errors, errors
    return res


def _level3_scenario(shift_ms: int) -> Scenario:
    msgs = tuple(Message(f"l3-{i}", "T", at_ms=shift_ms + 300 * i, delay_level=3) for i in range(4))
    msgs += tuple(Message(f"l1-{i}", "T", at_ms=shift_ms + 250 + 300 * i, delay_level=1) for i in range(4))
    kill = FaultStep(0, "kill_restart", "broker", 1000, after=FaultAnchor("reput", level=3, count=2))
    return Scenario(f"reput-anchor-{shift_ms}", msgs, (ConsumerGroup("g", ("T",)),), (kill,),
                    Profile(message_delay_level=COMPRESSED_LEVELS))


def test_a_kill_after_the_second_reput_of_a_level_fires_at_that_reput_wherever_the_sends_are(tmp_path):
    offsets = {}
    for shift in (0, 5_000, 20_000):
        res = _run(tmp_path / str(shift), _level3_scenario(shift))
        events = _events(res.run_dir)
        firsts = sorted((e["store_ms"], e["key"]) for e in events
                        if e["type"] == "deliver" and e["reconsume_times"] == 0 and e["key"].startswith("l3-"))
        second_store_ms = firsts[1][0]
        kill = next(e for e in _broker_faults(events) if e["action"] == "kill")
        assert kill["step"] == 0 and kill["anchor_event_ms"] == second_store_ms, (kill, firsts)
        assert kill["anchor"].startswith(f"reput level 3 #2 at {second_store_ms}"), kill
        offsets[shift] = kill["ts_ms"] - second_store_ms
        assert 0 <= offsets[shift] <= REPUT_TOLERANCE_MS, (shift, offsets)
        start = next(e for e in _broker_faults(events) if e["action"] == "start" and "step" in e)
        assert start["ts_ms"] == second_store_ms + 1000 and start["step"] == 0  # the restart, timed from the anchor too
    # the same state whatever the absolute time: the kill's offset from its anchor does not move
    assert max(offsets.values()) - min(offsets.values()) <= ANCHOR_POLL_MS, offsets


def test_a_second_restart_timed_from_the_ready_comes_before_the_next_flush(tmp_path):
    msgs = tuple(Message(f"k{i}", "T", at_ms=200 * i, delay_level=1 + i % 3) for i in range(6))
    steps = (FaultStep(0, "restart", "broker", 800, after=FaultAnchor("reput", level=1)),
             FaultStep(500, "restart", "broker", 800, after=FaultAnchor("ready")))
    res = _run(tmp_path, Scenario("ready-chain", msgs, (ConsumerGroup("g", ("T",)),), steps))
    faults = [e for e in _broker_faults(_harness_events(res.run_dir)) if "step" in e]
    assert [(f["step"], f["action"]) for f in faults] == [  # a graceful stop ends when the process exited
        (0, "stop"), (0, "stopped"), (0, "start"), (0, "ready"), (1, "stop"), (1, "stopped"), (1, "start"), (1, "ready")], faults
    first_ready, second_stop = faults[3], faults[4]
    assert second_stop["ts_ms"] == first_ready["ts_ms"] + 500
    assert second_stop["anchor"] == f"ready #1 at {first_ready['ts_ms']}"
    assert second_stop["anchor_event_ms"] == first_ready["ts_ms"]
    assert second_stop["ts_ms"] < first_ready["ts_ms"] + FIRST_FLUSH_DELAY_MS, "before the restarted broker's first flush"


def test_a_kill_timed_from_a_flush_fires_right_after_the_persist_with_snapshots_around_it(tmp_path):
    msgs = (Message("k0", "T", delay_level=2), Message("k1", "T", at_ms=3000, delay_level=5))
    kill = FaultStep(0, "kill_restart", "broker", 1000, after=FaultAnchor("flush", count=2))
    sc = Scenario("flush-anchor", msgs, (ConsumerGroup("g", ("T",)),), (kill,),
                  Profile(flush_delay_offset_interval_ms=2000))
    res = _run(tmp_path, sc)
    events = _harness_events(res.run_dir)
    ready_ms = DEFAULT_START_MS + STARTUP_MS  # the system's setup: the schedule service starts then
    second_flush_ms = ready_ms + FIRST_FLUSH_DELAY_MS + 2000
    i = next(n for n, e in enumerate(events) if e["type"] == "fault" and e["action"] == "kill")
    k = events[i]
    assert k["anchor_event_ms"] == second_flush_ms and k["anchor"] == f"flush #2 at {second_flush_ms}", k
    assert 0 <= k["ts_ms"] - second_flush_ms <= FLUSH_TOLERANCE_MS, k
    before = [e for e in events[:i] if e["type"] == "snapshot"][-2:]
    assert [(s["moment"], s["source"]) for s in before] == [
        ("before_stop", "delayOffset.json"), ("before_stop", "brokerStatus")], before
    after = events[i + 1]
    assert (after["type"], after["moment"], after["source"]) == ("snapshot", "after_stop", "delayOffset.json"), after
    moments = [e["moment"] for e in events if e["type"] == "snapshot"]
    assert moments[0] == "run_start" and moments[-1] == "run_end" and "after_ready" in moments, moments


def test_an_anchor_that_never_comes_ends_the_run_healed_and_broken(tmp_path):
    from hourglass.harness.session import batch_verdicts
    from hourglass.reports.verdict import BROKEN, status

    msgs = (Message("only-one", "T", delay_level=2), Message("plain", "T", at_ms=500))
    step = FaultStep(0, "kill", "broker", after=FaultAnchor("reput", level=2, count=3))
    sc = Scenario("never-comes", msgs, (ConsumerGroup("g", ("T",)),), (step,))
    (res,), errors = run_batch([sc], BatchOptions(SystemSpec("simulated"), tmp_path, progress=False))
    assert not errors, errors
    assert res.error and "fault step 0" in res.error and "never came" in res.error, res.error
    assert "1 of 3 seen" in res.error, res.error
    run = json.loads((res.run_dir / RUN_JSON).read_text())
    assert run["error"] == res.error and run["ended_ms"] > 0
    assert not [e for e in _broker_faults(_harness_events(res.run_dir)) if e["action"] == "kill"], "the step never fired"
    verdict = batch_verdicts([sc], [res], errors, None, None)[sc.name]
    assert status(verdict) == BROKEN and "never came" in verdict["broken"], verdict


def test_slow_start_starts_pauses_resumes_and_is_ready_after_the_pause(tmp_path):
    msgs = (Message("before", "T", delay_level=1), Message("during", "T", at_ms=3000, delay_level=1),
            Message("after", "T", at_ms=12_000, delay_level=1))
    steps = (FaultStep(1000, "stop", "broker"), FaultStep(2000, "slow_start", "broker", 5000))
    res = _run(tmp_path, Scenario("slow-start", msgs, (ConsumerGroup("g", ("T",)),), steps))
    faults = [e for e in _broker_faults(_harness_events(res.run_dir)) if e.get("step") == 1]
    assert [f["action"] for f in faults] == ["start", "pause", "resume", "ready"], faults
    start, pause, resume, ready = (f["ts_ms"] for f in faults)
    t0 = start - 2000
    assert pause == start and resume == t0 + 7000
    assert ready == resume + STARTUP_MS, "the start completes when the pause is over, not before"
    events = _events(res.run_dir)
    sends = {e["key"]: e for e in events if e["type"] == "send"}
    assert sends["during"]["status"] == "FAILED", "nothing is served while the start is paused"
    assert {e["key"] for e in events if e["type"] == "deliver"} >= {"before", "after"}, "the broker works after it"


def test_a_flush_anchor_is_skipped_on_a_system_that_cannot_tell_its_flushes():
    from hourglass.harness.runner import skip_reason

    class Blind:  # a System without OffsetFlushWatching, as the external runtime
        info = replace(__import__("hourglass.adapters.base", fromlist=["SystemInfo"]).SystemInfo("rocketmq", "4.9.7", "external"))

        def cannot(self, action, target):
            return None

    sc = Scenario("flush", (Message("k", "T", delay_level=1),), (ConsumerGroup("g", ("T",)),),
                  (FaultStep(0, "kill", after=FaultAnchor("flush")),))
    why = skip_reason(sc, Blind())
    assert why and "external runtime" in why and "fault step 0" in why, why
    assert skip_reason(replace(sc, faults=(FaultStep(0, "kill", after=FaultAnchor("ready")),)), Blind()) is None
