"""``python -m harness``: run suites or scenarios against a system, compare versions, replay runs,
and the main job.

    python -m harness main [--system rocketmq:latest] [--runtime auto]
    python -m harness run --suite conformance --system rocketmq:4.9.8 --runtime process --out runs/x
    python -m harness run --scenario my-scenario.json --system simulated
    python -m harness matrix --systems rocketmq:4.9.8,rocketmq:latest --suite conformance --out runs/m
    python -m harness replay runs/x/<run-id> [--system rocketmq:5.3.3]

Exit codes follow the checker's (Jepsen's): 0 no violation, 1 a violation, 2 undecided, 3 the run
itself is broken — so CI retries infrastructure failures and never retries violations.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

#: suite name -> (module, attribute) of its scenario catalogue
SUITES = {
    "conformance": ("suites.conformance.scenarios", "CONFORMANCE"),
    "chaos": ("suites.chaos.scenarios", "SHORT"),
    "nightly": ("suites.chaos.scenarios", "NIGHTLY"),
}


def load_suite(name: str, seed: int = 0, count: int = 10):
    if name == "generated":
        from suites.chaos.generate import sample

        return sample(seed, count)
    if name not in SUITES:
        raise SystemExit(f"unknown suite {name!r}: expected one of {', '.join(SUITES)}")
    mod, attr = SUITES[name]
    return list(getattr(importlib.import_module(mod), attr))


def _scenarios(args) -> list:
    from harness.scenario import Scenario

    out = []
    for s in args.suite or []:
        out += load_suite(s, args.seed, args.count)
    for f in args.scenario or []:
        out.append(Scenario.load(Path(f)))
    if not out:
        raise SystemExit("nothing to run: give --suite and/or --scenario")
    return out


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runtime", default=os.environ.get("HOURGLASS_RUNTIME", "auto"), choices=("auto", "container", "process", "external"))
    p.add_argument("--image", default=os.environ.get("HOURGLASS_IMAGE"), help="an existing broker image, e.g. apache/rocketmq:5.3.3")
    p.add_argument("--out", default=None, help="output directory (default runs/<timestamp>)")
    p.add_argument("--baseline", default=os.environ.get("HOURGLASS_BASELINE"), help="file of accepted violations")
    p.add_argument("--max-systems", type=int, default=2, help="real systems running at once")
    p.add_argument("--master", default=None, help="Spark master for the checker (default local[*])")
    p.add_argument("--seed", type=int, default=0, help="seed of the generated suite")
    p.add_argument("--count", type=int, default=10, help="scenarios in the generated suite")
    p.add_argument("--repeat", type=int, default=1, help="run the scenarios this many times (run only): "
                   "a summary of how often each scenario passed and each invariant failed (flakiness)")


def exit_code(verdicts: list[dict]) -> int:
    from harness.verdicts import unaccepted

    if any(v.get("error") for v in verdicts):
        return 3
    if any(unaccepted(i) > 0 for v in verdicts for i in v.get("invariants", {}).values() if i.get("passed") is False):
        return 1
    if any(v.get("undecided") for v in verdicts):
        return 2
    return 0


def run_system(system: str, scenarios: list, args, out: Path) -> list[dict]:
    from harness.batch import BatchOptions, run_batch
    from harness.pytest_plugin import check, write_summary
    from harness.systems import SystemSpec
    from harness.verdicts import describe

    spec = SystemSpec(system, args.runtime, args.image)
    started = time.monotonic()
    results, errors = run_batch(scenarios, BatchOptions(spec, out, args.max_systems))
    wall_s = time.monotonic() - started
    by_name = check(results, args.baseline, args.master)
    verdicts = []
    for r in results:
        if r.skipped:
            print(f"skipped {r.scenario.name}: {r.skipped}")
            continue
        v = by_name.get(r.scenario.name) or {"run_id": r.run_id, "passed": None, "invariants": {}, "error": errors.get(r.scenario.name, "no verdict")}
        verdicts.append(dict(v, scenario=r.scenario.name))
        print(describe(v))
    for name, err in errors.items():
        if name not in {r.scenario.name for r in results}:
            verdicts.append({"run_id": name, "scenario": name, "passed": None, "invariants": {}, "error": err})
            print(f"run {name}: broken: {err}")
    write_summary(out, system, verdicts, wall_s, scenarios)
    print(f"\n{system}: {len(verdicts)} runs in {wall_s:.0f} s; report: {out / 'index.html'}")
    return verdicts


def cmd_run(args) -> int:
    out = Path(args.out or f"runs/{time.strftime('%Y%m%dT%H%M%S')}").resolve()
    if args.repeat <= 1:
        return exit_code(run_system(args.system, _scenarios(args), args, out))
    scenarios = _scenarios(args)
    rounds = [run_system(args.system, scenarios, args, out / f"repeat-{i:02d}") for i in range(1, args.repeat + 1)]
    summary = repeat_summary(rounds)
    (out / "repeats.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"\n{args.system}: {args.repeat} repeats of {len(scenarios)} scenarios")
    for name, s in summary["scenarios"].items():
        failed = ", ".join(f"{inv} {n}/{s['runs']}" for inv, n in s["failed_invariants"].items())
        print(f"  {name}: {s['passed']}/{s['runs']} passed" + (f"; failed: {failed}" if failed else "")
              + (f"; broken {s['broken']}" if s["broken"] else ""))
    print(f"  in all: {summary['passed']}/{summary['runs']} runs passed; {out / 'repeats.json'}")
    return max(exit_code(v) for v in rounds)


def repeat_summary(rounds: list[list[dict]]) -> dict:
    """Per scenario over repeated rounds: runs, passed, broken, and how often each invariant failed
    (a failure in some rounds only is flaky: the broker or the harness, the examples say which)."""
    per: dict[str, dict] = {}
    for verdicts in rounds:
        for v in verdicts:
            s = per.setdefault(v.get("scenario") or v["run_id"], {"runs": 0, "passed": 0, "broken": 0, "failed_invariants": {}})
            s["runs"] += 1
            s["passed"] += v.get("passed") is True
            s["broken"] += bool(v.get("error"))
            for inv, entry in v.get("invariants", {}).items():
                if entry.get("passed") is False:
                    s["failed_invariants"][inv] = s["failed_invariants"].get(inv, 0) + 1
    return {"runs": sum(s["runs"] for s in per.values()), "passed": sum(s["passed"] for s in per.values()), "scenarios": per}


def cmd_matrix(args) -> int:
    out = Path(args.out or f"runs/matrix-{time.strftime('%Y%m%dT%H%M%S')}").resolve()
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if len(systems) < 2:
        raise SystemExit("--systems needs at least two systems, comma-separated")
    scenarios = _scenarios(args)
    by_system = {}
    for system in systems:
        sub = out / "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in system)
        by_system[system] = run_system(system, scenarios, args, sub)
    from reports.matrix import write_matrix

    checked = [v["run_dir"] for vs in by_system.values() for v in vs if v.get("run_dir")]
    m = write_matrix(checked, str(out))
    print(f"\nmatrix of {', '.join(m['versions'])}: {out / 'matrix.html'}")
    for d in m["differences"]:
        print(f"  differs: {d['scenario']} {d['invariant']}: " + ", ".join(f"{v}={(c or {}).get('passed')}" for v, c in d["by_version"].items()))
    return max(exit_code(v) for v in by_system.values())


def cmd_replay(args) -> int:
    from harness.scenario import Scenario

    run_dir = Path(args.run_dir)
    scenario = Scenario.load(run_dir / "scenario.json")
    run = json.loads((run_dir / "run.json").read_text())
    system = args.system or (f"rocketmq:{run['system']['version']}" if run["system"]["adapter"] == "rocketmq" else "simulated")
    out = Path(args.out or f"runs/replay-{time.strftime('%Y%m%dT%H%M%S')}").resolve()
    print(f"replaying {scenario.name} (seed {scenario.seed}) from {run_dir} on {system}")
    return exit_code(run_system(system, [scenario], args, out))


def cmd_main(args) -> int:
    """README command one: the conformance suite and a short chaos run against a real broker,
    checked, with the report."""
    import pytest

    out = Path(args.out or f"runs/main-{time.strftime('%Y%m%dT%H%M%S')}").resolve()
    out.mkdir(parents=True, exist_ok=True)
    print(f"hourglass main job: {args.system} ({args.runtime} runtime) -> {out}", flush=True)
    root = Path(__file__).resolve().parent.parent
    argv = [
        str(root / "suites" / "conformance"), str(root / "suites" / "chaos"),
        "-m", "main", "-p", "no:cacheprovider", "-q",
        f"--hg-system={args.system}", f"--hg-runtime={args.runtime}", f"--hg-out={out}",
        f"--hg-max-systems={args.max_systems}", f"--junitxml={out / 'junit-suite.xml'}",
    ]
    if args.image:
        argv.append(f"--hg-image={args.image}")
    if args.baseline:
        argv.append(f"--hg-baseline={args.baseline}")
    if args.master:
        argv.append(f"--hg-master={args.master}")
    code = pytest.main(argv)
    indexes = sorted(out.glob("*/index.html"))
    print("\nreports:")
    for i in indexes:
        print(f"  {i}")
    print(f"  {out / 'junit-suite.xml'}")
    return int(code)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("main", help="the conformance suite + a short chaos run against a real broker, with the report")
    p.add_argument("--system", default=os.environ.get("HOURGLASS_SYSTEM", "rocketmq:latest"))
    _common(p)
    p.set_defaults(fn=cmd_main)
    p = sub.add_parser("run", help="run suites/scenarios against one system and check them")
    p.add_argument("--system", default=os.environ.get("HOURGLASS_SYSTEM", "rocketmq:latest"))
    p.add_argument("--suite", action="append", help=f"one of {', '.join(SUITES)}, generated (repeatable)")
    p.add_argument("--scenario", action="append", help="a scenario JSON file (repeatable)")
    _common(p)
    p.set_defaults(fn=cmd_run)
    p = sub.add_parser("matrix", help="the same seeded scenarios on several systems, side by side")
    p.add_argument("--systems", required=True, help="comma-separated, e.g. rocketmq:4.9.8,rocketmq:latest")
    p.add_argument("--suite", action="append")
    p.add_argument("--scenario", action="append")
    _common(p)
    p.set_defaults(fn=cmd_matrix)
    p = sub.add_parser("replay", help="run a run directory's scenario again")
    p.add_argument("run_dir")
    p.add_argument("--system", default=None, help="default: the system of the original run")
    _common(p)
    p.set_defaults(fn=cmd_replay)
    args = ap.parse_args(argv)
    try:
        return args.fn(args)
    except KeyboardInterrupt:
        print("\ninterrupted: every system started was torn down", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
