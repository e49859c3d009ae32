"""Broken runs exit 3 and say where; exit codes 0/1/2; the outputs a CI job picks up; baselines and
the version matrix."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pandas as pd
import pytest

from hourglass.reference.contract import INVARIANTS
from hourglass.reports.cli import main
from hourglass.reports.html import DOCS_URL
from suites.selftest.checker import cases
from suites.selftest.checker.runs import RunBuilder


@pytest.fixture(scope="module")
def broken_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("broken-runs")
    ok = RunBuilder("fine").send("a", 0).deliver("a", 10)
    ok.write(root)
    missing = RunBuilder("missing-field").send("a", 0).deliver("a", 10)
    missing.events[-1].pop("store_ms")
    missing.write(root)
    wrong = RunBuilder("wrong-type").send("a", 0, level="two").deliver("a", 10)
    wrong.write(root)
    unknown = RunBuilder("unknown-type").send("a", 0).deliver("a", 10)
    unknown.write(root, lines=['{"type": "redeliver", "ts_ms": 1763800000500, "key": "a"}\n'])
    middle = RunBuilder("torn-in-the-middle").send("a", 0).deliver("a", 10)
    d = middle.write(root)
    lines = (d / "events.jsonl").read_text().splitlines(keepends=True)
    (d / "events.jsonl").write_text(lines[0] + '{"type": "send", "ts\n' + "".join(lines[1:]))
    profile = RunBuilder("bad-profile").send("a", 0).deliver("a", 10)
    d = profile.write(root)
    run = json.loads((d / "run.json").read_text())
    run["profile"]["message_delay_level"] = "1s  5s"
    (d / "run.json").write_text(json.dumps(run))
    return root


@pytest.fixture(scope="module")
def broken_verdicts(spark, broken_root, tmp_path_factory):
    from hourglass.reports.check import check_runs

    out = tmp_path_factory.mktemp("broken-out")
    return {v["run_id"]: v for v in check_runs([broken_root], out_dir=out)}


def test_contract_errors_name_file_line_and_field(broken_verdicts):
    assert broken_verdicts["fine"]["passed"] is True  # a broken neighbour does not stop the others
    msg = broken_verdicts["missing-field"]["broken"]
    assert "missing-field/events.jsonl:2" in msg and "'store_ms'" in msg and "missing" in msg
    msg = broken_verdicts["wrong-type"]["broken"]
    assert "wrong-type/events.jsonl:1" in msg and "'delay_level'" in msg and "'two'" in msg
    msg = broken_verdicts["unknown-type"]["broken"]
    assert "unknown-type/events.jsonl:3" in msg and "'type'" in msg and "redeliver" in msg
    msg = broken_verdicts["torn-in-the-middle"]["broken"]
    assert "torn-in-the-middle/events.jsonl:2" in msg and "one JSON object per line" in msg
    msg = broken_verdicts["bad-profile"]["broken"]
    assert "message_delay_level" in msg


def test_a_broken_run_exits_3(spark, broken_root, tmp_path, capsys):
    assert main(["check", str(broken_root / "missing-field"), "--out", str(tmp_path)]) == 3
    assert "store_ms" in capsys.readouterr().err


def test_a_directory_without_runs_exits_3(spark, tmp_path, capsys):
    assert main(["check", str(tmp_path), "--out", str(tmp_path / "out")]) == 3
    assert "run.json" in capsys.readouterr().err


def test_exit_codes_0_1_2(spark, tmp_path):
    root = tmp_path / "runs"
    cases.clean_mix().write(root)
    cases.early().write(root)
    cases.pending_at_end().write(root)
    assert main(["check", str(root / "clean-mix"), str(root / "early"), str(root / "pending-at-end"), "--out", str(tmp_path / "a")]) == 1
    assert main(["check", str(root / "clean-mix"), str(root / "pending-at-end"), "--out", str(tmp_path / "b")]) == 2
    assert main(["check", str(root / "clean-mix")]) == 0  # no --out: into the run directory
    assert json.loads((root / "clean-mix" / "verdict.json").read_text())["passed"] is True


def test_outputs_for_ci(checked):
    _, out = checked
    early = out / "early"
    suite = ET.parse(early / "junit.xml").getroot()
    cases_by_name = {c.get("name").split("[")[0]: c for c in suite.iter("testcase")}
    assert list(cases_by_name) == ["RUN", *INVARIANTS]  # the run, then every invariant (OFFSET_PERSISTENCE skipped: no snapshots)
    failure = cases_by_name["NOT_EARLY"].find("failure")
    assert failure is not None and "hasty attempt 0" in failure.get("message")
    assert cases_by_name["DLQ_ROUTING"].find("skipped") is not None
    assert cases_by_name["RUN"].find("error") is None and cases_by_name["RUN"].find("failure") is None
    v = pd.read_parquet(early / "violations")
    assert list(v["invariant"]) == ["NOT_EARLY"] and list(v["key"]) == ["hasty"]
    page = (early / "report.html").read_text()
    assert page.count("<svg") >= 2 and "hasty" in page  # lateness and timeline plots, inline
    assert 'src="http' not in page and "src='http" not in page  # opens from disk: no external asset
    assert {h for h in re.findall(r"""href=['"](http[^'"#]*)""", page)} == {DOCS_URL}  # only the invariants' definitions


def test_a_baseline_accepts_known_violations(spark, tmp_path):
    root = tmp_path / "runs"
    cases.scheduler_duplicate().write(root)
    baseline = tmp_path / "baseline.toml"
    baseline.write_text('[[accept]]\ninvariant = "NO_DUPLICATE"\nversions = ">=1.0,<2"\nreason = "known on 1.x"\n')
    assert main(["check", str(root), "--out", str(tmp_path / "a"), "--baseline", str(baseline)]) == 0
    v = json.loads((tmp_path / "a" / "scheduler-duplicate" / "verdict.json").read_text())
    assert v["accepted"] == 1 and v["invariants"]["NO_DUPLICATE"]["violations"] == 1
    assert v["invariants"]["NO_DUPLICATE"]["examples"][0]["accepted"] == "known on 1.x"
    baseline.write_text('[[accept]]\ninvariant = "NO_DUPLICATE"\nversions = ">=2"\nreason = "only 2.x"\n')
    assert main(["check", str(root), "--out", str(tmp_path / "b"), "--baseline", str(baseline)]) == 1


def test_the_matrix_shows_which_invariants_differ(spark, tmp_path):
    from hourglass.reports.matrix import write_matrix

    root = tmp_path / "runs"
    old = cases.early()
    old.run_id = "early-v1"
    new = cases.clean_mix()
    new.run_id = "early-v2"
    for b, version in ((old, "1.0"), (new, "2.0")):
        d = b.write(root)
        run = json.loads((d / "run.json").read_text())
        run.update(scenario="same seed", system={"adapter": "handmade", "version": version})
        (d / "run.json").write_text(json.dumps(run))
    assert main(["check", str(root), "--out", str(tmp_path / "out")]) == 1
    m = write_matrix([str(tmp_path / "out")], str(tmp_path / "matrix"))
    assert m["versions"] == ["handmade 1.0", "handmade 2.0"]
    differing = {d["invariant"] for d in m["differences"]}
    assert "NOT_EARLY" in differing and "NO_LOSS" not in differing
    assert "NOT_EARLY" in (tmp_path / "matrix" / "matrix.html").read_text()
