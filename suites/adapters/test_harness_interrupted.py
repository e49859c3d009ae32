"""A real harness process stopped mid-run (SIGKILL as an OOM killer or CI timeout does it; SIGTERM as
``timeout`` does it): the run checks as undecided, never as a broker that lost messages, and
nothing it started is left running once cleaned up.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hourglass.adapters.rocketmq.process import remove_leftover_processes
from hourglass.harness.scenario import ConsumerGroup, Message, Scenario
from hourglass.reports.cli import main as check_main

pytestmark = [pytest.mark.realbroker]

ROOT = Path(__file__).resolve().parents[2]
SYSTEM = os.environ.get("HOURGLASS_INTERRUPT_SYSTEM", "rocketmq:4.9.7")
#: 4 messages due after 1 s, 4 after 10 s: stopped at the first delivery, half are still waiting.
SCENARIO = Scenario(
    "interrupt-real",
    tuple(Message(f"fast{i}", "IntrReal", at_ms=i * 100, delay_level=1) for i in range(4))
    + tuple(Message(f"slow{i}", "IntrReal", at_ms=i * 100, delay_level=10) for i in range(4)),
    (ConsumerGroup("cg-intr-real", ("IntrReal",)),),
)


def _first_delivery(out: Path, proc: subprocess.Popen, timeout_s: float = 240) -> Path:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for f in out.glob("*/events/consumer-*.jsonl"):
            if '"type":"deliver"' in f.read_text(errors="replace"):
                return f.parent.parent
        assert proc.poll() is None, f"the harness ended before any delivery (exit {proc.returncode})"
        time.sleep(0.2)
    raise AssertionError("no delivery within the timeout")


def _left_behind(out: Path) -> list[str]:
    """Processes whose command line or environment points into ``out`` (brokers, consumers)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            blob = Path(f"/proc/{entry}/cmdline").read_bytes() + Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if str(out).encode() in blob:
            found.append(entry)
    return found


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_stopped_harness_run_checks_as_undecided(tmp_path, sig):
    scenario_file = tmp_path / "scenario.json"
    SCENARIO.save(scenario_file)
    out = tmp_path / "out"
    log = open(tmp_path / "harness.log", "wb")
    proc = subprocess.Popen([sys.executable, "-m", "hourglass", "run", "--scenario", str(scenario_file), "--system", SYSTEM,
                             "--runtime", "process", "--out", str(out)], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        run_dir = _first_delivery(out, proc)
        proc.send_signal(sig)  # the harness alone, as an OOM kill or `timeout` does
        code = proc.wait(timeout=120)
        run = json.loads((run_dir / "run.json").read_text())
        if sig == signal.SIGTERM:
            assert code == 3, (tmp_path / "harness.log").read_text()[-3000:]
            assert "SIGTERM" in run["interrupted"] and run["last_observed_ms"] > run["started_ms"]
            deadline = time.monotonic() + 30
            while _left_behind(out) and time.monotonic() < deadline:
                time.sleep(0.5)
            assert not _left_behind(out), "a SIGTERMed harness left processes running"
        else:
            assert run["ended_ms"] == 0  # nothing could be recorded
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        remove_leftover_processes()  # the JVMs of a SIGKILLed harness: the next runtime does this
        for pid in _left_behind(out):
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
        log.close()
    checked = tmp_path / "checked"
    assert check_main(["check", str(run_dir), "--out", str(checked)]) == 2
    v = json.loads(next(checked.glob("*/verdict.json")).read_text())
    assert v["passed"] is None and v["interrupted"], v
    assert v["invariants"]["NO_LOSS"]["violations"] == 0
    assert v["invariants"]["DLQ_ROUTING"]["violations"] == 0
