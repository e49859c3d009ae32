"""The history page: every scenario × invariant's outcome across the batches (nights) of a
directory of runs, newest right — Jepsen's web view of its store, Allure's trends.

    python -m hourglass history runs/ [--out DIR]     -> DIR/history.html, DIR/history.json

Input: directories holding checked runs at any depth (``run.json`` + ``verdict.json``, read by
:func:`reports.checked.scan_checked`, the one loader), and the batch summaries beside them
(``summary.json``: the scenarios a system skipped, which have no run directory; the runs the
harness marked broken, and those it made no directory for). A run directory that cannot be read
is listed with its reason and left out.

A *batch* is the output tree one harness invocation wrote (its ``--out``): the nearest directory at
or above a run that holds ``marker`` (the harness's lock file, ``harness.outdir.LOCK_FILE``);
without one (older trees), the directory the run lies in. Its time is the stamp its directory's
name ends with (``runs/main-<stamp>``, ``harness.outdir.run_stamp``: local time), else its first run
id's stamp, else the earliest mtime of its files. A system
is run.json's ``system.spec`` (what ``--system`` said: ``rocketmq:latest`` stays one row across the
versions it resolved to; the version is in each cell's title).

Outcomes (a cell): ``passed``, ``violated``, ``undecided``, ``broken`` (:mod:`reports.verdict`),
``skipped`` (the system could not run the scenario), ``unchecked`` (the run exercised no message
of that invariant). The row ``(run)`` is the run as a whole (:func:`reports.verdict.status`); an
invariant gets a row where some run passed, violated or left it undecided. Flakiness of a row:
violated / judged (passed or violated) runs; *flaky* when it both passed and violated in the window,
or a run passed only on CI's retry (``reports.verdict.FLAKY``, its run row).

``history.json``::

    {"out": DIR, "batches": [BATCH, ...] (oldest first),
     "systems": {SYSTEM: {"batches": [batch id, ...] (those that ran it, oldest first),
                          "scenarios": [{"scenario", "changed", "flaky", "steady", "rows": [ROW, ...]}, ...]}},
     "runs": n, "skipped": n, "flaky": [PAIR, ...], "latest_failures": [PAIR, ...],
     "problems": [{"where", "reason"}, ...]}
    BATCH: {"id" (its directory below the batches' common parent), "dir", "started" ("2026-11-26 11:00:19"),
            "hourglass_version" (null when no run recorded it), "systems": [...], "runs", "skipped"}
    ROW:   {"invariant" ("(run)" or one of reference.contract.INVARIANTS),
            "cells": [{"batch", "outcome", "run_id", "href" (relative to DIR; null: nothing to open), "note"}]
                     (oldest first; a batch may hold several: repeats),
            "judged", "violated", "flakiness" (null when nothing was judged), "flaky",
            "latest", "previous" (the last two outcomes other than unchecked; null: none), "changed"}
    PAIR:  {"system", "scenario", "invariant", "outcome", "run_id", "href"}

Scenarios come changed first (the latest outcome of a row differs from the one before it), then
flaky, then the others, the steady ones last (every run passed: folded on the page), each by name.
"""

from __future__ import annotations

import html
import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable
from urllib.parse import quote

from hourglass.reference.contract import INVARIANTS, VERSION_FIELD, ContractError
from hourglass.reference.rundir import REPORT_HTML, RUN_JSON, VERDICT_JSON, find_dirs
from hourglass.reports.checked import Checked, scan_checked, subdirs
from hourglass.reports.verdict import (BROKEN, FLAKY, PASSED, UNDECIDED, UNDECIDED_BY_HOST, VIOLATED, gating_violations,
                                      mark_broken, shown_status, status)

HISTORY_HTML, HISTORY_JSON = "history.html", "history.json"
SUMMARY_JSON, INDEX_HTML = "summary.json", "index.html"  # harness.session.write_summary's, beside a system's runs
SKIPPED, UNCHECKED = "skipped", "unchecked"
RUN_ROW = "(run)"
#: run.json's (and summary.json's) record of the Hourglass that made a run (reference.contract's
#: run fields; absent in runs made before it was recorded)
#: the outcomes as the page colours them, in the order the legend lists them
OUTCOMES = (PASSED, FLAKY, VIOLATED, UNDECIDED, BROKEN, SKIPPED, UNCHECKED)
_STAMP = re.compile(r"(\d{8}T\d{6})(?:\.(\d{3}))?(?:-\d+)?$")


@dataclass
class Entry:
    """One scenario's run (or skip) in one batch, as the history shows it."""

    batch: Path
    system: str
    scenario: str
    run_id: str | None
    when: float  # seconds since the epoch: the run's stamp, else its file's mtime
    verdict: dict | None  # None: skipped
    target: Path | None  # what its cells open: report.html, else verdict.json, else the batch's index.html
    version: str | None  # the Hourglass that made it
    note: str = ""
    checked: bool = False  # a checked run directory (not only a summary's line)


def stamp_time(run_id: str | None) -> float | None:
    """The time in a run id's stamp (``…-20261126T110019.883-25123``: local time), None without one."""
    m = _STAMP.search(run_id or "")
    if not m:
        return None
    try:
        return time.mktime(time.strptime(m.group(1), "%Y%m%dT%H%M%S")) + int(m.group(2) or 0) / 1000
    except (ValueError, OverflowError):
        return None


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


class _Batches:
    """Which batch a directory belongs to: the nearest directory at or above it holding ``marker``
    (looked up once per directory), else ``fallback``."""

    def __init__(self, marker: str | None):
        self.marker = marker
        self._root: dict[Path, Path | None] = {}

    def of(self, d: Path, fallback: Path) -> Path:
        return self._find(d.absolute()) or fallback.absolute()

    def _find(self, d: Path) -> Path | None:
        if self.marker is None:
            return None
        if d not in self._root:
            here = (d / self.marker).exists()
            self._root[d] = d if here else (None if d.parent == d else self._find(d.parent))
        return self._root[d]


def _system(run: dict) -> str:
    system = run.get("system") or {}
    return str(system.get("spec") or system.get("system") or f"{system.get('adapter', '?')} {system.get('version', '?')}")


def _checked_entry(c: Checked, batches: _Batches) -> Entry:
    run_id = str(c.verdict.get("run_id") or c.run.get("run_id") or c.dir.name)
    report = c.dir / REPORT_HTML
    system = c.run.get("system") or {}
    note = f"{system.get('adapter', '?')} {system.get('version', '?')}"
    return Entry(batches.of(c.dir, c.dir.parent), _system(c.run), str(c.run.get("scenario") or run_id), run_id,
                 stamp_time(run_id) or _mtime(c.dir / RUN_JSON), c.verdict,
                 report if report.is_file() else c.dir / VERDICT_JSON, c.run.get(VERSION_FIELD), note, True)


def _summaries(paths: Iterable[str]) -> list[Path]:
    """The batch summaries (``summary.json``) at or below ``paths``."""
    out: list[Path] = []
    for p in paths:
        out += find_dirs(Path(p), lambda d: (d / SUMMARY_JSON).is_file(), subdirs, Path.resolve)
    return out


def _summary_entries(sys_dir: Path, by_id: dict[str, Entry], batches: _Batches, problems: list[ContractError]) -> list[Entry]:
    """What a summary adds to the checked runs: its skipped scenarios (``skipped``; older summaries:
    verdicts marked ``skipped``), the reason the harness marked a run broken, and a run it made
    no directory for (a broken cell)."""
    path = sys_dir / SUMMARY_JSON
    try:
        summary = json.loads(path.read_text())
        system, verdicts = str(summary["system"]), list(summary.get("verdicts") or [])
        skipped = list(summary.get(SKIPPED) or [])
    except (OSError, ValueError, KeyError, TypeError) as e:
        problems.append(ContractError(str(path), None, "a batch summary (system, verdicts)", f"unreadable: {e!r}"))
        return []
    skipped += [{"scenario": v.get("scenario"), "reason": v[SKIPPED], "run_id": v.get("run_id")} for v in verdicts if v.get(SKIPPED)]
    batch = batches.of(sys_dir, sys_dir)
    index = sys_dir / INDEX_HTML if (sys_dir / INDEX_HTML).is_file() else None
    when, version = _mtime(path), summary.get(VERSION_FIELD)
    out = [Entry(batch, system, str(s.get("scenario") or "?"), s.get("run_id"), stamp_time(s.get("run_id")) or when, None,
                 index, version, f"skipped: {s.get('reason')}") for s in skipped]
    for v in verdicts:
        run_id = str(v.get("run_id") or "")
        if v.get(SKIPPED) or not run_id:
            continue
        known = by_id.get(run_id)
        if known is None and not v.get("run_dir") and v.get("scenario"):  # the harness made no run directory
            out.append(Entry(batch, system, str(v["scenario"]), run_id, stamp_time(run_id) or when, v, index, version,
                             str(v.get("broken") or "")))
        elif known is not None and known.verdict is not None and v.get("broken") and not known.verdict.get("broken"):
            known.verdict = mark_broken(known.verdict, str(v["broken"]))
    return out


def collect(paths: list[str], marker: str | None) -> tuple[list[Entry], list[ContractError]]:
    """Every run and skip at or below ``paths``, and what could not be read."""
    checked, problems = scan_checked(paths)
    batches = _Batches(marker)
    once = {c.dir.resolve(): c for c in reversed(checked)}  # a tree given twice (runs, runs/x): each run once
    entries = [_checked_entry(c, batches) for c in checked if once[c.dir.resolve()] is c]
    by_id = {e.run_id: e for e in entries if e.run_id}
    for sys_dir in {d.resolve(): d for d in reversed(_summaries(paths))}.values():
        entries += _summary_entries(sys_dir, by_id, batches, problems)
    return entries, problems


def outcome(entry: Entry, invariant: str) -> str:
    """The outcome of ``entry`` for ``invariant`` (:data:`RUN_ROW`: the run as a whole)."""
    v = entry.verdict
    if v is None:
        return SKIPPED
    st = status(v)
    if invariant == RUN_ROW:
        return shown_status(v)  # a pass only on CI's retry: flaky, never plain green
    e = (v.get("invariants") or {}).get(invariant) or {}
    if e.get("passed") is False and gating_violations({"invariants": {invariant: e}}) > 0:
        return VIOLATED
    if st == BROKEN:
        return BROKEN
    if e.get("passed") is not None:  # passed, or violated only where a baseline accepts it
        return PASSED
    return UNDECIDED if e.get("undecided") or (st == UNDECIDED and e.get("checked")) else UNCHECKED


def _cell_note(entry: Entry, invariant: str) -> str:
    v = entry.verdict or {}
    e = (v.get("invariants") or {}).get(invariant) or {} if invariant != RUN_ROW else {}
    parts = [entry.note] if entry.note else []
    if e.get("violations"):
        parts.append(f"{e['violations']}/{e.get('checked')} violated" + (f", {e['accepted']} accepted" if e.get("accepted") else ""))
    if e.get("undecided"):
        parts.append(f"{e['undecided']} undecided" + (f" ({e[UNDECIDED_BY_HOST]} by host stalls)" if e.get(UNDECIDED_BY_HOST) else ""))
    if invariant == RUN_ROW and (v.get("broken") or v.get("interrupted")):
        parts.append(str(v.get("broken") or v.get("interrupted")))
    return "; ".join(parts)


def _href(target: Path | None, out_dir: Path) -> str | None:
    if target is None:
        return None
    return quote(Path(os.path.relpath(target.absolute(), out_dir.absolute())).as_posix())


def _batches(entries: list[Entry]) -> list[dict]:
    """The batches, oldest first, with what each ran."""
    by_dir: dict[Path, list[Entry]] = {}
    for e in entries:
        by_dir.setdefault(e.batch, []).append(e)
    # when the harness began it: its directory's stamp (``runs/main-<stamp>``), else its first run's
    began = {d: stamp_time(d.name) or min(e.when for e in es) for d, es in by_dir.items()}
    base = os.path.commonpath([str(d.parent) for d in by_dir])  # ids: the batches' paths below their common parent
    out = []
    for d, es in sorted(by_dir.items(), key=lambda kv: (began[kv[0]], str(kv[0]))):
        # the Hourglass its runs recorded; a batch of skips only: the one its summary recorded
        versions = sorted({str(e.version) for e in es if e.version and e.checked}) or sorted({str(e.version) for e in es if e.version})
        out.append({"id": Path(os.path.relpath(d, base)).as_posix(), "dir": str(d),
                    "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(began[d])),
                    VERSION_FIELD: ", ".join(versions) or None, "systems": sorted({e.system for e in es}),
                    "runs": sum(1 for e in es if e.verdict is not None), "skipped": sum(1 for e in es if e.verdict is None)})
    return out


def _row(invariant: str, entries: list[Entry], batch_id: dict[Path, str], out_dir: Path) -> dict:
    cells = [{"batch": batch_id[e.batch], "outcome": outcome(e, invariant), "run_id": e.run_id,
              "href": _href(e.target, out_dir), "note": _cell_note(e, invariant)} for e in entries]
    seen = [c["outcome"] for c in cells]
    judged, violated = sum(o in (PASSED, FLAKY, VIOLATED) for o in seen), seen.count(VIOLATED)
    said = [o for o in seen if o != UNCHECKED]  # a run that exercised no message of it says nothing new
    return {"invariant": invariant, "cells": cells, "judged": judged, "violated": violated,
            "flakiness": round(violated / judged, 3) if judged else None,
            "flaky": (violated > 0 and PASSED in seen) or FLAKY in seen,
            "latest": said[-1] if said else None, "previous": said[-2] if len(said) > 1 else None,
            "changed": len(said) > 1 and said[-1] != said[-2]}


def _scenario(name: str, entries: list[Entry], batch_id: dict[Path, str], out_dir: Path) -> dict:
    rows = [_row(RUN_ROW, entries, batch_id, out_dir)]
    for inv in INVARIANTS:
        row = _row(inv, entries, batch_id, out_dir)
        if any(c["outcome"] in (PASSED, VIOLATED, UNDECIDED) for c in row["cells"]):
            rows.append(row)
    steady = all(c["outcome"] in (PASSED, UNCHECKED) for r in rows for c in r["cells"])
    return {"scenario": name, "changed": any(r["changed"] for r in rows), "flaky": any(r["flaky"] for r in rows),
            "steady": steady, "rows": rows}


def _pairs(systems: dict, which) -> list[dict]:
    out = []
    for system, s in systems.items():
        for sc in s["scenarios"]:
            for r in sc["rows"]:
                if which(r):
                    last = r["cells"][-1]
                    out.append({"system": system, "scenario": sc["scenario"], "invariant": r["invariant"],
                                "outcome": last["outcome"], "run_id": last["run_id"], "href": last["href"],
                                "flakiness": r["flakiness"]})
    return out


def build_history(paths: list[str], out_dir: Path, marker: str | None = None) -> dict:
    """The history of the runs at or below ``paths`` as ``history.json`` holds it (links relative
    to ``out_dir``); ContractError when no checked run is found (naming the paths and what could not
    be read)."""
    entries, problems = collect(paths, marker)
    if not any(e.checked for e in entries):
        why = "; ".join(str(p) for p in problems[:5]) + (f"; {len(problems) - 5} more" if len(problems) > 5 else "")
        raise ContractError(", ".join(map(str, paths)), None, "checked runs in or below it (a directory per run holding "
                            f"{RUN_JSON} and the checker's {VERDICT_JSON})", "none" + (f": {why}" if why else ""))
    batches = _batches(entries)
    batch_id = {Path(b["dir"]): b["id"] for b in batches}
    order = {b["id"]: i for i, b in enumerate(batches)}
    entries.sort(key=lambda e: (order[batch_id[e.batch]], e.when, e.run_id or ""))
    systems: dict[str, dict] = {}
    for system in sorted({e.system for e in entries}):
        mine = [e for e in entries if e.system == system]
        scenarios = [_scenario(n, [e for e in mine if e.scenario == n], batch_id, out_dir) for n in sorted({e.scenario for e in mine})]
        scenarios.sort(key=lambda s: (not s["changed"], not s["flaky"], s["steady"], s["scenario"]))
        systems[system] = {"batches": [b["id"] for b in batches if system in b["systems"]], "scenarios": scenarios}
    return {"out": str(out_dir), "batches": batches, "systems": systems,
            "runs": sum(b["runs"] for b in batches), "skipped": sum(b["skipped"] for b in batches),
            "flaky": _pairs(systems, lambda r: r["flaky"] and (r["invariant"] != RUN_ROW
                                                                or any(c["outcome"] == FLAKY for c in r["cells"]))),
            "latest_failures": _pairs(systems, lambda r: (r["latest"] == VIOLATED and r["invariant"] != RUN_ROW)
                                      or (r["latest"] == BROKEN and r["invariant"] == RUN_ROW)),
            "problems": [{"where": p.where, "reason": str(p)} for p in problems]}


def write_pages(h: dict, out_dir: Path) -> None:
    """``history.json`` and ``history.html`` of ``h`` (:func:`build_history` for ``out_dir``) in ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / HISTORY_JSON).write_text(json.dumps(h, indent=1) + "\n")
    (out_dir / HISTORY_HTML).write_text(history_html(h))


def write_history(paths: list[str], out_dir: Path, marker: str | None = None) -> dict:
    """:func:`build_history`, written into ``out_dir``."""
    h = build_history(paths, out_dir, marker)
    write_pages(h, out_dir)
    return h


def summary_text(h: dict, limit: int = 10) -> str:
    """What the command prints: the window, the counts, the flaky pairs and the latest failures."""
    b = h["batches"]
    lines = [f"history: {len(b)} batches ({b[0]['started']} .. {b[-1]['started']}), {h['runs']} runs, {h['skipped']} skipped; "
             f"{len(h['flaky'])} flaky scenario/invariant pairs, {len(h['latest_failures'])} failing in their latest run"]
    for title, pairs in (("flaky", h["flaky"]), ("latest failures", h["latest_failures"])):
        for p in pairs[:limit]:
            rate = f" (violated in {p['flakiness']:.0%} of judged runs)" if title == "flaky" else f": {p['outcome']} in {p['run_id']}"
            lines.append(f"  {title}: {p['system']} {p['scenario']} {p['invariant']}{rate}")
        if len(pairs) > limit:
            lines.append(f"  {title}: {len(pairs) - limit} more on the page")
    for p in h["problems"]:
        lines.append(f"  left out: {p['reason']}")
    lines.append(f"page: {Path(h['out']) / HISTORY_HTML}")
    return "\n".join(lines)


_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}h1{margin:.2em 0}h2{margin-top:1.6em}
table{border-collapse:collapse}td,th{padding:1px 6px;font-size:13px;text-align:left;vertical-align:middle}
th{font-weight:600;border-bottom:1px solid #bbb}.meta td,.meta th{border:1px solid #ddd;padding:2px 8px}
tbody.sc{border-top:1px solid #ccc}tr.run td.name{font-weight:600}tr.inv td.name{color:#666;padding-left:1.5em}
td.cells{white-space:nowrap;text-align:center;padding:1px 2px}th.b{font-weight:400;font-size:11px;color:#555;
writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap;padding:4px 2px;text-align:left}
.o{display:inline-block;width:13px;height:13px;margin:0 1px;border-radius:2px;vertical-align:middle;text-decoration:none}
.passed{background:#2e9e4f}.flaky{background:#ff7043}.violated{background:#d93025}.undecided{background:#f2a900}.broken{background:#7b1fa2}
.skipped{background:#9e9e9e}.unchecked{background:#fff;border:1px solid #ccc;width:11px;height:11px}
.badge{font-size:11px;padding:0 4px;border-radius:3px;margin-left:4px;color:#fff}.b-changed{background:#1a73e8}
.b-flaky{background:#e8710a}.rate{font-variant-numeric:tabular-nums;color:#444}.flaky .rate{color:#e8710a;font-weight:600}
.legend span{margin-right:1em}.problems{color:#a00;font-size:13px}details.steady{margin-top:.6em}
details.steady>summary{cursor:pointer;color:#2e7d32}
"""


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _mark(cell: dict) -> str:
    title = _e(f"{cell['batch']}: {cell['outcome']}" + (f" — {cell['run_id']}" if cell["run_id"] else "")
               + (f" — {cell['note']}" if cell["note"] else ""))
    if cell["href"]:
        return f'<a class="o {cell["outcome"]}" href="{_e(cell["href"])}" title="{title}"></a>'
    return f'<span class="o {cell["outcome"]}" title="{title}"></span>'


def _rate(row: dict) -> str:
    if row["flakiness"] is None:
        return "—"
    return f"{row['violated']}/{row['judged']} ({row['flakiness']:.0%})"


def _rows_html(sc: dict, columns: list[str]) -> str:
    out = ['<tbody class="sc">']
    for r in sc["rows"]:
        by_batch: dict[str, list[str]] = {}
        for c in r["cells"]:
            by_batch.setdefault(c["batch"], []).append(_mark(c))
        cells = "".join(f'<td class="cells">{"".join(by_batch.get(b, []))}</td>' for b in columns)
        run = r["invariant"] == RUN_ROW
        badges = ('<span class="badge b-changed">changed</span>' if r["changed"] else "") + (
            '<span class="badge b-flaky">flaky</span>' if r["flaky"] else "")
        cls = ("run" if run else "inv") + (" flaky" if r["flaky"] else "")
        out.append(f'<tr class="{cls}"><td class="name">{_e(sc["scenario"] if run else r["invariant"])}{badges}</td>'
                   f'<td class="rate">{_rate(r)}</td>{cells}'
                   f'<td>{_e(r["latest"] or "")}{" (was " + _e(r["previous"]) + ")" if r["changed"] else ""}</td></tr>')
    out.append("</tbody>")
    return "".join(out)


def _table(scenarios: list[dict], columns: list[str], batches: dict[str, dict]) -> str:
    heads = "".join(f'<th class="b" title="{_e(b + " — Hourglass " + str(batches[b][VERSION_FIELD] or "?"))}">'
                    f'{_e(batches[b]["started"][:16])}</th>' for b in columns)
    return (f"<table><thead><tr><th>scenario / invariant</th><th>violated / judged</th>{heads}<th>latest</th></tr></thead>"
            + "".join(_rows_html(sc, columns) for sc in scenarios) + "</table>")


def _system_html(system: str, s: dict, batches: dict[str, dict]) -> str:
    """One system's section: the scenarios with something to look at, then the steady ones folded."""
    shown = [sc for sc in s["scenarios"] if not sc["steady"]]
    steady = [sc for sc in s["scenarios"] if sc["steady"]]
    out = [f'<h2 id="{_e(quote(system))}">{_e(system)}</h2>']
    if shown:
        out.append(_table(shown, s["batches"], batches))
    if steady:
        out.append(f'<details class="steady"><summary>{len(steady)} steady scenarios (every run passed)</summary>'
                   f'{_table(steady, s["batches"], batches)}</details>')
    return "".join(out)


def _batch_table(h: dict) -> str:
    rows = "".join(f"<tr><td>{_e(b['started'])}</td><td>{_e(b['id'])}</td><td>{_e(b[VERSION_FIELD] or '—')}</td>"
                   f"<td>{_e(', '.join(b['systems']))}</td><td>{b['runs']}</td><td>{b['skipped']}</td></tr>"
                   for b in reversed(h["batches"]))
    return ('<details><summary>batches (newest first)</summary><table class="meta"><tr><th>started</th><th>directory</th>'
            f"<th>Hourglass</th><th>systems</th><th>runs</th><th>skipped</th></tr>{rows}</table></details>")


def history_html(h: dict) -> str:
    """The page: a line of counts, the legend, per system one row of cells per scenario and invariant."""
    b = h["batches"]
    batches = {x["id"]: x for x in b}
    legend = "".join(f'<span><i class="o {o}"></i> {o}</span>' for o in OUTCOMES)
    problems = "".join(f"<li>{_e(p['reason'])}</li>" for p in h["problems"])
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>Hourglass history</title><style>{_CSS}</style></head><body>",
           "<h1>Hourglass history</h1>",
           f"<p>{len(b)} batches from {_e(b[0]['started'])} to {_e(b[-1]['started'])} (newest right); {h['runs']} runs, "
           f"{h['skipped']} skipped; {len(h['flaky'])} flaky scenario/invariant pairs; {len(h['latest_failures'])} failing "
           f"in their latest run. Systems: " + ", ".join(f'<a href="#{_e(quote(s))}">{_e(s)}</a>' for s in h["systems"]) + ".</p>",
           f'<p class="legend">{legend}</p>', _batch_table(h)]
    if problems:
        out.append(f'<details class="problems" open><summary>{len(h["problems"])} left out</summary><ul>{problems}</ul></details>')
    out += [_system_html(system, s, batches) for system, s in h["systems"].items()]
    out.append("</body></html>")
    return "".join(out)
