"""Checking runs: read, validate, join with the model's expectations, judge, write the outputs.

All runs of one call go through the same Spark jobs (one scan of the events, cached), never a loop
of jobs per run. The driver only handles what is small: faults, duplicate pairs (ruled by the
model), the violations found, and plot aggregates.
"""

from __future__ import annotations

import os
import sys
from collections import defaultdict
from pathlib import Path

from pyspark import StorageLevel
from pyspark.sql import functions as F

from reports import baseline as baseline_mod
from reports import model, plots
from reports.inputs import BrokenRun, _display, discover_runs, file_summary, read_events, rescan_file
from reports.invariants import VIOLATION_COLUMNS, judge
from reports.outputs import write_run_outputs
from reports.spark import get_spark, stop_spark
from reports.verdict import broken_verdict, build_verdict

__all__ = ["check_runs", "get_spark", "stop_spark"]


def _log(msg: str) -> None:
    print(f"hourglass check: {msg}", file=sys.stderr)


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
    try:
        sizes, suspects = file_summary(events)
        torn = _contract_pass(spark, suspects, by_id, broken)
        good_ids = [rid for rid in by_id if rid not in {b.run_id for b in broken}]
        good = events.filter(F.col("contract_ok") & F.col("run_id").isin(good_ids))
        unkeyed, topic_groups = _small_facts(good)
        runs_json = {rid: by_id[rid].run for rid in good_ids}
        expected = model.expected_table(good, runs_json, unkeyed, {rid: sizes.get(rid, 0) for rid in good_ids}, topic_groups)
        expected = expected.persist(StorageLevel.MEMORY_AND_DISK)
        for row in expected.filter(F.col("topic") == model.CONTRACT_ERROR_TOPIC).select("run_id", "widened_by").collect():
            broken.append(BrokenRun(by_id[row.run_id].run_dir, row.widened_by, row.run_id))
        bad_ids = {b.run_id for b in broken}
        good_ids = [rid for rid in good_ids if rid not in bad_ids]
        expected = expected.filter(F.col("topic") != model.CONTRACT_ERROR_TOPIC)
        good = good.filter(F.col("run_id").isin(good_ids))
        run_ends = spark.createDataFrame(
            [(rid, _ended_ms(by_id[rid].run)) for rid in good_ids], "run_id string, ended_ms bigint")
        j = judge(good, expected, run_ends)
        violations, rulings = _collect_violations(j, runs_json, unkeyed)
        checked = defaultdict(dict)
        for r in j.checked.collect():
            checked[r.run_id][r.invariant] = r.checked
        pending = defaultdict(list)
        for r in j.pending.collect():
            pending[r.run_id].append(r.asDict())
        stats = {r.run_id: r.asDict() for r in j.stats.collect()}
        plot_data = plots.collect(j, {rid: by_id[rid].run for rid in good_ids}, rulings)
    finally:
        events.unpersist()
    verdicts = []
    for rid in good_ids:
        run = by_id[rid].run
        faults = [e for e in unkeyed.get(rid, []) if e["type"] == "fault"]
        vdf = violations[violations["run_id"] == rid] if len(violations) else violations
        if accepted is not None:
            vdf = accepted.mark(vdf, run)
        verdict = build_verdict(rid, stats.get(rid, {}), checked.get(rid, {}), vdf.to_dict("records"),
                                pending.get(rid, []), faults, torn.get(rid, []))
        target = _target_dir(out_dir, by_id[rid].run_dir, rid)
        if target is not None:
            write_run_outputs(target, verdict, vdf, plot_data.get(rid), run, faults)
        verdicts.append(verdict)
    return verdicts


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


def _small_facts(good):
    """Per run: fault and snapshot events (as dicts) and the (topic, group) pairs delivered."""
    unkeyed: dict[str, list[dict]] = defaultdict(list)
    # CRASH answers ride along with the faults: the model's NO_DUPLICATE rule needs them (a consumer
    # that crashed redelivers what it consumed since its last offset commit)
    rows = good.filter(F.col("type").isin(*model.UNKEYED_TYPES)
                       | ((F.col("type") == "deliver") & (F.col("outcome") == "CRASH"))).collect()
    for r in rows:
        unkeyed[r.run_id].extend(model.unkeyed_to_dicts([r]))
    topic_groups: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for r in good.filter(F.col("type") == "deliver").select("run_id", "topic", "group").distinct().collect():
        topic_groups[r.run_id].append((r.topic, r.group))
    return dict(unkeyed), dict(topic_groups)


def _collect_violations(j, runs_json, unkeyed):
    """All violations as one pandas frame, the model's duplicate rulings included."""
    import pandas as pd

    v = j.violations.toPandas()
    v["cause"] = None
    dup_rows = []
    candidates = j.duplicate_candidates.orderBy("run_id", "key", "group", "attempt", "ts_ms").collect()
    by_attempt = defaultdict(list)
    for r in candidates:
        by_attempt[(r.run_id, r.key, r.group, r.attempt)].append(r.asDict())
    rulings = defaultdict(list)
    for (rid, key, group, attempt), ds in by_attempt.items():
        faults = [e for e in unkeyed.get(rid, []) if e["type"] == "fault" or e.get("outcome") == "CRASH"]
        first = _as_event(ds[0])
        for second in ds[1:]:
            ruling = model.rule_duplicates(runs_json[rid], faults, [(first, _as_event(second))])[0]
            rulings[rid].append({"key": key, "attempt": attempt, "cause": ruling.cause, "allowed": ruling.allowed})
            if not ruling.allowed:
                dup_rows.append({"run_id": rid, "invariant": "NO_DUPLICATE", "key": key, "group": group, "attempt": attempt,
                                 "anchor_ms": first["ts_ms"], "observed_ms": second["ts_ms"], "cause": ruling.cause,
                                 "other_key": None, "detail": f"{ruling.cause} duplicate not allowed: {ruling.reason}"})
    if dup_rows:
        v = pd.concat([v, pd.DataFrame(dup_rows)], ignore_index=True)
    v = v.astype({name: ("Int64" if t == "bigint" else "boolean" if t == "boolean" else "object")
                  for name, t in VIOLATION_COLUMNS})
    return v, dict(rulings)


def _as_event(d: dict) -> dict:
    out = {k: v for k, v in d.items() if v is not None and k not in ("copy", "run_id")}
    out["type"] = "deliver"
    out["reconsume_times"] = out.pop("attempt")
    return out
