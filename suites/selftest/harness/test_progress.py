"""Progress lines reach a CI log while a batch runs under pytest (not swallowed by capture), with
an ETA from the scenarios' own waits."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hourglass.harness.batch import Batch, BatchOptions
from hourglass.harness.catalogue.conformance import CONFORMANCE
from hourglass.harness.summary import scenario_wait_ms
from hourglass.harness.systems import SystemSpec

ROOT = Path(__file__).resolve().parents[3]

TINY = '''
import os
import pytest
from hourglass.harness.catalogue.conformance import CONFORMANCE
from hourglass.harness.verdicts import assert_conforms

PICKED = [s for s in CONFORMANCE if s.name == "level-zero"]


@pytest.mark.parametrize("scenario", PICKED, ids=lambda s: s.name)
def test_rule(scenario, hg_verdict):
    # still inside the test (captured): the batch's progress is already in the CI log
    log = open(os.environ["HG_TEST_STDERR"]).read()
    assert "[hourglass" in log and "0/1 scenarios done, ETA" in log and "1/1 scenarios done" in log, log
    assert_conforms(hg_verdict)
'''


def test_progress_reaches_the_log_before_the_test_ends(tmp_path):
    (tmp_path / "test_tiny.py").write_text(TINY)
    (tmp_path / "conftest.py").write_text((ROOT / "conftest.py").read_text())
    stderr_path = tmp_path / "stderr.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HG_TEST_STDERR": str(stderr_path)}
    env.pop("PYTEST_ADDOPTS", None)
    with stderr_path.open("w") as err:  # stdout a pipe, stderr a file: no terminal anywhere
        r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--hg-system", "simulated",
                            "--hg-progress", "always", f"--hg-out={tmp_path / 'runs'}", "test_tiny.py"],
                           cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=err, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + stderr_path.read_text()[-3000:]


def test_eta_comes_from_the_scenarios_own_waits(tmp_path):
    picked = [s for s in CONFORMANCE if s.name in ("level-zero", "each-level", "dlq-small")]
    batch = Batch(picked, BatchOptions(SystemSpec("simulated"), tmp_path, progress=False))
    expected = sum(scenario_wait_ms(s) for s in picked) / 1000  # nothing started, one at a time
    assert abs(batch.eta_s() - expected) < 0.01
    m, s = divmod(int(expected + 0.5), 60)
    assert f"0/3 scenarios done, ETA {m:02d}:{s:02d}" in batch.progress_line()
    for p in batch.progress.values():
        p.phase = "done"
    line = batch.progress_line()  # done, not yet torn down: never 00:00
    assert batch.eta_s() > 0 and "ETA 00:00" not in line and "tearing down" in line, line
    batch.jobs_ended.update(range(len(batch.jobs)))
    assert batch.eta_s() == 0 and "ETA" not in batch.progress_line()
