"""junit.xml of one run: a case for the run itself and one per invariant (failure = the examples;
error = the run was broken; skipped = not exercised or undecided), so CI dashboards show the
verdict without opening the report.

Names are stable across runs, so CI keeps each test's history: the classname is ``suite.scenario``
(``run.json``'s ``suite``, ``hourglass`` when absent), the case names ``INVARIANT[system]`` (the
system as :func:`system_label` says it: no fork's version), never the run id, which carries a
timestamp. The run's case and the suite carry the run's own duration."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from hourglass.reference.contract import INVARIANTS
from hourglass.reports.timetext import start_words, with_offsets


#: how a fork's version shows in a distribution's folder or a file's name: stripped from JUnit names
_VERSION_IN_NAME = re.compile(r"[-_.]?v?\d+(?:\.\d+)+(?:[-.](?:SNAPSHOT|RC\d*|rc\d*|alpha\d*|beta\d*))?")


def system_label(spec: str) -> str:
    """The system as JUnit names say it, stable across a fork's releases: a path-like spec
    (``dist:/opt/myfork-5.3.3-SNAPSHOT``, ``jars:``, ``cmd:broker.toml``) becomes its kind and the
    last part of the path without its version (``dist:myfork``), or a fork's history would reset
    at every release; a RocketMQ release (``rocketmq:4.9.7``) or a simulated broker stays as
    given — the version is what a matrix compares. Only ever inside a test's *name*: a classname
    is split at its dots into package and class (Jenkins)."""
    kind, sep, rest = spec.partition(":")
    if not sep or "/" not in rest and not rest.endswith(".toml"):
        return spec
    base = rest.rstrip("/").rsplit("/", 1)[-1].removesuffix(".toml")
    return f"{kind}:{_VERSION_IN_NAME.sub('', base) or base}"


def _spec(run: dict) -> str:
    system = run.get("system") or {}
    return system.get("spec") or ":".join(str(x) for x in (system.get("adapter"), system.get("version")) if x)


def class_name(run: dict | None, verdict: dict | None = None) -> str:
    """``suite.scenario`` of a run: the classname CI dashboards key a test's history on (no dot
    of a version in it)."""
    run, verdict = run or {}, verdict or {}
    scenario = run.get("scenario") or verdict.get("scenario") or verdict.get("run_id", "?")
    return f"{run.get('suite') or 'hourglass'}.{scenario}"


def case_name(run: dict | None, verdict: dict | None = None) -> str:
    """``suite.scenario[system]`` of a run (the system as :func:`system_label` says it): the
    per-run JUnit file's suite name."""
    spec = _spec(run or {})
    return class_name(run, verdict) + (f"[{system_label(spec)}]" if spec else "")


def run_seconds(run: dict | None) -> float:
    """The run's own duration (``started_ms`` to ``ended_ms``; 0 for a run that never ended)."""
    run = run or {}
    started, ended = run.get("started_ms") or 0, run.get("ended_ms") or 0
    return max(0, ended - started) / 1000 if started and ended else 0.0


def junit_xml(verdict: dict, run: dict | None = None) -> str:
    """One testsuite per run: a ``RUN`` case (the run's own duration; ``<error>`` when the harness
    could not carry the run out — broken is no failure of the broker) and one case per invariant
    (``<failure>`` with the examples, times as ``t+`` offsets; ``<skipped>`` when not exercised or
    undecided)."""
    run = run or {}
    classname, label = class_name(run, verdict), (f"[{system_label(_spec(run))}]" if _spec(run) else "")
    t0 = run.get("started_ms") or verdict.get("started_ms")
    suite = ET.Element("testsuite", name=case_name(run, verdict), tests=str(len(INVARIANTS) + 1), time=f"{run_seconds(run):.3f}")
    case = ET.SubElement(suite, "testcase", classname=classname, name=f"RUN{label}", time=f"{run_seconds(run):.3f}")
    errors = failures = skipped = 0
    if verdict.get("broken"):
        errors = 1
        ET.SubElement(case, "error", message=verdict["broken"][:500], type="broken").text = verdict["broken"]
    elif verdict.get("interrupted"):
        skipped += 1
        ET.SubElement(case, "skipped", message=f"interrupted: {verdict['interrupted']}")
    for inv in INVARIANTS:
        entry = verdict["invariants"][inv]
        case = ET.SubElement(suite, "testcase", classname=classname, name=f"{inv}{label}", time="0.000")
        gating = entry["violations"] - entry.get("accepted", 0)
        lines = [with_offsets(e["explanation"], t0) + (f" [accepted: {e['accepted']}]" if e.get("accepted") else "")
                 for e in entry["examples"]]
        if gating > 0:
            failures += 1
            head = f"{entry['violations']} of {entry['checked']} violated: {lines[0] if lines else ''}"
            ET.SubElement(case, "failure", message=head, type=inv).text = "\n".join(lines + [start_words(t0)])
        elif entry["passed"] is None:
            skipped += 1
            why = (f"undecided: {entry['undecided']} still open when the run ended" if entry.get("undecided")
                   else "not exercised by this run" if entry["checked"] == 0 else "not judged")
            ET.SubElement(case, "skipped", message=why)
        elif entry.get("accepted"):
            ET.SubElement(case, "system-out").text = "accepted by the baseline:\n" + "\n".join(lines)
    suite.set("errors", str(errors))
    suite.set("failures", str(failures))
    suite.set("skipped", str(skipped))
    ET.indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"
