"""``python -m hourglass.harness.bench``: every benchmark of the project, one after the other, figures printed.

    python -m hourglass.harness.bench                 # all, with the sizes CI can afford
    python -m hourglass.harness.bench model checker   # some of them
    python -m hourglass.harness.bench suite --system rocketmq:latest

- ``model``: the expected table for 1 million messages (``python -m hourglass.harness.bench_model``)
- ``checker``: the PySpark checker on generated histories (``python -m hourglass.reports.bench``)
- ``broker``: start-to-ready per runtime/version and the send-and-record rate against RocketMQ's own
  benchmark producer (``python -m hourglass.adapters.rocketmq.bench``)
- ``suite``: time to verdict of the conformance suite against a real broker: the runs and their
  check against its longest scenario's own wait (target at most 1.25x); the machine's load beside
  it (a busy machine makes every figure longer)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from hourglass.harness.runner import SETUP_BEGAN_MS

MODULES = {"model": "hourglass.harness.bench_model", "checker": "hourglass.reports.bench", "broker": "hourglass.adapters.rocketmq.bench"}


#: The phases of one run, each the time between two of its observations (:func:`run_phases`).
PHASES = ("broker_setup", "setup_turn", "consumers_start", "sending", "until_last_delivery", "drain_tail", "run_end")


def run_phases(run_dir: Path) -> dict:
    """Where one run's time went, in seconds, from its run.json and events: the broker's setup
    (start to ready: shared by the runs of a shared system), the wait for its setup turn (the
    run's start to its ``setup_began_ms``: harness.turns), the consumers' start (from then to its
    ``run_start`` snapshot: topics, consumer JVMs), the sending, the wait until the last
    delivery or DLQ entry, the drain's tail after it (margins until the model says every message is
    final), and the run's end (heal, DLQ read, consume stats, consumers' stop)."""
    from hourglass.adapters.rundir import read_events

    run = json.loads((run_dir / "run.json").read_text())
    events = read_events(run_dir / "events")
    def ts(kind, moment=None):
        return [e["ts_ms"] for e in events if e.get("type") == kind and (moment is None or e.get("moment") == moment)]
    sends, got = ts("send"), ts("deliver") + ts("dlq")
    setup = run.get("system", {}).get("broker_setup_ms") or [run["started_ms"], run["started_ms"]]
    started, ended = run["started_ms"], run["ended_ms"]
    turn = run.get(SETUP_BEGAN_MS, started)
    consumers_up = min(ts("snapshot", "run_start"), default=turn)
    last_send = max(sends, default=consumers_up)
    last_got = max(got, default=last_send)
    run_end = min(ts("snapshot", "run_end"), default=ended)
    spans = [setup[1] - setup[0], turn - started, consumers_up - turn, last_send - consumers_up, last_got - last_send,
             run_end - last_got, ended - run_end]
    return {"scenario": run.get("scenario"), "started_ms": started, "ended_ms": ended, "setup_ms": setup,
            **{p: round(max(0, s) / 1000, 1) for p, s in zip(PHASES, spans)}}


def breakdown(out: Path) -> dict:
    """The batch's critical path: the run that ended last, its phases, and how long before it
    started the batch was busy with the broker's setup; every run's phases beside it."""
    runs = [run_phases(p.parent) for p in sorted(out.glob("*/run.json"))]
    if not runs:
        return {}
    last = max(runs, key=lambda r: r["ended_ms"])
    first_setup = min(r["setup_ms"][0] for r in runs)
    return {"critical_run": last["scenario"], **{p: last[p] for p in PHASES},
            "before_its_broker": round(max(0, last["setup_ms"][0] - first_setup) / 1000, 1),
            "runs": {r["scenario"]: {p: r[p] for p in PHASES} for r in runs}}


#: a system's teardown after its last run (harness.eta.Costs.teardown_s): where the batch began is
#: its wall time back from its last run's end plus this
TIMELINE_TEARDOWN_S = 4.0


def eta_timeline(out: Path, batch_wall_s: float, verdicts_s: float, spark_warm_s: float) -> dict:
    """The batch's real timeline, as ``harness.batch.Batch`` saw it, for replaying its ETA
    (suites/selftest/harness/test_eta.py): per job (runs that shared a broker setup) when its
    broker's start began and ended, per run when its setup, sending and end came; seconds from the
    batch's start. ``spark_warm_s``: when the checker's Spark was warm (the progress lines stop
    saying "checker: starting Spark"); ``verdicts_s``: when the verdicts were in."""
    from hourglass.adapters.rundir import read_events

    runs, jobs = {}, {}
    for path in sorted(out.glob("*/run.json")):
        run = json.loads(path.read_text())
        up = [e["ts_ms"] for e in read_events(path.parent / "events") if e.get("type") == "snapshot" and e.get("moment") == "run_start"]
        setup = run.get(SETUP_BEGAN_MS, run["started_ms"])
        runs[run["scenario"]] = {"setup": setup, "sending": min(up, default=setup), "done": run["ended_ms"]}
        jobs.setdefault(tuple(run["system"]["broker_setup_ms"]), []).append(run["scenario"])
    t0 = max(r["done"] for r in runs.values()) + TIMELINE_TEARDOWN_S * 1000 - batch_wall_s * 1000
    s = lambda ms: round((ms - t0) / 1000, 1)  # noqa: E731
    return {"jobs": [{"scenarios": sorted(names), "broker": [s(b[0]), s(b[1])]} for b, names in sorted(jobs.items())],
            "runs": {name: {k: s(v) for k, v in r.items()} for name, r in sorted(runs.items())},
            "spark_warm_s": spark_warm_s, "verdicts_s": verdicts_s}


def bench_suite(system: str, runtime: str, out: Path) -> dict:
    from hourglass.harness.cli import main as cli_main

    from hourglass.harness.footprint import Footprint

    load_before = _load()
    started = time.monotonic()
    with Footprint() as footprint:  # the harness's own JVMs and CPU beside the system's
        code = cli_main(["run", "--suite", "conformance", "--system", system, "--runtime", runtime, "--out", str(out)])
    wall_s = time.monotonic() - started
    summary = json.loads((out / "summary.json").read_text())
    fig = {
        "system": system,
        "exit_code": code,
        "suite_wall_s_incl_check": round(wall_s, 1),
        "batch_wall_s": summary["wall_s"],
        "check_and_report_s": round(wall_s - summary["wall_s"], 1),
        "longest_scenario_wait_s": summary["longest_scenario_wait_s"],
        "ratio": summary["ratio"],
        "ratio_incl_check": round(wall_s / summary["longest_scenario_wait_s"], 2) if summary["longest_scenario_wait_s"] else None,
        "breakdown": breakdown(out),
        "footprint": footprint.figures(),
    }
    b = fig["breakdown"]
    if b:  # the rest of the batch: opening the systems, waiting for a slot, tearing them down
        b["open_and_teardown"] = round(summary["wall_s"] - b["before_its_broker"] - sum(b[p] for p in PHASES), 1)
    fig["load_before"], fig["load_after"] = load_before, _load()
    # the timeline the ETA's test replays (suites/selftest/harness/data/eta-timeline-idle.json is one,
    # with spark_warm_s read from the progress lines; here the estimate's)
    from hourglass.harness.eta import COSTS

    (out / "eta-timeline.json").write_text(json.dumps(eta_timeline(out, summary["wall_s"], round(wall_s, 1), COSTS.spark_start_s),
                                                      indent=1) + "\n")
    print(json.dumps(fig, indent=1))
    print(verdict_line(fig), flush=True)
    return fig


#: the time to verdict the suite aims at: runs and check within this times its longest own wait
TARGET_RATIO = 1.25


def verdict_line(fig: dict) -> str:
    """The figure that matters, in one line: the runs and their check over the longest scenario's
    own wait, against :data:`TARGET_RATIO`, with the machine's load."""
    ratio = fig.get("ratio_incl_check")
    if ratio is None:
        return "time to verdict: no scenario waited (no ratio)"
    return (f"time to verdict: runs {fig['batch_wall_s']} s + check {fig['check_and_report_s']} s = "
            f"{fig['suite_wall_s_incl_check']} s over the longest own wait {fig['longest_scenario_wait_s']} s: "
            f"{ratio:.2f}x (runs alone {fig['ratio']}x; target {TARGET_RATIO}x: "
            f"{'met' if ratio <= TARGET_RATIO else 'missed'}); load average {fig['load_before']} before, "
            f"{fig['load_after']} after" + (f"; {footprint_words(fig['footprint'])}" if fig.get("footprint") else ""))


def footprint_words(f: dict) -> str:
    """The harness's own weight in words (:mod:`harness.footprint`)."""
    return (f"the harness: peak {f['peak_harness_jvms']} JVMs of its own ({f['peak_system_jvms']} of the system), "
            f"{f['harness_cpu_s']} CPU-s of its own ({f['system_cpu_s']} CPU-s of the system's processes under it)")


def _load() -> str:
    import os

    try:
        return "/".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hourglass.harness.bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("which", nargs="*", default=["model", "checker", "broker", "suite"])
    ap.add_argument("--system", default="rocketmq:latest")
    ap.add_argument("--runtime", default="auto")
    ap.add_argument("--out", default=f"runs/bench-{time.strftime('%Y%m%dT%H%M%S')}")
    args = ap.parse_args(argv)
    worst = 0
    for name in args.which:
        print(f"\n=== {name} ===", flush=True)
        if name == "suite":
            fig = bench_suite(args.system, args.runtime, Path(args.out).resolve())
            worst = max(worst, 0 if fig["exit_code"] in (0, 1, 2) else 1)
        elif name in MODULES:
            worst = max(worst, subprocess.call([sys.executable, "-m", MODULES[name]]))
        else:
            print(f"unknown benchmark {name!r}: expected {', '.join(list(MODULES) + ['suite'])}", file=sys.stderr)
            return 2
    return worst


if __name__ == "__main__":
    sys.exit(main())
