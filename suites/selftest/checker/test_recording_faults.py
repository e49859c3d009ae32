"""What the harness failed to record is a broken run (exit 3) naming the file, never the broker's
violation: a started consumer without its events file, an exact repeat of a recorded line (both
paths: whole runs and the bucketed path)."""

from __future__ import annotations

import pytest

from hourglass.reports.cli import main
from hourglass.reference.rundir import EVENTS_DIR, HARNESS_EVENTS, consumer_events
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
    d = _delivered("repeated-delivery").write_layout(root)
    _repeat_line(d / EVENTS_DIR / consumer_events(CONSUMER), 1)
    d = _delivered("repeated-send").write_layout(root)
    _repeat_line(d / EVENTS_DIR / HARNESS_EVENTS, 2)  # line 1 is the consumer's start
    (RunBuilder("redelivered").send("dup", 0).deliver("dup", 10, copy=7000).deliver("dup", 10, copy=7000, at=500)
     .write_layout(root))
    _delivered("sent-twice").send("a", 20_000).write_layout(root)
    return root


def _repeat_line(path, number: int) -> None:
    """Append line ``number`` of ``path`` again, byte for byte."""
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines) + lines[number - 1])


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


def test_an_exact_repeat_of_a_delivery_is_a_recording_fault_not_a_duplicate(recording_verdicts):
    v = recording_verdicts["repeated-delivery"]
    assert v["invariants"]["NO_DUPLICATE"]["violations"] == 0
    msg = v["broken"]
    assert f"repeated-delivery/{EVENTS_DIR}/{consumer_events(CONSUMER)}:3: " in msg and "exact repeat of line 1" in msg, msg


def test_an_exact_repeat_of_a_send_names_both_lines(recording_verdicts):
    msg = recording_verdicts["repeated-send"]["broken"]
    where = f"repeated-send/{EVENTS_DIR}/{HARNESS_EVENTS}"
    assert f"{where}:4: " in msg and "exact repeat of " in msg and f"{where}:2 " in msg, msg


def test_a_key_sent_twice_names_the_file_both_lines_and_the_key(recording_verdicts):
    msg = recording_verdicts["sent-twice"]["broken"]
    where = f"sent-twice/{EVENTS_DIR}/{HARNESS_EVENTS}"
    assert f"{where}:2 and " in msg and f"{where}:4: field 'key'" in msg and "found 'a'" in msg, msg


def test_a_redelivery_differs_and_stays_a_violation(recording_verdicts):
    v = recording_verdicts["redelivered"]
    assert "broken" not in v and v["invariants"]["NO_DUPLICATE"]["violations"] == 1


def test_a_repeated_line_exits_3(spark, recording_root, tmp_path, capfd):
    assert main(["check", str(recording_root / "repeated-delivery"), "--out", str(tmp_path)]) == 3
    assert "exact repeat" in capfd.readouterr().err
