"""``python -m reports check RUN_DIR [RUN_DIR ...] [--out OUT] [--master URL] [--baseline FILE]``
and ``python -m reports matrix VERDICT_DIR ... --out OUT``.

Exit codes (``reports.verdict``, the same as ``python -m harness``): 0 no violation, 1 a violation
(wins over everything), 2 undecided (e.g. an interrupted run, a window still open at the end), 3 a
run or an input is broken (unreadable run, contract error, bad baseline, unwritable --out,
unreachable Spark master), 64 a usage error. Inputs are checked before Spark starts; a failure is
one line (``--debug`` adds the traceback)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reference.contract import ContractError
from reports.verdict import BROKEN, EXIT_CODES, EXIT_USAGE, VIOLATED, exit_code, status


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own exit code 2 would read as "undecided"
        self.print_usage(sys.stderr)
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m reports", description="Hourglass checker")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    check = sub.add_parser("check", help="check run directories (or trees of them) against the reference model")
    check.add_argument("runs", nargs="+", metavar="RUN_DIR", help="a run directory or a tree of them (any path Spark reads)")
    check.add_argument("--out", help="write OUT/<run_id>/...; default: into each run directory")
    check.add_argument("--master", help="Spark master URL (default local[*])")
    check.add_argument("--baseline", help="JSON or TOML file of accepted violations")
    check.add_argument("--debug", action="store_true", help="print the traceback of an error")
    matrix = sub.add_parser("matrix", help="compare verdicts of the same scenarios on several versions")
    matrix.add_argument("verdicts", nargs="+", help="verdict.json files or directories holding them")
    matrix.add_argument("--out", required=True, help="directory for matrix.json and matrix.html")
    matrix.add_argument("--debug", action="store_true", help="print the traceback of an error")
    return parser


def _writable(out: str | None) -> None:
    if out is None or "://" in out:
        return
    try:
        Path(out).mkdir(parents=True, exist_ok=True)
        probe = Path(out) / ".hourglass-write-probe"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise ContractError("--out", None, "a directory the checker can write", f"{out} ({e.strerror or e})") from None


def _check(args) -> int:
    from reports import baseline as baseline_mod
    from reports import spark as spark_mod
    from reports.check import check_runs

    accepted = baseline_mod.load(args.baseline) if args.baseline else None
    spark_mod.check_master(args.master)
    _writable(args.out)
    owns_session = spark_mod._session is None  # in-process callers (tests) keep their session
    try:
        verdicts = check_runs(args.runs, out_dir=args.out, master=args.master, baseline=accepted)
    finally:
        if owns_session:
            spark_mod.stop_spark()
    for v in verdicts:
        state = status(v)
        failed = [i for i, e in v["invariants"].items() if e["passed"] is False]
        why = f": {v['broken']}" if state == BROKEN else ""
        print(f"{v['run_id']}: {state}" + (f" ({', '.join(failed)})" if failed and state == VIOLATED else "") + why)
    return exit_code(verdicts)


def main(argv: list[str] | None = None) -> int:
    debug = "--debug" in (sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
    except UsageError as e:
        print(f"python -m reports: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as e:  # --help
        return int(e.code or 0)
    try:
        if args.command == "matrix":
            from reports.matrix import write_matrix

            write_matrix(args.verdicts, args.out)
            return 0
        return _check(args)
    except ContractError as e:
        print(f"hourglass check: {e}", file=sys.stderr)
        _traceback(debug)
        return EXIT_CODES[BROKEN]
    except KeyboardInterrupt:
        print("\nhourglass check: interrupted", file=sys.stderr)
        return EXIT_CODES[BROKEN]
    except Exception as e:  # noqa: BLE001 - the checker failed, not the broker: broken, one line
        print(f"hourglass check: the checker failed: {type(e).__name__}: {e}" + ("" if debug else " (--debug for the traceback)"),
              file=sys.stderr)
        _traceback(debug)
        return EXIT_CODES[BROKEN]


def _traceback(debug: bool) -> None:
    if debug:
        import traceback

        traceback.print_exc()
