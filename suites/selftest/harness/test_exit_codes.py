"""One exit rule for both CLIs, and every input checked before anything runs.

The rule (``reports.verdict``): 1 a violation wins over everything, then 3 broken, then 2
undecided, else 0; 64 a usage error. A failure to read an input is one line naming the option or
file, with no traceback unless ``--debug``.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hourglass.harness.cli import main
from hourglass.harness.scenario import ConsumerGroup, Message, Scenario
from hourglass.harness.verdicts import VerdictFailure, assert_conforms
from hourglass.reports import cli as reports_cli
from hourglass.reports.verdict import BROKEN, EXIT_USAGE, PASSED, UNDECIDED, VIOLATED, exit_code, mark_broken, status

PROBE = Scenario(
    "exit-probe",
    tuple(Message(f"m{i}", "Exit", at_ms=i * 200, delay_level=2) for i in range(3)),
    (ConsumerGroup("cg-exit", ("Exit",)),),
)


@pytest.fixture
def scenario_file(tmp_path):
    p = tmp_path / "exit-probe.json"
    PROBE.save(p)
    return p


def _verdict(kind: str, accepted: bool = False) -> dict:
    inv = {"checked": 3, "violations": 0, "examples": [], "passed": True}
    v = {"run_id": kind, "passed": True, "invariants": {"NOT_EARLY": inv}}
    if kind == VIOLATED:
        inv.update(violations=2, passed=False)
        if accepted:
            inv["accepted"] = 2
        v["passed"] = True if accepted else False
    elif kind == UNDECIDED:
        v.update(passed=None, undecided={"messages": 1, "examples": []})
    elif kind == BROKEN:
        v = mark_broken(v, "a consumer could not start")
    return v


@given(st.lists(st.sampled_from([PASSED, VIOLATED, UNDECIDED, BROKEN, "accepted"]), max_size=8))
def test_exit_code_is_the_highest_ranked_status(kinds):
    verdicts = [_verdict(VIOLATED, accepted=True) if k == "accepted" else _verdict(k) for k in kinds]
    statuses = {status(v) for v in verdicts}
    assert all(status(_verdict(k)) == k for k in kinds if k != "accepted")
    expected = 1 if VIOLATED in statuses else 3 if BROKEN in statuses else 2 if UNDECIDED in statuses else 0
    assert exit_code(verdicts) == expected


def test_a_violation_in_a_broken_run_still_exits_1():
    v = mark_broken(_verdict(VIOLATED), "the run could not be finished")
    assert status(v) == VIOLATED
    assert exit_code([v, _verdict(BROKEN)] + [_verdict(UNDECIDED)] * 3) == 1


def test_a_broken_run_fails_assert_conforms():
    with pytest.raises(VerdictFailure, match="broken"):
        assert_conforms(_verdict(BROKEN))
    with pytest.raises(VerdictFailure, match="undecided"):
        assert_conforms(_verdict(UNDECIDED))
    assert_conforms(_verdict(VIOLATED, accepted=True))  # accepted by a baseline: passes


def _nothing_ran(out) -> bool:
    return not out.exists() or not any(out.iterdir())


def test_unknown_system_is_a_usage_error_before_anything_runs(scenario_file, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", "--scenario", str(scenario_file), "--system", "kafka:3.0", "--out", str(out)]) == EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["hourglass: --system: expected rocketmq:<version>, dist:/path, jars:/path, cmd:FILE, simulated or "
                   "simulated[defects], found 'kafka:3.0'"]
    assert _nothing_ran(out)


def test_unknown_defect_and_bad_version_name_the_system(scenario_file, tmp_path, capsys):
    """A typo in the spec is a usage error (64); a directory or file it names that does not check
    is a broken input (3), like a missing scenario file."""
    assert main(["run", "--scenario", str(scenario_file), "--system", "simulated[erly-delivery]", "--out", str(tmp_path / "o")]) == EXIT_USAGE
    assert "found 'erly-delivery'" in capsys.readouterr().err
    assert main(["run", "--scenario", str(scenario_file), "--system", "rocketmq:4.9", "--out", str(tmp_path / "o")]) == EXIT_USAGE
    assert "--system rocketmq:4.9: expected a version like 4.9.7" in capsys.readouterr().err
    assert main(["run", "--scenario", str(scenario_file), "--system", f"dist:{tmp_path}/nope", "--out", str(tmp_path / "o")]) == 3
    assert f"--system dist:{tmp_path}/nope" in capsys.readouterr().err
    assert main(["run", "--scenario", str(scenario_file), "--system", f"cmd:{tmp_path}/nope.toml", "--out", str(tmp_path / "o")]) == 3
    assert capsys.readouterr().err.strip().splitlines() == [
        f"hourglass: {tmp_path}/nope.toml: expected a readable TOML file giving the system's commands, found 'No such file or directory'"]
    assert _nothing_ran(tmp_path / "o")


def test_a_cmd_client_maven_central_lacks_is_the_files_error_before_anything_runs(scenario_file, tmp_path, capsys,
                                                                                 monkeypatch):
    """Its jars are fetched by the check (the runs would fetch them first thing): a version Maven
    Central does not have names the file and its field, in one line without Maven's colours."""
    import subprocess

    from hourglass.adapters.rocketmq import provision

    for name in ("ns", "broker"):
        (tmp_path / name).write_text("#!/bin/sh\n")
        (tmp_path / name).chmod(0o755)
    cmd = tmp_path / "acme.toml"
    cmd.write_text('version = "1.0"\nclient = "rocketmq:9.9.9"\n[namesrv]\ncommand = ["{here}/ns"]\n'
                   '[broker]\ncommand = ["{here}/broker"]\n')
    maven = ("\x1b[1;31m[ERROR]\x1b[m Failed to execute goal on project rocketmq-9.9.9: Could not resolve dependencies: "
             "Could not find artifact org.apache.rocketmq:rocketmq-broker:jar:9.9.9 in central\n\x1b[0m")
    monkeypatch.setenv("HOURGLASS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(provision, "_mvn", lambda *a: subprocess.CompletedProcess(a, 1, maven, ""))
    out = tmp_path / "o"
    assert main(["run", "--scenario", str(scenario_file), "--system", f"cmd:{cmd}", "--out", str(out)]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"hourglass: {cmd}: field 'client': expected a client the harness can run")
    assert "Maven Central has no rocketmq-broker 9.9.9" in err[0] and "\x1b" not in err[0]
    assert _nothing_ran(out)


def test_usage_errors_exit_64(scenario_file, tmp_path, capsys):
    assert main(["run", "--suite", "conformanse", "--system", "simulated"]) == EXIT_USAGE
    assert "invalid choice: 'conformanse'" in capsys.readouterr().err
    assert main(["run", "--system", "simulated", "--out", str(tmp_path / "o")]) == EXIT_USAGE  # nothing to run
    assert main(["frobnicate"]) == EXIT_USAGE
    assert main(["matrix", "--systems", "simulated", "--scenario", str(scenario_file)]) == EXIT_USAGE
    assert reports_cli.main(["check"]) == EXIT_USAGE


def test_missing_scenario_file_names_it(tmp_path, capsys):
    missing = tmp_path / "nope.json"
    assert main(["run", "--scenario", str(missing), "--system", "simulated", "--out", str(tmp_path / "o")]) == 3
    err = capsys.readouterr().err
    assert str(missing) in err and "Traceback" not in err
    assert _nothing_ran(tmp_path / "o")


def test_bad_baseline_is_found_before_the_run(scenario_file, tmp_path, capsys):
    bad = tmp_path / "accepted.toml"
    bad.write_text('[[accept]]\ninvariant = "NOT_EARLI"\nreason = "typo"\n')
    out = tmp_path / "o"
    assert main(["run", "--scenario", str(scenario_file), "--system", "simulated", "--out", str(out), "--baseline", str(bad)]) == 3
    err = capsys.readouterr().err
    assert f"{bad}: accept[0]: field 'invariant'" in err and "NOT_EARLI" in err
    assert _nothing_ran(out)


def test_unwritable_out_exits_3(scenario_file, tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert main(["run", "--scenario", str(scenario_file), "--system", "simulated", "--out", str(blocker / "sub")]) == 3
    err = capsys.readouterr().err
    assert "--out: expected a directory Hourglass can write" in err and str(blocker) in err


def test_unreachable_spark_master_exits_3_before_the_run(scenario_file, tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["run", "--scenario", str(scenario_file), "--system", "simulated", "--out", str(out),
                 "--master", "spark://127.0.0.1:9"]) == 3
    assert "--master: expected a reachable Spark master" in capsys.readouterr().err
    assert _nothing_ran(out)


def test_replay_runs_the_exact_system_of_the_run(scenario_file, tmp_path, capsys):
    assert main(["run", "--scenario", str(scenario_file), "--system", "simulated[early-delivery]", "--out", str(tmp_path / "first")]) == 1
    run_dir = next(p for p in (tmp_path / "first").iterdir() if (p / "scenario.json").exists())
    assert json.loads((run_dir / "run.json").read_text())["system"]["spec"] == "simulated[early-delivery]"
    assert main(["replay", str(run_dir), "--out", str(tmp_path / "again")]) == 1
    assert "on simulated[early-delivery]" in capsys.readouterr().out


def test_checker_cli_a_violation_beside_a_broken_run_exits_1(tmp_path, capsys):
    from suites.selftest.checker.runs import RunBuilder

    RunBuilder("early").send("a", 0, level=2).deliver("a", 1000).write(tmp_path)  # 4 s early
    broken = RunBuilder("no-profile").send("a", 0).deliver("a", 10).write(tmp_path)
    run = json.loads((broken / "run.json").read_text())
    del run["profile"]
    (broken / "run.json").write_text(json.dumps(run))
    assert reports_cli.main(["check", str(tmp_path), "--out", str(tmp_path / "out")]) == 1
    out = capsys.readouterr().out
    assert "early: violated (NOT_EARLY)" in out and "no-profile: broken" in out


def test_checker_cli_checks_its_inputs_first(tmp_path, capsys):
    from suites.selftest.checker.runs import RunBuilder

    RunBuilder("fine").send("a", 0).deliver("a", 10).write(tmp_path / "runs")
    bad = tmp_path / "b.json"
    bad.write_text("{")
    assert reports_cli.main(["check", str(tmp_path / "runs"), "--baseline", str(bad)]) == 3
    assert f"{bad}: expected JSON or TOML" in capsys.readouterr().err
    assert reports_cli.main(["check", str(tmp_path / "runs"), "--master", "spark://127.0.0.1:9"]) == 3
    assert "--master: expected a reachable Spark master" in capsys.readouterr().err
    assert not (tmp_path / "runs" / "fine" / "verdict.json").exists()


@pytest.mark.parametrize("mutate, field", [
    (lambda raw: raw["messages"][1].update(delay=2), "messages[1].delay"),
    (lambda raw: raw["messages"][0].update(at_ms="soon"), "messages[0].at_ms"),
    (lambda raw: raw["consumers"][0].update(topics=["Other"]), "messages[0].topic"),
    (lambda raw: raw["profile"].update(message_delay_level="1s 2x"), "profile.message_delay_level"),
    (lambda raw: raw.update(faults=[{"at_ms": -5, "action": "kill_restart"}]), "faults[0].at_ms"),
])
def test_a_bad_scenario_file_is_one_line_and_exit_3_before_anything_runs(tmp_path, capsys, mutate, field):
    raw = PROBE.to_json()
    mutate(raw)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(raw))
    out = tmp_path / "o"
    assert main(["run", "--scenario", str(bad), "--system", "simulated", "--out", str(out)]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"hourglass: {bad}: field '{field}'"), err
    assert _nothing_ran(out)


def test_external_runtime_needs_a_name_server_and_readable_fault_commands(scenario_file, tmp_path, capsys):
    assert main(["run", "--scenario", str(scenario_file), "--system", "rocketmq:4.9.7", "--runtime", "external",
                 "--out", str(tmp_path / "o")]) == EXIT_USAGE  # a missing argument
    assert "--namesrv: expected HOST:PORT of the cluster's name server" in capsys.readouterr().err
    faults = tmp_path / "faults.toml"
    faults.write_text('[broker]\nkil = "pkill -9 -f BrokerStartup"\n')
    assert main(["run", "--scenario", str(scenario_file), "--system", "rocketmq:4.9.7", "--runtime", "external",
                 "--namesrv", "127.0.0.1:9876", "--faults", str(faults), "--out", str(tmp_path / "o")]) == 3
    assert f"{faults}: field 'broker.kil': expected one of start, stop, kill, pause, resume" in capsys.readouterr().err
    assert _nothing_ran(tmp_path / "o")


def test_every_scenario_skipped_is_not_a_pass(tmp_path, capsys, monkeypatch):
    """A system that can run none of the scenarios (here: a simulator without timer messages)
    observed nothing: undecided (2), never a pass."""
    from hourglass.harness import runner as harness_runner

    timer_only = Scenario("timer-only", (Message("t", "Tm", deliver_after_ms=1000),), (ConsumerGroup("cg-tm", ("Tm",)),),
                          requires=("timer",))
    f = tmp_path / "t.json"
    timer_only.save(f)
    monkeypatch.setattr(harness_runner, "capabilities", lambda system: set())
    assert main(["run", "--scenario", str(f), "--system", "simulated", "--out", str(tmp_path / "o")]) == 2
    assert "every scenario was skipped" in capsys.readouterr().err
