"""Two harnesses never write into each other's runs: run ids do not collide (the time to the
millisecond and the harness's pid), and one harness at a time writes an ``--out`` tree (the second
fails at once with exit 3, naming the directory and the holder's pid).

Before, run ids had one-second resolution and nothing locked ``--out``: two harnesses started in
the same second on one ``--out`` wrote their runs into the same directories, and the checker blamed
the broker's "duplicate send key".
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from hourglass.harness.batch import BatchOptions, run_batch
from hourglass.harness.scenario import ConsumerGroup, Message, Scenario
from hourglass.harness.systems import SystemSpec
from hourglass.reports.verdict import BROKEN, EXIT_CODES

ROOT = Path(__file__).resolve().parents[3]
SCENARIO = Scenario("out-probe", (Message("k1", "Out", at_ms=0, delay_level=1),), (ConsumerGroup("cg-out", ("Out",)),))


def test_batches_started_in_the_same_second_keep_their_runs_apart(tmp_path):
    out = tmp_path / "runs"
    for _ in range(5):  # until two batches start within one second (a simulated batch takes milliseconds)
        first_at = time.time()
        (first,), _ = run_batch([SCENARIO], BatchOptions(SystemSpec("simulated"), out, progress=False))
        second_at = time.time()
        (second,), _ = run_batch([SCENARIO], BatchOptions(SystemSpec("simulated"), out, progress=False))
        if int(first_at) == int(second_at):
            break
    assert first.run_id != second.run_id and first.run_dir != second.run_dir
    for r in (first, second):
        sends = [ln for ln in (r.run_dir / "events" / "harness.jsonl").read_text().splitlines() if '"send"' in ln]
        assert len(sends) == 1, (r.run_dir, sends)


def _harness(out: Path, tmp_path: Path, name: str) -> tuple[subprocess.Popen, Path]:
    err = tmp_path / f"{name}.stderr"
    with err.open("wb") as f:
        proc = subprocess.Popen([sys.executable, "-m", "hourglass", "run", "--suite", "conformance", "--scenario-name",
                                 "level-zero", "--system", "simulated", "--out", str(out)],
                                cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=f)
    return proc, err


def test_a_second_harness_on_the_same_out_fails_at_once_naming_the_holder(tmp_path):
    out = tmp_path / "out"
    first, first_err = _harness(out, tmp_path, "first")
    try:
        deadline = time.monotonic() + 300
        while not list(out.glob("*/run.json")):  # the first has its run going (its checker then takes seconds)
            assert first.poll() is None, first_err.read_text()
            assert time.monotonic() < deadline, "the first harness made no run"
            time.sleep(0.05)
        second, second_err = _harness(out, tmp_path, "second")
        assert second.wait(timeout=300) == EXIT_CODES[BROKEN]
        assert first.poll() is None, "the second harness came too late to prove anything"
        message = second_err.read_text()
        assert f"--out: expected a directory no other harness is writing, found '{out.resolve()} " in message
        assert f"held by the harness with pid {first.pid}" in message
        assert first.wait(timeout=900) == 0, first_err.read_text()
    finally:
        if first.poll() is None:
            first.kill()
    runs = list(out.glob("*/run.json"))
    assert len(runs) == 1  # the first harness's run alone, judged passed
