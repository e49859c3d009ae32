"""JUnit names CI can keep history on: ``suite.scenario[system]``, never the timestamped run id;
each case's time is its run's own duration (run.json), not the batch's on the first case."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from hourglass.reference.contract import INVARIANTS
from hourglass.reports.junit import junit_xml, case_name, system_label

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
    assert {c.get("classname") for c in suite.iter("testcase")} == {"conformance.each-level"}  # no dot of a version
    assert [c.get("name") for c in suite.iter("testcase")] == [f"{n}[rocketmq:latest]" for n in ("RUN", *INVARIANTS)]
    assert "20260101" not in junit_xml(_verdict(), run)
    assert suite.get("time") == "12.500"
    assert next(suite.iter("testcase")).get("time") == "12.500" and all(c.get("time") for c in suite.iter("testcase"))


def test_a_forks_version_is_not_in_any_name_and_a_classname_has_no_version_dot():
    """A dist: path put the fork's version into every test name: its history reset at each release."""
    assert system_label("dist:/opt/builds/myfork-5.3.3-SNAPSHOT") == system_label("dist:/opt/builds/myfork-5.4.0") == "dist:myfork"
    assert system_label("cmd:/etc/hourglass/broker.toml") == "cmd:broker"
    assert system_label("rocketmq:4.9.7") == "rocketmq:4.9.7"  # a release: the version is what a matrix compares
    run = {"scenario": "each-level", "suite": "conformance", "system": {"adapter": "dist", "version": "5.3.3-SNAPSHOT",
                                                                        "spec": "dist:/opt/builds/myfork-5.3.3-SNAPSHOT"}}
    text = junit_xml(_verdict(), run)
    assert "5.3.3" not in text and 'classname="conformance.each-level"' in text


def test_a_broken_run_is_an_error_not_a_failure_and_times_read_as_offsets():
    run = {"run_id": STAMPED, "scenario": "each-level", "suite": "conformance", "started_ms": 1_795_713_099_000,
           "ended_ms": 1_795_713_109_000, "system": {"spec": "rocketmq:5.5.0"}}
    broken = dict(_verdict(), passed=None, broken="AdapterError: broker never ready")
    suite = ET.fromstring(junit_xml(broken, run).split("\n", 1)[1])
    assert suite.get("errors") == "1" and suite.get("failures") == "0"
    assert next(suite.iter("testcase")).find("error").get("message") == "AdapterError: broker never ready"
    bad = _verdict()
    bad["invariants"]["NO_LOSS"] = {"passed": False, "checked": 3, "violations": 1, "examples": [
        {"explanation": "K1 attempt 0: expected window [1795713099344, 1795713102351]; run ended at 1795713153815"}]}
    failure = ET.fromstring(junit_xml(bad, run).split("\n", 1)[1]).find(".//failure")
    assert "expected window [t+0.344 s, t+3.351 s]; run ended at t+54.815 s" in failure.get("message")
    assert "1795713" not in failure.get("message") and "t+0 = 2026-11-26T17:11:39.000Z (the run's start)" in failure.text


def test_a_run_without_suite_or_spec_is_named_from_what_it_has():
    assert case_name({"scenario": "mine", "system": {"adapter": "rocketmq", "version": "4.9.7"}}) == "hourglass.mine[rocketmq:4.9.7]"
    assert case_name(None, {"run_id": STAMPED, "scenario": "each-level"}) == "hourglass.each-level"


TINY = '''
import pytest
from hourglass.harness.catalogue.conformance import CONFORMANCE
from hourglass.harness.verdicts import assert_conforms

PICKED = [s for s in CONFORMANCE if s.name in ("level-zero", "custom-table")]


@pytest.mark.parametrize("scenario", PICKED, ids=lambda s: s.name)
def test_rule(scenario, hg_verdict):
    assert_conforms(hg_verdict)
'''


def _run_tiny(tmp_path, system: str, conftest_extra: str = "") -> subprocess.CompletedProcess:
    """pytest in ``tmp_path`` on TINY with the project's conftest (+ ``conftest_extra``), on
    ``system``, its JUnit in ``tmp_path/junit.xml`` and its runs in ``tmp_path/runs``."""
    (tmp_path / "test_tiny.py").write_text(TINY)
    (tmp_path / "conftest.py").write_text((ROOT / "conftest.py").read_text() + conftest_extra)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("PYTEST_ADDOPTS", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--hg-system", system,
                           f"--hg-out={tmp_path / 'runs'}", f"--junitxml={tmp_path / 'junit.xml'}", "test_tiny.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)


def test_suite_junit_has_stable_names_and_each_runs_own_time(tmp_path):
    r = _run_tiny(tmp_path, "simulated")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cases = {c.get("classname") + "." + c.get("name"): float(c.get("time")) for c in ET.parse(tmp_path / "junit.xml").iter("testcase")}
    assert set(cases) == {"conformance.level-zero[simulated]", "conformance.custom-table[simulated]"}
    for run_json in (tmp_path / "runs" / "simulated").glob("*/run.json"):
        run = json.loads(run_json.read_text())
        own_s = (run["ended_ms"] - run["started_ms"]) / 1000
        assert abs(cases[f"conformance.{run['scenario']}[simulated]"] - own_s) < 0.5, (run["scenario"], cases, own_s)


BREAK_ONE = '''
from hourglass.harness import session as harness_session
from hourglass.reports.verdict import mark_broken

_verdict = harness_session.Session.verdict


def _broken_custom_table(self, system, scenario):
    v = _verdict(self, system, scenario)
    return mark_broken(v, "AdapterError: broker never ready") if scenario.name == "level-zero" else v


harness_session.Session.verdict = _broken_custom_table
'''


def test_suite_junit_a_broken_run_is_an_error_and_a_violation_is_a_few_lines(tmp_path):
    """A broken run is the harness's failure, not the broker's: ``<error>``; a violated run's
    failure text is its few lines (the invariant, its example, the report), not pages of source."""
    r = _run_tiny(tmp_path, "simulated[early-delivery]", BREAK_ONE)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    cases = {c.get("name"): c for c in ET.parse(tmp_path / "junit.xml").iter("testcase")}
    broken = cases["level-zero[simulated[early-delivery]]"]
    assert broken.find("error") is not None and broken.find("failure") is None
    assert "broker never ready" in broken.find("error").get("message")
    failure = cases["custom-table[simulated[early-delivery]]"].find("failure")
    assert failure is not None and "NOT_EARLY" in failure.text and "report: " in failure.text
    assert len(failure.text.splitlines()) <= 15 and "def test_rule" not in failure.text and "verdicts.py" not in failure.text
