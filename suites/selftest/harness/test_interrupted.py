"""A run whose harness was stopped is undecided, never a broker violation.

What a SIGKILL of the harness leaves behind is exactly: ``run.json`` as written at the start (no
end) and every event flushed up to the kill. The simulated broker runs in virtual time (a run takes
milliseconds), so these tests make that state by cutting a finished run at a moment T; the real
broker test (``suites/adapters/test_harness_interrupted.py``) kills a real harness process.
"""

from __future__ import annotations

import json
from pathlib import Path

from hourglass.harness.batch import BatchOptions, run_batch
from hourglass.harness.scenario import ConsumerGroup, Message, Scenario
from hourglass.harness.systems import SystemSpec
from hourglass.reports.cli import main as check_main

#: 6 messages due at 1 s and 6 due at 10 s (compressed table): a cut at 5 s leaves half undelivered.
SCENARIO = Scenario(
    "interrupt-probe",
    tuple(Message(f"fast{i}", "Intr", at_ms=i * 100, delay_level=1) for i in range(6))
    + tuple(Message(f"slow{i}", "Intr", at_ms=i * 100, delay_level=10) for i in range(6)),
    (ConsumerGroup("cg-intr", ("Intr",)),),
)
CUT_AFTER_MS = 5_000


def _run(tmp_path: Path, system: str) -> Path:
    results, errors = run_batch([SCENARIO], BatchOptions(SystemSpec(system), tmp_path / "runs", progress=False))
    assert not errors, errors
    return results[0].run_dir


def _as_if_killed(run_dir: Path, cut_after_ms: int, keep_end: bool = False) -> None:
    """``run_dir`` as a SIGKILL at ``started_ms + cut_after_ms`` would have left it."""
    run = json.loads((run_dir / "run.json").read_text())
    cut = run["started_ms"] + cut_after_ms
    for key in ("drained", "pending", "error", "interrupted", "last_observed_ms"):
        run.pop(key, None)
    if not keep_end:
        run["ended_ms"] = 0
    (run_dir / "run.json").write_text(json.dumps(run))
    for f in (run_dir / "events").glob("*.jsonl"):
        lines = [ln for ln in f.read_text().splitlines() if json.loads(ln)["ts_ms"] <= cut]
        f.write_text("".join(ln + "\n" for ln in lines))


def _verdict(out: Path) -> dict:
    return json.loads(next(out.glob("*/verdict.json")).read_text())


def test_a_killed_harness_run_is_undecided_not_lost(tmp_path, capsys):
    run_dir = _run(tmp_path, "simulated")
    _as_if_killed(run_dir, CUT_AFTER_MS)
    out = tmp_path / "out"
    assert check_main(["check", str(run_dir), "--out", str(out)]) == 2
    v = _verdict(out)
    assert v["passed"] is None and v["interrupted"]
    assert v["invariants"]["NO_LOSS"]["passed"] is not False
    assert v["invariants"]["NO_LOSS"]["violations"] == 0
    assert "4611686018427387904" not in json.dumps(v)
    assert "interrupted" in (out / v["run_id"] / "report.html").read_text()


def test_the_same_cut_with_a_real_end_is_a_loss(tmp_path):
    """Control: the cut run, had the harness ended it normally, loses the slow messages — so the
    undecided verdict above comes from the missing end, not from the cut."""
    run_dir = _run(tmp_path, "simulated")
    _as_if_killed(run_dir, CUT_AFTER_MS, keep_end=True)
    out = tmp_path / "out"
    assert check_main(["check", str(run_dir), "--out", str(out)]) == 1
    assert _verdict(out)["invariants"]["NO_LOSS"]["passed"] is False


def test_a_violation_seen_before_the_kill_still_fails(tmp_path):
    run_dir = _run(tmp_path, "simulated[early-delivery]")
    _as_if_killed(run_dir, CUT_AFTER_MS)
    out = tmp_path / "out"
    assert check_main(["check", str(run_dir), "--out", str(out)]) == 1
    v = _verdict(out)
    assert v["invariants"]["NOT_EARLY"]["passed"] is False
    assert v["invariants"]["NO_LOSS"]["violations"] == 0


def test_a_run_recorded_as_interrupted_is_undecided(tmp_path):
    """The runner's finally path (SIGINT/SIGTERM) writes ``interrupted`` and ``last_observed_ms``
    beside a real ``ended_ms``: the checker trusts the record, not the end."""
    run_dir = _run(tmp_path, "simulated")
    _as_if_killed(run_dir, CUT_AFTER_MS, keep_end=True)
    run = json.loads((run_dir / "run.json").read_text())
    run["interrupted"] = "the run was stopped before it ended (Interrupted: signal SIGTERM)"
    run["last_observed_ms"] = run["started_ms"] + CUT_AFTER_MS
    (run_dir / "run.json").write_text(json.dumps(run))
    out = tmp_path / "out"
    assert check_main(["check", str(run_dir), "--out", str(out)]) == 2
    assert "SIGTERM" in _verdict(out)["interrupted"]


def test_a_cancelled_run_never_says_drained(tmp_path):
    """run.json of a run stopped before its drain: ``interrupted``, and ``drained: false``."""
    import threading

    import pytest

    from hourglass.adapters.simulated import open_simulated
    from hourglass.harness.runner import Cancelled, ScenarioRun
    from hourglass.harness.systems import broker_profile

    cancel = threading.Event()
    cancel.set()
    system = open_simulated(broker_profile(SCENARIO.profile), seed=1)
    system.setup()
    try:
        with pytest.raises(Cancelled):
            ScenarioRun(SCENARIO, system, tmp_path / "run", cancel=cancel).execute()
    finally:
        system.teardown()
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["interrupted"] and run["drained"] is False
