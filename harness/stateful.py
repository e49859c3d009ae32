"""A stateful test of any broker against the model (a hypothesis ``RuleBasedStateMachine``), shipped
so a third-party implementation can run it on its own system (the shape of zarr's
``testing/stateful.py``)::

    from hypothesis.stateful import run_state_machine_as_test
    from hourglass.harness.stateful import BrokerMachine

    def test_my_broker():
        run_state_machine_as_test(lambda: BrokerMachine(open_my_system))

``open_system(profile)`` gives a system not set up yet (:class:`adapters.base.System` that
consumes, reads its DLQ and takes the fault verbs ``kill``/``stop``/``start``/``pause``/``resume``
on the targets ``broker`` and ``consumer``); its clock may be virtual (the simulator) or real.
The shipped checker judges the events (``reports.judge_run.violations``, without Spark); another
``violations(run, events) -> {invariant: [what broke it]}`` may be given.

Hypothesis interleaves sends (levels, timers, plans), the passing of time, and faults (kill -9,
graceful restart, pause of the broker; kill/pause of the consumers). After every step the
deliveries so far must keep the safety invariants (nothing early, nothing not sent, retries in
order, duplicates only where the model allows them); at the end, after a drain, every invariant
holds. Shrinking gives the shortest sequence of steps that breaks the broker.
"""

from __future__ import annotations

import json
import tempfile
import zlib
from pathlib import Path
from typing import Callable

from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from hourglass.adapters.base import BrokerProfile, ConsumerSpec, SendRequest, System
from hourglass.reports import judge_run

#: the machine's delay table (short levels: many of them pass within a run of steps)
LEVELS = "1s 2s 3s 4s 5s"
FLUSH_INTERVAL_MS = 5000
#: what must hold after every step (the others only once the run drained)
SAFETY = ("NOT_EARLY", "INTEGRITY", "RETRY_SCHEDULE", "NO_DUPLICATE", "LEVEL_ORDER")
#: how long the machine lets the system drain before the final judgement
DRAIN_MS = 60_000
#: how often it has dead consumers restarted while time passes
POLL_MS = 250

Judge = Callable[[dict, list[dict]], dict[str, list]]


def judge(violations: Judge, run: dict, events: list[dict], only: tuple[str, ...] | None = None) -> dict[str, list]:
    """The one judging call of the machine: the invariants ``events`` break (``only`` these)."""
    found = violations(run, events)
    return {k: v for k, v in found.items() if v and (only is None or k in only)}


class BrokerMachine(RuleBasedStateMachine):
    """One system from ``open_system`` (given the machine's :class:`BrokerProfile`), a topic, one
    group of two consumers, and the rules below; ``violations`` judges the events."""

    def __init__(self, open_system: Callable[[BrokerProfile], System], violations: Judge = judge_run.violations):
        super().__init__()
        self.violations = violations
        self.dir = Path(tempfile.mkdtemp(prefix="hg-stateful-"))
        self.system = open_system(BrokerProfile(LEVELS, FLUSH_INTERVAL_MS))
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
                                                       "flush_delay_offset_interval_ms": FLUSH_INTERVAL_MS, "slack_ms": 3000}}

    def fault(self, action: str, target: str) -> None:
        if hasattr(self, "run"):  # the set-up's start and ready come before any step
            note(f"{action} {target} at {self.clock.now_ms()}")
        self.events.append({"type": "fault", "ts_ms": self.clock.now_ms(), "action": action, "target": target})

    def deliveries(self) -> list[dict]:
        out = []
        for path in sorted(self.dir.glob("consumer-*.jsonl")):
            out += [json.loads(line) for line in path.read_text().splitlines()]
        return out

    def advance(self, duration_ms: int) -> None:
        end = self.clock.now_ms() + duration_ms
        while self.clock.now_ms() < end:
            self.clock.sleep_until(min(end, self.clock.now_ms() + POLL_MS))
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
        broken = judge(self.violations, self.run, self.events + self.deliveries(), SAFETY)
        assert not broken, broken

    def teardown(self):
        try:
            self.heal()
            self.advance(DRAIN_MS)
            self.system.stop_consumers()
            now = self.clock.now_ms()
            dlq = [{"type": "dlq", "ts_ms": now, **r} for r in self.system.read_dlq("g")]
            found = judge(self.violations, dict(self.run, ended_ms=now), self.events + dlq + self.deliveries())
            assert not found, found
        finally:
            self.system.teardown()

    def heal(self) -> None:
        """Every fault undone: the broker resumed or started, the consumers resumed or started."""
        for action, flag, target in (("resume", self.broker_paused, "broker"), ("start", self.broker_down, "broker"),
                                     ("resume", self.consumers_paused, "consumer"), ("start", self.consumers_down, "consumer")):
            if flag:
                self.fault(action, target)
                getattr(self.system, action)(target)
                if action == "start" and target == "broker":
                    self.system.wait_ready("broker")
                    self.fault("ready", "broker")
