"""``python -m hourglass.reports check RUN_DIR [RUN_DIR ...] [--out OUT] [--master URL] [--conf KEY=VALUE ...] [--baseline FILE]``
and ``python -m hourglass.reports matrix VERDICT_DIR ... --out OUT``.

Exit codes (``reports.verdict``, the same as ``python -m hourglass``): 0 no violation, 1 a violation
(wins over everything), 2 undecided (e.g. an interrupted run, a window still open at the end), 3 a
run or an input is broken (unreadable run, contract error, bad baseline, unwritable --out,
unreachable Spark master), 64 a usage error. ``matrix`` exits by its comparison of the versions
(``reports.matrix.matrix_status``): 1 a regression the baseline does not accept, else 2 an undecided
row, else 0; 3 an input error (runs of fewer than two versions, a verdict without run.json).
Inputs are checked before Spark starts; a failure is one line (``--debug`` adds the traceback)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from hourglass.reference.contract import ContractError
from hourglass.reports.command import Parser, add_version, run_command, writable_dir
from hourglass.reports.spark import conf_item
from hourglass.reports.verdict import BROKEN, VIOLATED, exit_code, status


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m hourglass.reports", description="Hourglass checker")
    add_version(parser)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    check = sub.add_parser("check", help="check run directories (or trees of them) against the reference model")
    check.add_argument("runs", nargs="+", metavar="RUN_DIR", help="a run directory or a tree of them (any path Spark reads)")
    check.add_argument("--out", help="write OUT/<run_id>/... (a directory of the driver's: the driver writes the "
                       "outputs); default: into each run directory that is local")
    check.add_argument("--master", help="Spark master URL (default local[*]): spark://HOST:PORT, yarn, k8s://URL")
    check.add_argument("--conf", action="append", type=conf_item, default=[], metavar="KEY=VALUE",
                       help="a Spark property for the session (repeatable), e.g. spark.pyspark.python=/opt/venv/bin/python")
    check.add_argument("--baseline", help="JSON or TOML file of accepted violations")
    check.add_argument("--debug", action="store_true", help="print the traceback of an error")
    check.set_defaults(fn=_check)
    matrix = sub.add_parser("matrix", help="compare verdicts of the same scenarios on several versions, old -> new: "
                            "regressions, fixes, unchanged, undecided, one-sided")
    matrix.add_argument("verdicts", nargs="+", help="verdict.json files or directories holding them (checked runs, "
                        "run.json beside), the older versions first")
    matrix.add_argument("--out", required=True, help="directory for matrix.json and matrix.html")
    matrix.add_argument("--debug", action="store_true", help="print the traceback of an error")
    matrix.set_defaults(fn=_matrix)
    return parser


def _local_out(out: str | None) -> str | None:
    """``--out`` as a path of the driver's (``file:`` URIs too): the driver writes every output."""
    if out is None:
        return None
    from hourglass.reports.inputs import _display

    path = _display(out)
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]+:", path):
        raise ContractError("--out", None, "a directory the driver writes (a path or a file: URI)", out)
    writable_dir(Path(path), "the checker")
    return path


def _check(args) -> int:
    from hourglass.reports import baseline as baseline_mod
    from hourglass.reports import spark as spark_mod
    from hourglass.reports.check import check_runs

    accepted = baseline_mod.load(args.baseline) if args.baseline else None
    spark_mod.check_master(args.master)
    out = _local_out(args.out)
    owns_session = spark_mod._session is None  # in-process callers (tests) keep their session
    try:
        verdicts = check_runs(args.runs, out_dir=out, master=args.master, baseline=accepted, spark_conf=dict(args.conf))
    except BaseException as e:
        if owns_session:  # interrupted: killed, not stopped (a graceful stop waits on the interrupted jobs)
            spark_mod.stop_spark() if isinstance(e, Exception) else spark_mod.kill_spark()
        raise
    if owns_session:
        spark_mod.stop_spark()
    for v in verdicts:
        state = status(v)
        failed = [i for i, e in v["invariants"].items() if e["passed"] is False]
        why = f": {v['broken']}" if state == BROKEN else ""
        print(f"{v['run_id']}: {state}" + (f" ({', '.join(failed)})" if failed and state == VIOLATED else "") + why)
    return exit_code(verdicts)


def _matrix(args) -> int:
    """Compare the versions, old -> new in the order given; print the classification; exit by
    :func:`reports.matrix.matrix_status` (a regression 1, else an undecided row 2, else 0; fewer
    than two versions or an unreadable input 3)."""
    from hourglass.reports.matrix import summary_text, write_matrix

    writable_dir(Path(args.out), "the matrix")
    m = write_matrix(args.verdicts, args.out, min_versions=2)
    print(summary_text(m, Path(args.out) / "matrix.html"))
    return m["exit_code"]


def main(argv: list[str] | None = None) -> int:
    return run_command(build_parser(), argv, "hourglass check", on_interrupt="interrupted: the check did not finish")
