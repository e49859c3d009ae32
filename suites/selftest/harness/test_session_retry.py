"""CI's retry rule in a session (``harness.session.Session``, the plugin's ``--hg-retries``): a
scenario whose run ends undecided or broken runs once more on a system of its own, and its verdict
is the second attempt's with the first under ``earlier``; a violation is never run again
(``reports.verdict.RETRIED``), nor is a pass."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from hourglass.harness import session as session_mod
from hourglass.harness.session import BatchRun, Session, SessionOptions
from hourglass.harness.verdicts import VerdictFailure, assert_conforms
from hourglass.reports.verdict import BROKEN, PASSED, UNDECIDED, VIOLATED, status

STALLED = {"passed": None, "invariants": {}, "undecided": {"messages": 1, "examples": [
    {"invariant": "ON_TIME", "reason": "arrived 996 ms after its window closed, within the stalls recorded meanwhile"}]}}
BROKEN_RUN = {"passed": None, "invariants": {}, "broken": "ClientError: no broker registered with the name server"}
VIOLATION = {"passed": False, "invariants": {"NO_LOSS": {"passed": False, "violations": 1, "checked": 3}}}
PASS = {"passed": True, "invariants": {}}
SKIPPED = {"passed": None, "invariants": {}, "skipped": "rocketmq 4.9.7 has no pop"}


@dataclass(frozen=True)
class Sc:
    name: str


def _session(tmp_path, monkeypatch, attempts: list[dict[str, dict]], retries: int = 1):
    """A session whose batches answer, in turn, the verdicts of ``attempts`` (scenario -> verdict);
    returns it and the scenario names each batch was asked to run."""
    asked: list[list[str]] = []

    def fake(scenarios, opts, baseline, master, spark_conf=None):
        answers = attempts[len(asked)]
        asked.append([s.name for s in scenarios])
        return BatchRun({s.name: {**answers[s.name], "run_id": f"{s.name}-{len(asked)}", "run_dir": f"/runs/{s.name}-{len(asked)}"}
                         for s in scenarios}, 10.0, 2.0)

    monkeypatch.setattr(session_mod, "run_and_check", fake)
    monkeypatch.setattr("hourglass.harness.outdir.lock_out", lambda out: None)
    monkeypatch.setattr(session_mod, "write_summary", lambda *a, **k: None)
    hs = Session(tmp_path, SessionOptions(retries=retries))
    hs.pending["simulated"] = {name: Sc(name) for name in attempts[0]}  # queued as register() would, unvalidated
    return hs, asked


def test_undecided_and_broken_runs_run_once_more_and_a_violation_a_pass_or_a_skip_never(tmp_path, monkeypatch):
    hs, asked = _session(tmp_path, monkeypatch, [
        {"stalled": STALLED, "broken": BROKEN_RUN, "violated": VIOLATION, "passed": PASS, "skipped": SKIPPED},
        {"stalled": PASS, "broken": BROKEN_RUN},
    ])
    hs._run("simulated")
    assert asked == [["stalled", "broken", "violated", "passed", "skipped"], ["stalled", "broken"]]
    final = {name: hs.verdicts[("simulated", name)] for name in ("stalled", "broken", "violated", "passed")}
    assert {n: status(v) for n, v in final.items()} == {"stalled": PASSED, "broken": BROKEN, "violated": VIOLATED, "passed": PASSED}
    assert final["stalled"]["run_id"] == "stalled-2"
    assert final["stalled"]["earlier"] == [{"status": UNDECIDED, "run_id": "stalled-1", "run_dir": "/runs/stalled-1",
                                            "why": STALLED["undecided"]["examples"][0]["reason"]}]
    assert final["broken"]["earlier"][0]["why"] == BROKEN_RUN["broken"]
    assert not any("earlier" in hs.verdicts[("simulated", n)] for n in ("violated", "passed", "skipped"))
    assert hs.batches[0]["retried"] == ["broken", "stalled"]
    assert hs.batches[0]["wall_s"] == 20.0 and hs.batches[0]["check_s"] == 4.0  # both attempts' time


def test_a_failure_after_the_retry_names_every_attempt(tmp_path, monkeypatch):
    hs, _ = _session(tmp_path, monkeypatch, [{"stalled": STALLED}, {"stalled": STALLED}])
    hs._run("simulated")
    with pytest.raises(VerdictFailure) as e:
        assert_conforms(hs.verdicts[("simulated", "stalled")])
    text = str(e.value)
    assert "the run is undecided" in text and "run stalled-2" in text
    assert "attempt 1 of 2: undecided (arrived 996 ms after its window closed" in text and "/runs/stalled-1" in text


def test_no_retry_when_retries_is_0(tmp_path, monkeypatch):
    hs, asked = _session(tmp_path, monkeypatch, [{"stalled": STALLED}], retries=0)
    hs._run("simulated")
    assert asked == [["stalled"]] and status(hs.verdicts[("simulated", "stalled")]) == UNDECIDED


def test_a_pass_only_on_the_retry_is_flaky_in_every_summary_never_plain_green(tmp_path, monkeypatch):
    from hourglass.harness.session import write_summary
    from hourglass.reports.verdict import FLAKY, shown_status

    hs, _ = _session(tmp_path, monkeypatch, [{"stalled": STALLED, "passed": PASS}, {"stalled": PASS}])
    hs._run("simulated")
    (batch,) = hs.batches
    assert batch["flaky"] == ["stalled"] and batch["retried"] == ["stalled"]
    final = {n: hs.verdicts[("simulated", n)] for n in ("stalled", "passed")}
    assert {n: shown_status(v) for n, v in final.items()} == {"stalled": FLAKY, "passed": PASSED}
    verdicts = [dict(v, scenario=n) for n, v in final.items()]
    write_summary(tmp_path / "sys", "simulated", verdicts, 10.0, [], 2.0)
    import json

    summary = json.loads((tmp_path / "sys" / "summary.json").read_text())
    assert summary["flaky"] == ["stalled"]
    md = (tmp_path / "sys" / "summary.md").read_text()
    assert "🔁 1 flaky" in md and "✅ 1 passed" in md
    assert "| stalled | 🔁 flaky |" in md and "passed only on its retry; before: undecided: arrived 996 ms" in md
    assert "<td>flaky</td>" in (tmp_path / "sys" / "index.html").read_text()


def test_a_flaky_scenario_is_a_junit_property_and_fails_its_test_when_asked():
    from hourglass.harness.pytest_plugin import flaky_check

    verdict = {**PASS, "run_dir": "/runs/x-2", "earlier": [{"status": UNDECIDED, "why": "stalled"}]}
    props: list = []
    flaky_check(verdict, props, "pass")
    assert props == [("hourglass_flaky", "undecided: stalled")]
    with pytest.raises(pytest.fail.Exception, match=r"flaky: passed only when run again \(undecided: stalled\)"):
        flaky_check(verdict, [], "fail")
    plain: list = []
    flaky_check(PASS, plain, "fail")  # a pass at the first attempt is no flaky one
    assert plain == []
