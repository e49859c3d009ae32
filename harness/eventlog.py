"""The durable event log of a run directory, and an incremental reader of it.

Writers append one JSON object per line and flush it before the observation is acted on, so a
harness crash leaves a readable log (at worst a torn last line, which readers skip). Every event is
validated against the contract before it is written: a bug in the harness fails loudly here, not
later in the checker.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Iterator

from reference.contract import validate_event


class EventLog:
    """Append-only writer of ``RUN/events/<name>.jsonl`` (thread-safe)."""

    def __init__(self, path: Path, fsync: bool = False):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f = open(self.path, "a", buffering=1, encoding="utf-8")
        self._lock = threading.Lock()
        self._fsync = fsync

    def write(self, event: dict) -> dict:
        validate_event(event, where=str(self.path))
        line = json.dumps(event, separators=(",", ":"), sort_keys=False)
        with self._lock:
            self._f.write(line + "\n")
            self._f.flush()
            if self._fsync:
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
                    except json.JSONDecodeError:
                        continue  # a torn line in the middle: the checker reports it


def read_events(events_dir: Path) -> list[dict]:
    return list(EventTail(events_dir).new_events())
