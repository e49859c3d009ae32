"""Copying a system's logs into a run directory (``RUN/logs/``, :data:`reference.rundir.LOGS_DIR`).

At the end of each run the runner copies every file the system names
(:class:`adapters.base.LogFiles`; the simulator has none):

- a run alone on its system gets each file whole: from the system's setup (the broker's start is
  in it) to the run's end;
- a run sharing its system with runs going on at the same time gets the part of each file
  appended between its own start and end (:func:`log_sizes` at the start): the lines the other
  runs caused in that time are in it too, those written before or after are not. A file shorter at
  the end than at the start (rotated, truncated) is copied from its beginning, and the copy's first
  line says so;
- a copy holds at most :data:`LOG_COPY_MAX_BYTES` of that part, its end (from a line's
  beginning); the first line of a cut copy starts with :data:`CUT_MARK` and says how much was left
  out.

- logback's own status lines (``|-INFO in ch.qos.logback…``, ``|-WARN in …``: the pages of
  configuration chatter a 5.x client JVM prints at its start) are left out of the copy, whose first
  line says how many (:data:`TRIM_MARK`); the whole part is kept beside it gzipped
  (``<name>.full.gz``), so nothing is lost. ``|-ERROR`` statuses stay in the copy.

What was copied is recorded in run.json's ``logs`` (name -> source, byte range, bytes cut, status
lines left out and the whole copy's name, and the zone the log prints its times in:
``utc_offset_s``, its last timed line against when its source was last written).
"""

from __future__ import annotations

import gzip
import os
import re
from pathlib import Path
from typing import Mapping

from hourglass.reference.rundir import log_copy
from hourglass.reference.stalls import log_time_ms, log_utc_offset_s

#: The most of one log a run's copy holds (its end).
LOG_COPY_MAX_BYTES = 5 * 1024 * 1024
#: How the first line of a copy that was cut begins.
CUT_MARK = "[hourglass] cut:"
#: How the first line of a copy of a file that shrank during the run begins.
SHRANK_MARK = "[hourglass] shrank:"
#: How the first line of a copy that left logback's status lines out begins.
TRIM_MARK = "[hourglass] trimmed:"
#: What the whole copy of a trimmed one is named, beside it.
FULL_SUFFIX = ".full.gz"
#: A logback status line (its own configuration chatter, printed by a status listener, nested ones
#: indented): INFO and WARN; an ERROR status (a log that could not be opened) stays in the copy.
STATUS_LINE = re.compile(rb"^\s*(?:\d\d:\d\d:\d\d,\d{3} )?\|-(?:INFO|WARN) in ")
#: How much of the end of a copy is searched for its last timed line (the log's zone).
_ZONE_READ_BYTES = 64 * 1024


def log_sizes(files: Mapping[str, Path]) -> dict[str, int]:
    """The size of each file now (a file that cannot be read is left out: copied whole later)."""
    sizes = {}
    for name, path in files.items():
        try:
            sizes[name] = os.stat(path).st_size
        except OSError:
            continue
    return sizes


def copy_logs(files: Mapping[str, Path], run_dir: Path, since: Mapping[str, int] | None = None,
              max_bytes: int = LOG_COPY_MAX_BYTES) -> dict[str, dict]:
    """Copy each of ``files`` into ``run_dir/logs/<name>``: from its size in ``since`` (absent: from
    its beginning) to its end now, the last ``max_bytes`` of that. Returns run.json's ``logs``
    record; a file that could not be read has an ``error`` there and no copy."""
    since = since or {}
    return {name: _copy_one(Path(path), Path(log_copy(run_dir, name)), since.get(name, 0), max_bytes, name)
            for name, path in sorted(files.items())}


def _copy_one(source: Path, target: Path, start: int, max_bytes: int, name: str) -> dict:
    entry: dict = {"source": str(source)}
    heads = []
    try:
        with open(source, "rb") as f:
            stat = os.fstat(f.fileno())
            end = stat.st_size  # what was written by now; later lines are not this run's
            if end < start:
                heads.append(f"{SHRANK_MARK} {source} is shorter than at the run's start ({end} < {start} bytes: "
                             f"rotated or truncated); copied from its beginning")
                entry["shrank"] = True
                start = 0
            keep_from, data = _read_end(f, start, end, max_bytes)
    except OSError as e:
        entry["error"] = f"{type(e).__name__}: {e}"
        return entry
    entry.update(from_byte=start, to_byte=end)
    if keep_from > start:
        entry["cut_bytes"] = keep_from - start
        heads.insert(0, f"{CUT_MARK} the first {keep_from - start} bytes of this run's part of {source} (bytes {start}-{end}) "
                     f"are left out; its last {len(data)} bytes follow")
    offset = _zone(data, int(stat.st_mtime * 1000))
    if offset is not None:
        entry["utc_offset_s"] = offset
    target.parent.mkdir(parents=True, exist_ok=True)
    head = b"".join(line.encode("utf-8", "replace") + b"\n" for line in heads)
    kept, dropped = drop_status_lines(data)
    if dropped:
        full = target.with_name(target.name + FULL_SUFFIX)
        with gzip.open(full, "wb") as out:
            out.write(head + data)
        entry.update(status_lines=dropped, full=name + FULL_SUFFIX)
        head = (f"{TRIM_MARK} {dropped} logback status lines (its own configuration chatter: '|-INFO in ...', "
                f"'|-WARN in ...') left out; the whole copy is {full.name} beside this file\n").encode() + head
    with open(target, "wb") as out:
        out.write(head + kept)
    return entry


def _read_end(f, start: int, end: int, max_bytes: int) -> tuple[int, bytes]:
    """(where the kept part begins, its bytes): ``start``-``end`` of ``f``, its last ``max_bytes``
    from a line's beginning."""
    keep_from = max(start, end - max_bytes)
    if keep_from > start:  # cut: begin at a line's beginning
        f.seek(keep_from - 1)
        data = f.read(end - keep_from + 1)
        newline = data.find(b"\n")
        data = data[newline + 1:] if newline >= 0 else data[1:]
        return end - len(data), data
    f.seek(keep_from)
    return keep_from, f.read(end - keep_from)


def drop_status_lines(data: bytes) -> tuple[bytes, int]:
    """``data`` without logback's INFO and WARN status lines (:data:`STATUS_LINE`), and how many."""
    if b"|-" not in data:
        return data, 0
    lines = data.splitlines(keepends=True)
    kept = [line for line in lines if not STATUS_LINE.match(line)]
    return b"".join(kept), len(lines) - len(kept)


def _zone(data: bytes, written_ms: int) -> int | None:
    """The zone ``data`` (the end of a log) prints its times in, seconds east of UTC: its last timed
    line against when its source was last written (:func:`reference.stalls.log_utc_offset_s`)."""
    for raw in reversed(data[-_ZONE_READ_BYTES:].splitlines()):
        at = log_time_ms(raw.decode("utf-8", "replace"))
        if at is not None:
            return log_utc_offset_s(at, written_ms)
    return None


def timed_lines(copy: Path, written_ms: int | None, contains: tuple[str, ...],
                span: tuple[int, int] | None = None) -> tuple[int, list[str]] | None:
    """The lines of one log copy that hold any of ``contains``, with the zone its times are printed
    in (seconds east of UTC: :func:`reference.stalls.log_utc_offset_s`, its last timed line against
    ``written_ms``, when its source was last written, else the copy's own time), or None when it has
    no timed line or cannot be read. RocketMQ's own patterns print GMT+8, the harness's the host's.
    ``span``: read only these bytes (from, to) of ``copy`` (a run's part of a shared source)."""
    try:
        with open(copy, "rb") as f:
            found, last = [], None
            left = None
            if span is not None:
                f.seek(span[0])
                left = span[1] - span[0]
            for raw in f:
                if left is not None:
                    if left <= 0:
                        break
                    left -= len(raw)
                line = raw.decode("utf-8", errors="replace")
                at = log_time_ms(line)
                if at is not None:
                    last = at
                    if any(c in line for c in contains):
                        found.append(line)
        written = written_ms or int(os.stat(copy).st_mtime * 1000)
    except OSError:
        return None
    if last is None:
        return None
    return log_utc_offset_s(last, written), found
