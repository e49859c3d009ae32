"""junit.xml of one run: one test case per invariant (failure = the examples; skipped = not
exercised or undecided), so CI dashboards show the verdict without opening the report.

Names are stable across runs, so CI keeps each test's history: the suite and the classname are
``suite.scenario[system]`` (``run.json``'s ``suite``, ``hourglass`` when absent; its system spec),
never the run id, which carries a timestamp. The suite's time is the run's own duration."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from reference.contract import INVARIANTS


def case_name(run: dict | None, verdict: dict | None = None) -> str:
    """``suite.scenario[system]`` of a run: what CI dashboards key a test's history on."""
    run, verdict = run or {}, verdict or {}
    scenario = run.get("scenario") or verdict.get("scenario") or verdict.get("run_id", "?")
    system = run.get("system") or {}
    spec = system.get("spec") or ":".join(str(x) for x in (system.get("adapter"), system.get("version")) if x)
    return f"{run.get('suite') or 'hourglass'}.{scenario}" + (f"[{spec}]" if spec else "")


def run_seconds(run: dict | None) -> float:
    """The run's own duration (``started_ms`` to ``ended_ms``; 0 for a run that never ended)."""
    run = run or {}
    started, ended = run.get("started_ms") or 0, run.get("ended_ms") or 0
    return max(0, ended - started) / 1000 if started and ended else 0.0


def junit_xml(verdict: dict, run: dict | None = None) -> str:
    name = case_name(run, verdict)
    suite = ET.Element("testsuite", name=name, tests=str(len(INVARIANTS)), time=f"{run_seconds(run):.3f}")
    failures = skipped = 0
    if verdict.get("broken"):
        case = ET.SubElement(suite, "testcase", classname=name, name="RUN_READABLE")
        ET.SubElement(case, "error", message=verdict["broken"]).text = verdict["broken"]
        suite.set("errors", "1")
        suite.set("tests", str(len(INVARIANTS) + 1))
    for inv in INVARIANTS:
        entry = verdict["invariants"][inv]
        case = ET.SubElement(suite, "testcase", classname=name, name=inv)
        gating = entry["violations"] - entry.get("accepted", 0)
        lines = [e["explanation"] + (f" [accepted: {e['accepted']}]" if e.get("accepted") else "") for e in entry["examples"]]
        if gating > 0:
            failures += 1
            head = f"{entry['violations']} of {entry['checked']} violated: {lines[0] if lines else ''}"
            ET.SubElement(case, "failure", message=head, type=inv).text = "\n".join(lines)
        elif entry["passed"] is None:
            skipped += 1
            why = (f"undecided: {entry['undecided']} still open when the run ended" if entry.get("undecided")
                   else "not exercised by this run" if entry["checked"] == 0 else "not judged")
            ET.SubElement(case, "skipped", message=why)
        elif entry.get("accepted"):
            ET.SubElement(case, "system-out").text = "accepted by the baseline:\n" + "\n".join(lines)
    suite.set("failures", str(failures))
    suite.set("skipped", str(skipped))
    ET.indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"
