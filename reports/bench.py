"""``python -m hourglass.reports.bench``: the checker's cost against a plain Spark scan of the same files.

For each size (default 1, 2.5, 5 and 10 million events) a history of generated runs
(:mod:`reports.gen`, 250 000 events per run) is checked on ``local[2]``; the baseline is a Spark job
that reads the same JSONL files with the same explicit schema and aggregates every column the
checker reads. Printed per size: wall times, their ratio (targets: 2 for runs of 250 000 events,
3 for runs of 2.5 million), the checker's phases (wall time of the driver's phases, and the
seconds the tasks spent in theirs, summed over tasks), and the peak resident memory: of the whole
process tree (driver JVM, Python driver, Python workers), and with ``--cluster`` of each executor
(its JVM and its Python workers).

``--cluster`` runs it on a standalone cluster started here (:mod:`reports.standalone`: the cluster
of the test, ``--workers`` workers of one core), executors on a bare virtualenv; ``--nightly`` is
the nightly size on that cluster: 100 million events in 400 runs. Exit 1 when a generated run does
not pass (all should).
"""

from __future__ import annotations

import argparse
import os
import shutil
import threading
import time
from pathlib import Path

DEFAULT_SIZES = (1_000_000, 2_500_000, 5_000_000, 10_000_000)


NIGHTLY_EVENTS, NIGHTLY_RUNS = 100_000_000, 400


class PeakMemory:
    """Samples the resident memory of this process and all its descendants every 0.2 s, and of
    each Spark executor below ``executor_roots`` (the cluster's workers): its JVM and its Python
    workers."""

    def __init__(self, executor_roots: list[int] = (), cluster_roots: list[int] = ()):
        self._cluster = list(cluster_roots)  # started by this process, but not the driver: left out of peak_bytes
        self.peak_bytes = 0
        self.executor_peaks: dict[int, int] = {}
        self._roots = list(executor_roots)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _run(self):
        while not self._stop.is_set():
            children, rss = _processes()
            cluster = sum(_tree_rss(children, rss, root) for root in self._cluster)
            self.peak_bytes = max(self.peak_bytes, _tree_rss(children, rss, os.getpid()) - cluster)
            for worker in self._roots:
                for executor in children.get(worker, ()):
                    if _is_executor(executor):
                        self.executor_peaks[executor] = max(self.executor_peaks.get(executor, 0), _tree_rss(children, rss, executor))
            self._stop.wait(0.2)


def _is_executor(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"CoarseGrainedExecutorBackend" in f.read()
    except OSError:
        return False


def _processes() -> tuple[dict[int, list[int]], dict[int, int]]:
    """Every process's children and resident bytes, from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid, ppid = int(entry), int(fields[1])
        children.setdefault(ppid, []).append(pid)
        rss[pid] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    return children, rss


def _tree_rss(children: dict[int, list[int]], rss: dict[int, int], root: int) -> int:
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, ()))
    return total


def baseline_scan(spark, files: list[str]) -> None:
    """Read the files as the checker does and aggregate the columns it uses."""
    from pyspark.sql import functions as F

    from hourglass.reports.inputs import EVENT_COLUMNS, event_schema

    df = spark.read.schema(event_schema()).json(files)
    aggs = []
    for c in EVENT_COLUMNS:
        if c in ("plan", "offsets", "max_offsets"):
            aggs.append(F.max(F.size(c)))
        elif c in ("key", "type", "topic", "group", "status", "outcome", "msg_id", "queue_topic", "action", "target", "source"):
            aggs.append(F.approx_count_distinct(c))
        else:
            aggs.append(F.max(c))
    df.agg(*aggs).collect()


def measure(spark, root: Path, n_events: int, out: Path, events_per_run: int = 250_000, executor_roots=(), cluster_roots=()) -> dict:
    from hourglass.reports import check, gen

    history = root / (f"history-{n_events}" if events_per_run == 250_000 else f"history-{n_events}-per-run-{events_per_run}")
    if not (history / ".complete").exists():
        shutil.rmtree(history, ignore_errors=True)
        t = time.perf_counter()
        gen.write_history(history, n_events, events_per_run=events_per_run)
        (history / ".complete").write_text("")
        print(f"  generated {n_events:,} events in {time.perf_counter() - t:.1f} s", flush=True)
    files = sorted(str(p) for p in history.glob("*/events*.jsonl"))
    size_bytes = sum(os.path.getsize(f) for f in files)
    t = time.perf_counter()
    baseline_scan(spark, files)
    scan_before_s = time.perf_counter() - t
    shutil.rmtree(out, ignore_errors=True)
    with PeakMemory(executor_roots, cluster_roots) as mem:
        t = time.perf_counter()
        verdicts = check.check_runs([history], out_dir=out)
        check_s = time.perf_counter() - t
    t = time.perf_counter()
    baseline_scan(spark, files)  # again after: on a shared machine one scan alone is too noisy
    scan_s = (scan_before_s + time.perf_counter() - t) / 2
    failed = sum(1 for v in verdicts if v["passed"] is not True)
    return {"events": n_events, "runs": len(files), "json_bytes": size_bytes, "scan_s": scan_s, "scan_before_s": scan_before_s,
            "check_s": check_s,
            "ratio": check_s / scan_s, "peak_rss_bytes": mem.peak_bytes, "phases": dict(check.PHASES),
            "task_seconds": dict(check.TASK_SECONDS), "executor_peak_bytes": sorted(mem.executor_peaks.values()),
            "runs_not_passed": failed, "verdicts": len(verdicts)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hourglass.reports.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(str(s) for s in DEFAULT_SIZES), help="comma-separated event counts")
    parser.add_argument("--dir", default="/tmp/hourglass-bench", help="where histories are generated (reused)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--events-per-run", type=int, default=250_000,
                        help="run size: runs above reports.run_files.WHOLE_RUN_MAX_EVENTS take the bucketed path")
    parser.add_argument("--cluster", action="store_true", help="on a standalone cluster started here (reports.standalone)")
    parser.add_argument("--workers", type=int, default=2, help="--cluster: workers, one core each")
    parser.add_argument("--executor-memory", default="2g", help="--cluster: spark.executor.memory (the worker offers as much)")
    parser.add_argument("--nightly", action="store_true",
                        help=f"the nightly size: {NIGHTLY_EVENTS:,} events in {NIGHTLY_RUNS} runs, on the cluster (implies --cluster)")
    args = parser.parse_args(argv)
    if args.nightly:
        args.cluster, args.sizes, args.events_per_run = True, str(NIGHTLY_EVENTS), NIGHTLY_EVENTS // NIGHTLY_RUNS
    root = Path(args.dir)
    root.mkdir(parents=True, exist_ok=True)
    if not args.cluster:
        return _run(args, root, args.master, {}, (), ())
    from hourglass.reports.standalone import StandaloneCluster, executor_python

    conf = {"spark.pyspark.python": str(executor_python()), "spark.executor.memory": args.executor_memory}
    with StandaloneCluster(workers=args.workers, cores=1, memory=args.executor_memory, workdir=root / "cluster") as cluster:
        return _run(args, root, cluster.master, conf, cluster.pids()[1:], cluster.pids())


def _run(args, root: Path, master: str, conf: dict, executor_roots, cluster_roots) -> int:
    from hourglass.reports.spark import get_spark, stop_spark

    spark = get_spark(master, conf)
    where = f"{master} ({args.workers} workers of 1 core, executors of {args.executor_memory})" if args.cluster else master
    print(f"checker benchmark on {where}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}", flush=True)
    from hourglass.reports import check, gen

    warm = root / "warm-up"
    if not warm.exists():
        gen.write_history(warm, 20_000)
    check.check_runs([warm], out_dir=root / "out-warm-up")  # JIT and Python workers warm for both sides
    not_passed = 0
    for n in (int(float(s)) for s in args.sizes.split(",")):
        r = measure(spark, root, n, root / f"out-{n}", args.events_per_run, executor_roots, cluster_roots)
        not_passed += r["runs_not_passed"]
        print(f"{r['events']:>11,} events {r['runs']:>3} runs {r['json_bytes'] / 2**30:5.2f} GiB | scan {r['scan_s']:7.1f} s "
              f"(mean of before/after, before {r['scan_before_s']:.1f} s) | "
              f"check {r['check_s']:7.1f} s | ratio {r['ratio']:4.2f} | peak RSS {r['peak_rss_bytes'] / 2**30:5.2f} GiB "
              f"({'the driver' if executor_roots else 'driver and executors'}) | "
              f"{r['events'] / r['check_s']:,.0f} events/s | load {os.getloadavg()[0]:.1f} | runs not passed {r['runs_not_passed']}",
              flush=True)
        print(f"{'':>11} phases (wall): " + ", ".join(f"{k} {v} s" for k, v in r["phases"].items()), flush=True)
        print(f"{'':>11} in the tasks (core-seconds): " + ", ".join(f"{k} {v}" for k, v in sorted(r["task_seconds"].items())), flush=True)
        if executor_roots:
            print(f"{'':>11} peak RSS per executor (JVM + Python workers): "
                  + ", ".join(f"{b / 2**30:.2f} GiB" for b in r["executor_peak_bytes"]), flush=True)
    stop_spark()
    return 1 if not_passed else 0


if __name__ == "__main__":
    raise SystemExit(main())
