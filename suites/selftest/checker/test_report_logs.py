"""report.html lists the run's copied logs (``RUN/logs/``, recorded in run.json's ``logs``) as
links relative to the report, shows the end of the broker's log folded for a failed run, and says
what was not collected (an external cluster's server logs)."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from hourglass.reference.contract import INVARIANTS
from hourglass.reference.rundir import LOGS_DIR, REPORT_HTML
from hourglass.reports.html import report_html
from hourglass.reports.logs import TAIL_LINES, run_logs
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
    folded = re.search(r"<details><summary>the last (\d+) lines of <code>broker.log</code></summary><pre[^>]*>(.*?)</pre></details>",
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
    from hourglass.reports.check import check_runs

    b = cases.late_plain()  # an ON_TIME violation
    run_dir = b.write(tmp_path / "runs")
    (run_dir / "run.json").write_text(json.dumps(_with_logs(run_dir, json.loads((run_dir / "run.json").read_text()))))
    (verdict,) = check_runs([run_dir], out_dir=tmp_path / "out")
    assert verdict["passed"] is False
    page = (tmp_path / "out" / b.run_id / REPORT_HTML).read_text()
    href = re.search(r"<a href='([^']*)'><code>broker.log</code></a>", page).group(1)
    assert (tmp_path / "out" / b.run_id / href).resolve() == (run_dir / LOGS_DIR / "broker.log").resolve()
    assert BROKER_LINES[-1] in page


def _batch_run(run_dir: Path, broker_lines: list[str], started: int) -> dict:
    """A run of scenario ``a`` (group ``a_cg-x``, two instances) that shared its broker with scenario
    ``b`` in a batch: its ``logs/`` holds b's consumer's log and offsets too, and the broker log's
    part written while it ran (no zone recorded: an older run's copy)."""
    logs = run_dir / LOGS_DIR
    (logs / "clients" / "offsets" / "192.0.2.2@hg-b_cg-y-0" / "b_cg-y").mkdir(parents=True)
    (run_dir / "scenario.json").write_text(json.dumps({"name": "a", "consumers": [
        {"group": "a_cg-x", "topics": ["a_T"], "instances": 2}]}))
    names = ["consumer-a_cg-x-0.log", "consumer-a_cg-x-1.log", "consumer-b_cg-y-0.log",
             "clients/offsets/192.0.2.2@hg-b_cg-y-0/b_cg-y/offsets.json", "broker.log"]
    for name in names[:-1]:
        (logs / name).write_text("x\n")
    (logs / "broker.log").write_text("".join(broker_lines))
    return {"run_id": "r", "started_ms": started, "ended_ms": started + 60_000,
            "logs": {n: {"source": f"/sys/{n}", "from_byte": 100, "to_byte": 100 + (logs / n).stat().st_size} for n in names}}


def _gmt8(at_ms: int, text: str) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at_ms / 1000 + 8 * 3600)) + f" INFO {text}\n"


def test_a_run_that_shared_its_broker_lists_only_its_own_consumers_logs(tmp_path):
    started = 1_795_713_000_000
    run = _batch_run(tmp_path / "r", [_gmt8(started, "up")], started)
    logs = run_logs(_verdict(True), run, str(tmp_path / "r"), tmp_path / "r")
    assert [link.name for link in logs.links] == ["broker.log", "consumer-a_cg-x-0.log", "consumer-a_cg-x-1.log"]
    assert set(logs.others) == {"consumer-b_cg-y-0.log", "clients/offsets/192.0.2.2@hg-b_cg-y-0/b_cg-y/offsets.json"}
    page = report_html(_verdict(True), None, None, run, [], logs)
    assert "Not listed: 2 files of the other scenarios' consumers" in page and "consumer-b_cg-y-0.log</a>" not in page
    (tmp_path / "r" / "scenario.json").unlink()  # the run's groups unknown: every copy is listed
    assert len(run_logs(_verdict(True), run, str(tmp_path / "r"), tmp_path / "r").links) == 5


def test_the_broker_logs_zone_is_detected_from_its_first_line_and_labelled(tmp_path):
    started = 1_795_713_000_000
    run = _batch_run(tmp_path / "r", [_gmt8(started + 400, "topic created"), _gmt8(started + 50_000, "later")], started)
    logs = run_logs(_verdict(False), run, str(tmp_path / "r"), tmp_path / "r")
    assert logs.zone_s == 8 * 3600
    assert "times in the broker's local zone, UTC+08:00" in next(link.note for link in logs.links if link.name == "broker.log")
    page = report_html(_verdict(False), None, None, run, [], logs)
    assert "the last 2 lines of <code>broker.log</code> (times in the broker&#x27;s local zone, UTC+08:00)" in page


def test_a_violated_run_shows_the_broker_lines_around_the_violations_times_folded(tmp_path):
    """An ON_TIME violation expected at t+20 s, observed at t+40 s: the report shows the broker's
    lines within 5 s of each (the log prints GMT+8: converted), its own and the broker's, not the
    other scenario's, each span with its times; the tail stays."""
    started = 1_795_713_000_000
    lines = []
    for s in range(0, 60):
        lines.append(_gmt8(started + s * 1000, f"store tick {s}"))
        lines.append(_gmt8(started + s * 1000, f"subscription changed, group: {'a_cg-x' if s % 2 else 'b_cg-y'} second {s}"))
    lines.insert(41, "java.lang.IllegalStateException: a stack trace line without a time\n")  # goes with second 20
    run = _batch_run(tmp_path / "r", lines, started)
    verdict = _verdict(False)
    verdict["invariants"]["ON_TIME"]["examples"] = [{"key": "k1", "attempt": 0, "observed_ms": started + 40_000,
                                                     "expected_window": {"earliest_ms": started + 20_000, "latest_ms": started + 20_500},
                                                     "explanation": "k1 late"}]
    logs = run_logs(verdict, run, str(tmp_path / "r"), tmp_path / "r")
    first, second = logs.around
    assert (first.from_ms, first.to_ms, second.from_ms, second.to_ms) == (
        started + 15_000, started + 25_500, started + 35_000, started + 45_000)
    assert first.why == ("k1 attempt 0 (ON_TIME): expected",) and second.why == ("k1 attempt 0 (ON_TIME): observed",)
    shown = first.lines.splitlines()
    assert shown[0] == _gmt8(started + 15_000, "store tick 15").strip() and "store tick 25" in first.lines
    assert "store tick 14" not in first.lines and "store tick 26" not in first.lines
    assert "a_cg-x second 15" in first.lines and "b_cg-y second 16" not in first.lines
    assert "[… 1 line of the other scenarios …]" in shown
    assert "IllegalStateException" in first.lines
    page = report_html(verdict, None, None, run, [], logs)
    assert re.search(r"<details><summary><code>broker.log</code> around the first violations' times \(±5 s.*UTC\+08:00\)</summary>", page)
    assert "<b>" + _gmt8(started + 15_000, "subscription changed, group: a_cg-x second 15").strip() + "</b>" in page
    assert "<details><summary>the last 40 lines of <code>broker.log</code>" in page
    passed = run_logs(_verdict(True), run, str(tmp_path / "r"), tmp_path / "r")
    assert passed.around == () and passed.tail is None


def test_a_long_span_keeps_the_runs_own_lines_first(tmp_path):
    from hourglass.reports.logs import pick_lines

    lines = [f"tick {i}" for i in range(100)] + ["group a_cg-x moved"] + [f"tock {i}" for i in range(100)]
    text = pick_lines(lines, ("a_cg-x",), 10)
    shown = text.splitlines()
    assert "group a_cg-x moved" in shown and len([s for s in shown if not s.startswith("[…")]) == 10
    assert shown[0] == "tick 0" and shown[-1] == "tock 99" and "[… 96 lines left out: see the copy …]" in shown
