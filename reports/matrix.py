"""The version matrix: verdicts of the same seeded scenarios on several versions, compared with a
direction (old -> new), for the user who is about to upgrade.

Input: checked runs, i.e. directories holding ``verdict.json`` and ``run.json`` (the checker copies
``run.json`` next to the verdict when it writes into ``--out``), or ``(run, verdict)`` /
``(run, verdict, run_dir)`` tuples. A scenario is identified by ``run.json``'s ``scenario``; a
version by ``system.adapter`` and ``system.version``. Versions are ordered old -> new as given:
the order of the input paths (``harness matrix``: the order of ``--systems``), and within one path
by version number (a version no number can be read from: last, as found).

Each scenario x invariant is compared between consecutive versions and, with more than two, between
the first and the last (listed first: the whole upgrade). A row's class:

* ``regression``: passed on the older, failed on the newer (a failure the baseline accepts on the
  newer is still one, marked ``accepted``, and does not gate the exit code);
* ``fix``: failed on the older, passed on the newer;
* ``unchanged``: the same outcome (a failure accepted on both sides, or accepted on one and
  failed on the other, is unchanged: it failed on both; a pass against nothing checked is no
  failure on either: unchanged);
* ``undecided``: either side says nothing of its version: undecided (a window still open, a host
  that stalled: ``reports.verdict.UNDECIDED_BY_HOST``, ``reports.stalls``), broken, interrupted,
  not judged, or a failure where the other side checked nothing;
* ``one-sided``: a scenario run on one side only: listed apart, per scenario, never a difference.

Counts are per invariant (a row is one scenario x invariant; violations of different invariants
are never summed). Output: ``matrix.json`` and a self-contained ``matrix.html`` (regressions, then
fixes, undecided, one-sided; the unchanged rows folded), each cell linking to its run's
``report.html`` relative to the page. ``matrix.json``::

    versions      [version, ...]                          old -> new
    scenarios     {scenario: {invariant: {version: cell}}}
    runs          {scenario: {version: {run_id, status, report, broken?, interrupted?}}}
    comparisons   [{older, newer, span: "first-to-last"|"step",
                    counts: {regression, fix, unchanged, undecided, one-sided},
                    by_invariant: {invariant: {regression, fix, unchanged, undecided}},
                    rows: [{scenario, invariant, class, older: cell, newer: cell,
                            accepted?, host_stalled?}]     regressions (gating first), fixes, undecided, unchanged
                    one_sided: [{scenario, only_on, run}]}]
    differences   [{scenario, invariant, by_version: {version: cell}}]   a regression or a fix somewhere
    host_stalled  [{scenario, invariant, by_version}]     undecided because a host stalled (not a difference)
    status, exit_code                                     the comparison's exit rule (:func:`matrix_status`)

    cell = {state, passed, violations, checked, accepted?, undecided_by_host?, explanation?,
            accepted_reason?, run_id, report}

The comparison's exit rule (:func:`matrix_status`, codes of ``reports.verdict.EXIT_CODES``): a
regression the baseline does not accept is a violation's code; else an undecided row (or nothing
compared) undecided's; else passed's. Fewer than two versions, for ``python -m hourglass.reports matrix``,
is an input error (``write_matrix(min_versions=2)``: a ``ContractError``).

``state`` is one of :data:`STATES`; ``report`` is the run's ``report.html`` relative to the
directory of ``matrix.json`` (None: the run has none). :func:`summary_text` is what both command
lines print (``python -m hourglass.reports matrix``, ``python -m hourglass matrix``).
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path
from typing import Iterable
from urllib.parse import quote

from hourglass.reference.contract import INVARIANTS, ContractError
from hourglass.reference.rundir import REPORT_HTML
from hourglass.reports.baseline import version_number
from hourglass.reports.checked import Checked, scan_checked
from hourglass.reports.timetext import with_offsets
from hourglass.reports.verdict import EXIT_CODES, PASSED, UNDECIDED, UNDECIDED_BY_HOST, VIOLATED, status

REGRESSION, FIX, UNCHANGED, UNDECIDED_ROW, ONE_SIDED = "regression", "fix", "unchanged", "undecided", "one-sided"
#: the rows' order on the page and in ``rows`` (one-sided ones are apart)
ROW_ORDER = (REGRESSION, FIX, UNDECIDED_ROW, UNCHANGED)
#: a cell's states; the last five say nothing of the version
PASS, FAIL, ACCEPTED, NOTHING_CHECKED = "pass", "fail", "accepted", "n/a"
OPEN, HOST_STALLED, BROKEN, INTERRUPTED, NOT_JUDGED = "undecided", "host-stalled", "broken", "interrupted", "not judged"
STATES = (PASS, FAIL, ACCEPTED, NOTHING_CHECKED, OPEN, HOST_STALLED, BROKEN, INTERRUPTED, NOT_JUDGED)
_SILENT = (OPEN, HOST_STALLED, BROKEN, INTERRUPTED, NOT_JUDGED)
_FAILED = (FAIL, ACCEPTED)


def _version(run: dict) -> str:
    system = run.get("system") or {}
    label = f"{system.get('adapter', '?')} {system.get('version', '?')}"
    if system.get("defects"):  # a simulated broker with injected defects is a system of its own
        label += " [" + ",".join(system["defects"]) + "]"
    return label


def _state(entry: dict | None, verdict: dict) -> str:
    """What one invariant of one run says of its version (an observed violation always stands)."""
    if entry is None:
        return NOT_JUDGED
    if entry.get("passed") is False:
        return ACCEPTED if int(entry.get("accepted") or 0) >= int(entry.get("violations") or 0) else FAIL
    if verdict.get("broken"):
        return BROKEN
    if verdict.get("interrupted"):
        return INTERRUPTED
    if entry.get("passed") is True:
        return PASS
    if entry.get(UNDECIDED_BY_HOST):
        return HOST_STALLED
    return OPEN if entry.get("undecided") else NOTHING_CHECKED


def _cell(entry: dict | None, verdict: dict, run_id: str, report: str | None, started_ms: int | None = None) -> dict:
    entry = entry or {}
    cell = {"state": _state(entry or None, verdict), "passed": entry.get("passed"),
            "violations": entry.get("violations", 0), "checked": entry.get("checked"), "run_id": run_id, "report": report}
    for key in ("accepted", UNDECIDED_BY_HOST):
        if entry.get(key):
            cell[key] = entry[key]
    examples = entry.get("examples") or []
    if cell["state"] in _FAILED and examples:
        cell["explanation"] = with_offsets(examples[0].get("explanation"), started_ms)  # t+ from the run's start
        if examples[0].get("accepted"):
            cell["accepted_reason"] = examples[0]["accepted"]
    return cell


def _report(run_dir, base: Path | None) -> str | None:
    """The run's report.html relative to ``base`` (the page's directory); None if it has none."""
    if run_dir is None or not (Path(run_dir) / REPORT_HTML).is_file():
        return None
    target = Path(run_dir).resolve() / REPORT_HTML
    return os.path.relpath(target, base.resolve()) if base is not None else str(target)


def _collect(items: Iterable[tuple], base: Path | None) -> tuple[list[str], dict, dict]:
    versions: list[str] = []
    table: dict[str, dict[str, dict[str, dict]]] = {}
    runs: dict[str, dict[str, dict]] = {}
    for item in items:
        run, verdict, run_dir = (*item, None)[:3]
        version = _version(run)
        if version not in versions:
            versions.append(version)
        scenario = run.get("scenario") or verdict["run_id"]
        report = _report(run_dir, base)
        runs.setdefault(scenario, {})[version] = {"run_id": verdict["run_id"], "status": status(verdict), "report": report,
                                                  **{k: verdict[k] for k in ("broken", "interrupted") if verdict.get(k)}}
        rows = table.setdefault(scenario, {})
        for inv in INVARIANTS:
            rows.setdefault(inv, {})[version] = _cell((verdict.get("invariants") or {}).get(inv), verdict,
                                                      verdict["run_id"], report, run.get("started_ms"))
    return versions, table, runs


def classify(older: dict, newer: dict) -> str:
    """The class of one scenario x invariant between an older and a newer version's cells."""
    a, b = older["state"], newer["state"]
    if a in _SILENT or b in _SILENT:
        return UNDECIDED_ROW
    if a == b or (a in _FAILED and b in _FAILED) or {a, b} == {PASS, NOTHING_CHECKED}:
        return UNCHANGED  # a failure on both; or no failure on either (one side checked nothing)
    if NOTHING_CHECKED in (a, b):
        return UNDECIDED_ROW  # a failure where the other side checked nothing
    return REGRESSION if a == PASS else FIX


def _pairs(versions: list[str]) -> list[tuple[str, str, str]]:
    steps = [(a, b, "step") for a, b in zip(versions, versions[1:])]
    return ([(versions[0], versions[-1], "first-to-last")] if len(versions) > 2 else []) + steps


def _row(scenario: str, inv: str, older: dict, newer: dict) -> dict:
    row = {"scenario": scenario, "invariant": inv, "class": classify(older, newer), "older": older, "newer": newer}
    if row["class"] == REGRESSION and newer["state"] == ACCEPTED:
        row["accepted"] = True  # known to the baseline on the newer: shown, not gating
    if HOST_STALLED in (older["state"], newer["state"]) and row["class"] == UNDECIDED_ROW:
        row["host_stalled"] = True
    return row


def _comparison(table: dict, runs: dict, older: str, newer: str, span: str) -> dict:
    rows, one_sided = [], []
    for scenario in sorted(table):
        on = [v for v in (older, newer) if v in runs[scenario]]
        if len(on) == 1:
            one_sided.append({"scenario": scenario, "only_on": on[0], "run": runs[scenario][on[0]]})
        elif on:
            rows += [_row(scenario, inv, table[scenario][inv][older], table[scenario][inv][newer]) for inv in INVARIANTS]
    rows.sort(key=lambda r: (ROW_ORDER.index(r["class"]), bool(r.get("accepted")), r["scenario"],
                             INVARIANTS.index(r["invariant"])))  # the regressions that gate first
    by_invariant = {inv: {c: sum(1 for r in rows if r["invariant"] == inv and r["class"] == c) for c in ROW_ORDER}
                    for inv in INVARIANTS}
    counts = {c: sum(1 for r in rows if r["class"] == c) for c in ROW_ORDER}
    counts[ONE_SIDED] = len(one_sided)
    return {"older": older, "newer": newer, "span": span, "counts": counts, "by_invariant": by_invariant,
            "rows": rows, "one_sided": one_sided}


def _by_version(rows: Iterable[dict], table: dict, versions: list[str], skip: set) -> list[dict]:
    out, seen = [], set(skip)
    for r in rows:
        key = (r["scenario"], r["invariant"])
        if key not in seen:
            seen.add(key)
            out.append({"scenario": r["scenario"], "invariant": r["invariant"],
                        "by_version": {v: table[r["scenario"]][r["invariant"]].get(v) for v in versions}})
    return out


def matrix_status(m: dict) -> str:
    """The comparison's status (its exit code: ``reports.verdict.EXIT_CODES``): violated if a row
    regressed to a failure the baseline does not accept; else undecided if a row is undecided or
    no scenario ran on both sides of any comparison; else passed (fixes and accepted regressions
    do not gate)."""
    rows = [r for c in m["comparisons"] for r in c["rows"]]
    if any(r["class"] == REGRESSION and not r.get("accepted") for r in rows):
        return VIOLATED
    if not rows or any(r["class"] == UNDECIDED_ROW for r in rows):
        return UNDECIDED
    return PASSED


def compare(items: Iterable[tuple], base: Path | None = None) -> dict:
    """``items`` of (run.json, verdict[, run directory]), old -> new -> the matrix as a plain dict;
    ``base``: the directory the links to the runs' reports are relative to."""
    versions, table, runs = _collect(items, base)
    comparisons = [_comparison(table, runs, a, b, span) for a, b, span in _pairs(versions)]
    changed = [r for c in comparisons for r in c["rows"] if r["class"] in (REGRESSION, FIX)]
    stalled = [r for c in comparisons for r in c["rows"] if r.get("host_stalled")]
    differences = _by_version(changed, table, versions, set())
    m = {"versions": versions, "scenarios": table, "runs": runs, "comparisons": comparisons, "differences": differences,
         "host_stalled": _by_version(stalled, table, versions, {(d["scenario"], d["invariant"]) for d in differences})}
    m["status"] = matrix_status(m)
    m["exit_code"] = EXIT_CODES[m["status"]]
    return m


def _order_key(indexed: tuple[int, Checked]) -> tuple:
    number = version_number(str((indexed[1].run.get("system") or {}).get("version") or ""))
    return (number is None, number or 0, indexed[0])


def load_checked_dirs(paths: Iterable[str]) -> list[tuple[dict, dict, Path]]:
    """(run.json, verdict.json, run directory) of every checked run at or below ``paths``
    (:func:`reports.checked.scan_checked`): in the order of ``paths``, and within one path by
    version number. What cannot be read is an input error (the first ContractError)."""
    out = []
    for p in paths:
        found, problems = scan_checked([p])
        if problems:
            raise problems[0]
        out += [(c.run, c.verdict, c.dir) for _, c in sorted(enumerate(found), key=_order_key)]
    return out


def load_checked(paths: Iterable[str]) -> list[tuple[dict, dict]]:
    """(run.json, verdict.json) of every checked run directory at or below ``paths``."""
    return [(run, verdict) for run, verdict, _ in load_checked_dirs(paths)]


# --- the text both command lines print ---

def _plural(n: int, word: str) -> str:
    """``n`` rows of a class: "1 fix", "2 fixes", "3 regressions", "2 undecided"."""
    if n == 1 or word in (UNDECIDED_ROW, UNCHANGED):
        return f"{n} {word}"
    return f"{n} {word + 'es' if word.endswith('x') else word + 's'}"


def _accepted(rows: Iterable[dict]) -> str:
    """" (2 accepted by the baseline)" of regressions, if any is accepted."""
    n = sum(1 for r in rows if r["class"] == REGRESSION and r.get("accepted"))
    return f" ({n} accepted by the baseline)" if n else ""


def _summary_of(c: dict) -> list[str]:
    n = c["counts"]
    lines = [f"{c['older']} -> {c['newer']}{' (first to last)' if c['span'] == 'first-to-last' else ''}: "
             f"{_plural(n[REGRESSION], 'regression')}{_accepted(c['rows'])}, {_plural(n[FIX], 'fix')}, "
             f"{n[UNCHANGED]} unchanged, {n[UNDECIDED_ROW]} undecided (scenario x invariant); "
             f"{n[ONE_SIDED]} one-sided (scenarios)"]
    for inv, by in c["by_invariant"].items():
        moved = [_plural(by[k], k) + (_accepted(r for r in c["rows"] if r["invariant"] == inv) if k == REGRESSION else "")
                 for k in (REGRESSION, FIX, UNDECIDED_ROW) if by[k]]
        if moved:
            lines.append(f"  {inv}: " + ", ".join(moved))
    for r in c["rows"]:
        if r["class"] == REGRESSION:
            why = r["newer"].get("explanation") or f"{r['newer']['violations']} violation(s)"
            known = " [accepted by the baseline: does not gate]" if r.get("accepted") else ""
            lines.append(f"  regression: {r['scenario']} {r['invariant']}{known}: {why}")
    for o in c["one_sided"]:
        lines.append(f"  one-sided: {o['scenario']} ran on {o['only_on']} only")
    return lines


def summary_text(m: dict, page: str | Path | None = None) -> str:
    """The classification of every comparison: counts, the moved invariants, each regression with
    the newer run's first explanation, the one-sided scenarios."""
    head = f"matrix of {', '.join(m['versions']) or 'no versions'}" + (f": {page}" if page else "")
    lines = [head] + [line for c in m["comparisons"] for line in _summary_of(c)]
    if not m["comparisons"]:
        lines.append("  nothing to compare: runs of at least two versions are needed")
    return "\n".join(lines)


# --- the page ---

_WORDS = {PASS: "pass", FAIL: "FAIL", ACCEPTED: "accepted", NOTHING_CHECKED: "n/a", OPEN: "undecided",
          HOST_STALLED: "undecided: host stalled", BROKEN: "broken", INTERRUPTED: "interrupted", NOT_JUDGED: "not judged"}
_CSS = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:110em}table{border-collapse:collapse;margin:.4em 0 1em}"
        "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;vertical-align:top}th{background:#f8f9fa}"
        ".pass{background:#e6f4ea}.fail{background:#fce8e6}.accepted{background:#fef7e0}.silent{background:#f1f3f4;color:#555}"
        ".regression{color:#b3261e}.fix{color:#137333}.why{font-size:90%;color:#333;max-width:60em}"
        "td.num{text-align:right}td.zero{color:#bbb;text-align:right}h2{margin-top:1.6em;border-bottom:1px solid #ddd}"
        "summary{cursor:pointer;margin:.6em 0}.legend{color:#444;font-size:92%;max-width:70em}td.name{white-space:nowrap}"
        ".why details summary{margin:.2em 0 0;color:#8a6d00}.status{font-size:110%;padding:.4em .8em;display:inline-block}"
        ".st-violated{background:#fce8e6}.st-undecided{background:#f1f3f4}.st-passed{background:#e6f4ea}")


def _cell_html(cell: dict) -> str:
    state = cell["state"]
    word = _WORDS[state]
    if state in _FAILED:
        word += f" ({cell['violations']}{', ' + str(cell['accepted']) + ' accepted' if cell.get('accepted') and state == FAIL else ''})"
    elif state == HOST_STALLED:
        word += f" ({cell[UNDECIDED_BY_HOST]})"
    cls = {PASS: "pass", FAIL: "fail", ACCEPTED: "accepted"}.get(state, "silent")
    text = html.escape(word)
    if cell.get("report"):
        text = f"<a href='{html.escape(quote(cell['report']))}' title='{html.escape(cell['run_id'])}'>{text}</a>"
    return f"<td class='{cls}'>{text}</td>"


def _why(r: dict) -> str:
    """What the row's decisive side says (HTML): the newer's explanation (a regression, unchanged
    failures), the older's (a fix), or why it is undecided; a baseline's reason folded below."""
    side = r["older"] if r["class"] == FIX else r["newer"]
    if r["class"] == UNDECIDED_ROW:
        silent = [f"{name}: {_WORDS[c['state']]}" for name, c in (("older", r["older"]), ("newer", r["newer"]))
                  if c["state"] in _SILENT or c["state"] == NOTHING_CHECKED]
        return html.escape("; ".join(silent) + ": says nothing of the version")
    text = html.escape(side.get("explanation") or "")
    if side.get("accepted_reason"):
        text += (f"<details><summary>accepted by the baseline{': does not gate' if r.get('accepted') else ''}</summary>"
                 f"{html.escape(str(side['accepted_reason']))}</details>")
    return text


def _rows_html(rows: list[dict], c: dict) -> str:
    head = (f"<tr><th>scenario</th><th>invariant</th><th>{html.escape(c['older'])}</th><th>{html.escape(c['newer'])}</th>"
            "<th>what the runs say</th></tr>")
    body = "".join(f"<tr><td class='name'>{html.escape(r['scenario'])}</td><td>{r['invariant']}</td>{_cell_html(r['older'])}"
                   f"{_cell_html(r['newer'])}<td class='why'>{_why(r)}</td></tr>" for r in rows)
    return f"<table>{head}{body}</table>"


def _counts_html(c: dict) -> str:
    head = "".join(f"<th class='{k}'>{k}</th>" for k in ROW_ORDER)
    moved = [(inv, by) for inv, by in c["by_invariant"].items() if any(by[k] for k in ROW_ORDER if k != UNCHANGED)]
    body = "".join(f"<tr><td>{inv}</td>" + "".join(f"<td class='{'num' if by[k] else 'zero'}'>{by[k]}</td>" for k in ROW_ORDER)
                   + "</tr>" for inv, by in moved)
    rest = len(c["by_invariant"]) - len(moved)
    note = f"<p>{'The' if not moved else 'The other'} {rest} invariants: unchanged wherever compared.</p>" if rest else ""
    return (f"<table><tr><th>invariant</th>{head}</tr>{body}</table>" if moved else "") + note


def _one_sided_html(c: dict) -> str:
    def link(o):
        report = o["run"].get("report")
        name = html.escape(o["run"]["run_id"])
        return f"<a href='{html.escape(quote(report))}'>{name}</a>" if report else name
    items = "".join(f"<li>{html.escape(o['scenario'])}: ran on {html.escape(o['only_on'])} only ({link(o)})</li>"
                    for o in c["one_sided"])
    return f"<h3>One-sided: {len(c['one_sided'])} scenarios run on one side only (not compared)</h3><ul>{items}</ul>"


def _comparison_html(c: dict) -> str:
    n = c["counts"]
    title = f"{html.escape(c['older'])} &rarr; {html.escape(c['newer'])}"
    out = [f"<h2>{title}{' (first to last)' if c['span'] == 'first-to-last' else ''}</h2>",
           f"<p><b class='regression'>{_plural(n[REGRESSION], 'regression')}</b>{_accepted(c['rows'])}, "
           f"<b class='fix'>{_plural(n[FIX], 'fix')}</b>, "
           f"{n[UNCHANGED]} unchanged, {n[UNDECIDED_ROW]} undecided (scenario &times; invariant rows); "
           f"{n[ONE_SIDED]} one-sided scenarios.</p>", _counts_html(c)]
    for cls, title in ((REGRESSION, "Regressions: passed on the older, failed on the newer"),
                       (FIX, "Fixes: failed on the older, passed on the newer"),
                       (UNDECIDED_ROW, "Undecided: one side says nothing of its version")):
        rows = [r for r in c["rows"] if r["class"] == cls]
        if rows:
            out.append(f"<h3 class='{cls}'>{title} ({len(rows)})</h3>{_rows_html(rows, c)}")
    if c["one_sided"]:
        out.append(_one_sided_html(c))
    same = [r for r in c["rows"] if r["class"] == UNCHANGED]
    out.append(f"<details><summary>{n[UNCHANGED]} unchanged rows (the same outcome on both)</summary>"
               f"{_rows_html(same, c) if same else ''}</details>")
    return "".join(out)


def _status_html(m: dict) -> str:
    rows = [r for c in m["comparisons"] for r in c["rows"]]
    gating = sum(1 for r in rows if r["class"] == REGRESSION and not r.get("accepted"))
    undecided = sum(1 for r in rows if r["class"] == UNDECIDED_ROW)
    why = {VIOLATED: f"{gating} regression row(s) the baseline does not accept",
           UNDECIDED: f"no regression, but {undecided} row(s) undecided: run them again" if rows else "nothing compared",
           PASSED: "no regression the baseline does not accept"}[m["status"]]
    return f"<p class='status st-{m['status']}'><b>{m['status']}</b> (exit {m['exit_code']}): {html.escape(why)}</p>"


def matrix_html(m: dict) -> str:
    out = ["<!doctype html><html><head><meta charset='utf-8'><title>Hourglass version matrix</title>",
           f"<style>{_CSS}</style></head><body><h1>Version matrix: {html.escape(' → '.join(m['versions']))}</h1>",
           _status_html(m),
           "<p class='legend'>Each scenario &times; invariant is compared from the older version to the newer: a "
           "<b>regression</b> passed on the older and failed on the newer, a <b>fix</b> the reverse; <b>undecided</b> rows "
           "have a side that says nothing of its version (a host that stalled, a broken or interrupted run, a window "
           "still open); <i>accepted</i> failures are known to the baseline (one accepted on both sides is unchanged). "
           "Counts are per invariant. Each cell links to its run's report.</p>"]
    out += [_comparison_html(c) for c in m["comparisons"]]
    if not m["comparisons"]:
        out.append("<p>Nothing to compare: runs of at least two versions are needed.</p>")
    out.append("</body></html>")
    return "".join(out)


def write_matrix(paths: Iterable[str], out_dir: str, min_versions: int = 0) -> dict:
    """matrix.json and matrix.html of the checked runs at or below ``paths`` into ``out_dir``;
    fewer than ``min_versions`` versions is an input error (nothing is written)."""
    paths, out = list(paths), Path(out_dir)
    m = compare(load_checked_dirs(paths), out)
    if len(m["versions"]) < min_versions:
        raise ContractError(", ".join(map(str, paths)), "system.version",
                            f"checked runs of at least {min_versions} versions", m["versions"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "matrix.json").write_text(json.dumps(m, indent=1) + "\n")
    (out / "matrix.html").write_text(matrix_html(m))
    return m
