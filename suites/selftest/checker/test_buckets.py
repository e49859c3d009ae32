"""The path a run takes never changes its verdict.

Runs up to ``WHOLE_RUN_MAX_EVENTS`` are judged whole from their files' bytes (``reports.run_files``);
bigger ones are parsed file by file and cut into buckets of keys, each judged apart: a run's faults,
snapshots and CRASH answers are copied to every bucket, and a bucket that saw none of some group's
deliveries of a topic is judged again knowing the run's (topic, group) pairs. Here every hand-made
run is checked again on the bucketed path, cut into many small buckets, and must get exactly the
verdict it gets whole.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from suites.selftest.checker.runs import GROUP, RunBuilder

ROOT = Path(__file__).resolve().parents[3]


def _two_groups() -> RunBuilder:
    """Group g consumed all 30 messages; group other got only the first: 29 lost for it."""
    b = RunBuilder("two-groups-one-starved")
    for i in range(30):
        b.send(f"m{i:02d}", i * 10, level=1)
        b.deliver(f"m{i:02d}", i * 10 + 1005)
    b.deliver("m00", 1005, group="other")
    return b


@pytest.fixture(scope="module")
def small_buckets(spark, case_root, tmp_path_factory, monkeypatch_module):
    from hourglass.reports import check, spark_jobs
    from hourglass.reports.check import check_runs

    _two_groups().write(case_root.parent / "buckets-extra")
    monkeypatch_module.setattr(spark_jobs, "EVENTS_PER_BUCKET", 3)
    monkeypatch_module.setattr(check, "WHOLE_RUN_MAX_EVENTS", -1)
    verdicts = check_runs([case_root, case_root.parent / "buckets-extra"], out_dir=tmp_path_factory.mktemp("buckets-out"))
    return {v["run_id"]: v for v in verdicts}


@pytest.fixture(scope="module")
def through_spark_files(spark, case_root, tmp_path_factory):
    """The hand-made runs judged whole, their files read through Spark's binaryFile source (as any
    non-local path is) instead of by the task."""
    from hourglass.reports import spark_jobs
    from hourglass.reports.check import check_runs

    mp = pytest.MonkeyPatch()
    mp.setattr(spark_jobs, "READ_LOCAL_FILES_IN_TASKS", False)
    try:
        verdicts = check_runs([case_root], out_dir=tmp_path_factory.mktemp("binary-out"))
    finally:
        mp.undo()
    return {v["run_id"]: v for v in verdicts}


def test_files_read_through_spark_give_the_same_verdicts(through_spark_files, verdicts):
    assert through_spark_files == verdicts


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_many_buckets_give_the_verdicts_of_one(small_buckets, verdicts):
    assert set(verdicts) <= set(small_buckets)
    for run_id, v in verdicts.items():
        assert small_buckets[run_id] == v, run_id


def test_a_group_starved_in_most_buckets_is_still_expected_to_consume(small_buckets):
    v = small_buckets["two-groups-one-starved"]
    loss = v["invariants"]["NO_LOSS"]
    assert loss["passed"] is False
    assert loss["violations"] == 29
    assert all(e["group"] == "other" for e in loss["examples"])
    assert GROUP != "other"


def test_a_key_goes_to_the_same_bucket_in_every_process():
    """Sends and deliveries of a key sit in different files (harness.jsonl, consumer-*.jsonl), cut
    in different Python processes: the key's bucket cannot depend on the process (Python's own
    string hash does)."""
    import subprocess
    import sys

    code = ("import pyarrow as pa; from reports.buckets import key_buckets; "
            "print(key_buckets(pa.array(['a', 'k-000000017', 'ключ', '', None]), 7).tolist())")
    seen = {subprocess.run([sys.executable, "-c", code], env={"PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)},
                           capture_output=True, text=True, check=True).stdout for seed in ("1", "2")}
    assert len(seen) == 1 and len(set(eval(seen.pop()))) > 2


def test_a_run_in_several_files_gets_the_verdict_of_one(spark, tmp_path):
    """The harness's layout: sends and faults in events/harness.jsonl, deliveries in one file per
    consumer; cut into buckets file by file, or its files gathered from Spark's binaryFile rows
    (as on a cluster), the run is judged as if whole."""
    import json

    from suites.selftest.checker import cases
    from suites.selftest.checker.runs import check_on_path

    for make in (cases.clean_mix, cases.scheduler_duplicate, cases.consumer_redelivery_after_crash, cases.lost):
        d = make().write(tmp_path / "runs")
        events = [json.loads(line) for line in (d / "events.jsonl").read_text().splitlines()]
        (d / "events.jsonl").unlink()
        (d / "events").mkdir()
        (d / "events" / "harness.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events if e["type"] != "deliver"))
        for i in range(2):
            (d / "events" / f"consumer-{i}.jsonl").write_text(
                "".join(json.dumps(e) + "\n" for n, e in enumerate(x for x in events if x["type"] == "deliver") if n % 2 == i))
    whole = check_on_path("whole", [tmp_path / "runs"], tmp_path / "whole")
    bucketed = check_on_path("bucketed", [tmp_path / "runs"], tmp_path / "bucketed")
    assert len(whole) == 4 and bucketed == whole
    from hourglass.reports import spark_jobs

    mp = pytest.MonkeyPatch()
    mp.setattr(spark_jobs, "READ_LOCAL_FILES_IN_TASKS", False)  # a run's files gathered from Spark's binaryFile rows
    try:
        assert check_on_path("whole", [tmp_path / "runs"], tmp_path / "binary") == whole
    finally:
        mp.undo()
