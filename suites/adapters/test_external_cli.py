"""A staging cluster from the command line: ``--runtime external --namesrv HOST:PORT``.

The test starts a cluster itself (processes, as nobody's harness would) and runs the CLI against it
twice in a row on the same store: names are unique per run, so the second run does not read the
first run's DLQ entries; a scenario that needs a fault without a command is skipped with the
reason, and so is one whose level table the broker does not run — all decided before the run.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest

from adapters.base import BrokerProfile
from adapters.rocketmq import open_system
from harness.cli import main
from harness.scenario import ConsumerGroup, FaultStep, Message, Profile, Scenario

pytestmark = [pytest.mark.realbroker]

SYSTEM = os.environ.get("HOURGLASS_EXTERNAL_SYSTEM", "rocketmq:4.9.7")
PROFILE = Profile()  # the compressed table every catalogue scenario uses

DELAYED = Scenario("ext-delayed", tuple(Message(f"d{i}", "ExtD", at_ms=i * 100, delay_level=2) for i in range(4)),
                   (ConsumerGroup("cg-ext-d", ("ExtD",)),))
TO_DLQ = Scenario("ext-dlq", (Message("dead", "ExtQ", plan=("LATER",) * 3), Message("fine", "ExtQ", delay_level=1)),
                  (ConsumerGroup("cg-ext-q", ("ExtQ",), max_reconsume_times=2),))
NEEDS_KILL = Scenario("ext-kill", (Message("k", "ExtK", delay_level=1),), (ConsumerGroup("cg-ext-k", ("ExtK",)),),
                      faults=(FaultStep(at_ms=500, action="kill_restart"),))
OTHER_TABLE = replace(Scenario("ext-table", (Message("t", "ExtT", delay_level=1),), (ConsumerGroup("cg-ext-t", ("ExtT",)),)),
                      profile=Profile(message_delay_level="1s 5s 10s"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    system = open_system(SYSTEM, runtime="process", workdir=tmp_path_factory.mktemp("staging"),
                         profile=BrokerProfile(PROFILE.message_delay_level, PROFILE.flush_delay_offset_interval_ms))
    system.setup()
    try:
        yield system.namesrv_addr
    finally:
        system.teardown()


def test_two_runs_in_a_row_on_one_cluster_both_pass(cluster, tmp_path):
    files = []
    for sc in (DELAYED, TO_DLQ, NEEDS_KILL, OTHER_TABLE):
        files += ["--scenario", str(tmp_path / f"{sc.name}.json")]
        sc.save(tmp_path / f"{sc.name}.json")
    for attempt in ("first", "second"):
        out = tmp_path / attempt
        code = main(["run", *files, "--system", SYSTEM, "--runtime", "external", "--namesrv", cluster, "--out", str(out)])
        summary = json.loads((out / "summary.json").read_text())
        assert code == 0, json.dumps(summary["verdicts"], indent=1)[:4000]
        assert sorted(v["scenario"] for v in summary["verdicts"]) == ["ext-delayed", "ext-dlq"]
        dlq = next(v for v in summary["verdicts"] if v["scenario"] == "ext-dlq")
        assert dlq["invariants"]["DLQ_ROUTING"]["checked"] >= 1 and dlq["invariants"]["DLQ_ROUTING"]["passed"] is True
        run = json.loads((out / next(p.name for p in out.iterdir() if p.name.startswith("ext-dlq")) / "run.json").read_text())
        assert run["system"]["broker_config"]["messageDelayLevel"] == PROFILE.message_delay_level
        sent = json.loads((out / run["run_id"] / "scenario.json").read_text())
        assert sent["consumers"][0]["group"] != "cg-ext-q"  # unique per run: the group carries the run's token


def test_skips_are_decided_before_the_run_and_say_why(cluster, tmp_path, capsys):
    for sc in (NEEDS_KILL, OTHER_TABLE):
        sc.save(tmp_path / f"{sc.name}.json")
    code = main(["run", "--scenario", str(tmp_path / "ext-kill.json"), "--scenario", str(tmp_path / "ext-table.json"),
                 "--system", SYSTEM, "--runtime", "external", "--namesrv", cluster, "--out", str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert "skipped ext-kill: no fault command for kill broker, start broker (give them in --faults)" in out
    assert "skipped ext-table: the broker runs messageDelayLevel=" in out and "'1s 5s 10s'" in out
    assert code == 2  # nothing ran: no verdict on the broker, never a pass
