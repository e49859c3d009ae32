"""Bad bytes in an events file are a contract error of that file and line, and one broken run never
stops the others from getting their verdicts (both paths: whole runs and the bucketed path)."""

from __future__ import annotations

import pytest

from hourglass.reports.cli import main
from suites.selftest.checker.runs import RunBuilder, check_on_path


@pytest.fixture(scope="module")
def bad_bytes_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("bad-bytes")
    RunBuilder("clean").send("a", 0).deliver("a", 10).write(root)
    RunBuilder("question-mark").send("a", 0, level=1).send("why?", 10, level=1).deliver("a", 1010).deliver("why?", 1020).write(root)
    d = RunBuilder("bad-byte").send("a", 0).send("b", 5).deliver("a", 10).write(root)
    lines = (d / "events.jsonl").read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b'"key": "b"', b'"key": "b\xff"')
    (d / "events.jsonl").write_bytes(b"\n".join(lines))
    d = RunBuilder("lone-surrogate").send("a", 0).send("\ud800", 5).deliver("a", 10).write(root)
    assert "\\ud800" in (d / "events.jsonl").read_text()  # what json.dumps writes: valid JSON, not valid Unicode
    return root


@pytest.fixture(scope="module", params=["whole", "bucketed"])
def bad_bytes_verdicts(request, spark, bad_bytes_root, tmp_path_factory):
    return check_on_path(request.param, [bad_bytes_root], tmp_path_factory.mktemp("out"))


def test_a_real_question_mark_is_judged(bad_bytes_verdicts):
    """A real '?' in a name is no lone surrogate (which a reader could turn into '?'): its run is
    judged like any other (LEVEL_ORDER included)."""
    v = bad_bytes_verdicts["question-mark"]
    assert v["passed"] is True and v["messages"] == 2
    assert v["invariants"]["NO_LOSS"]["checked"] == 2 and v["invariants"]["LEVEL_ORDER"]["checked"] == 1


def test_bad_bytes_break_their_run_only(bad_bytes_verdicts):
    assert bad_bytes_verdicts["clean"]["passed"] is True and "broken" not in bad_bytes_verdicts["clean"]
    msg = bad_bytes_verdicts["bad-byte"]["broken"]
    assert "bad-byte/events.jsonl:2" in msg and "UTF-8" in msg, msg
    msg = bad_bytes_verdicts["lone-surrogate"]["broken"]
    assert "lone-surrogate/events.jsonl:2" in msg and "surrogate" in msg, msg


def test_bad_bytes_exit_3_without_a_traceback(spark, bad_bytes_root, tmp_path, capfd):
    assert main(["check", str(bad_bytes_root), "--out", str(tmp_path)]) == 3
    out, err = capfd.readouterr()
    assert "Traceback" not in out + err
    assert "clean: passed" in out
    assert "bad-byte/events.jsonl:2" in err
