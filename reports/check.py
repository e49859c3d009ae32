"""Checking runs: read, validate, join with the model's expectations, judge, write the outputs.

All runs of one call go through the same Spark job, never a loop of jobs per run: runs of a
moderate size are judged whole, one per task, from their files' bytes (:mod:`reports.run_files`);
bigger ones are parsed the same way, cut by bucket of keys into Arrow blobs and shuffled straight
into the judging (:func:`reports.spark_jobs.judged_table`). Nothing is cached and nothing is read twice, except the files
holding a row that breaks the contract (re-read line by line to name line and field). The driver
only handles what is small: faults, the violations found, counts and plot aggregates.
"""

from __future__ import annotations

import json
import os
import sys
import time
from contextlib import contextmanager
from collections import defaultdict
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import functions as F

from hourglass.reference.rundir import local_path
from hourglass.reports import baseline as baseline_mod
from hourglass.reports import offsets, plots, spark_jobs
from hourglass.reports.invariants import undecided
from hourglass.reports.completeness import assess, judging_end_ms
from hourglass.reports.inputs import BrokenRun, _display, discover_runs, missing_consumers, repeated_lines, rescan_file, sent_twice
from hourglass.reports.level_order import level_order
from hourglass.reports.logs import run_logs
from hourglass.reports.rows import VIOLATION_COLUMNS
from hourglass.reports.run_files import WHOLE_RUN_MAX_EVENTS
from hourglass.reports.stalls import held_offset_reclassify, host_summary
from hourglass.reports.outputs import scenario_data, write_run_outputs
from hourglass.reports.spark import get_spark, stop_spark
from hourglass.reports.verdict import broken_verdict, build_verdict

__all__ = ["check_runs", "get_spark", "stop_spark"]


def _log(msg: str) -> None:
    print(f"hourglass check: {msg}", file=sys.stderr)


#: The columns of the judged rows the driver reads (:data:`reports.rows.OUTPUT_SCHEMA`).
ROW_COLUMNS = ("run_id", "bucket", "kind", "key", "level", "store_ms", "born_ms", "payload")
#: The invariants that count copies: a run violating one is read again for exact repeats of a line.
COPIES_COUNTED = ("NO_DUPLICATE", "DLQ_ROUTING")
#: Wall time of each phase of the last check (seconds), for the benchmark.
PHASES: dict[str, float] = {}
#: Seconds the last check's tasks spent in each of their phases, summed over tasks (core-seconds:
#: on N cores they overlap; ``reports.rows`` kind ``t``).
TASK_SECONDS: dict[str, float] = {}


@contextmanager
def _phase(name: str):
    start = time.perf_counter()
    try:
        yield
    finally:
        PHASES[name] = round(time.perf_counter() - start, 2)
        if os.environ.get("HOURGLASS_CHECK_TIMINGS"):
            _log(f"{name}: {PHASES[name]} s")


def check_runs(run_dirs, out_dir=None, master=None, baseline=None, spark_conf=None) -> list[dict]:
    """Check the runs at or below ``run_dirs``; write each run's outputs into ``out_dir/<run_id>/``
    (``None``: into the run directory itself); return the verdicts (broken runs carry ``broken``).

    ``baseline``: a path or a loaded :class:`reports.baseline.Baseline` of accepted violations.
    ``master`` and ``spark_conf`` (Spark properties) start the process's session if none runs yet."""
    spark = get_spark(master, spark_conf)
    accepted = baseline_mod.load(baseline) if isinstance(baseline, (str, os.PathLike)) else baseline
    runs, broken = discover_runs(spark, [str(p) for p in run_dirs])
    run_json = {r.run_id: r.run for r in runs}  # a broken run's report still links its logs
    for run_id, message in spark_jobs.validate_profiles(runs).items():
        broken.append(BrokenRun(next(r.run_dir for r in runs if r.run_id == run_id), message, run_id))
    runs = [r for r in runs if r.run_id not in {b.run_id for b in broken}]
    verdicts: list[dict] = []
    if runs:
        verdicts = _check(spark, runs, broken, out_dir, accepted)
    for b in broken:
        _log(b.message)
        run_id = b.run_id or Path(_display(b.where)).name
        v = broken_verdict(run_id, b.message)
        target = _target_dir(out_dir, b.where, run_id) if b.is_run else None
        if target is not None:
            write_run_outputs(target, v, None, None, None, logs=run_logs(v, run_json.get(b.run_id), b.where, target))
        verdicts.append(v)
    return verdicts


def _target_dir(out_dir, run_dir: str, run_id: str) -> Path | None:
    if out_dir is not None:
        return Path(out_dir) / run_id
    local = local_path(run_dir)
    return Path(local) if local is not None else None


def _check(spark, runs, broken, out_dir, accepted) -> list[dict]:
    by_id = {r.run_id: r for r in runs}
    runs_json = {rid: r.run for rid, r in by_id.items()}
    ended = {rid: judging_end_ms(run) for rid, run in runs_json.items()}
    bins = {rid: plots.timeline_bin_ms(run) for rid, run in runs_json.items()}
    whole = [r for r in runs if r.estimated_events <= WHOLE_RUN_MAX_EVENTS]
    split = [r for r in runs if r.estimated_events > WHOLE_RUN_MAX_EVENTS]
    buckets = spark_jobs.bucket_counts({r.run_id: r.estimated_events for r in split})
    PHASES.clear()
    tables = []
    if whole:
        tables.append(spark_jobs.whole_runs_table(spark, whole, ended, bins))
    if split:
        tables.append(spark_jobs.judged_table(spark, split, buckets, ended, bins))
    judged = tables[0] if len(tables) == 1 else tables[0].unionByName(tables[1])
    judged = judged.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        with _phase("read, model and judging"):
            rows = judged.filter(F.col("kind") != "lob").select(*ROW_COLUMNS).collect()
        with _phase("level order"):  # runs judged whole did theirs in their task
            rows += level_order(judged.filter(F.col("kind") == "lob"), len(split)).select(*ROW_COLUMNS).collect() if split else []
    finally:
        judged.unpersist()
    _task_seconds(rows)
    flagged = {json.loads(r.payload) for r in rows if r.kind == "f"}
    with _phase("contract rescan"):
        torn = _contract_pass(spark, sorted(flagged), by_id, broken)
    redo, markers = _blind_buckets(rows)
    if redo:
        with _phase("second pass"):
            _log(f"{len(redo)} bucket(s) held no delivery of a group that consumes a topic they sent to: judged again")
            again = spark_jobs.judged_table(spark, [r for r in split if r.run_id in {rid for rid, _ in redo}], buckets, ended, bins,
                                            markers, only=redo)
            again_rows = again.filter(~F.col("kind").isin("lob", "u", "f", "t")).select(*ROW_COLUMNS).collect()
        rows = [r for r in rows if (r.run_id, r.bucket) not in redo or r.kind in ("u", "f", "lc", "lv")] + again_rows
    for r in rows:
        if r.kind == "e" and r.run_id not in {b.run_id for b in broken}:
            broken.append(BrokenRun(by_id[r.run_id].run_dir, _judging_error(spark, by_id[r.run_id], json.loads(r.payload)), r.run_id))
    unkeyed = {r.run_id: json.loads(r.payload) for r in rows if r.kind == "u" and r.bucket == 0}
    per_run = _gather(rows)
    interrupted = {}
    already = {b.run_id for b in broken}
    copies = {r.run_id for r in rows if r.kind == "v" and json.loads(r.payload)["invariant"] in COPIES_COUNTED}
    for rid, run_input in by_id.items():
        if rid in already:
            continue
        got = per_run[rid]
        found = assess(run_input.run, [_display(f) for f in run_input.json_files + run_input.parquet_files],
                       got["events"], got["stats"]["messages"], got["last_ts_ms"])
        why = (found.broken or missing_consumers(spark, run_input, unkeyed.get(rid, []))
               or (repeated_lines(spark, run_input) if rid in copies else None))
        if why:
            broken.append(BrokenRun(run_input.run_dir, why, rid))
        interrupted[rid] = found.interrupted
    bad_ids = {b.run_id for b in broken}
    good_ids = [rid for rid in by_id if rid not in bad_ids]
    verdicts = []
    with _phase("outputs"):
        _write_all(good_ids, by_id, unkeyed, per_run, accepted, torn, interrupted, out_dir, verdicts)
    return verdicts


def _task_seconds(rows) -> None:
    TASK_SECONDS.clear()
    for r in rows:
        if r.kind == "t":
            for phase, s in json.loads(r.payload).items():
                TASK_SECONDS[phase] = TASK_SECONDS.get(phase, 0.0) + s
    for phase in TASK_SECONDS:
        TASK_SECONDS[phase] = round(TASK_SECONDS[phase], 2)
    if TASK_SECONDS and os.environ.get("HOURGLASS_CHECK_TIMINGS"):
        _log("tasks (core-seconds): " + ", ".join(f"{k} {v}" for k, v in sorted(TASK_SECONDS.items())))


def _judging_error(spark, run_input, error: dict) -> str:
    """A run the task could not judge: the contract error its files hold, if a rescan finds one
    (bad bytes, say), else what went wrong."""
    if error.get("send_key") is not None:
        return sent_twice(spark, run_input, error["send_key"]) or f"{_display(run_input.run_dir)}: {error['message']}"
    if error["rescan"]:
        for uri in run_input.json_files + run_input.parquet_files:
            finding = rescan_file(spark, uri)
            if finding.error:
                return finding.error
        return f"{_display(run_input.run_dir)}: could not be judged: {error['message']}"
    return error["message"]


def _blind_buckets(rows) -> tuple[set[tuple[str, int]], dict[str, list[tuple[str, str]]]]:
    """The buckets that must be judged again, and each such run's (topic, group) pairs: a bucket
    learns which groups consume a topic from its own deliveries, so one that holds none of some
    group's deliveries of a topic it sent to (a group that lost nearly everything, a topic with a
    handful of messages) would not expect that group to consume them."""
    seen: dict[str, dict[int, tuple[set, list]]] = defaultdict(dict)
    for r in rows:
        if r.kind == "tg":
            p = json.loads(r.payload)
            seen[r.run_id][r.bucket] = ({tuple(x) for x in p["pairs"]}, p["sent_topics"])
    redo: set[tuple[str, int]] = set()
    markers: dict[str, list[tuple[str, str]]] = {}
    for rid, per_bucket in seen.items():
        union = set().union(*(pairs for pairs, _ in per_bucket.values()))
        for b, (pairs, topics) in per_bucket.items():
            if any((t, g) not in pairs for t, g in union if t in topics):
                redo.add((rid, b))
                markers[rid] = sorted(union)
    return redo, markers


def _write_all(good_ids, by_id, unkeyed, per_run, accepted, torn, interrupted, out_dir, verdicts) -> None:
    jobs = []
    for rid in good_ids:
        run = by_id[rid].run
        faults = [e for e in unkeyed.get(rid, []) if e["type"] == "fault"]
        got = per_run[rid]
        checks = offsets.plan(unkeyed.get(rid, []), run.get("profile"))  # OFFSET_PERSISTENCE: once per run, from its unkeyed events
        n, found = offsets.judge(checks, {w: {int(lv): c for lv, c in per_level.items()} for w, per_level in got["reputs"].items()},
                                 {w: {int(lv): t for lv, t in per_level.items()} for w, per_level in got["last_reputs"].items()})
        got["checked"][offsets.INVARIANT] += n
        # a persist that left one entry uncovered while the schedule path was held: its own rule (reports.stalls)
        found, got["pending"] = held_offset_reclassify([dict(v, run_id=rid) for v in found], got["pending"],
                                                       unkeyed.get(rid, []), run)
        got["violations"].extend(found)
        # what the run's circumstances leave undecided (a lagging consumer, the host's stalls on a
        # message's path, the client's re-sends): each invariant's own rule (reports.invariants)
        got["violations"], got["pending"] = undecided(got["violations"], got["pending"], unkeyed.get(rid, []), run)
        vdf = _violation_frame(got["violations"])
        if accepted is not None:
            vdf = accepted.mark(vdf, run)
        verdict = build_verdict(rid, got["stats"], got["checked"], vdf.to_dict("records"), got["pending"], faults, torn.get(rid, []),
                                interrupted.get(rid))
        verdict["host"] = host_summary(run, unkeyed.get(rid, []))
        verdict["started_ms"] = run["started_ms"]  # t+0 of the printed text (reports.timetext)
        target = _target_dir(out_dir, by_id[rid].run_dir, rid)
        if target is not None:
            data = plots.merge(got["plots"], run, plots.lost_due_ms(got["violations"]))
            data["stalls"] = plots.stall_bands([e for e in unkeyed.get(rid, []) if e["type"] == "stall"])
            jobs.append((target, verdict, vdf, data, run, faults, run_logs(verdict, run, by_id[rid].run_dir, target),
                         scenario_data(by_id[rid].run_dir)))
        else:
            _log(f"{by_id[rid].run_dir}: not a local directory, outputs not written (give --out)")
        verdicts.append(verdict)
    for job in jobs:
        write_run_outputs(*job)


def _gather(rows) -> dict[str, dict]:
    """The judged rows of all runs, merged per run (counts summed over buckets)."""
    per_run: dict[str, dict] = defaultdict(lambda: {"violations": [], "checked": defaultdict(int), "pending": [],
                                                    "stats": defaultdict(int), "plots": [], "events": 0, "last_ts_ms": None,
                                                    "reputs": defaultdict(lambda: defaultdict(int)),
                                                    "last_reputs": defaultdict(dict)})
    for r in rows:
        got = per_run[r.run_id]
        payload = json.loads(r.payload)
        if r.kind == "v":
            payload["run_id"] = r.run_id
            got["violations"].append(payload)
        elif r.kind == "c":
            for inv, n in payload.items():
                got["checked"][inv] += n
        elif r.kind == "s":
            for name, n in payload.items():
                got["stats"][name] += n
        elif r.kind == "p":
            got["pending"].append(payload)
        elif r.kind == "n":
            got["events"] += payload["events"]
            if payload["last_ts_ms"] is not None:
                got["last_ts_ms"] = max(got["last_ts_ms"] or payload["last_ts_ms"], payload["last_ts_ms"])
        elif r.kind == "plot":
            got["plots"].append(payload)
        elif r.kind == "rp":  # re-puts per delay level in the windows OFFSET_PERSISTENCE needs (and the last one's store time)
            for start_ms, until_ms, per_level, *last in payload:
                for lv, n in per_level.items():
                    got["reputs"][(start_ms, until_ms)][lv] += n
                for lv, t in (last[0] if last else {}).items():
                    w = got["last_reputs"][(start_ms, until_ms)]
                    w[lv] = max(w.get(lv, t), t)
        elif r.kind == "lc":
            got["checked"]["LEVEL_ORDER"] += payload
        elif r.kind == "lv":
            got["violations"].append(_level_order_violation(r.run_id, r.key, r.level, r.born_ms, r.store_ms, **payload))
    return per_run


def _level_order_violation(run_id, key, level, born_ms, store_ms, other_key, other_send_ts_ms, other_store_ms) -> dict:
    return {"run_id": run_id, "invariant": "LEVEL_ORDER", "key": key, "attempt": 0, "level": level,
            "anchor_ms": born_ms, "observed_ms": store_ms, "other_key": other_key,
            "detail": (f"born at {born_ms}, after {other_key}'s send returned at {other_send_ts_ms}, "
                       f"yet stored at {store_ms}, before {other_key} (stored at {other_store_ms})")}


def _violation_frame(violations: list[dict]):
    import pandas as pd

    frame = pd.DataFrame(violations, columns=[n for n, _ in VIOLATION_COLUMNS])
    return frame.astype({n: ("Int64" if t == "bigint" else "boolean" if t == "boolean" else "object") for n, t in VIOLATION_COLUMNS})


def _contract_pass(spark, suspects, by_id, broken) -> dict[str, list[dict]]:
    """Suspect files re-read line by line: torn last lines (reported) and contract errors (broken)."""
    torn: dict[str, list[dict]] = defaultdict(list)
    file_run = {f: r.run_id for r in by_id.values() for f in r.json_files + r.parquet_files}
    for uri in suspects:
        finding = rescan_file(spark, uri)
        run_id = file_run.get(uri)
        if finding.error:
            broken.append(BrokenRun(by_id[run_id].run_dir, finding.error, run_id))
        elif finding.torn_line:
            torn[run_id].append({"file": _display(uri), "line": finding.torn_line})
            _log(f"{_display(uri)}:{finding.torn_line}: torn last line skipped")
    return torn
