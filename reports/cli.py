"""``python -m reports check RUN_DIR [RUN_DIR ...] [--out OUT] [--master URL] [--baseline FILE]``
and ``python -m reports matrix VERDICT_DIR ... --out OUT``.

Exit codes (Jepsen's): 0 no violation, 1 a violation, 2 undecided, 3 a run is broken."""

from __future__ import annotations

import argparse
import sys

from reference.contract import ContractError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reports", description="Hourglass checker")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="check run directories (or trees of them) against the reference model")
    check.add_argument("runs", nargs="+", metavar="RUN_DIR", help="a run directory or a tree of them (any path Spark reads)")
    check.add_argument("--out", help="write OUT/<run_id>/...; default: into each run directory")
    check.add_argument("--master", help="Spark master URL (default local[*])")
    check.add_argument("--baseline", help="JSON or TOML file of accepted violations")
    matrix = sub.add_parser("matrix", help="compare verdicts of the same scenarios on several versions")
    matrix.add_argument("verdicts", nargs="+", help="verdict.json files or directories holding them")
    matrix.add_argument("--out", required=True, help="directory for matrix.json and matrix.html")
    args = parser.parse_args(argv)
    if args.command == "matrix":
        from reports.matrix import write_matrix

        write_matrix(args.verdicts, args.out)
        return 0
    from reports import spark as spark_mod
    from reports.check import check_runs
    from reports.verdict import exit_code

    owns_session = spark_mod._session is None  # in-process callers (tests) keep their session
    try:
        verdicts = check_runs(args.runs, out_dir=args.out, master=args.master, baseline=args.baseline)
    except ContractError as e:
        print(f"hourglass check: {e}", file=sys.stderr)
        return 3
    finally:
        if owns_session:
            spark_mod.stop_spark()
    for v in verdicts:
        state = "BROKEN" if v.get("broken") else {True: "passed", False: "FAILED", None: "undecided"}[v["passed"]]
        failed = [i for i, e in v["invariants"].items() if e["passed"] is False]
        print(f"{v['run_id']}: {state}" + (f" ({', '.join(failed)})" if failed else ""))
    return exit_code(verdicts)
