"""The version matrix: verdicts of the same seeded scenarios on several versions, side by side.

Input: checked runs, i.e. directories holding ``verdict.json`` and ``run.json`` (the checker copies
``run.json`` next to the verdict when it writes into ``--out``), or ``(run, verdict)`` pairs. A
scenario is identified by ``run.json``'s ``scenario``; a version by ``system.adapter`` and
``system.version``. Output: ``matrix.json`` and a self-contained ``matrix.html``; the rows where
the versions disagree come first.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Iterable

from reference.contract import INVARIANTS, ContractError
from reference.rundir import RUN_JSON, VERDICT_JSON, find_dirs
from reports.verdict import UNDECIDED_BY_HOST


def _version(run: dict) -> str:
    system = run.get("system") or {}
    label = f"{system.get('adapter', '?')} {system.get('version', '?')}"
    if system.get("defects"):  # a simulated broker with injected defects is a system of its own
        label += " [" + ",".join(system["defects"]) + "]"
    return label


def _cell(entry: dict | None) -> dict | None:
    if entry is None:
        return None
    cell = {"passed": entry["passed"], "violations": entry["violations"], "checked": entry["checked"]}
    if entry.get(UNDECIDED_BY_HOST):
        cell[UNDECIDED_BY_HOST] = entry[UNDECIDED_BY_HOST]
    return cell


def _host_stalled(cell: dict | None) -> bool:
    """An undecided cell the host's stalls explain (reports.stalls): it says nothing of its version."""
    return bool(cell and cell.get("passed") is None and cell.get(UNDECIDED_BY_HOST))


def compare(pairs: Iterable[tuple[dict, dict]]) -> dict:
    """``pairs`` of (run.json, verdict) -> the matrix as a plain dict."""
    table: dict[str, dict[str, dict[str, dict | None]]] = {}
    versions: list[str] = []
    for run, verdict in pairs:
        version = _version(run)
        if version not in versions:
            versions.append(version)
        scenario = run.get("scenario") or verdict["run_id"]
        rows = table.setdefault(scenario, {})
        overall = rows.setdefault("(run)", {})
        overall[version] = {"passed": verdict["passed"], "violations": sum(e["violations"] for e in verdict["invariants"].values()),
                            "checked": None}
        by_host = sum(e.get(UNDECIDED_BY_HOST, 0) for e in verdict["invariants"].values())
        if by_host:
            overall[version][UNDECIDED_BY_HOST] = by_host
        for inv in INVARIANTS:
            rows.setdefault(inv, {})[version] = _cell(verdict["invariants"].get(inv))
    versions.sort()
    differences, host_stalled = [], []
    for scenario, rows in sorted(table.items()):
        for inv, by_version in rows.items():
            states = {json.dumps((by_version.get(v) or {}).get("passed")) for v in versions}
            if len(states) > 1:
                row = {"scenario": scenario, "invariant": inv, "by_version": {v: by_version.get(v) for v in versions}}
                # a version undecided because its host stalled differs from none: the host did
                (host_stalled if any(_host_stalled(by_version.get(v)) for v in versions) else differences).append(row)
    return {"versions": versions, "scenarios": table, "differences": differences, "host_stalled": host_stalled}


def load_checked(paths: Iterable[str]) -> list[tuple[dict, dict]]:
    """(run.json, verdict.json) of every checked run directory at or below ``paths``."""
    pairs = []
    for p in paths:
        root = Path(p)
        found = [d / VERDICT_JSON for d in find_dirs(root, lambda d: (d / VERDICT_JSON).is_file(),
                                                     lambda d: sorted(c for c in d.iterdir() if c.is_dir()) if d.is_dir() else [], Path.resolve)]
        if not found:
            raise ContractError(str(root), None, "verdict.json in it or below it", "none")
        for vf in found:
            rf = vf.parent / RUN_JSON
            if not rf.exists():
                raise ContractError(str(vf.parent), "run.json", "run.json next to verdict.json (scenario and system)", "missing")
            pairs.append((json.loads(rf.read_text()), json.loads(vf.read_text())))
    return pairs


def _word(cell: dict | None) -> tuple[str, str]:
    if cell is None:
        return "none", "—"
    if cell["passed"] is True:
        return "pass", "pass"
    if cell["passed"] is False:
        return "fail", f"FAIL ({cell['violations']})"
    if _host_stalled(cell):
        return "none", f"undecided: host stalled ({cell[UNDECIDED_BY_HOST]})"
    return "none", "n/a"


def matrix_html(m: dict) -> str:
    versions = m["versions"]
    head = "".join(f"<th>{html.escape(v)}</th>" for v in versions)
    out = ["<!doctype html><html><head><meta charset='utf-8'><title>Hourglass version matrix</title><style>",
           "body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .6em}",
           ".pass{background:#e6f4ea}.fail{background:#fce8e6}.none{background:#f1f3f4}.diff td:first-child{font-weight:bold}</style></head><body>",
           f"<h1>Version matrix</h1><p>{len(m['differences'])} scenario/invariant rows differ between versions"
           f"{_stalled_note(m)}.</p>",
           f"<table><tr><th>scenario</th><th>invariant</th>{head}</tr>"]
    diff = {(d["scenario"], d["invariant"]) for d in m["differences"]}
    rows = sorted(((s, i) for s, r in m["scenarios"].items() for i in r), key=lambda k: ((k[0], k[1]) not in diff, k))
    for scenario, inv in rows:
        cells = "".join(f"<td class='{c}'>{w}</td>" for c, w in (_word(m["scenarios"][scenario][inv].get(v)) for v in versions))
        cls = " class='diff'" if (scenario, inv) in diff else ""
        out.append(f"<tr{cls}><td>{html.escape(scenario)}</td><td>{inv}</td>{cells}</tr>")
    out.append("</table></body></html>")
    return "".join(out)


def _stalled_note(m: dict) -> str:
    n = len(m.get("host_stalled") or ())
    return f"; {n} more are undecided on some version because its host stalled (not a difference)" if n else ""


def write_matrix(paths: Iterable[str], out_dir: str) -> dict:
    m = compare(load_checked(paths))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "matrix.json").write_text(json.dumps(m, indent=1) + "\n")
    (out / "matrix.html").write_text(matrix_html(m))
    return m
