"""junit.xml of one run: one test case per invariant (failure = the examples; skipped = not
exercised or undecided), so CI dashboards show the verdict without opening the report."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from reference.contract import INVARIANTS


def junit_xml(verdict: dict) -> str:
    run_id = verdict["run_id"]
    suite = ET.Element("testsuite", name=f"hourglass.{run_id}", tests=str(len(INVARIANTS)))
    failures = skipped = 0
    if verdict.get("broken"):
        case = ET.SubElement(suite, "testcase", classname=f"hourglass.{run_id}", name="RUN_READABLE")
        ET.SubElement(case, "error", message=verdict["broken"]).text = verdict["broken"]
        suite.set("errors", "1")
        suite.set("tests", str(len(INVARIANTS) + 1))
    for inv in INVARIANTS:
        entry = verdict["invariants"][inv]
        case = ET.SubElement(suite, "testcase", classname=f"hourglass.{run_id}", name=inv)
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
