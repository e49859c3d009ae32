"""The history page (``python -m hourglass history``): every scenario × invariant's outcome across the
batches of a tree of runs, newest right, with its flakiness; changed scenarios first; skipped ones
shown as skipped; a bad run directory left out with its reason; nothing checked: exit 3."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from hourglass.harness.cli import main
from hourglass.harness.outdir import LOCK_FILE
from hourglass.harness.session import write_summary
from hourglass.reference.contract import INVARIANTS
from hourglass.reference.rundir import RUN_JSON, VERDICT_JSON
from hourglass.reference.contract import VERSION_FIELD
from hourglass.reports.history import HISTORY_HTML, HISTORY_JSON, RUN_ROW, build_history
from hourglass.reports.outputs import write_run_outputs
from hourglass.reports.verdict import BROKEN, EXIT_CODES, PASSED, mark_broken
from suites.selftest.checker.runs import RunBuilder

NIGHTS = ("20261101T010000.000-101", "20261102T010000.000-102", "20261103T010000.000-103")


def verdict(run_id: str, failed: tuple[str, ...] = (), unchecked: tuple[str, ...] = ("QUEUE_ORDER",)) -> dict:
    """A checked run's verdict: ``failed`` invariants violated, ``unchecked`` ones exercised by no message."""
    inv = {n: {"checked": 0 if n in unchecked else 3, "violations": 2 if n in failed else 0, "examples": [],
               "passed": False if n in failed else (None if n in unchecked else True)} for n in INVARIANTS}
    return {"run_id": run_id, "passed": False if failed else True, "messages": 3, "attempts": 3, "recovered": 0,
            "invariants": inv}


def night(root: Path, stamp: str, plan: dict[str, object], system: str = "simulated", version: str | None = None) -> Path:
    """One harness invocation's tree ``root/main-<stamp>`` (its lock file, one system's runs and
    summary): ``plan`` scenario -> the invariants it violates (a tuple), "skipped" or "broken"."""
    tree = root / f"main-{stamp}"
    sys_dir = tree / system.replace(":", "_")
    sys_dir.mkdir(parents=True, exist_ok=True)
    (tree / LOCK_FILE).write_text("1\n")
    verdicts = []
    for scenario, what in plan.items():
        run_id = f"{scenario}-sim-{stamp}"
        if what == "skipped":
            verdicts.append({"run_id": run_id, "scenario": scenario, "skipped": "needs a cluster", "passed": None, "invariants": {}})
            continue
        v = verdict(run_id, () if what == "broken" else what)
        d = RunBuilder(run_id).write(sys_dir, scenario=scenario, system={"adapter": "simulated", "version": "5.3.3-sim",
                                                                       "spec": system}, **{VERSION_FIELD: version})
        write_run_outputs(d, v, None, None, json.loads((d / RUN_JSON).read_text()))
        v = mark_broken(v, "a consumer could not start") if what == "broken" else v
        verdicts.append({**v, "scenario": scenario, "run_dir": str(d), "report": str(d / "report.html")})
    write_summary(sys_dir, system, verdicts, 1.0, [])
    return tree


@pytest.fixture
def runs(tmp_path) -> Path:
    root = tmp_path / "runs"
    night(root, NIGHTS[0], {"steady": (), "flaky": ("NOT_EARLY",), "regressed": (), "sometimes-skipped": ()}, version="0.1.0+gaaa")
    night(root, NIGHTS[1], {"steady": (), "flaky": (), "regressed": (), "sometimes-skipped": "skipped"},
          version="0.1.0+gbbb")
    night(root, NIGHTS[2], {"steady": (), "flaky": (), "regressed": ("NO_LOSS", "ON_TIME"), "sometimes-skipped": "broken"})
    return root


def _rows(h: dict, system: str = "simulated") -> dict[tuple[str, str], dict]:
    return {(sc["scenario"], r["invariant"]): r for sc in h["systems"][system]["scenarios"] for r in sc["rows"]}


def test_each_row_shows_each_night_in_order_with_its_flakiness(runs, capsys):
    assert main(["history", str(runs)]) == 0
    h = json.loads((runs / HISTORY_JSON).read_text())
    assert [b["id"] for b in h["batches"]] == [f"main-{s}" for s in NIGHTS]  # oldest first: newest right
    rows = _rows(h)
    assert [c["outcome"] for c in rows[("flaky", "NOT_EARLY")]["cells"]] == ["violated", "passed", "passed"]
    assert [c["batch"] for c in rows[("flaky", "NOT_EARLY")]["cells"]] == [b["id"] for b in h["batches"]]
    flaky = rows[("flaky", "NOT_EARLY")]
    assert (flaky["violated"], flaky["judged"], flaky["flakiness"], flaky["flaky"]) == (1, 3, 0.333, True)
    assert rows[("regressed", "NO_LOSS")]["flakiness"] == 0.333 and rows[("regressed", "NO_LOSS")]["flaky"]
    assert rows[("steady", "NOT_EARLY")]["flakiness"] == 0.0 and not rows[("steady", "NOT_EARLY")]["flaky"]
    assert rows[("sometimes-skipped", RUN_ROW)]["judged"] == 1  # skipped and broken runs judge nothing
    assert ("steady", "QUEUE_ORDER") not in rows  # never exercised: no row of its own
    assert sorted(p["scenario"] + " " + p["invariant"] for p in h["flaky"]) == [
        "flaky NOT_EARLY", "regressed NO_LOSS", "regressed ON_TIME"]
    out = capsys.readouterr().out
    assert "3 batches" in out and "3 flaky scenario/invariant pairs" in out
    assert "latest failures: simulated regressed NO_LOSS: violated" in out


def test_changed_scenarios_come_first_then_flaky_then_steady(runs):
    h = build_history([str(runs)], runs, LOCK_FILE)
    order = [sc["scenario"] for sc in h["systems"]["simulated"]["scenarios"]]
    assert order == ["regressed", "sometimes-skipped", "flaky", "steady"]
    rows = _rows(h)
    assert rows[("regressed", RUN_ROW)]["changed"] and rows[("regressed", RUN_ROW)]["previous"] == PASSED
    assert not rows[("flaky", RUN_ROW)]["changed"] and h["systems"]["simulated"]["scenarios"][-1]["steady"]


def test_skipped_and_broken_runs_are_cells_not_gaps(runs):
    h = build_history([str(runs)], runs, LOCK_FILE)
    cells = _rows(h)[("sometimes-skipped", RUN_ROW)]["cells"]
    assert [c["outcome"] for c in cells] == ["passed", "skipped", "broken"]
    assert "needs a cluster" in cells[1]["note"] and "a consumer could not start" in cells[2]["note"]
    assert _rows(h)[("sometimes-skipped", "NO_LOSS")]["cells"][1]["outcome"] == "skipped"
    assert h["skipped"] == 1 and h["runs"] == 11
    assert any(p["outcome"] == BROKEN and p["scenario"] == "sometimes-skipped" for p in h["latest_failures"])


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.cells: list[dict] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "o" in (a.get("class") or "").split() and (tag == "span" or a.get("href")):
            self.cells.append(a)


def test_the_page_colours_each_cell_and_links_it_to_its_run(runs):
    assert main(["history", str(runs), "--out", str(runs / "pages")]) == 0
    page = (runs / "pages" / HISTORY_HTML).read_text()
    assert "http" not in page.split("<body>")[0]  # self-contained: no external stylesheet or script
    links = _Links()
    links.feed(page)
    marks = [c for c in links.cells if c.get("title")]
    assert {c["class"] for c in marks} >= {"o passed", "o violated", "o skipped", "o broken"}
    for c in marks:
        if c.get("href"):
            assert (runs / "pages" / unquote(c["href"])).resolve().is_file(), c
    regressed = [c for c in marks if "regressed-sim-" + NIGHTS[2] in c["title"]]
    assert regressed and all(c["href"].endswith("report.html") for c in regressed)
    assert any(c["class"] == "o violated" for c in regressed)
    skipped = [c for c in marks if c["class"] == "o skipped"]
    assert skipped and all("needs a cluster" in c["title"] for c in skipped)


def test_each_batch_shows_the_hourglass_that_made_it_when_recorded(runs):
    h = build_history([str(runs)], runs, LOCK_FILE)
    assert [b[VERSION_FIELD] for b in h["batches"]][:2] == ["0.1.0+gaaa", "0.1.0+gbbb"]
    page = (runs / "p.html")
    from hourglass.reports.history import history_html

    page.write_text(history_html(h))
    assert "0.1.0+gbbb" in page.read_text()


def test_a_night_of_two_systems_is_one_batch_and_a_latest_link_adds_nothing(tmp_path):
    root = tmp_path / "runs"
    tree = night(root, NIGHTS[0], {"a": ()}, system="simulated")
    night(root, NIGHTS[0], {"a": ("ON_TIME",)}, system="rocketmq:5.5.0")
    (root / "latest").symlink_to(tree.name, target_is_directory=True)
    h = build_history([str(root)], root, LOCK_FILE)
    assert [b["id"] for b in h["batches"]] == [tree.name]
    assert h["batches"][0]["systems"] == ["rocketmq:5.5.0", "simulated"] and h["runs"] == 2
    assert all("latest" not in c["href"] for s in h["systems"].values() for sc in s["scenarios"]
               for r in sc["rows"] for c in r["cells"])


def test_an_unreadable_run_json_is_left_out_with_its_reason(runs, capsys):
    bad = next(runs.glob(f"main-{NIGHTS[1]}/simulated/steady-*"))
    (bad / RUN_JSON).write_text("{not json")
    assert main(["history", str(runs)]) == 0
    h = json.loads((runs / HISTORY_JSON).read_text())
    assert [p["where"] for p in h["problems"]] == [str(bad / RUN_JSON)]
    assert "unreadable" in h["problems"][0]["reason"]
    assert [c["batch"] for c in _rows(h)[("steady", RUN_ROW)]["cells"]] == [f"main-{NIGHTS[0]}", f"main-{NIGHTS[2]}"]
    assert f"left out: {bad / RUN_JSON}" in capsys.readouterr().out


def test_nothing_checked_exits_3_naming_the_directory_and_what_was_expected(tmp_path, capsys):
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    assert main(["history", str(empty)]) == EXIT_CODES[BROKEN]
    err = capsys.readouterr().err
    assert f"{empty}: expected checked runs in or below it" in err and VERDICT_JSON in err
    assert not (empty / HISTORY_HTML).exists()


def test_only_bad_runs_exit_3_listing_why(tmp_path, capsys):
    root = tmp_path / "runs"
    night(root, NIGHTS[0], {"a": ()})
    run_json = next(root.rglob(RUN_JSON))
    run_json.unlink()
    assert main(["history", str(root)]) == EXIT_CODES[BROKEN]
    err = capsys.readouterr().err
    assert re.search(rf"{re.escape(str(run_json.parent))}: field 'run.json': expected run.json next to verdict.json", err), err
