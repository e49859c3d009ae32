"""Stateful test of the simulated broker against the model (hypothesis RuleBasedStateMachine).

Hypothesis interleaves sends (levels, timers, plans), the passing of virtual time, and faults
(kill -9, graceful restart, pause of the broker; kill/pause of the consumers). After every step
the deliveries so far must keep the safety invariants (nothing early, nothing not sent, retries
in order, duplicates only where the model allows them); at the end, after a drain, every
invariant holds. Shrinking gives the shortest sequence of steps that breaks the broker: with a
defect injected (``DEFECTS``) the machine finds it.
"""

from __future__ import annotations

import json
import tempfile
import zlib
from pathlib import Path

import pytest

from hypothesis import Phase, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from adapters.base import BrokerProfile, ConsumerSpec, SendRequest
from adapters.simulated import open_simulated
from reports.judge_run import violations

LEVELS = "1s 2s 3s 4s 5s"
SAFETY = ("NOT_EARLY", "INTEGRITY", "RETRY_SCHEDULE", "NO_DUPLICATE", "LEVEL_ORDER")



class SimulatedBrokerMachine(RuleBasedStateMachine):
    DEFECTS: tuple[str, ...] = ()  # a subclass with a defect shows the machine catching it

    def __init__(self):
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="hg-stateful-"))
        self.system = open_simulated(BrokerProfile(LEVELS, 5000), defects=self.DEFECTS, seed=0)
        self.clock = self.system.clock
        self.events: list[dict] = []
        self.fault("start", "broker")
        self.system.setup()
        self.fault("ready", "broker")
        self.system.create_topic("T")
        self.system.start_consumer(ConsumerSpec("c0", "g", ("T",), 2, self.dir))
        self.system.start_consumer(ConsumerSpec("c1", "g", ("T",), 2, self.dir))
        self.sent = 0
        self.broker_down = self.broker_paused = self.consumers_down = self.consumers_paused = False
        self.run = {"run_id": "stateful", "profile": {"message_delay_level": LEVELS, "max_reconsume_times": 2,
                                                       "flush_delay_offset_interval_ms": 5000, "slack_ms": 3000}}

    def fault(self, action: str, target: str) -> None:
        self.events.append({"type": "fault", "ts_ms": self.clock.now_ms(), "action": action, "target": target})

    def deliveries(self) -> list[dict]:
        out = []
        for path in sorted(self.dir.glob("consumer-*.jsonl")):
            out += [json.loads(line) for line in path.read_text().splitlines()]
        return out

    def advance(self, duration_ms: int) -> None:
        end = self.clock.now_ms() + duration_ms
        while self.clock.now_ms() < end:
            self.clock.sleep_until(min(end, self.clock.now_ms() + 250))
            self.system.poll_consumers()

    # --- rules ------------------------------------------------------------------------------
    @rule(level=st.integers(0, 7), plan=st.lists(st.sampled_from(["OK", "LATER", "CRASH"]), max_size=4),
          timer_ms=st.one_of(st.none(), st.integers(-1000, 8000)))
    def send(self, level, plan, timer_ms):
        self.sent += 1
        key = f"k{self.sent}"
        body = key.encode()
        deliver_at = None if timer_ms is None else self.clock.now_ms() + timer_ms
        res = self.system.send(SendRequest("T", key, body, level, deliver_at, tuple(plan)))
        note(f"send {key} level={level} plan={plan} timer={timer_ms} -> {res.status}")
        ev = {"type": "send", "ts_ms": res.ts_ms, "key": key, "topic": "T", "delay_level": level, "status": res.status,
              "born_ms": res.born_ms, "msg_id": res.msg_id, "body_crc": zlib.crc32(body)}
        if plan:
            ev["plan"] = plan
        if deliver_at is not None:
            ev["deliver_at_ms"] = deliver_at
        self.events.append(ev)

    @rule(duration_ms=st.integers(1, 8000))
    def wait(self, duration_ms):
        self.advance(duration_ms)

    @precondition(lambda self: not self.broker_down and not self.broker_paused)
    @rule(action=st.sampled_from(["kill", "stop"]))
    def broker_goes_down(self, action):
        self.fault(action, "broker")
        getattr(self.system, action)("broker")
        self.broker_down = True

    @precondition(lambda self: self.broker_down)
    @rule()
    def broker_comes_back(self):
        self.fault("start", "broker")
        self.system.start("broker")
        self.system.wait_ready("broker")
        self.fault("ready", "broker")
        self.broker_down = False

    @precondition(lambda self: not self.broker_down)
    @rule()
    def broker_pause_toggle(self):
        action = "resume" if self.broker_paused else "pause"
        self.fault(action, "broker")
        getattr(self.system, action)("broker")
        self.broker_paused = not self.broker_paused

    @rule()
    def consumers_kill_toggle(self):
        action = "start" if self.consumers_down else "kill"
        self.fault(action, "consumer")
        getattr(self.system, action)("consumer")
        self.consumers_down = not self.consumers_down

    @rule()
    def consumers_pause_toggle(self):
        action = "resume" if self.consumers_paused else "pause"
        self.fault(action, "consumer")
        getattr(self.system, action)("consumer")
        self.consumers_paused = not self.consumers_paused

    # --- invariants -------------------------------------------------------------------------
    @invariant()
    def safety_holds_so_far(self):
        found = violations(self.run, self.events + self.deliveries())
        broken = {k: v for k, v in found.items() if k in SAFETY}
        assert not broken, broken

    def teardown(self):
        try:
            for action, flag, target in (("resume", self.broker_paused, "broker"), ("start", self.broker_down, "broker"),
                                         ("resume", self.consumers_paused, "consumer"), ("start", self.consumers_down, "consumer")):
                if flag:
                    self.fault(action, target)
                    getattr(self.system, action)(target)
                    if action == "start" and target == "broker":
                        self.system.wait_ready("broker")
                        self.fault("ready", "broker")
            self.advance(60_000)
            self.system.stop_consumers()
            now = self.clock.now_ms()
            dlq = [{"type": "dlq", "ts_ms": now, **r} for r in self.system.read_dlq("g")]
            found = violations(dict(self.run, ended_ms=now), self.events + dlq + self.deliveries())
            assert not found, found
        finally:
            self.system.teardown()


SimulatedBrokerMachine.TestCase.settings = settings(stateful_step_count=25)
TestSimulatedBroker = SimulatedBrokerMachine.TestCase


@pytest.mark.parametrize("defect,invariant", [("early-delivery", "NOT_EARLY"), ("wrong-retry-level", "NOT_EARLY"),
                                               ("lost-reput-on-write-failure", "NO_LOSS")])
def test_the_machine_finds_an_injected_defect(defect, invariant):
    """Generation only (shrinking a stateful failure takes minutes): the defect must be found."""
    machine = type("Broken", (SimulatedBrokerMachine,), {"DEFECTS": (defect,)})
    with pytest.raises((AssertionError, BaseExceptionGroup)) as e:
        run_state_machine_as_test(machine, settings=settings(stateful_step_count=25, max_examples=300, database=None,
                                                             phases=(Phase.explicit, Phase.generate)))
    assert invariant in str(e.value) or any(invariant in str(x) for x in getattr(e.value, "exceptions", ()))
