"""JUnit names CI can keep history on: ``suite.scenario[system]``, never the timestamped run id;
each case's time is its run's own duration (run.json), not the batch's on the first case."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from reference.contract import INVARIANTS
from reports.junit import junit_xml, case_name

ROOT = Path(__file__).resolve().parents[3]
STAMPED = "each-level-5.3.3-20260101T120000"


def _verdict() -> dict:
    inv = {"passed": True, "checked": 1, "violations": 0, "examples": []}
    return {"run_id": STAMPED, "scenario": "each-level", "passed": True, "invariants": {n: dict(inv) for n in INVARIANTS}}


def test_run_junit_names_are_suite_scenario_system_without_the_run_id():
    run = {"run_id": STAMPED, "scenario": "each-level", "suite": "conformance", "started_ms": 1_000, "ended_ms": 13_500,
           "system": {"adapter": "rocketmq", "version": "5.3.3", "spec": "rocketmq:latest"}}
    suite = ET.fromstring(junit_xml(_verdict(), run).split("\n", 1)[1])
    assert suite.get("name") == "conformance.each-level[rocketmq:latest]"
    assert {c.get("classname") for c in suite.iter("testcase")} == {"conformance.each-level[rocketmq:latest]"}
    assert "20260101" not in junit_xml(_verdict(), run)
    assert suite.get("time") == "12.500"


def test_a_run_without_suite_or_spec_is_named_from_what_it_has():
    assert case_name({"scenario": "mine", "system": {"adapter": "rocketmq", "version": "4.9.7"}}) == "hourglass.mine[rocketmq:4.9.7]"
    assert case_name(None, {"run_id": STAMPED, "scenario": "each-level"}) == "hourglass.each-level"


TINY = '''
import pytest
from harness.catalogue.conformance import CONFORMANCE
from harness.verdicts import assert_conforms

PICKED = [s for s in CONFORMANCE if s.name in ("level-zero", "custom-table")]


@pytest.mark.parametrize("scenario", PICKED, ids=lambda s: s.name)
def test_rule(scenario, hg_verdict):
    assert_conforms(hg_verdict)
'''


def test_suite_junit_has_stable_names_and_each_runs_own_time(tmp_path):
    (tmp_path / "test_tiny.py").write_text(TINY)
    (tmp_path / "conftest.py").write_text((ROOT / "conftest.py").read_text())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTEST_ADDOPTS", None)
    r = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--hg-system", "simulated",
                        f"--hg-out={tmp_path / 'runs'}", f"--junitxml={tmp_path / 'junit.xml'}", "test_tiny.py"],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cases = {c.get("classname") + "." + c.get("name"): float(c.get("time")) for c in ET.parse(tmp_path / "junit.xml").iter("testcase")}
    assert set(cases) == {"conformance.level-zero[simulated]", "conformance.custom-table[simulated]"}
    for run_json in (tmp_path / "runs" / "simulated").glob("*/run.json"):
        run = json.loads(run_json.read_text())
        own_s = (run["ended_ms"] - run["started_ms"]) / 1000
        assert abs(cases[f"conformance.{run['scenario']}[simulated]"] - own_s) < 0.5, (run["scenario"], cases, own_s)
