"""Interrupting the checker (Ctrl-C, SIGTERM, Ctrl-C twice) while its Spark JVM starts or works
leaves no JVM behind, exits 3 (the harness itself interrupted, docs/contract.md) and says so in one
line, without py4j's tracebacks.

pyspark alone leaked the JVM: interrupted before the gateway answered, it deleted the directory the
JVM was to report its port in, and the JVM's gateway thread then ran for good. Each command runs in
a process of its own with a marker in its environment, which every process it starts inherits: what
carries the marker after the command exited was left behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from hourglass.reports.verdict import BROKEN, EXIT_CODES
from suites.selftest.checker.runs import RunBuilder

MARKER = "CHECKER_INTERRUPT_TEST_MARKER"  # inherited by whatever the command starts
ROOT = Path(__file__).resolve().parents[3]
#: generous: a loaded 2-core machine took over three minutes to start Spark
DEADLINE_S = 600


def _marked(marker: str, word: bytes = b"") -> list[int]:
    """The live processes whose environment carries ``marker`` and whose command line has ``word``."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if f"{MARKER}={marker}".encode() in environ and word in cmdline:
            pids.append(int(entry))
    return pids


def _wait_for(predicate, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not predicate():
        assert time.monotonic() < deadline, f"{what} did not happen"
        time.sleep(0.05)


def _interrupt(argv: list[str], signals: list[int], when: bytes, cwd: Path) -> tuple[int, str]:
    """Run ``python argv`` and, once a process of its whose command line has ``when`` runs, send
    it ``signals`` (the second a moment after the first); return its exit code and stderr, after
    asserting that nothing it started is left."""
    marker = uuid.uuid4().hex
    env = {**os.environ, MARKER: marker, "PYTHONPATH": str(ROOT)}
    stderr = cwd / f"stderr-{marker}.txt"  # a file, not a pipe: a JVM left behind would hold a pipe open
    with stderr.open("wb") as err:
        # SIGINT as a terminal delivers it: a shell without job control starts background commands
        # with SIGINT ignored, and Python installs no handler for an ignored SIGINT (the Ctrl-C cases
        # then ran to the end and exited 0 when CI was started with `&`)
        proc = subprocess.Popen([sys.executable, *argv], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        _wait_for(lambda: _marked(marker, when) or proc.poll() is not None, f"a process with {when!r}")
        assert proc.poll() is None, "the command ended before the moment to interrupt it"
        for i, sig in enumerate(signals):
            if i:
                time.sleep(0.2)
            proc.send_signal(sig)
        proc.wait(timeout=DEADLINE_S)
        time.sleep(1)  # a killed group's members are gone once reaped; nothing may still run
        left = _marked(marker)
        assert not left, f"left running: {[Path(f'/proc/{p}/cmdline').read_bytes()[:200] for p in left]}"
    finally:
        for pid in _marked(marker):
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, stderr.read_text(errors="replace")


def _tiny_run(tmp_path: Path) -> Path:
    return RunBuilder("tiny").send("a", 0).deliver("a", 10).write(tmp_path / "runs")


@pytest.mark.parametrize("signals", [[signal.SIGINT], [signal.SIGTERM], [signal.SIGINT, signal.SIGINT]],
                         ids=["ctrl-c", "sigterm", "ctrl-c-twice"])
def test_an_interrupt_while_the_jvm_starts_kills_it(tmp_path, signals):
    code, err = _interrupt(["-m", "hourglass.reports", "check", str(_tiny_run(tmp_path)), "--out", str(tmp_path / "out")],
                           signals, b"java", tmp_path)
    assert code == EXIT_CODES[BROKEN], err
    assert "hourglass check: interrupted: the check did not finish" in err
    assert "Traceback" not in err


def test_an_interrupt_during_the_check_kills_the_jvm_in_one_line(tmp_path):
    """Ctrl-C while the check's tasks run (a Python worker is up): no py4j traceback ("reentrant
    call", "KeyboardInterrupt while sending command"), no Java stack trace."""
    code, err = _interrupt(["-m", "hourglass.reports", "check", str(_tiny_run(tmp_path)), "--out", str(tmp_path / "out")],
                           [signal.SIGINT], b"pyspark.daemon", tmp_path)
    assert code == EXIT_CODES[BROKEN], err
    assert "hourglass check: interrupted: the check did not finish (Ctrl-C)" in err
    assert "Traceback" not in err and "Exception" not in err, err


def test_the_harness_interrupted_while_its_checker_starts_leaves_no_jvm(tmp_path):
    """The harness checks its runs after the batch: interrupted then, the systems were torn down
    already and the checker's JVM is killed too."""
    code, err = _interrupt(["-m", "hourglass", "run", "--suite", "conformance", "--scenario-name", "level-zero",
                            "--system", "simulated", "--out", str(tmp_path / "out")],
                           [signal.SIGTERM], b"java", tmp_path)
    assert code == EXIT_CODES[BROKEN], err
    assert "hourglass: interrupted: the runs record it" in err and "(signal SIGTERM)" in err
    assert "Traceback" not in err


def _command(fn):
    import argparse

    parser = argparse.ArgumentParser(prog="probe")
    parser.set_defaults(fn=fn)
    return parser


def test_an_interrupt_that_surfaces_as_a_spark_error_is_said_as_the_interrupt(capsys, monkeypatch):
    """A Ctrl-C that cancels the running job may reach the command as the cancelled job's error
    before its KeyboardInterrupt does (seen: "[INTERNAL_ERROR_STORAGE] Block rdd_5_0 does not
    exist"): the command says it was interrupted, in one line, exit 3; the same error without an
    interrupt is a failure of the tool."""
    from hourglass.reports import command, spark

    monkeypatch.setattr(spark, "kill_spark", lambda: None)

    def cancelled(args):
        spark._interrupted = True  # what the session's SIGINT handler records
        raise RuntimeError("Exception in task 0.0 in stage 0.0 (TID 0): Block rdd_5_0 does not exist")

    def failing(args):
        raise RuntimeError("Block rdd_5_0 does not exist")

    assert command.run_command(_command(cancelled), [], "hourglass check", "interrupted: the check did not finish") == 3
    err = capsys.readouterr().err
    assert "hourglass check: interrupted: the check did not finish (Ctrl-C)" in err and "Block" not in err
    assert command.run_command(_command(failing), [], "hourglass check") == 3  # a new command: no interrupt now
    assert "hourglass check: failed: RuntimeError: Block rdd_5_0 does not exist" in capsys.readouterr().err
