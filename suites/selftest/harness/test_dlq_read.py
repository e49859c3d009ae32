"""The DLQ read at a run's end waits for the entries the model owes (reference.retry.dlq_bound) as
long as a correct broker may take to make its DLQ topic routable, and no longer; a DLQ the model
owes nothing, or one that holds what is owed, is read once."""

from __future__ import annotations

import threading
import time

import pytest

from hourglass.harness.runner import read_dlq_until_owed
from hourglass.reference.network import SEND_BACK_FAILS_AFTER_MS
from hourglass.reference.retry import DLQ_ROUTABLE_WITHIN_MS


class _Clock:
    """A system's clock; a simulator's is virtual: only ``sleep_until`` moves it."""

    def __init__(self):
        self.ms = 1_000_000

    def now_ms(self) -> int:
        return self.ms

    def sleep_until(self, ts_ms: int) -> None:
        self.ms = max(self.ms, ts_ms)


class _Broker:
    """A DLQ that has no route until ``routable_ms`` (it reads as empty before)."""

    def __init__(self, clock: _Clock, routable_ms: int | None):
        self.clock, self.routable_ms, self.reads = clock, routable_ms, 0

    def read_dlq(self, group: str) -> list[dict]:
        self.reads += 1
        if self.routable_ms is None or self.clock.ms < self.routable_ms:
            return []
        return [{"key": "k1", "group": group}, {"key": "k2", "group": group}]


def _read(monkeypatch, routable_ms, owed):
    clock = _Clock()
    monkeypatch.setattr(time, "sleep", lambda s: pytest.fail("waited on the wall clock, not the system's"))
    broker = _Broker(clock, routable_ms)
    records = read_dlq_until_owed(broker, clock, threading.Event(), "g", owed if owed is None else (owed, clock.ms - 1_000))
    return records, broker.reads, clock.ms - 1_000_000


def test_a_dlq_that_becomes_routable_late_is_read_again_until_it_holds_what_is_owed(monkeypatch):
    records, reads, waited = _read(monkeypatch, 1_000_000 + 9_000, {"k1", "k2"})
    assert {r["key"] for r in records} == {"k1", "k2"} and 9_000 <= waited < 11_000 and reads > 1


def test_a_dlq_that_never_holds_what_is_owed_is_given_up_on_when_a_correct_broker_would_have_routed_it(monkeypatch):
    records, reads, waited = _read(monkeypatch, None, {"k1"})
    assert records == [] and waited >= SEND_BACK_FAILS_AFTER_MS + DLQ_ROUTABLE_WITHIN_MS - 1_000
    assert waited < SEND_BACK_FAILS_AFTER_MS + DLQ_ROUTABLE_WITHIN_MS + 2_000


def test_a_dlq_owed_nothing_or_holding_what_is_owed_is_read_once(monkeypatch):
    assert _read(monkeypatch, None, None)[1:] == (1, 0)
    assert _read(monkeypatch, 0, {"k1"})[1:] == (1, 0)


def test_a_dlq_the_harness_could_not_read_makes_the_run_broken_not_a_loss(tmp_path, monkeypatch):
    """Found on 5.5.0 (its client refused the harness's DLQ reader, named after a 120-character
    group): the run was judged, and the entries it could not read were NO_LOSS and DLQ_ROUTING
    violations. An unread DLQ is the harness's blind spot: the run is broken, with why."""
    import json

    from hourglass.adapters.simulated.system import SimulatedSystem
    from hourglass.harness.scenario import ConsumerGroup, Message, Scenario
    from suites.selftest.harness.defect_runs import run_on_simulator

    def refuse(self, group):
        raise RuntimeError(f"the specified group[{group}] is longer than group max length")

    monkeypatch.setattr(SimulatedSystem, "read_dlq", refuse)
    sc = Scenario("dlq-unread", (Message("d", "T", plan=("LATER", "LATER")),),
                  (ConsumerGroup("cg-unread", ("T",), max_reconsume_times=1),))
    result = run_on_simulator(tmp_path, sc)
    run = json.loads((result.run_dir / "run.json").read_text())
    assert "reading the DLQ of cg-unread failed" in run["error"] and "group max length" in run["error"]
