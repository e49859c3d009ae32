"""report.html links each invariant's name to its definition in the catalogue (``docs/invariants.md``
at the project's address, or ``HOURGLASS_DOCS_URL``), shows its one-line definition
(``reference.contract.INVARIANT_SUMMARY``), and shows the scenario's description and its fault
steps as text."""

from __future__ import annotations

import html

import pandas as pd

from hourglass.reference.contract import INVARIANT_SUMMARY, INVARIANTS
from hourglass.reports.html import DOCS_URL, invariant_url, report_html, step_text

T0 = 1_763_800_000_000
RUN = {"scenario": "kill9", "system": {"adapter": "simulated", "version": "sim"}, "started_ms": T0,
       "ended_ms": T0 + 30_000, "description": "kill -9 while level-3 messages wait: none lost, none early"}
FAULTS = [{"type": "fault", "ts_ms": T0 + 5_000, "action": "kill", "target": "broker", "step": 0},
          {"type": "fault", "ts_ms": T0 + 13_000, "action": "start", "target": "broker", "step": 0},
          {"type": "fault", "ts_ms": T0 + 14_200, "action": "ready", "target": "broker", "step": 0},
          {"type": "fault", "ts_ms": T0 + 1_000, "action": "ready", "target": "broker", "cause": "setup"}]
SCENARIO = {"name": "kill9", "faults": [
    {"at_ms": 5000, "action": "outage", "target": "broker", "duration_ms": 8000},
    {"at_ms": 200, "action": "latency", "target": "broker", "delay_ms": 50, "after": {"event": "reput", "level": 3, "count": 2}}]}


def _verdict() -> dict:
    inv = {n: {"passed": True, "checked": 2, "violations": 0, "examples": []} for n in INVARIANTS}
    inv["NO_LOSS"] = {"passed": False, "checked": 2, "violations": 1, "examples": [{"explanation": "k1: lost"}]}
    return {"run_id": "kill9-sim-x", "passed": False, "messages": 2, "attempts": 2, "recovered": 0, "invariants": inv}


def _violations():
    return pd.DataFrame([{"invariant": "NO_LOSS", "key": "k1", "attempt": 0, "observed_ms": T0 + 30_000,
                          "detail": "expected CONSUMED by the run's end, found neither an OK delivery nor a DLQ entry"}])


def _row(page: str, name: str) -> str:
    return next(r for r in page.split("<tr") if f"<b>{name}</b>" in r)


def test_every_invariant_links_to_its_anchor_in_the_catalogue_with_its_definition(monkeypatch):
    monkeypatch.delenv("HOURGLASS_DOCS_URL", raising=False)
    page = report_html(_verdict(), None, None, RUN, [])
    assert DOCS_URL.startswith("https://") and DOCS_URL.endswith("docs/invariants.md")
    for name in INVARIANTS:
        row = _row(page, name)
        assert f"href='{DOCS_URL}#{name.lower()}'" in row, name
        assert html.escape(INVARIANT_SUMMARY[name]) in row, name


def test_the_docs_address_is_overridden_by_the_environment(monkeypatch):
    monkeypatch.setenv("HOURGLASS_DOCS_URL", "file:///srv/hourglass/docs/invariants.md#stale")
    assert invariant_url("ON_TIME") == "file:///srv/hourglass/docs/invariants.md#on_time"
    page = report_html(_verdict(), _violations(), None, RUN, [])
    assert "href='file:///srv/hourglass/docs/invariants.md#no_loss'" in _row(page, "NO_LOSS")
    listed = page.split("<h2>Violations")[1]
    assert "href='file:///srv/hourglass/docs/invariants.md#no_loss'" in listed  # the violation list links too


def test_the_description_and_the_steps_as_carried_out_from_the_fault_events():
    page = report_html(_verdict(), None, None, RUN, FAULTS)
    section = page.split("<h2>Scenario</h2>")[1].split("<h2>")[0]
    assert html.escape(RUN["description"]) in section
    step = section.split("<li>")[1]
    assert "broker kill at" in step and "t+5.000 s" in step and "broker ready at" in step and "t+14.200 s" in step
    assert "t+1.000 s" not in section  # the setup's ready is no step


def test_the_steps_as_scheduled_when_the_scenario_is_given():
    page = report_html(_verdict(), None, None, RUN, FAULTS, scenario=SCENARIO)
    section = page.split("<h2>Scenario</h2>")[1].split("<h2>")[0]
    assert "outage broker at 5000 ms for 8000 ms; carried out: broker kill at" in section
    assert "latency broker 200 ms after reput #2 of level 3, delay_ms 50; carried out: nothing recorded" in section


def test_a_run_without_description_or_faults_says_so():
    page = report_html(_verdict(), None, None, {"run_id": "r"}, [])
    section = page.split("<h2>Scenario</h2>")[1].split("<h2>")[0]
    assert "No description recorded." in section and "Fault steps: none." in section


def test_step_text_names_each_parameter():
    assert step_text({"at_ms": 0, "action": "clock", "offset_ms": -5000, "duration_ms": 1000}) == \
        "clock broker at 0 ms for 1000 ms, offset_ms -5000"
