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

What was copied is recorded in run.json's ``logs`` (name -> source, byte range, bytes cut).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from reference.rundir import log_copy
from reference.stalls import log_time_ms, log_utc_offset_s

#: The most of one log a run's copy holds (its end).
LOG_COPY_MAX_BYTES = 5 * 1024 * 1024
#: How the first line of a copy that was cut begins.
CUT_MARK = "[hourglass] cut:"
#: How the first line of a copy of a file that shrank during the run begins.
SHRANK_MARK = "[hourglass] shrank:"


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
    return {name: _copy_one(Path(path), Path(log_copy(run_dir, name)), since.get(name, 0), max_bytes)
            for name, path in sorted(files.items())}


def _copy_one(source: Path, target: Path, start: int, max_bytes: int) -> dict:
    entry: dict = {"source": str(source)}
    heads = []
    try:
        with open(source, "rb") as f:
            end = os.fstat(f.fileno()).st_size  # what was written by now; later lines are not this run's
            if end < start:
                heads.append(f"{SHRANK_MARK} {source} is shorter than at the run's start ({end} < {start} bytes: "
                             f"rotated or truncated); copied from its beginning")
                entry["shrank"] = True
                start = 0
            keep_from = max(start, end - max_bytes)
            if keep_from > start:  # cut: begin at a line's beginning
                f.seek(keep_from - 1)
                data = f.read(end - keep_from + 1)
                newline = data.find(b"\n")
                data = data[newline + 1:] if newline >= 0 else data[1:]
                keep_from = end - len(data)
            else:
                f.seek(keep_from)
                data = f.read(end - keep_from)
    except OSError as e:
        entry["error"] = f"{type(e).__name__}: {e}"
        return entry
    entry.update(from_byte=start, to_byte=end)
    if keep_from > start:
        entry["cut_bytes"] = keep_from - start
        heads.insert(0, f"{CUT_MARK} the first {keep_from - start} bytes of this run's part of {source} (bytes {start}-{end}) "
                     f"are left out; its last {len(data)} bytes follow")
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as out:
        for line in heads:
            out.write(line.encode("utf-8", "replace") + b"\n")
        out.write(data)
    return entry


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
