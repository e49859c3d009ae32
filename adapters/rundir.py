"""Writing and reading a run directory: the one event writer, the incremental reader, run.json.

The names and the line format are :mod:`reference.rundir`'s. Every writer of events — the runner,
each consumer process, the simulated broker — appends through :class:`EventLog`: one JSON object
per line, validated against the contract and UTF-8 clean, flushed before the observation is acted
on, so a harness crash leaves a readable log (at worst a torn last line, which readers skip).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Iterator

from hourglass.reference.contract import ContractError, validate_run
from hourglass.reference.rundir import RUN_JSON, encode_event


class EventLog:
    """Append-only writer of one events file (thread-safe). Opening a file whose last line is
    torn (its writer died mid-line) starts on a fresh line, so the torn line stays the only loss."""

    def __init__(self, path: Path, fsync: bool = False):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(self.path, "a", buffering=1, encoding="utf-8")
        if self._f.tell() > 0:
            with open(self.path, "rb") as r:
                r.seek(-1, os.SEEK_END)
                if r.read(1) != b"\n":
                    self._f.write("\n")
        self._lock = threading.Lock()
        self._fsync = fsync

    def write(self, event: dict, fsync: bool = False) -> dict:
        """Append ``event`` (refused with :class:`ContractError` if it breaks the contract);
        ``fsync``: also force it to disk (the writer is about to die or be killed)."""
        line = encode_event(event, where=str(self.path))
        with self._lock:
            self._f.write(line + "\n")
            self._f.flush()
            if self._fsync or fsync:
                os.fsync(self._f.fileno())
        return event

    def close(self) -> None:
        with self._lock:
            if not self._f.closed:
                self._f.flush()
                self._f.close()

    def __enter__(self) -> "EventLog":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class EventTail:
    """Reads the events a run directory has so far, incrementally (only new complete lines)."""

    def __init__(self, events_dir: Path):
        self.events_dir = Path(events_dir)
        self._pos: dict[Path, int] = {}

    def new_events(self) -> Iterator[dict]:
        if not self.events_dir.is_dir():
            return
        for path in sorted(self.events_dir.glob("*.jsonl")):
            pos = self._pos.get(path, 0)
            with open(path, "rb") as f:
                f.seek(pos)
                chunk = f.read()
            if not chunk:
                continue
            end = chunk.rfind(b"\n")
            if end < 0:
                continue  # only a partial line so far
            self._pos[path] = pos + end + 1
            for raw in chunk[: end + 1].splitlines():
                if raw.strip():
                    try:
                        yield json.loads(raw)
                    except ValueError:
                        continue  # a torn or bad line: the checker names it


def read_events(events_dir: Path) -> list[dict]:
    return list(EventTail(events_dir).new_events())


def write_run_json(run_dir: Path, run: dict) -> None:
    """``run.json``, replaced atomically (a reader never sees half of it)."""
    path = Path(run_dir) / RUN_JSON
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(run, indent=1))
    tmp.replace(path)


def read_run_json(run_dir: Path) -> dict:
    """``run.json`` of ``run_dir``, checked against the contract (:class:`ContractError` naming
    the file otherwise)."""
    path = Path(run_dir) / RUN_JSON
    try:
        run = json.loads(path.read_bytes())
    except OSError as e:
        raise ContractError(str(path), None, "a readable run.json", e.strerror or str(e)) from None
    except ValueError as e:
        raise ContractError(str(path), None, "a JSON object", f"unreadable JSON ({e})") from None
    return validate_run(run, str(path))

