"""Checking runs: read, validate, join with the model's expectations, judge, write the outputs.

All runs of one call go through the same Spark jobs (one scan of the events, cached), never a loop
of jobs per run. The driver only handles what is small: faults, duplicate pairs (ruled by the
model), the violations found, and plot aggregates.
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

from reports import baseline as baseline_mod
from reports import model, plots
from reports.inputs import BrokenRun, _display, discover_runs, read_events, rescan_file
from reports.judge import VIOLATION_COLUMNS
from reports.level_order import level_order
from reports.outputs import write_run_outputs
from reference.contract import EVENT_FIELDS
from reports.spark import get_spark, stop_spark
from reports.verdict import broken_verdict, build_verdict

__all__ = ["check_runs", "get_spark", "stop_spark"]


def _log(msg: str) -> None:
    print(f"hourglass check: {msg}", file=sys.stderr)


#: Wall time of each phase of the last check (seconds), for the benchmark.
PHASES: dict[str, float] = {}


@contextmanager
def _phase(name: str):
    start = time.perf_counter()
    try:
        yield
    finally:
        PHASES[name] = round(time.perf_counter() - start, 2)
        if os.environ.get("HOURGLASS_CHECK_TIMINGS"):
            _log(f"{name}: {PHASES[name]} s")


def check_runs(run_dirs, out_dir=None, master=None, baseline=None) -> list[dict]:
    """Check the runs at or below ``run_dirs``; write each run's outputs into ``out_dir/<run_id>/``
    (``None``: into the run directory itself); return the verdicts (broken runs carry ``broken``).

    ``baseline``: a path or a loaded :class:`reports.baseline.Baseline` of accepted violations."""
    spark = get_spark(master)
    accepted = baseline_mod.load(baseline) if isinstance(baseline, (str, os.PathLike)) else baseline
    runs, broken = discover_runs(spark, [str(p) for p in run_dirs])
    for run_id, message in model.validate_profiles([r.run for r in runs]).items():
        broken.append(BrokenRun(next(r.run_dir for r in runs if r.run_id == run_id), message, run_id))
    runs = [r for r in runs if r.run_id not in {b.run_id for b in broken}]
    verdicts: list[dict] = []
    if runs:
        verdicts = _check(spark, runs, broken, out_dir, accepted)
    for b in broken:
        _log(b.message)
        run_id = b.run_id or Path(_display(b.where)).name
        v = broken_verdict(run_id, b.message)
        target = _target_dir(out_dir, b.where, run_id)
        if target is not None:
            write_run_outputs(target, v, None, None, None)
        verdicts.append(v)
    return verdicts


def _target_dir(out_dir, run_dir: str, run_id: str) -> Path | None:
    if out_dir is not None:
        return Path(out_dir) / run_id
    local = _display(run_dir)
    return Path(local) if "://" not in local and not local.startswith(("hdfs:", "s3a:", "s3:", "gs:", "abfs:")) else None


def _check(spark, runs, broken, out_dir, accepted) -> list[dict]:
    by_id = {r.run_id: r for r in runs}
    events = read_events(spark, runs).persist(StorageLevel.MEMORY_AND_DISK)
    judged = None
    PHASES.clear()
    try:
        with _phase("read, cache and first pass"):
            sizes, suspects, unkeyed, topic_groups = _first_pass(events)
        with _phase("contract rescan"):
            torn = _contract_pass(spark, suspects, by_id, broken)
        good_ids = [rid for rid in by_id if rid not in {b.run_id for b in broken}]
        good = events.filter(F.col("contract_ok") & F.col("run_id").isin(good_ids))
        runs_json = {rid: by_id[rid].run for rid in good_ids}
        ended = {rid: _ended_ms(run) for rid, run in runs_json.items()}
        bins = {rid: plots.timeline_bin_ms(run) for rid, run in runs_json.items()}
        judged = model.judged_table(good, runs_json, unkeyed, {rid: sizes.get(rid, 0) for rid in good_ids},
                                    topic_groups, ended, bins).persist(StorageLevel.MEMORY_AND_DISK)
        with _phase("model and judging"):
            rows = judged.filter(F.col("kind") != "lo").select("run_id", "kind", "payload").collect()
        with _phase("level order"):
            lo = level_order(judged.filter(F.col("kind") == "lo")).collect()
    finally:
        events.unpersist()
        if judged is not None:
            judged.unpersist()
    for r in rows:
        if r.kind == "e":
            broken.append(BrokenRun(by_id[r.run_id].run_dir, json.loads(r.payload), r.run_id))
    bad_ids = {b.run_id for b in broken}
    good_ids = [rid for rid in good_ids if rid not in bad_ids]
    per_run = _gather(rows, lo)
    verdicts = []
    with _phase("outputs"):
        _write_all(good_ids, by_id, unkeyed, per_run, accepted, torn, out_dir, verdicts)
    return verdicts


def _write_all(good_ids, by_id, unkeyed, per_run, accepted, torn, out_dir, verdicts) -> None:
    for rid in good_ids:
        run = by_id[rid].run
        faults = [e for e in unkeyed.get(rid, []) if e["type"] == "fault"]
        got = per_run[rid]
        vdf = _violation_frame(got["violations"])
        if accepted is not None:
            vdf = accepted.mark(vdf, run)
        verdict = build_verdict(rid, got["stats"], got["checked"], vdf.to_dict("records"), got["pending"], faults, torn.get(rid, []))
        target = _target_dir(out_dir, by_id[rid].run_dir, rid)
        if target is not None:
            write_run_outputs(target, verdict, vdf, plots.merge(got["plots"], run), run, faults)
        else:
            _log(f"{by_id[rid].run_dir}: not a local directory, outputs not written (give --out)")
        verdicts.append(verdict)


def _gather(rows, lo) -> dict[str, dict]:
    """The judged rows of all runs, merged per run (counts summed over buckets)."""
    per_run: dict[str, dict] = defaultdict(lambda: {"violations": [], "checked": defaultdict(int), "pending": [],
                                                    "stats": defaultdict(int), "plots": []})
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
        elif r.kind == "plot":
            got["plots"].append(payload)
    for r in lo:
        if r.kind == "c":
            per_run[r.run_id]["checked"]["LEVEL_ORDER"] += r.checked
            continue
        per_run[r.run_id]["violations"].append({
            "run_id": r.run_id, "invariant": "LEVEL_ORDER", "key": r.key, "attempt": 0, "level": r.level,
            "anchor_ms": r.born_ms, "observed_ms": r.store_ms, "other_key": r.other_key,
            "detail": (f"born at {r.born_ms}, after {r.other_key}'s send returned at {r.other_send_ts_ms}, "
                       f"yet stored at {r.store_ms}, before {r.other_key} (stored at {r.other_store_ms})")})
    return per_run


def _violation_frame(violations: list[dict]):
    import pandas as pd

    frame = pd.DataFrame(violations, columns=[n for n, _ in VIOLATION_COLUMNS])
    return frame.astype({n: ("Int64" if t == "bigint" else "boolean" if t == "boolean" else "object") for n, t in VIOLATION_COLUMNS})


def _ended_ms(run: dict) -> int:
    ended = run.get("ended_ms") or 0
    return ended if ended > 0 else 2**62  # a run without an end: every window is still open


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


def _first_pass(events):
    """One action over the cached events: rows and suspect rows per file, the faults and snapshots
    of each run (as dicts), and the (topic, group) pairs delivered in each run."""
    bad = (F.col("suspect") | ~F.col("contract_ok")).cast("long")
    summary = events.groupBy("run_id", "source_file").agg(F.count(F.lit(1)).alias("n"), F.sum(bad).alias("m")).select(
        F.lit("f").alias("kind"), "run_id", F.col("source_file").alias("a"), F.lit(None).cast("string").alias("b"), "n", "m")
    ok = events.filter("contract_ok")
    unkeyed_cols = sorted({"type", "ts_ms"} | {f.name for t in model.UNKEYED_TYPES for f in EVENT_FIELDS[t]})
    facts = ok.filter(F.col("type").isin(*model.UNKEYED_TYPES)).select(
        F.lit("u").alias("kind"), "run_id", F.to_json(F.struct(*unkeyed_cols)).alias("a"), F.lit(None).cast("string").alias("b"),
        F.lit(None).cast("long").alias("n"), F.lit(None).cast("long").alias("m"))
    # a CRASH answer is a consumer fault the plan injected: the model's NO_DUPLICATE rule needs every
    # crash of the run (other consumers redeliver what the crashed one had not committed)
    crashes = ok.filter((F.col("type") == "deliver") & (F.col("outcome") == "CRASH")).select(
        F.lit("u").alias("kind"), "run_id",
        F.to_json(F.struct(F.lit("fault").alias("type"), "ts_ms", F.lit("crash").alias("action"),
                           F.lit("consumer").alias("target"), "group", "key")).alias("a"),
        F.lit(None).cast("string").alias("b"), F.lit(None).cast("long").alias("n"), F.lit(None).cast("long").alias("m"))
    pairs = ok.filter(F.col("type") == "deliver").select("run_id", "topic", "group").distinct().select(
        F.lit("tg").alias("kind"), "run_id", F.col("topic").alias("a"), F.col("group").alias("b"),
        F.lit(None).cast("long").alias("n"), F.lit(None).cast("long").alias("m"))
    sizes: dict[str, int] = defaultdict(int)
    suspects: list[str] = []
    unkeyed: dict[str, list[dict]] = defaultdict(list)
    topic_groups: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for r in summary.unionByName(facts).unionByName(crashes).unionByName(pairs).collect():
        if r.kind == "f":
            sizes[r.run_id] += r.n
            if r.m:
                suspects.append(r.a)
        elif r.kind == "u":
            unkeyed[r.run_id].append(json.loads(r.a))
        else:
            topic_groups[r.run_id].append((r.a, r.b))
    for evs in unkeyed.values():
        evs.sort(key=lambda e: e["ts_ms"])
    return dict(sizes), sorted(suspects), dict(unkeyed), dict(topic_groups)
