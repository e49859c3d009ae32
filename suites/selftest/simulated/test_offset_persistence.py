"""OFFSET_PERSISTENCE on simulated runs that restart the broker: the snapshots the harness takes
around each stop and start (``delayOffset.json`` and the in-memory ``brokerStatus``) catch the
simulator's persistence defects even where no duplicate reached a consumer, and the clean
simulator keeps it."""

from __future__ import annotations

import pytest

from hourglass.harness.batch import BatchOptions, run_batch
from hourglass.harness.systems import SystemSpec
from hourglass.reports.check import check_runs
from hourglass.harness.scenario import FaultStep, Message, Scenario
from hourglass.harness.catalogue.chaos import _group, graceful_restart_while_due


def restart_after_a_flush() -> Scenario:
    """Level-10 messages (10 s in the chaos table) re-put from 10 s on; the first periodic persist at 10 s after the
    start; a graceful restart at 12.5 s: re-puts made after the persist must be persisted by the stop."""
    msgs = tuple(Message(f"F{i:03d}", "Flushed", at_ms=i * 100, delay_level=10) for i in range(40))
    faults = (FaultStep(at_ms=12_500, action="restart", duration_ms=2_000),)
    return Scenario("restart-after-a-flush", msgs, _group("flushed", "Flushed"), faults, description=restart_after_a_flush.__doc__)


def _verdict(tmp_path, spec: str, scenario) -> dict:
    results, errors = run_batch([scenario], BatchOptions(SystemSpec(spec), tmp_path / "runs", progress=False))
    assert not errors, errors
    (verdict,) = check_runs([r.run_dir for r in results], out_dir=tmp_path / "out")
    return verdict


@pytest.mark.parametrize("scenario", [graceful_restart_while_due, restart_after_a_flush])
def test_the_clean_simulator_keeps_its_offsets(tmp_path, scenario):
    v = _verdict(tmp_path, "simulated", scenario())
    entry = v["invariants"]["OFFSET_PERSISTENCE"]
    assert entry["checked"] > 0 and entry["passed"] is True, entry
    assert v["passed"] is True


def test_a_stale_persisted_offset_after_a_graceful_stop_is_caught(tmp_path):
    v = _verdict(tmp_path, "simulated[duplicate-after-graceful-restart]", restart_after_a_flush())
    entry = v["invariants"]["OFFSET_PERSISTENCE"]
    assert entry["passed"] is False, entry
    e = entry["examples"][0]
    assert "after the graceful stop, below the in-memory offset" in e["explanation"]
    assert "broker stop at" in e["explanation"] and e["level"] >= 1


def test_offsets_rewound_on_restart_are_caught(tmp_path):
    v = _verdict(tmp_path, "simulated[offsets-rewound-on-restart]", graceful_restart_while_due())
    entry = v["invariants"]["OFFSET_PERSISTENCE"]
    assert entry["passed"] is False, entry
    assert any("rewound" in e["explanation"] and "broker start at" in e["explanation"] for e in entry["examples"])
