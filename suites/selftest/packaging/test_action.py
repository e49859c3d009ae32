"""The GitHub Action (``action.yml``): its structure, and its steps run here by ``.ci/action-steps``
(the ``run:`` steps of action.yml itself, in order, with the inputs as a workflow gives them; the
``uses:`` steps replaced by this machine's virtualenv and JDK, an upload by the list of files it
would take) on the simulated broker, one scenario each, so it takes seconds:

* a passing run: exit 0, the job summary holds summary.md, one JUnit file per run where the JUnit
  upload takes them, the reports artifact without the brokers' stores (planted in the run tree);
* a violating run (``simulated[early-delivery]``): exit 1, never retried, the summary says it failed;
* an input error (a baseline that does not exist): exit 3 after one retry, no summary.md, the job
  summary shows the exit code and the error's line;
* a usage error: exit 64, not retried.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
STEPS = ROOT / ".ci" / "action-steps"
OUT = "runs/hourglass"
ONE = "--scenario-name each-level"
#: files planted in the run tree: what a broker of the process or container runtime leaves there
STORES = ("rocketmq_latest/_systems/job00-shared/store/commitlog/00000000000000000000",
          "_systems/job01-gen-1-02/broker-2/store/consumequeue/TOPIC/0/00000000000000000000",
          "_systems/job02-io-stall/hourglass-store-123_456.img")
KEPT = ("_systems/job00-shared/conf/broker.conf",)


def _steps(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    return subprocess.run([str(STEPS), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def action() -> dict:
    done = _steps("--dump")
    if done.returncode == 3 and "PyYAML" in done.stderr and not os.environ.get("CI"):
        pytest.skip(done.stderr.strip())
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def run_action(tmp_path: Path, *inputs: str, plant: bool = False) -> tuple[int, dict, str, Path]:
    """``.ci/action-steps`` in a fresh workspace: (exit code, result.json, job summary, workspace)."""
    work, state = tmp_path / "ws", tmp_path / "state"
    work.mkdir()
    for rel in (STORES + KEPT) if plant else ():
        (work / OUT / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / OUT / rel).write_text("planted\n")
    done = _steps(*(x for i in inputs for x in ("--with", i)), "--state", str(state), "--workdir", str(work))
    result = json.loads((state / "result.json").read_text())
    assert result["exit_code"] == done.returncode, done.stderr[-3000:]
    return done.returncode, result, (state / "step-summary.md").read_text(), work


# --- structure ---------------------------------------------------------------------------------


def _expressions(node) -> list[str]:
    if isinstance(node, dict):
        return [e for k, v in node.items() for e in _expressions(k) + _expressions(v)]
    if isinstance(node, list):
        return [e for v in node for e in _expressions(v)]
    return re.findall(r"\$\{\{\s*(.*?)\s*\}\}", str(node)) if isinstance(node, str) else []


def test_the_action_is_composite_and_every_input_is_declared_and_used(action):
    assert action["runs"]["using"] == "composite"
    declared = set(action["inputs"])
    steps = action["runs"]["steps"]
    exprs = _expressions(steps) + _expressions(action["outputs"])
    exprs += [s["if"] for s in steps if "if" in s]
    used = {m for e in exprs for m in re.findall(r"\binputs\.([A-Za-z0-9_-]+)", e)}
    assert used <= declared, f"used but not declared: {used - declared}"
    assert declared <= used, f"declared but never used: {declared - used}"
    for name, spec in action["inputs"].items():
        assert spec.get("description"), f"input {name} has no description"
    assert {o["value"] for o in action["outputs"].values()} == {"${{ steps.run.outputs.exit-code }}",
                                                                "${{ steps.run.outputs.report-dir }}"}


def test_the_scripts_take_inputs_only_through_env_and_run_in_bash(action):
    for step in action["runs"]["steps"]:
        if "run" in step:
            assert step.get("shell") == "bash", step["name"]
            assert "${{" not in step["run"], f"{step['name']}: an expression inside a script (use env:)"
        else:
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@v\d+", step["uses"]), step["uses"]
    names = [s.get("id") for s in action["runs"]["steps"]]
    assert names.index("run") < names.index("junit")
    setup = [s for s in action["runs"]["steps"] if str(s.get("uses", "")).startswith(("actions/setup-", "actions/cache"))]
    assert {s["uses"].split("@")[0] for s in setup} == {"actions/setup-python", "actions/setup-java", "actions/cache"}
    assert all(s["if"] == "inputs.image == ''" for s in setup if "setup-" in s["uses"])
    run = action["runs"]["steps"][names.index("run")]["run"]
    # the harness image: the host's network and pids, the workspace and the cache at their own paths
    assert '--network host --pid host -v "$PWD:$PWD" -w "$PWD" -v "$cache:$cache"' in run
    after = [s for s in action["runs"]["steps"][names.index("run") + 1:]]
    assert after and all(s.get("if") == "always()" for s in after), "every step after the run runs also when it failed"


def test_the_upload_leaves_the_stores_out(action):
    uploads = [s for s in action["runs"]["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    assert len(uploads) == 2
    patterns = [line.strip() for line in uploads[0]["with"]["path"].splitlines()]
    assert "!${{ inputs.out }}/**/_systems/**/store/**" in patterns and "!${{ inputs.out }}/**/*.img" in patterns
    assert uploads[1]["with"]["path"] == "${{ inputs.out }}/junit/*.xml"


def test_the_runner_refuses_an_expression_it_does_not_evaluate(tmp_path, action):
    bad = tmp_path / "action.yml"
    bad.write_text((ROOT / "action.yml").read_text().replace("if: inputs.image == ''", "if: github.event_name == 'push'", 1))
    done = _steps("--action", str(bad), "--with", "system=simulated", "--state", str(tmp_path / "s"), cwd=tmp_path)
    assert done.returncode == 3 and "github.event_name" in done.stderr


# --- the steps, run ---------------------------------------------------------------------------


def test_a_passing_run_writes_the_summary_the_junit_files_and_an_artifact_without_stores(tmp_path, action):
    code, result, summary, work = run_action(tmp_path, "system=simulated", f"args={ONE}", plant=True)
    assert code == 0, summary
    assert result["outputs"]["run"] == {"exit-code": "0", "report-dir": OUT}
    assert summary.startswith("### Hourglass on `simulated`: exit 0 (passed")
    assert (work / OUT / "summary.md").read_text() in summary and "each-level" in summary
    junit = sorted((work / OUT / "junit").glob("*.xml"))
    assert len(junit) == 1 and junit[0].stem.startswith("each-level-") and "<testsuite" in junit[0].read_text()
    reports, junit_files = result["artifacts"]["hourglass-reports"], result["artifacts"]["hourglass-reports-junit"]
    assert junit_files == [f"{OUT}/junit/{junit[0].name}"]
    assert {f"{OUT}/index.html", f"{OUT}/summary.md", f"{OUT}/harness.log", f"{OUT}/junit/{junit[0].name}"} <= set(reports)
    assert any(f.endswith("/junit.xml") for f in reports) and f"{OUT}/{KEPT[0]}" in reports
    assert not [f for f in reports if "/store/" in f or f.endswith(".img")], "a broker's store would be uploaded"
    assert all((work / OUT / s).exists() for s in STORES)  # they were there to leave out
    assert not (work / OUT / "attempt-1").exists()


def test_a_violation_exits_1_is_not_retried_and_the_summary_says_so(tmp_path, action):
    code, result, summary, work = run_action(tmp_path, "system=simulated[early-delivery]", f"args={ONE}")
    assert code == 1
    assert result["outputs"]["run"]["exit-code"] == "1"
    assert summary.startswith("### Hourglass on `simulated[early-delivery]`: exit 1 (FAILED: a violation")
    assert "❌" in summary or "failed" in summary.split("\n", 1)[1].lower()
    assert not (work / OUT / "attempt-1").exists(), "a violation is never retried"
    assert [s["status"] for s in result["steps"] if s["name"].startswith(("Write", "Collect"))] == ["passed", "passed"]
    assert len(list((work / OUT / "junit").glob("*.xml"))) == 1


def test_an_input_error_exits_3_after_one_retry_and_the_summary_shows_the_error(tmp_path, action):
    code, result, summary, work = run_action(tmp_path, "system=simulated", "baseline=no-such-baseline.toml")
    assert code == 3
    assert result["outputs"]["run"]["exit-code"] == "3"
    assert summary.startswith("### Hourglass on `simulated`: exit 3 (broken")
    assert "No summary was written" in summary
    assert "no-such-baseline.toml: expected a readable baseline file" in summary
    assert not (work / OUT / "summary.md").exists()
    assert (work / OUT / "attempt-1" / "harness.log").exists(), "exit 3 is retried once"
    assert result["artifacts"]["hourglass-reports"] and "hourglass-reports-junit" in result["artifacts"]


def test_a_usage_error_exits_64_and_is_not_retried(tmp_path, action):
    code, _result, summary, work = run_action(tmp_path, "system=simulated", "args=--no-such-option")
    assert code == 64
    assert "exit 64 (usage error" in summary and "unrecognized arguments: --no-such-option" in summary
    assert not (work / OUT / "attempt-1").exists()
