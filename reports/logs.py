"""The logs of a run as its report shows them: links to the copies in ``RUN/logs/``, what was not
collected, and for a failed run (violated or broken) the tail of the broker's log.

What was copied comes from run.json's ``logs`` record (the runner writes it: ``harness.logcopy``),
what was not from its ``logs_not_collected``; the tail is read from the copy itself, where the run
directory is on this host. A run whose system has no logs (the simulator) has neither: no section.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from reference.rundir import BROKER_LOGS, LOGS_DIR, local_path, log_copy
from reports.verdict import BROKEN, VIOLATED, status

#: How many lines of the broker's log a failed run's report shows.
TAIL_LINES = 40
#: How much of the end of that log is read to find them.
_TAIL_READ_BYTES = 256 * 1024


@dataclass(frozen=True)
class LogLink:
    name: str  # the copy's name in RUN/logs/
    href: str | None  # relative to the report where the run directory is local; None: not copied
    note: str  # its size, what of the source it holds, or why it is missing


@dataclass(frozen=True)
class RunLogs:
    links: tuple[LogLink, ...]
    not_collected: str | None
    tail: tuple[str, str] | None  # (name, its last lines) for a failed run


def _size(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def _note(entry: dict) -> str:
    if entry.get("error"):
        return f"not copied: {entry['error']}"
    start, end = int(entry.get("from_byte") or 0), int(entry.get("to_byte") or 0)
    cut = int(entry.get("cut_bytes") or 0)
    parts = [_size(end - start - cut)]
    if start:
        parts.append(f"written during the run (bytes {start}-{end} of the file)")
    if cut:
        parts.append(f"cut: the first {_size(cut)} left out")
    if entry.get("shrank"):
        parts.append("the file shrank during the run: copied from its beginning")
    return ", ".join(parts)


def run_logs(verdict: dict, run: dict | None, run_dir: str | None, target: Path) -> RunLogs | None:
    """The logs section of the report written into ``target`` for the run in ``run_dir`` (a path or
    URI), or None when the run recorded no logs."""
    if not run or not (run.get("logs") or run.get("logs_not_collected")):
        return None
    local = local_path(run_dir) if run_dir else None
    links = []
    for name, entry in sorted((run.get("logs") or {}).items()):
        if entry.get("error"):
            href = None
        elif local is not None:
            href = quote(Path(os.path.relpath(log_copy(local, name), Path(target))).as_posix())
        else:
            href = f"{str(run_dir).rstrip('/')}/{LOGS_DIR}/{name}"
        links.append(LogLink(name, href, _note(entry)))
    tail = None
    if local is not None and status(verdict) in (VIOLATED, BROKEN):
        tail = _broker_tail(local, run.get("logs") or {})
    return RunLogs(tuple(links), run.get("logs_not_collected"), tail)


def _broker_tail(run_dir, copied: dict) -> tuple[str, str] | None:
    for name in BROKER_LOGS:
        if name not in copied or copied[name].get("error"):
            continue
        try:
            with open(log_copy(run_dir, name), "rb") as f:
                size = os.fstat(f.fileno()).st_size
                f.seek(max(0, size - _TAIL_READ_BYTES))
                text = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        return name, "\n".join(text.splitlines()[-TAIL_LINES:])
    return None
