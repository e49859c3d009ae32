"""report.html lists the run's copied logs (``RUN/logs/``, recorded in run.json's ``logs``) as
links relative to the report, shows the end of the broker's log folded for a failed run, and says
what was not collected (an external cluster's server logs)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from reference.contract import INVARIANTS
from reference.rundir import LOGS_DIR, REPORT_HTML
from reports.html import report_html
from reports.logs import TAIL_LINES, run_logs
from suites.selftest.checker import cases

BROKER_LINES = [f"2026-01-01 00:00:{i:02d},000 INFO broker - line {i}" for i in range(100)]


def _verdict(passed) -> dict:
    return {"run_id": "r", "passed": passed, "messages": 1, "attempts": 1, "recovered": 0,
            "invariants": {n: {"passed": passed, "checked": 1, "violations": 0 if passed else 1, "examples": []}
                           for n in INVARIANTS}}


def _with_logs(run_dir: Path, run: dict) -> dict:
    """``run`` with a broker log and a consumer log copied into ``run_dir/logs``, as the runner records them."""
    logs = run_dir / LOGS_DIR
    logs.mkdir(parents=True)
    (logs / "broker.log").write_text("\n".join(BROKER_LINES) + "\n")
    (logs / "consumer-g-0.log").write_text("up\n")
    size = (logs / "broker.log").stat().st_size
    return {**run, "logs": {"broker.log": {"source": "/sys/home/logs/broker.log", "from_byte": 0, "to_byte": size + 500,
                                           "cut_bytes": 500},
                            "consumer-g-0.log": {"source": "/sys/logs/consumer-g-0.log", "from_byte": 0, "to_byte": 3}}}


def test_links_are_relative_to_the_report_written_elsewhere_and_lead_to_the_copies(tmp_path):
    run_dir, target = tmp_path / "runs" / "r", tmp_path / "out" / "r"
    run = _with_logs(run_dir, {"run_id": "r"})
    logs = run_logs(_verdict(True), run, f"file:{run_dir}", target)
    hrefs = {link.name: link.href for link in logs.links}
    assert hrefs == {"broker.log": "../../runs/r/logs/broker.log", "consumer-g-0.log": "../../runs/r/logs/consumer-g-0.log"}
    for href in hrefs.values():
        assert (target / href).resolve().is_file()
    note = next(link.note for link in logs.links if link.name == "broker.log")
    assert "cut" in note


def test_a_failed_run_shows_the_last_lines_of_the_broker_log_folded(tmp_path):
    run = _with_logs(tmp_path / "r", {"run_id": "r"})
    logs = run_logs(_verdict(False), run, str(tmp_path / "r"), tmp_path / "r")
    assert logs.tail[0] == "broker.log"
    page = report_html(_verdict(False), None, None, run, [], logs)
    folded = re.search(r"<details><summary>the last (\d+) lines of <code>broker.log</code></summary><pre>(.*?)</pre></details>",
                       page, flags=re.S)
    assert folded and int(folded.group(1)) == TAIL_LINES
    assert folded.group(2).splitlines() == BROKER_LINES[-TAIL_LINES:]
    assert "line 59" not in page


def test_a_passed_run_shows_no_tail_and_a_run_without_logs_no_section(tmp_path):
    run = _with_logs(tmp_path / "r", {"run_id": "r"})
    page = report_html(_verdict(True), None, None, run, [], run_logs(_verdict(True), run, str(tmp_path / "r"), tmp_path / "r"))
    assert "<h2>Logs</h2>" in page and "<details><summary>the last" not in page
    assert run_logs(_verdict(False), {"run_id": "sim"}, str(tmp_path / "sim"), tmp_path / "sim") is None
    assert "<h2>Logs</h2>" not in report_html(_verdict(False), None, None, {"run_id": "sim"}, [], None)


def test_an_external_cluster_says_its_logs_were_not_collected(tmp_path):
    run = {"run_id": "r", "logs_not_collected": "broker and name server logs: not collected (external cluster: they stay on its hosts)"}
    logs = run_logs(_verdict(False), run, str(tmp_path / "r"), tmp_path / "r")
    assert logs.links == () and logs.tail is None
    assert "not collected (external cluster" in report_html(_verdict(False), None, None, run, [], logs)


def test_the_checker_links_the_logs_of_a_failed_run_from_its_report_in_out(spark, tmp_path):
    from reports.check import check_runs

    b = cases.late_plain()  # an ON_TIME violation
    run_dir = b.write(tmp_path / "runs")
    (run_dir / "run.json").write_text(json.dumps(_with_logs(run_dir, json.loads((run_dir / "run.json").read_text()))))
    (verdict,) = check_runs([run_dir], out_dir=tmp_path / "out")
    assert verdict["passed"] is False
    page = (tmp_path / "out" / b.run_id / REPORT_HTML).read_text()
    href = re.search(r"<a href='([^']*)'><code>broker.log</code></a>", page).group(1)
    assert (tmp_path / "out" / b.run_id / href).resolve() == (run_dir / LOGS_DIR / "broker.log").resolve()
    assert BROKER_LINES[-1] in page
