"""``--hg-suite-systems SUITE=SYSTEM``: a suite's scenarios run on the systems named only (CI's hour:
``tox -e tests`` runs the chaos suite on the newest release and the persistence suite on 4.9.x);
a malformed entry or a system not under test is a usage error, not a silent selection."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hourglass.harness.catalogue.chaos import SHORT

ROOT = Path(__file__).resolve().parents[3]
SYSTEMS = "simulated,simulated[early-delivery]"


def _collect(*options: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--co", "-q", "-m", "not slow",
                           "suites/chaos/test_chaos.py", "suites/conformance/test_conformance.py",
                           f"--hg-system={SYSTEMS}", *options], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_a_suite_named_runs_on_its_systems_only_and_the_others_on_all():
    out = _collect("--hg-suite-systems=chaos=simulated[early-delivery]")
    assert out.returncode == 0, out.stdout + out.stderr
    chaos = [line for line in out.stdout.splitlines() if line.startswith("suites/chaos/")]
    conformance = [line for line in out.stdout.splitlines() if line.startswith("suites/conformance/")]
    assert chaos and all("[simulated[early-delivery]-" in line for line in chaos), chaos
    assert any("[simulated-" in line for line in conformance) and any("[simulated[early-delivery]-" in line
                                                                      for line in conformance)
    assert len(chaos) == len(SHORT)  # each short chaos scenario once: on the one system named


def test_a_malformed_entry_or_a_system_not_under_test_is_a_usage_error():
    for entry, says in (("chaos", "expected SUITE=SYSTEM"), ("chaos=rocketmq:4.9.7", "rocketmq:4.9.7 not among --hg-system")):
        out = _collect(f"--hg-suite-systems={entry}")
        assert out.returncode == 4, out.stdout + out.stderr  # pytest's usage error
        assert says in out.stderr, out.stderr
