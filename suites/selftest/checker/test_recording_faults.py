"""What the harness failed to record is a broken run (exit 3) naming the file, never the broker's
violation: a started consumer without its events file, an exact repeat of a recorded line (both
paths: whole runs and the bucketed path)."""

from __future__ import annotations

import pytest

from reports.cli import main
from reference.rundir import EVENTS_DIR, consumer_events
from suites.selftest.checker.runs import GROUP, RunBuilder, check_on_path

CONSUMER = GROUP + "-0"


def _delivered(run_id: str) -> RunBuilder:
    return RunBuilder(run_id).send("a", 0, level=1).send("b", 10).deliver("a", 1010).deliver("b", 20)


@pytest.fixture(scope="module")
def recording_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("recording")
    _delivered("laid-out").write_layout(root)
    d = _delivered("consumer-file-gone").write_layout(root)
    (d / EVENTS_DIR / consumer_events(CONSUMER)).unlink()
    d = _delivered("consumer-file-a-directory").write_layout(root)
    (d / EVENTS_DIR / consumer_events(CONSUMER)).unlink()
    (d / EVENTS_DIR / consumer_events(CONSUMER)).mkdir()
    return root


@pytest.fixture(scope="module", params=["whole", "bucketed"])
def recording_verdicts(request, spark, recording_root, tmp_path_factory):
    return check_on_path(request.param, [recording_root], tmp_path_factory.mktemp("out"))


def test_a_run_laid_out_as_the_harness_does_is_judged(recording_verdicts):
    v = recording_verdicts["laid-out"]
    assert v["passed"] is True and v["messages"] == 2 and "broken" not in v


@pytest.mark.parametrize("run_id, found", [("consumer-file-gone", "no such file"), ("consumer-file-a-directory", "a directory")])
def test_a_started_consumer_without_its_events_file_is_a_broken_run_not_a_loss(recording_verdicts, run_id, found):
    v = recording_verdicts[run_id]
    assert v["invariants"]["NO_LOSS"]["violations"] == 0
    msg = v["broken"]
    assert f"{run_id}/{EVENTS_DIR}/{consumer_events(CONSUMER)}" in msg and repr(CONSUMER) in msg, msg
    assert f"found {found}" in msg, msg


def test_a_missing_consumer_file_exits_3(spark, recording_root, tmp_path, capfd):
    assert main(["check", str(recording_root / "consumer-file-gone"), "--out", str(tmp_path)]) == 3
    assert consumer_events(CONSUMER) in capfd.readouterr().err
