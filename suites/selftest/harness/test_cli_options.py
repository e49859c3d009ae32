"""Every option means what it says, or the command refuses it before anything runs.

A typo in ``--system`` or a defect name, a malformed ``--namesrv``, a count below 1, an option the
command would ignore (``--namesrv`` with a simulated broker, ``matrix --repeat``, a system named
twice in ``--systems``): a usage error (64) in one line naming the option, never "broken, retry"
(3). ``python -m hourglass main`` exits by the project's rule over its runs' verdicts (not pytest's
1 for every failing test) and hands ``--namesrv``, ``--faults`` and ``--max-wait`` to its runs.
"""

from __future__ import annotations

import pytest

from hourglass.harness import batch as harness_batch
from hourglass.harness.cli import main
from hourglass.harness.runner import RunResult
from hourglass.harness.scenario import ConsumerGroup, Message, Scenario
from hourglass.reports.verdict import EXIT_USAGE

PROBE = Scenario("opt-probe", (Message("m0", "Opt", delay_level=2),), (ConsumerGroup("cg-opt", ("Opt",)),))


@pytest.fixture
def scenario_file(tmp_path):
    p = tmp_path / "opt-probe.json"
    PROBE.save(p)
    return p


def _one_line_usage(capsys, *words: str) -> str:
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip() and not line.startswith(("usage:", " "))]
    assert len(err) == 1, err
    assert all(w in err[0] for w in words), err[0]
    assert "Traceback" not in err[0]
    return err[0]


@pytest.mark.parametrize("system, found", [
    ("simulatd", "'simulatd'"),
    ("simulated[no-such-defect]", "'no-such-defect'"),
    ("rocketmq:9.9.9x", "'9.9.9x'"),
    ("kafka:3.0", "'kafka:3.0'"),
])
@pytest.mark.parametrize("command", ["run", "main"])
def test_a_typo_in_the_system_is_a_usage_error(command, system, found, scenario_file, tmp_path, capsys):
    args = [command, "--system", system, "--out", str(tmp_path / "o")]
    if command == "run":
        args += ["--scenario", str(scenario_file)]
    assert main(args) == EXIT_USAGE
    _one_line_usage(capsys, "--system", found)
    assert not (tmp_path / "o").exists()


def test_matrix_names_its_own_option(scenario_file, tmp_path, capsys):
    assert main(["matrix", "--systems", "simulated,simulatd", "--scenario", str(scenario_file), "--out", str(tmp_path / "o")]) == EXIT_USAGE
    line = _one_line_usage(capsys, "--systems", "'simulatd'")
    assert "--system:" not in line


def test_a_system_named_twice_in_a_matrix_is_a_usage_error(scenario_file, tmp_path, capsys):
    assert main(["matrix", "--systems", "simulated,simulated", "--scenario", str(scenario_file), "--out", str(tmp_path / "o")]) == EXIT_USAGE
    _one_line_usage(capsys, "--systems", "each system once", "'simulated'")


@pytest.mark.parametrize("command, option", [
    (["matrix", "--systems", "simulated,simulated[early-delivery]"], ["--repeat", "2"]),
    (["main", "--system", "simulated"], ["--repeat", "2"]),
    (["main", "--system", "simulated"], ["--count", "3"]),
    (["run", "--system", "simulated"], ["--count", "3"]),  # no generated suite to size
    (["run", "--system", "simulated"], ["--seed", "3"]),
])
def test_an_option_the_command_would_ignore_is_a_usage_error(command, option, scenario_file, tmp_path, capsys):
    scenario = [] if command[0] == "main" else ["--scenario", str(scenario_file)]
    assert main(command + scenario + option + ["--out", str(tmp_path / "o")]) == EXIT_USAGE
    _one_line_usage(capsys, option[0])
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("option", [
    ["--runtime", "external", "--namesrv", "127.0.0.1:9876"],
    ["--namesrv", "127.0.0.1:9876"],
    ["--faults", "faults.toml"],
    ["--image", "apache/rocketmq:5.3.3"],
    ["--proxy", "127.0.0.1:8081"],
])
def test_cluster_options_with_a_simulated_system_are_usage_errors(option, scenario_file, tmp_path, capsys):
    assert main(["run", "--scenario", str(scenario_file), "--system", "simulated", *option, "--out", str(tmp_path / "o")]) == EXIT_USAGE
    _one_line_usage(capsys, option[0], "--system simulated")


@pytest.mark.parametrize("option", [["--namesrv", "127.0.0.1:9876"], ["--faults", "faults.toml"], ["--proxy", "127.0.0.1:8081"]])
def test_namesrv_and_faults_need_the_external_runtime(option, scenario_file, tmp_path, capsys):
    assert main(["run", "--scenario", str(scenario_file), "--system", "rocketmq:4.9.7", "--runtime", "process", *option,
                 "--out", str(tmp_path / "o")]) == EXIT_USAGE
    _one_line_usage(capsys, option[0], "--runtime external")


@pytest.mark.parametrize("addr", ["127.0.0.1:99999", "127.0.0.1:0", ":9876", "127.0.0.1:9876;:9877", ""])
def test_a_malformed_name_server_is_a_usage_error(addr, scenario_file, tmp_path, capsys):
    assert main(["run", "--scenario", str(scenario_file), "--system", "rocketmq:4.9.7", "--runtime", "external",
                 "--namesrv", addr, "--out", str(tmp_path / "o")]) == EXIT_USAGE
    _one_line_usage(capsys, "--namesrv", "port 1..65535", repr(addr.split(";")[-1]) if addr else "'none'")


@pytest.mark.parametrize("addr", ["127.0.0.1:99999", "127.0.0.1:8081;127.0.0.2:8081", ":8081"])
def test_a_malformed_proxy_is_a_usage_error(addr, scenario_file, tmp_path, capsys):
    assert main(["run", "--scenario", str(scenario_file), "--system", "rocketmq:5.5.0", "--runtime", "external",
                 "--namesrv", "127.0.0.1:9876", "--proxy", addr, "--out", str(tmp_path / "o")]) == EXIT_USAGE
    _one_line_usage(capsys, "--proxy", "5.x proxy")


@pytest.mark.parametrize("option", [["--count", "0"], ["--count", "-1"], ["--max-systems", "0"], ["--repeat", "0"],
                                    ["--max-wait", "0"], ["--max-wait", "nan"], ["--count", "two"]])
def test_counts_below_one_are_usage_errors(option, tmp_path, capsys):
    assert main(["run", "--suite", "generated", "--system", "simulated", *option, "--out", str(tmp_path / "o")]) == EXIT_USAGE
    _one_line_usage(capsys, f"argument {option[0]}", repr(option[1]))
    assert main(["list", "--suite", "generated", "--count", "0"]) == EXIT_USAGE


# --- python -m hourglass main: the project's exit rule, and every option reaches the runs ---------

class FakeBatches:
    """Stands in for ``harness.batch.run_batch``: records the options of each batch and answers
    every scenario with ``error`` (the run could not be carried out) or ``skipped``, starting
    nothing."""

    def __init__(self, error: str | None = None, skipped: str | None = None):
        self.error, self.skipped, self.options = error, skipped, []

    def __call__(self, scenarios, opts):
        self.options.append(opts)
        return [RunResult(opts.out_dir / sc.name, sc.name, sc, True, (), 0, 0, error=self.error, skipped=self.skipped)
                for sc in scenarios], {}


def test_main_exits_3_when_its_runs_are_broken_and_passes_its_options_through(monkeypatch, tmp_path):
    batches = FakeBatches(error="the broker never became ready")
    monkeypatch.setattr(harness_batch, "run_batch", batches)
    faults = tmp_path / "faults.toml"
    faults.write_text('[broker]\nkill = "true"\nstart = "true"\n')
    code = main(["main", "--system", "rocketmq:4.9.7", "--runtime", "external", "--namesrv", "10.0.0.5:9876",
                 "--faults", str(faults), "--max-wait", "45", "--out", str(tmp_path / "o")])
    assert code == 3  # pytest alone says 1 ("tests failed"): read as a violation, never retried
    spec = batches.options[0].system
    assert (spec.runtime, spec.namesrv, spec.faults_file) == ("external", "10.0.0.5:9876", str(faults))
    assert batches.options[0].max_wait_ms == 45_000


def test_main_exits_2_when_nothing_could_be_judged(monkeypatch, tmp_path):
    monkeypatch.setattr(harness_batch, "run_batch", FakeBatches(skipped="the system cannot run it"))
    assert main(["main", "--system", "simulated", "--out", str(tmp_path / "o")]) == 2  # pytest alone: 0 (all skipped)


def _undecided(scenarios, results, errors, *args, **kwargs) -> dict[str, dict]:
    """Stands in for ``harness.session.batch_verdicts``: every run judged undecided (not drained)."""
    return {sc.name: {"run_id": sc.name, "scenario": sc.name, "passed": None, "invariants": {},
                      "undecided": {"messages": 1, "examples": [], "reason": "a message was still pending"}}
            for sc in scenarios}


@pytest.mark.parametrize("outcome, code", [("broken", 3), ("undecided", 2)])
def test_main_exits_by_the_project_rule_not_by_pytest(monkeypatch, tmp_path, outcome, code):
    """Each failing test makes pytest say 1 ("a violation: never retry"); the job says what its
    runs were: a broken run 3 (retry), an undecided one 2."""
    from hourglass.harness import session as harness_session

    monkeypatch.setattr(harness_batch, "run_batch", FakeBatches(error="the broker never became ready" if outcome == "broken" else None))
    if outcome == "undecided":
        monkeypatch.setattr(harness_session, "batch_verdicts", _undecided)
    assert main(["main", "--system", "simulated", "--out", str(tmp_path / "o")]) == code
