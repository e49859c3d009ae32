"""The simulator's consumers pull again after every restart, whatever was pending when they died:
a pull scheduled by an earlier incarnation (or by a resume while they were dead) is not theirs.
Found by the shipped state machine (harness.stateful): kill the consumers, send, pause and resume
them while dead, start them: the message on a queue whose owner had a pull pending was never
consumed."""

from __future__ import annotations

import json

import pytest

from hourglass.adapters.base import BrokerProfile, ConsumerSpec, SendRequest
from hourglass.adapters.simulated import open_simulated


@pytest.mark.parametrize("between", [(), ("pause", "resume"), ("start", "kill")])
def test_restarted_consumers_consume_what_was_sent_while_they_were_dead(tmp_path, between):
    system = open_simulated(BrokerProfile("1s 2s"), seed=0)
    system.setup()
    try:
        system.create_topic("T")
        for name in ("c0", "c1"):
            system.start_consumer(ConsumerSpec(name, "g", ("T",), 2, tmp_path))
        system.kill("consumer")
        for key in ("k1", "k2", "k3", "k4"):
            system.send(SendRequest("T", key, key.encode()))
        for action in between:
            getattr(system, action)("consumer")
        system.start("consumer")
        system.clock.sleep_until(system.clock.now_ms() + 10_000)
        delivered = {json.loads(line).get("key") for f in tmp_path.glob("consumer-*.jsonl")
                     for line in f.read_text().splitlines()}
        assert {"k1", "k2", "k3", "k4"} <= delivered
    finally:
        system.teardown()


def test_a_batch_consumer_restarted_after_a_crash_answers_what_its_ack_index_sent_back_ok(tmp_path):
    """Found by the generator: g001, sent back unasked by a batch's ack index, came again in the
    batch a crash made the restarted consumer redeliver; answering it from its plan forked a second
    retry chain (two DLQ entries). A message sent back unasked is settled (reference.plans.sent_back_unasked)."""
    from hourglass.reports.judge_run import violations
    from suites.selftest.simulated.driver import Send, run_scenario

    sends = [Send(0, "g000", plan=("LATER",) * 3), Send(0, "g001", plan=("LATER",) * 3),
             Send(0, "g002", delay_level=1, plan=("LATER", "CRASH", "OK"))]
    run = run_scenario(tmp_path, sends, levels="1s 2s 3s 4s 5s 6s", max_reconsume_times=2, flush_ms=1000, batch_size=4)
    assert violations(run.run, run.events) == {}
    assert sorted(d["key"] for d in run.of_type("dlq")) == ["g000", "g001"]
