"""What both command lines (``python -m hourglass``, ``python -m hourglass.reports``) share: usage errors with
their own exit code, and failures as one line naming what was wrong (``--debug`` adds the
traceback). The exit codes themselves are :mod:`reports.verdict`'s."""

from __future__ import annotations

import argparse
import math
import signal
import sys
import threading
from pathlib import Path
from typing import Callable

from hourglass.reference.contract import ContractError, OptionError
from hourglass.reports.verdict import BROKEN, EXIT_CODES, EXIT_USAGE


class UsageError(Exception):
    """The command line itself is wrong: nothing ran (exit :data:`reports.verdict.EXIT_USAGE`)."""


class Parser(argparse.ArgumentParser):
    """argparse whose errors raise :class:`UsageError` (its own exit 2 would read as *undecided*)."""

    def error(self, message):
        self.print_usage(sys.stderr)
        raise UsageError(message)


def add_version(parser: argparse.ArgumentParser) -> None:
    """``--version``: :func:`reports.version.hourglass_version`, what every run.json records."""
    from hourglass.reports.version import hourglass_version

    parser.add_argument("--version", action="version", version=f"hourglass {hourglass_version()}")


class Interrupted(BaseException):
    """SIGTERM (a CI timeout, ``kill``): unwinds like Ctrl-C, so every run records that it was
    interrupted, every system is torn down and the checker's JVM is killed."""


_sigterm_seen: str | None = None  # the signal that reached this command, if SIGTERM did


def _on_sigterm(signum, frame):
    global _sigterm_seen
    _sigterm_seen = f"signal {signal.Signals(signum).name}"
    raise Interrupted(_sigterm_seen)


def _interruption() -> BaseException | None:
    """The interruption that reached this command, if one did: its exception may have been turned
    into another on its way out (py4j converts what interrupts a call; Spark fails the cancelled job)."""
    if _sigterm_seen:
        return Interrupted(_sigterm_seen)
    spark = sys.modules.get("hourglass.reports.spark")
    return KeyboardInterrupt() if spark is not None and spark.interrupted() else None


def run_command(parser: argparse.ArgumentParser, argv: list[str] | None, prefix: str,
                on_interrupt: str = "interrupted") -> int:
    """Parse ``argv`` and call ``args.fn(args)``; map what escapes to an exit code and one line on
    stderr: a usage error (64: argparse's, or an option naming nothing usable), a contract error of an input (3), an interruption — Ctrl-C, or
    SIGTERM while this runs — (3, the checker's JVM killed), anything else — a failure of the tool,
    never of the broker — (3)."""
    global _sigterm_seen
    main_thread = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.getsignal(sig) for sig in _INTERRUPTS} if main_thread else {}
    _sigterm_seen = None
    if "hourglass.reports.spark" in sys.modules:
        sys.modules["hourglass.reports.spark"].clear_interrupted()
    if main_thread:
        signal.signal(signal.SIGTERM, _on_sigterm)
    interrupted = False
    try:
        return _run(parser, argv, prefix)
    except (KeyboardInterrupt, Interrupted) as e:
        interrupted = True
        for sig in previous:  # a second Ctrl-C or SIGTERM must not cut the cleanup short
            signal.signal(sig, signal.SIG_IGN)
        from hourglass.reports.spark import kill_spark

        kill_spark()
        print(f"\n{prefix}: {on_interrupt} ({str(e) or 'Ctrl-C'})", file=sys.stderr)
        return EXIT_CODES[BROKEN]
    finally:
        # the process's own command (argv None: sys.argv) interrupted: what is left of the process
        # is its exit, which a further signal must not turn into a death by that signal
        if not (interrupted and argv is None):
            for sig, handler in previous.items():
                signal.signal(sig, handler)


_INTERRUPTS = (signal.SIGINT, signal.SIGTERM)


def _run(parser: argparse.ArgumentParser, argv: list[str] | None, prefix: str) -> int:
    debug = "--debug" in (sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(argv)
        return args.fn(args)
    except UsageError as e:
        print(f"{parser.prog}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as e:  # --help
        return int(e.code or 0)
    except OptionError as e:
        print(f"{prefix}: {e}", file=sys.stderr)
        _traceback(debug)
        return EXIT_USAGE
    except ContractError as e:
        print(f"{prefix}: {e}", file=sys.stderr)
        _traceback(debug)
        return EXIT_CODES[BROKEN]
    except Exception as e:  # noqa: BLE001 - one line, exit 3
        why = _interruption()
        if why is not None:  # the interruption, arrived as another error: said as what it is
            raise why from None
        print(f"{prefix}: failed: {type(e).__name__}: {e}" + ("" if debug else " (--debug for the traceback)"),
              file=sys.stderr)
        _traceback(debug)
        return EXIT_CODES[BROKEN]


def positive(kind: type = int) -> Callable[[str], int | float]:
    """An argparse ``type``: a positive (and finite) ``int`` or ``float``, else a usage error that
    argparse prefixes with the option's name."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not 0 < value < math.inf:
            raise argparse.ArgumentTypeError(f"expected a positive {'integer' if kind is int else 'number'}, found {text!r}")
        return value
    return parse


def writable_dir(path: Path, who: str) -> Path:
    """``--out``: make ``path`` and prove it can be written, before anything runs (ContractError
    naming the option otherwise)."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".hourglass-write-probe"
        probe.write_text("")
        probe.unlink()
    except OSError as e:
        raise ContractError("--out", None, f"a directory {who} can write", f"{path} ({e.strerror or e})") from None
    return path


def _traceback(debug: bool) -> None:
    if debug:
        import traceback

        traceback.print_exc()
