"""report.html of one run: self-contained (inline CSS and SVG), opens from disk. Links to the run's
copied logs are relative to the page (``reports.logs``); a failed run shows the end of the broker's
log folded, as is the raw verdict JSON."""

from __future__ import annotations

import html
import json
import os

from hourglass.reference import faults as fault_kinds
from hourglass.reference.contract import INVARIANT_SUMMARY, INVARIANTS
from hourglass.reports import plots
from hourglass.reports.logs import AROUND_MS, RunLogs, log_clock, zone_words
from hourglass.reports.timetext import iso_ms, offset_text, with_offsets
from hourglass.reports.verdict import explain

VIOLATIONS_LISTED = 200
#: Where each invariant's name links to: the project's invariant catalogue, one anchor per invariant
#: (its name lowercased). A report is opened from a run directory anywhere, so this is no path
#: relative to the repository; ``HOURGLASS_DOCS_URL`` replaces it (a fork's copy, a local checkout's
#: ``file:///.../docs/invariants.md``).
DOCS_URL = "https://github.com/hourglass-harness/hourglass/blob/main/docs/invariants.md"

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:70em;color:#222}
h1{font-size:1.4em} h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.9em} td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}
.pass{background:#e6f4ea}.fail{background:#fce8e6}.none{background:#f1f3f4}.acc{background:#fef7e0}
.badge{display:inline-block;padding:.2em .7em;border-radius:1em;font-weight:bold}
code{font-size:.9em} .plot svg{max-width:100%;height:auto}
.t{border-bottom:1px dotted #888;white-space:nowrap} details>summary{cursor:pointer}
"""


def _e(x) -> str:
    return html.escape("" if x is None else str(x))


def offset(ts_ms: int, started_ms: int) -> str:
    """``t+12.345 s`` (:func:`reports.timetext.offset_text`), the ISO time (and the raw epoch ms) on hover."""
    return f"<span class='t' title='{iso_ms(ts_ms)} ({ts_ms})'>{offset_text(ts_ms, started_ms)}</span>"


def _timed(text, started_ms: int | None) -> str:
    """``text`` escaped, with every epoch-ms time of the run shown as an offset from its start."""
    return with_offsets(_e(text), started_ms, offset)


def _state(passed, accepted_only=False) -> tuple[str, str]:
    if passed is True:
        return "pass", "passed"
    if passed is False:
        return ("acc", "accepted") if accepted_only else ("fail", "FAILED")
    return "none", "not judged"


def report_html(verdict: dict, violations, plot_data: dict | None, run: dict | None, faults: list[dict],
                logs: RunLogs | None = None, scenario: dict | None = None) -> str:
    """``logs``: the run's copied logs (:func:`reports.logs.run_logs`); None: the run has none (no
    section). ``scenario``: the run's ``scenario.json`` as data, when the caller read it (its fault
    steps as scheduled); without it the steps are shown as the run's ``fault`` events carried them out."""
    run = run or {}
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>Hourglass — {_e(verdict['run_id'])}</title>",
             f"<style>{_CSS}</style></head><body>"]
    overall = verdict["passed"]
    cls, word = _state(overall)
    if overall is None and verdict.get("undecided"):
        word = "UNDECIDED"
    if verdict.get("broken"):
        word = "BROKEN RUN"
    system = run.get("system") or {}
    parts.append(f"<h1>Run <code>{_e(verdict['run_id'])}</code> <span class='badge {cls}'>{word}</span></h1>")
    parts.append(f"<p>{_e(run.get('scenario'))} — {_e(system.get('adapter'))} {_e(system.get('version'))} "
                 f"({_e(system.get('runtime'))}); {verdict['messages']} messages, {verdict['attempts']} attempts, "
                 f"{verdict['recovered']} recovered indeterminate sends.</p>")
    started_ms = int(run.get("started_ms") or 0) or None
    if started_ms:
        parts.append(f"<p>Started {_e(iso_ms(started_ms))}; times below are offsets from the start "
                     f"(<code>t+s</code>, hover for the ISO time and the epoch ms).</p>")
    if verdict.get("broken"):
        parts.append(f"<p class='fail'>The run could not be checked: <code>{_e(verdict['broken'])}</code></p>")
    for t in verdict.get("torn_lines", []):
        parts.append(f"<p class='acc'>Torn last line skipped: <code>{_e(t['file'])}:{t['line']}</code></p>")
    parts.append(_scenario(run, scenario, faults, started_ms))
    parts.append(_invariant_table(verdict, started_ms))
    if verdict.get("undecided"):
        u = verdict["undecided"]
        parts.append(f"<h2>Undecided ({u['messages']} messages still open at the run's end)</h2><ul>")
        parts.extend(f"<li><code>{_e(x['key'])}</code> attempt {_e(x['attempt'])} ({x['invariant']}): {_timed(x['reason'], started_ms)}</li>"
                     for x in u["examples"])
        parts.append("</ul>")
    parts.append(_violation_list(violations, faults, started_ms))
    if logs is not None:
        parts.append(_logs(logs))
    parts.append(_plots(plot_data, faults, run))
    parts.append(f"<h2>verdict.json</h2><details><summary>the raw verdict (JSON, as in <code>verdict.json</code>)</summary>"
                 f"<pre>{_e(json.dumps(verdict, indent=1))}</pre></details></body></html>")
    return "".join(parts)


def invariant_url(name: str) -> str:
    """Where invariant ``name`` is defined: :data:`DOCS_URL` (or ``HOURGLASS_DOCS_URL``) at its anchor."""
    base = os.environ.get("HOURGLASS_DOCS_URL") or DOCS_URL
    return f"{base.split('#', 1)[0]}#{name.lower()}"


def _invariant_link(name: str) -> str:
    """The invariant's name linked to its definition, its one-line definition on hover."""
    return (f"<a href='{_e(invariant_url(name))}' title='{_e(INVARIANT_SUMMARY.get(name))}'>"
            f"<b>{_e(name)}</b></a>")


def _invariant_name(name: str) -> str:
    """The name linked to its definition, and the definition's one line under it."""
    summary = INVARIANT_SUMMARY.get(name)
    return _invariant_link(name) + (f"<br><small class='def'>{_e(summary)}</small>" if summary else "")


def step_text(step: dict) -> str:
    """One fault step of a scenario as a line of text: ``outage broker at 5000 ms for 8000 ms``, its
    parameters (:func:`reference.faults.params`) and what it is timed from (``after``)."""
    at = f"at {step.get('at_ms', 0)} ms"
    after = step.get("after")
    if after:
        level = f" of level {after['level']}" if after.get("level") else ""
        at = f"{step.get('at_ms', 0)} ms after {after.get('event')} #{after.get('count', 1)}{level}"
    text = f"{step.get('action')} {step.get('target') or 'broker'} {at}"
    if step.get("duration_ms"):
        text += f" for {step['duration_ms']} ms"
    return text + "".join(f", {p.name} {step[p.name]}" for p in fault_kinds.params() if step.get(p.name))


def _scenario(run: dict, scenario: dict | None, faults: list[dict], started_ms: int | None) -> str:
    """What the scenario is for (run.json's ``description``) and its fault steps: as scheduled (the
    scenario's ``faults``, when given) and as carried out (the ``fault`` events naming each ``step``)."""
    out = ["<h2>Scenario</h2>"]
    description = run.get("description") or (scenario or {}).get("description")
    out.append(f"<p>{_e(description)}</p>" if description else "<p class='none'>No description recorded.</p>")
    planned = list((scenario or {}).get("faults") or ())
    done: dict[int, list[dict]] = {}
    for f in sorted(faults, key=lambda f: f["ts_ms"]):
        if isinstance(f.get("step"), int):
            done.setdefault(f["step"], []).append(f)
    if not planned and not done:
        out.append("<p>Fault steps: none.</p>")
        return "".join(out)
    out.append("<p>Fault steps" + (" as scheduled, then" if planned else "") + " as carried out (the run's "
               "<code>fault</code> events of each step):</p><ol start='0'>")
    for i in range(max(len(planned), max(done, default=-1) + 1)):
        scheduled = _e(step_text(planned[i])) + "; carried out: " if i < len(planned) else ""
        carried = ", ".join(f"{_e(f.get('target'))} {_e(f.get('action'))} at "
                            f"{offset(f['ts_ms'], started_ms) if started_ms else _e(f['ts_ms'])}" for f in done.get(i, ()))
        out.append(f"<li>{scheduled}{carried or 'nothing recorded'}</li>")
    out.append("</ol>")
    return "".join(out)


def _invariant_table(verdict: dict, started_ms: int | None = None) -> str:
    rows = ["<h2>Invariants</h2><table><tr><th>invariant</th><th>verdict</th><th>checked</th><th>violations</th><th>first example</th></tr>"]
    for inv in INVARIANTS:
        e = verdict["invariants"][inv]
        accepted_only = e["violations"] > 0 and e.get("accepted", 0) == e["violations"]
        cls, word = _state(e["passed"], accepted_only)
        if e.get("undecided"):
            word += f" ({e['undecided']} undecided)"
        first = e["examples"][0]["explanation"] if e["examples"] else ""
        rows.append(f"<tr class='{cls}'><td>{_invariant_name(inv)}</td><td>{word}</td><td>{e['checked']}</td>"
                    f"<td>{e['violations']}{' (' + str(e['accepted']) + ' accepted)' if e.get('accepted') else ''}</td><td>{_timed(first, started_ms)}</td></tr>")
    rows.append("</table>")
    return "".join(rows)


def _violation_list(violations, faults, started_ms: int | None = None) -> str:
    if violations is None or len(violations) == 0:
        return "<h2>Violations</h2><p>None.</p>"
    out = [f"<h2>Violations ({len(violations)}; first {min(len(violations), VIOLATIONS_LISTED)} listed)</h2>",
           "<table><tr><th>invariant</th><th>key</th><th>attempt</th><th>explanation</th></tr>"]
    for row in violations.head(VIOLATIONS_LISTED).to_dict("records"):
        ex = explain(row, faults)
        cls = "acc" if ex.get("accepted") else "fail"
        note = f" <i>(accepted: {_e(ex['accepted'])})</i>" if ex.get("accepted") else ""
        out.append(f"<tr class='{cls}'><td>{_invariant_link(row['invariant'])}</td><td><code>{_e(ex['key'])}</code></td>"
                   f"<td>{_e(ex['attempt'])}</td><td>{_timed(ex['explanation'], started_ms)}{note}</td></tr>")
    out.append("</table>")
    return "".join(out)


#: A log's lines in the report: wrapped (a broker's lines run long), smaller.
_LOG_PRE = "<pre style='white-space:pre-wrap;overflow-wrap:anywhere;font-size:.8em'>"


def _logs(logs: RunLogs) -> str:
    out = ["<h2>Logs</h2>"]
    if logs.not_collected:
        out.append(f"<p class='none'>{_e(logs.not_collected)}</p>")
    if logs.links:
        out.append("<p>Copied into the run directory's <code>logs/</code> at the run's end.</p><ul>")
        for link in logs.links:
            name = f"<a href='{_e(link.href)}'><code>{_e(link.name)}</code></a>" if link.href else f"<code>{_e(link.name)}</code>"
            full = f"; the whole copy: <a href='{_e(link.full_href)}'>{_e(link.name.rsplit('/', 1)[-1])}.full.gz</a>" if link.full_href else ""
            out.append(f"<li>{name} ({_e(link.note)}{full})</li>")
        out.append("</ul>")
    if logs.others:
        out.append(f"<p class='none'>Not listed: {len(logs.others)} files of the other scenarios' consumers that shared this "
                   f"run's broker (<code>{_e(logs.others[0])}</code>, …); they are in <code>logs/</code> too, and each "
                   f"scenario's report lists its own.</p>")
    out.append(_around(logs))
    if logs.tail is not None:
        name, text = logs.tail
        zone = zone_words(name, logs.zone_s)
        out.append(f"<details><summary>the last {len(text.splitlines())} lines of <code>{_e(name)}</code>"
                   f"{f' ({_e(zone)})' if zone else ''}</summary>{_LOG_PRE}{_e(text)}</pre></details>")
    return "".join(out)


def _around(logs: RunLogs) -> str:
    """The broker log's lines around the first violations' times, folded: one block per span, its
    run-relative times and the times as the log prints them."""
    if not logs.around or logs.tail is None or logs.zone_s is None:
        return ""
    name, zone = logs.tail[0], logs.zone_s
    out = [f"<details><summary><code>{_e(name)}</code> around the first violations' times "
           f"(±{AROUND_MS // 1000} s of each one's expected and observed times; {_e(zone_words(name, zone))})</summary>"]
    if logs.own:
        out.append("<p>The broker was shared with other scenarios: lines naming this run's groups, topics or keys are in bold.</p>")
    for span in logs.around:
        when = (f"{offset(span.from_ms, logs.started_ms)} – {offset(span.to_ms, logs.started_ms)}" if logs.started_ms
                else f"{_e(iso_ms(span.from_ms))} – {_e(iso_ms(span.to_ms))}")
        out.append(f"<p><b>{when}</b> ({_e(log_clock(span.from_ms, zone))}–{_e(log_clock(span.to_ms, zone))} in the log, "
                   f"{span.count} line{'' if span.count == 1 else 's'}): {_e('; '.join(span.why))}</p>"
                   f"{_LOG_PRE}{_marked(span.lines, logs.own) if span.lines else '(no line of the log in this span)'}</pre>")
    out.append("</details>")
    return "".join(out)


def _marked(text: str, own: tuple[str, ...]) -> str:
    """``text`` escaped, its lines naming any of ``own`` in bold."""
    return "\n".join(f"<b>{_e(line)}</b>" if any(w in line for w in own) else _e(line) for line in text.split("\n"))


def _plots(data: dict | None, faults: list[dict], run: dict) -> str:
    if not data:
        return "<h2>Plots</h2><p>No deliveries to plot.</p>"
    slack = int((run.get("profile") or {}).get("slack_ms") or 0)
    figures = [
        ("Lateness over time", plots.lateness_time_svg(data, faults, run, slack)),
        ("Lateness per delay level", plots.lateness_svg(data, slack, faults)),
        ("Deliveries over time", plots.timeline_svg(data, faults, run)),
        ("Retry gaps", plots.gaps_svg(data, slack)),
        ("Duplicates by cause", plots.duplicates_svg(data)),
    ]
    out = ["<h2>Plots</h2>"]
    for title, svg in figures:
        out.append(f"<h3>{title}</h3>")
        out.append(f"<div class='plot'>{svg}</div>" if svg else "<p>Nothing to plot in this run.</p>")
    return "".join(out)
