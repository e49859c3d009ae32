"""Numbers beyond what a field means are contract errors naming file, line and field, never an
overflow inside the checker (both paths); a bad profile names its run.json; a run cannot end
before it started; an event cannot name a key twice."""

from __future__ import annotations

import pytest

from hourglass.reference.contract import MAX_MS
from hourglass.reference.rundir import RUN_JSON
from suites.selftest.checker.runs import T0, RunBuilder, check_on_path


def _one(run_id: str, **deliver_fields) -> RunBuilder:
    return RunBuilder(run_id).send("a", 0).deliver("a", 10, **deliver_fields)


@pytest.fixture(scope="module")
def bounds_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("bounds")
    _one("beyond-int64", queue_offset=2**64).write(root)
    _one("ts-at-int64-max", ts_ms=2**63 - 1).write(root)
    _one("attempt-at-int64-max", reconsume_times=2**63 - 1).write(root)
    _one("stamped-far-away", ts_ms=MAX_MS).write(root)  # in range: judged, its timeline drawn sparse
    b = _one("bad-profile")
    b.write(root, profile={**b.run_json()["profile"], "slack_ms": -1})
    _one("ended-before-started").write(root, ended_ms=T0 - 1)
    d = _one("key-named-twice").write(root)
    lines = (d / "events.jsonl").read_text().splitlines(keepends=True)
    lines[0] = lines[0].replace('"key": "a"', '"key": "a", "key": "b"')
    (d / "events.jsonl").write_text("".join(lines))
    return root


@pytest.fixture(scope="module", params=["whole", "bucketed"])
def bounds_verdicts(request, spark, bounds_root, tmp_path_factory):
    return check_on_path(request.param, [bounds_root], tmp_path_factory.mktemp("out"))


@pytest.mark.parametrize("run_id, field, found", [
    ("beyond-int64", "queue_offset", 2**64), ("ts-at-int64-max", "ts_ms", 2**63 - 1),
    ("attempt-at-int64-max", "reconsume_times", 2**63 - 1)])
def test_an_int_beyond_its_field_names_file_line_and_field(bounds_verdicts, run_id, field, found):
    msg = bounds_verdicts[run_id]["broken"]
    assert f"{run_id}/events.jsonl:2: field '{field}': expected an int in [" in msg and f"found {found}" in msg, msg
    assert "too large" not in msg


def test_a_delivery_stamped_far_away_is_judged(bounds_verdicts):
    v = bounds_verdicts["stamped-far-away"]
    assert "broken" not in v and v["messages"] == 1


def test_a_bad_profile_names_its_run_json(bounds_root, bounds_verdicts):
    msg = bounds_verdicts["bad-profile"]["broken"]
    assert msg.startswith(f"{bounds_root / 'bad-profile' / RUN_JSON} profile: field 'slack_ms'"), msg


def test_a_run_ending_before_it_started_is_refused(bounds_root, bounds_verdicts):
    msg = bounds_verdicts["ended-before-started"]["broken"]
    assert f"{bounds_root / 'ended-before-started' / RUN_JSON}: field 'ended_ms': expected 0 (the run never ended) or at least" in msg
    assert f"found {T0 - 1}" in msg, msg


def test_a_key_named_twice_in_an_event_names_file_line_and_key(bounds_verdicts):
    msg = bounds_verdicts["key-named-twice"]["broken"]
    assert "key-named-twice/events.jsonl:1: field 'key': expected the key once per JSON object" in msg
    assert "found ['a', 'b']" in msg, msg
