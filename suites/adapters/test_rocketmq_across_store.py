"""Versions that take turns on one store (``rocketmq:OLD+NEW``): what an upgrade, and a rollback,
do to the schedule offsets.

The persistence scenario with two graceful restarts runs on a chain of the newest 4.9.x and the
newest 5.x: the broker starts as 4.9.7, is stopped, starts as 5.5.0 on the same store (the upgrade),
is stopped again and starts as 4.9.7 (the rollback). The test checks the broker really ran each
version in turn (its ``ready`` events and the JVM command lines) and that the checker finds no
violation: both versions read what the other persisted.
"""

from __future__ import annotations

import json

import pytest

from hourglass.harness.batch import BatchOptions, run_batch
from hourglass.harness.catalogue.persistence import scenario
from hourglass.reference.persistence_axes import Coordinates, Follow, Reput, Start, Stop, StopTiming
from hourglass.harness.systems import SystemSpec
from hourglass.harness.verdicts import describe
from hourglass.reference.rundir import EVENTS_DIR, HARNESS_EVENTS
from suites.adapters.conftest import process_first_runtimes

pytestmark = pytest.mark.realbroker

OLD, NEW = "4.9.7", "5.5.0"
SCENARIO = "persist-backlog-beforeflush-graceful-fast-tworestarts"


@pytest.mark.slow  # nightly (about 60 s): CI's hour goes to the suites
@pytest.mark.parametrize("runtime_name", process_first_runtimes())
@pytest.mark.parametrize("chain", [f"rocketmq:{OLD}+{NEW}"])
def test_an_upgrade_and_a_rollback_on_one_store_keep_the_offsets(chain, runtime_name, tmp_path):
    from hourglass.reports.check import check_runs

    sc = scenario(Coordinates(Reput.BACKLOG, StopTiming.BEFORE_FLUSH, Stop.GRACEFUL, Start.FAST, Follow.TWO_RESTARTS))
    assert sc.name == SCENARIO
    results, errors = run_batch([sc], BatchOptions(SystemSpec(chain, runtime_name), tmp_path, progress=False))
    assert not errors, errors
    (res,) = results
    (verdict,) = check_runs([res.run_dir])
    events = [json.loads(x) for x in (res.run_dir / EVENTS_DIR / HARNESS_EVENTS).read_text().splitlines()]
    ran = [e.get("version") for e in events if e["type"] == "fault" and e["target"] == "broker" and e["action"] == "ready"]
    assert ran == [OLD, NEW, OLD], ran  # setup, the upgrade, the rollback
    run = json.loads((res.run_dir / "run.json").read_text())
    assert run["system"]["version"] == f"{OLD}+{NEW}" and run["system"]["versions"] == [OLD, NEW]
    launched = (res.run_dir.parent / "_systems").glob("**/logs/broker.out")
    libs = [line.split("rocketmq/")[1].split("/")[0] for f in launched for line in f.read_text().splitlines()
            if line.startswith("==== hourglass: starting broker") and "rocketmq/" in line]
    if runtime_name == "process":
        assert libs == [OLD, NEW, OLD], libs
    assert verdict["passed"] is True, describe(verdict)
