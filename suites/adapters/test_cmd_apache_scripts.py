"""Any implementation as a system, proved on an Apache release started through its OWN scripts:
``python -m hourglass run --system cmd:FILE --runtime process`` with the cmd file
``python -m hourglass.adapters.rocketmq.apache_dist`` writes (``bin/mqnamesrv``, ``bin/mqbroker`` ->
``runbroker.sh`` -> java): in CI a few conformance scenarios (levels, a DLQ, a timer message) and a
kill -9, then a replay of one run on the system its run.json recorded; nightly the rest of the
conformance suite, a graceful restart and the paused broker (SIGSTOP/SIGCONT of the scripts' group).

Measured on the 2-core machine (2 systems at once, another session's Spark jobs running): 279 s for
the 15 scenarios on 5 brokers, 37 s for the replay, 317 s in all; one system at a time
(``HOURGLASS_MAX_SYSTEMS=1``) under a broker sweep: 692 s.

The distribution comes from ``.ci/bootstrap``; without it the test is skipped with the command that
makes it, except under CI (``CI`` set), where bootstrap must have made it and the test fails.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from hourglass.adapters.rocketmq import apache_dist
from hourglass.harness.catalogue.chaos import SHORT
from hourglass.harness.catalogue.conformance import CONFORMANCE
from hourglass.harness.cli import main

pytestmark = [pytest.mark.realbroker]

#: Nightly (CI's hour goes to the suites; CI's bootstrap still makes the distribution and prints
#: its command): a level-0 message, a timer message (the cmd file claims timer = true), the run
#: replayed and a kill -9 of the scripts' group — the launcher's part; then the rest of the conformance
#: suite (the levels, the DLQ), the graceful restart (OFFSET_PERSISTENCE through a SIGTERM to the
#: scripts' group) and the paused broker
CI_SCENARIOS = ["level-zero", "timer-messages", "kill9-during-delivery"]
NIGHTLY_SCENARIOS = ([s.name for s in CONFORMANCE if s.name not in CI_SCENARIOS]
                     + [s.name for s in SHORT if s.name != "kill9-during-delivery"] + ["broker-paused"])


@pytest.fixture(scope="module")
def cmd_file() -> Path:
    path = apache_dist.cmd_file()
    if not (path.parent / "bin" / "mqbroker").exists():
        why = (f"no Apache-scripts distribution in {path.parent}: make it with "
               f"python -m hourglass.adapters.rocketmq.apache_dist {apache_dist.DEFAULT_VERSION} (.ci/bootstrap does)")
        if os.environ.get("CI"):
            pytest.fail(why + "; under CI bootstrap must have made it")
        pytest.skip(why)
    return apache_dist.provision_apache_dist()  # made already: rewrites the cmd file from this checkout's example


def _broker_logs(out: Path) -> list[Path]:
    return sorted(out.glob("_systems/**/logs/broker.out"))


@pytest.mark.parametrize("SCENARIOS", [pytest.param(CI_SCENARIOS, id="launcher+kill9", marks=pytest.mark.slow),
                                       pytest.param(NIGHTLY_SCENARIOS, id="rest+graceful+paused", marks=pytest.mark.slow)])
def test_conformance_and_chaos_through_apaches_own_scripts_then_replay(SCENARIOS, cmd_file, tmp_path):
    out = tmp_path / "runs"
    started = time.monotonic()
    picked = [arg for name in SCENARIOS for arg in ("--scenario-name", name)]
    code = main(["run", "--suite", "conformance", "--suite", "nightly", *picked, "--system", f"cmd:{cmd_file}",
                 "--runtime", "process", "--out", str(out),
                 "--max-systems", os.environ.get("HOURGLASS_MAX_SYSTEMS", "2")])
    wall_s = time.monotonic() - started
    summary = json.loads((out / "summary.json").read_text())
    verdicts = {v["scenario"]: v for v in summary["verdicts"]}
    failed = {name: {k: e for k, e in v["invariants"].items() if e.get("passed") is False} or v.get("undecided")
              for name, v in verdicts.items() if v.get("passed") is not True}
    assert code == 0 and not failed, json.dumps(failed, indent=1)[:4000]
    # every scenario ran: timer-messages too (the cmd file claims timer = true)
    assert sorted(verdicts) == sorted(SCENARIOS)
    if "kill9-during-delivery" in verdicts:
        kill9 = verdicts["kill9-during-delivery"]["invariants"]
        assert kill9["NO_LOSS"]["checked"] > 0 and kill9["NO_DUPLICATE"]["passed"] is True
    if "graceful-restart-while-due" in verdicts:  # a SIGTERM to the scripts' group let the JVM persist at the stop
        graceful = verdicts["graceful-restart-while-due"]["invariants"]["OFFSET_PERSISTENCE"]
        assert graceful["passed"] is True and graceful["checked"] > 0

    for v in verdicts.values():
        system = json.loads((Path(v["run_dir"]) / "run.json").read_text())["system"]
        assert system["spec"] == f"cmd:{cmd_file}" and system["source"] == "cmd"
        assert system["version"] == apache_dist.DEFAULT_VERSION and system["runtime"] == "process"
        assert system["client"] == f"rocketmq:{apache_dist.DEFAULT_VERSION}"

    # launched through bin/mqbroker -> runbroker.sh -> java, every start (the kill -9's restart too)
    dist = cmd_file.parent
    logs = _broker_logs(out)
    assert len(logs) >= 2  # the shared broker, custom-table's, and one per scenario with a broker fault
    for log in logs:
        text = log.read_text()
        starts = text.count(f"==== hourglass: starting broker: {dist}/bin/mqbroker -c ")
        answered = text.split("==== hourglass: broker answered a round trip; its processes:")[1:]
        assert starts >= 1 and len(answered) >= starts, text[-3000:]
        for listing in answered:
            lines = listing.split("\n====", 1)[0]
            assert f"{dist}/bin/runbroker.sh" in lines and "org.apache.rocketmq.broker.BrokerStartup" in lines, lines
            assert "java" in lines and "-Xmx768m" in lines  # the cmd file's JAVA_OPT_EXT reached the JVM
    print(f"\ncmd: Apache scripts {apache_dist.DEFAULT_VERSION}: {len(verdicts)} scenarios passed in {wall_s:.0f} s "
          f"(harness wall {summary['wall_s']:.0f} s, {len(logs)} systems)")

    if "level-zero" not in verdicts:
        return
    # replay: the run's recorded spec names the same cmd file
    level_zero = Path(verdicts["level-zero"]["run_dir"])
    again = tmp_path / "replay"
    assert main(["replay", str(level_zero), "--runtime", "process", "--out", str(again)]) == 0
    replayed = json.loads((again / "summary.json").read_text())["verdicts"]
    assert [v["scenario"] for v in replayed] == ["level-zero"] and replayed[0]["passed"] is True
    assert json.loads((Path(replayed[0]["run_dir"]) / "run.json").read_text())["system"]["spec"] == f"cmd:{cmd_file}"
