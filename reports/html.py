"""report.html of one run: self-contained (inline CSS and SVG), opens from disk. Links to the run's
copied logs are relative to the page (``reports.logs``); a failed run shows the end of the broker's
log folded, as is the raw verdict JSON."""

from __future__ import annotations

import html
import json
import re
from datetime import datetime, timezone

from reference.contract import INVARIANTS
from reports import plots
from reports.logs import RunLogs
from reports.verdict import explain

VIOLATIONS_LISTED = 200

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


#: an epoch-millisecond time in an explanation (13 digits: 2001..2286)
_EPOCH_MS = re.compile(r"(?<![\d.])1\d{12}(?![\d.])")
#: how far from the run's start a number may be and still be read as one of its times
_RUN_SPAN_MS = 30 * 24 * 3600 * 1000


def iso_ms(ts_ms: int) -> str:
    return datetime.fromtimestamp(ts_ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def offset(ts_ms: int, started_ms: int) -> str:
    """``t+12.345 s``: a time as an offset from the run's start, the ISO time (and the raw epoch
    ms) on hover."""
    d = (ts_ms - started_ms) / 1000
    return f"<span class='t' title='{iso_ms(ts_ms)} ({ts_ms})'>t{'+' if d >= 0 else '−'}{abs(d):.3f} s</span>"


def _timed(text, started_ms: int | None) -> str:
    """``text`` escaped, with every epoch-ms time of the run shown as an offset from its start."""
    out = _e(text)
    if not started_ms:
        return out
    return _EPOCH_MS.sub(lambda m: offset(int(m.group()), started_ms) if abs(int(m.group()) - started_ms) <= _RUN_SPAN_MS
                         else m.group(), out)


def _state(passed, accepted_only=False) -> tuple[str, str]:
    if passed is True:
        return "pass", "passed"
    if passed is False:
        return ("acc", "accepted") if accepted_only else ("fail", "FAILED")
    return "none", "not judged"


def report_html(verdict: dict, violations, plot_data: dict | None, run: dict | None, faults: list[dict],
                logs: RunLogs | None = None) -> str:
    """``logs``: the run's copied logs (:func:`reports.logs.run_logs`); None: the run has none (no
    section)."""
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


def _invariant_table(verdict: dict, started_ms: int | None = None) -> str:
    rows = ["<h2>Invariants</h2><table><tr><th>invariant</th><th>verdict</th><th>checked</th><th>violations</th><th>first example</th></tr>"]
    for inv in INVARIANTS:
        e = verdict["invariants"][inv]
        accepted_only = e["violations"] > 0 and e.get("accepted", 0) == e["violations"]
        cls, word = _state(e["passed"], accepted_only)
        if e.get("undecided"):
            word += f" ({e['undecided']} undecided)"
        first = e["examples"][0]["explanation"] if e["examples"] else ""
        rows.append(f"<tr class='{cls}'><td><b>{inv}</b></td><td>{word}</td><td>{e['checked']}</td>"
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
        out.append(f"<tr class='{cls}'><td>{_e(row['invariant'])}</td><td><code>{_e(ex['key'])}</code></td>"
                   f"<td>{_e(ex['attempt'])}</td><td>{_timed(ex['explanation'], started_ms)}{note}</td></tr>")
    out.append("</table>")
    return "".join(out)


def _logs(logs: RunLogs) -> str:
    out = ["<h2>Logs</h2>"]
    if logs.not_collected:
        out.append(f"<p class='none'>{_e(logs.not_collected)}</p>")
    if logs.links:
        out.append("<p>Copied into the run directory's <code>logs/</code> at the run's end.</p><ul>")
        for link in logs.links:
            name = f"<a href='{_e(link.href)}'><code>{_e(link.name)}</code></a>" if link.href else f"<code>{_e(link.name)}</code>"
            out.append(f"<li>{name} ({_e(link.note)})</li>")
        out.append("</ul>")
    if logs.tail is not None:
        name, text = logs.tail
        out.append(f"<details><summary>the last {len(text.splitlines())} lines of <code>{_e(name)}</code></summary>"
                   f"<pre>{_e(text)}</pre></details>")
    return "".join(out)


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
