"""The simulator's consumers pull again after every restart, whatever was pending when they died:
a pull scheduled by an earlier incarnation (or by a resume while they were dead) is not theirs.
Found by the shipped state machine (harness.stateful): kill the consumers, send, pause and resume
them while dead, start them: the message on a queue whose owner had a pull pending was never
consumed."""

from __future__ import annotations

import json

import pytest

from adapters.base import BrokerProfile, ConsumerSpec, SendRequest
from adapters.simulated import open_simulated


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
