"""``python -m harness.bench``: every benchmark of the project, one after the other, figures printed.

    python -m harness.bench                 # all, with the sizes CI can afford
    python -m harness.bench model checker   # some of them
    python -m harness.bench suite --system rocketmq:latest

- ``model``: the expected table for 1 million messages (``python -m reference.bench``)
- ``checker``: the PySpark checker on generated histories (``python -m reports.bench``)
- ``broker``: start-to-ready per runtime/version and the send-and-record rate against RocketMQ's own
  benchmark producer (``python -m adapters.rocketmq.bench``)
- ``suite``: time to verdict of the conformance suite against a real broker: wall time against
  its longest scenario's own wait (target at most 1.5x)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

MODULES = {"model": "reference.bench", "checker": "reports.bench", "broker": "adapters.rocketmq.bench"}


def bench_suite(system: str, runtime: str, out: Path) -> dict:
    from harness.cli import main as cli_main

    started = time.monotonic()
    code = cli_main(["run", "--suite", "conformance", "--system", system, "--runtime", runtime, "--out", str(out)])
    wall_s = time.monotonic() - started
    summary = json.loads((out / "summary.json").read_text())
    fig = {
        "system": system,
        "exit_code": code,
        "suite_wall_s_incl_check": round(wall_s, 1),
        "batch_wall_s": summary["wall_s"],
        "longest_scenario_wait_s": summary["longest_scenario_wait_s"],
        "ratio": summary["ratio"],
    }
    print(json.dumps(fig, indent=1))
    return fig


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
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
