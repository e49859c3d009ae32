"""The run directory's layout and line format: the one owner of its names (contract v1).

Pure: names, path arithmetic and the encoding of one event line. The writer that appends lines to
a file is :class:`adapters.rundir.EventLog` (every writer uses it: the harness, the consumer
processes, the simulator); the checker reads the same names (``reports.inputs``).

::

    RUN/
      run.json                      RUN_JSON: written at the start, completed at the end
      scenario.json                 SCENARIO_JSON: the scenario as data (replay)
      events/harness.jsonl          HARNESS_EVENTS: send, fault, snapshot, dlq
      events/consumer-<name>.jsonl  consumer_events(name): deliver, and the consumer's deaths and restarts
      events/stalls.jsonl           STALL_EVENTS: stall (the host's and the broker's), written at the end
      events/client-log.jsonl       CLIENT_LOG_EVENTS: fault send_back_failed, read from the client's
                                    log copy at the end (reference.network.send_back_failures), and
                                    fault pop_revived from the broker's pop.log (reference.pop)
      logs/                         LOGS_DIR: copies of the system's logs (broker, name server,
                                    clients, consumers), taken at the run's end; none for a
                                    system without logs (the simulator)
      verdict.json junit.xml report.html violations/   written by the checker
"""

from __future__ import annotations

import json
import re
import zlib
from pathlib import PurePath
from typing import Any, Callable, Hashable, Iterable, Mapping, TypeVar

from hourglass.reference.contract import ContractError, validate_event


def slug(text: str, keep: str = "_-", limit: int = 60) -> str:
    """``text`` as a name part (a run id, a directory, an image tag): every run of characters other
    than letters, digits and ``keep`` one ``-``, no ``-`` at either end, at most ``limit`` long."""
    return re.sub(f"[^A-Za-z0-9{re.escape(keep)}]+", "-", text).strip("-")[:limit]

T = TypeVar("T")

RUN_JSON = "run.json"
SCENARIO_JSON = "scenario.json"
EVENTS_DIR = "events"
HARNESS_EVENTS = "harness.jsonl"
#: the stalls of the host and the system's processes while the run lasted (reference.stalls)
STALL_EVENTS = "stalls.jsonl"
#: what the official client logged of its own failures while the run lasted (reference.network), and
#: the revives the broker's POP log recorded for the run's groups (reference.pop.popped_unseen)
CLIENT_LOG_EVENTS = "client-log.jsonl"
CONSUMER_EVENTS_PREFIX = "consumer-"
EVENTS_SUFFIX = ".jsonl"
LOGS_DIR = "logs"
#: Copies in ``LOGS_DIR`` whose tail the report of a failed run shows, the first present: the
#: broker's own log, then its console output (where a JVM that dies at start says why).
BROKER_LOGS = ("broker.log", "broker.out")
VERDICT_JSON = "verdict.json"
JUNIT_XML = "junit.xml"
REPORT_HTML = "report.html"
VIOLATIONS_DIR = "violations"
#: Where a reader finds a run's events, relative to the run directory (v1 allows all of these).
EVENT_GLOBS = ("events*.jsonl", "events/*.jsonl", "events*.parquet", "events/*.parquet", "events*.parquet/*.parquet")


#: the longest group name a consumer's name carries whole: a file name holds 255 bytes, a group 255
#: characters (reference.limits); a longer one is cut and told apart by its CRC-32
_NAME_GROUP_MAX = 100


def consumer_name(group: str, instance: int) -> str:
    """The name of instance ``instance`` of consumer group ``group`` (its events and log files)."""
    if len(group) > _NAME_GROUP_MAX:
        group = f"{group[:_NAME_GROUP_MAX - 9]}~{zlib.crc32(group.encode()):08x}"
    return f"{group}-{instance}"


def consumer_events(name: str) -> str:
    """File name (in ``events/``) of the events one consumer process writes."""
    return f"{CONSUMER_EVENTS_PREFIX}{name}{EVENTS_SUFFIX}"


def missing_consumer_files(event_files: Iterable[str], started: Iterable[str]) -> list[tuple[str, str]]:
    """(name, file) of each consumer in ``started`` (the names of the ``fault`` ``start`` events of
    target ``consumer``) whose own events file is not among ``event_files`` (paths relative to the
    run directory), for a run in this layout (``events/harness.jsonl`` among them; a run converted
    to Parquet may hold ``consumer-<name>.parquet`` instead). Every consumer process opens its file
    when it starts, so a started consumer without one had its deliveries go unrecorded: the run is
    broken, not the broker's loss. ``file``: where the file should be, relative to the run."""
    present = {PurePath(f).as_posix() for f in event_files}
    if f"{EVENTS_DIR}/{HARNESS_EVENTS}" not in present:
        return []
    out = []
    for name in sorted(set(started)):
        path = f"{EVENTS_DIR}/{consumer_events(name)}"
        if path not in present and path.removesuffix(EVENTS_SUFFIX) + ".parquet" not in present:
            out.append((name, path))
    return out


def find_dirs(root: T, holds: Callable[[T], bool], children: Callable[[T], Iterable[T]], real: Callable[[T], Hashable]) -> list[T]:
    """The directories at or below ``root`` that ``holds`` says are wanted (nothing below them is
    searched), depth first in the order ``children`` lists them. Each real directory is visited
    once (``real``: which one a path is, e.g. its resolved path): a symlink loop, or a second link
    to a directory already seen, adds nothing."""
    seen: set = set()
    out: list[T] = []
    stack = [root]
    while stack:
        d = stack.pop()
        key = real(d)
        if key in seen:
            continue
        seen.add(key)
        if holds(d):
            out.append(d)
        else:
            stack.extend(reversed(list(children(d))))
    return out


def _dir(run_dir) -> PurePath:
    """``run_dir`` as a path of its own kind (a ``pathlib.Path`` stays one; pure: nothing is read)."""
    return run_dir if isinstance(run_dir, PurePath) else PurePath(run_dir)


def run_json(run_dir) -> PurePath:
    return _dir(run_dir) / RUN_JSON


def scenario_json(run_dir) -> PurePath:
    return _dir(run_dir) / SCENARIO_JSON


#: URI schemes of run directories on a remote file system (read through Spark, never as local files).
REMOTE_SCHEMES = ("hdfs:", "s3a:", "s3:", "gs:", "abfs:")


def local_path(where: str) -> PurePath | None:
    """A run directory (or a file of it) given as a path or a URI (``file:/…``, as Hadoop qualifies
    it), as a local path; None where it lies on a remote file system."""
    from urllib.parse import unquote

    if where.startswith("file:"):
        return PurePath(unquote(where[len("file:"):]))
    if "://" in where or where.startswith(REMOTE_SCHEMES):
        return None
    return PurePath(where)


def log_copy(run_dir, name: str) -> PurePath:
    """Where the copy of the log named ``name`` (a relative ``/``-separated path) goes."""
    return _dir(run_dir) / LOGS_DIR / PurePath(name)


# --- one event line ----------------------------------------------------------------------------

def lone_surrogate(value: Any) -> str | None:
    """The first string in a parsed JSON value (keys included) holding a lone surrogate (a
    ``"\\ud800"`` escape: valid JSON, and what ``json.dumps`` writes, but no UTF-8 text), else None."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value
        return None
    if isinstance(value, Mapping):
        for k, v in value.items():
            bad = lone_surrogate(k) or lone_surrogate(v)
            if bad is not None:
                return bad
    elif isinstance(value, (list, tuple)):
        for v in value:
            bad = lone_surrogate(v)
            if bad is not None:
                return bad
    return None


def decode_line(text: str | bytes, where: str = "event") -> Any:
    """One event line parsed as JSON (``ValueError`` where it is none), refusing an object that
    names a key twice (:class:`ContractError`, a ``ValueError``, naming the key): ``json.loads``
    would keep the last value and the other reader (Arrow) refuses the line, so a judgement would
    rest on whichever reader got there."""
    def once(pairs):
        obj = {}
        for k, v in pairs:
            if k in obj:
                raise ContractError(where, k, "the key once per JSON object (one value)", [obj[k], v])
            obj[k] = v
        return obj

    return json.loads(text, object_pairs_hook=once)


def encode_event(event: Mapping[str, Any], where: str = "event") -> str:
    """One event as its line (without the newline): validated against the contract, UTF-8 clean
    (a lone surrogate, which ``json.dumps`` would escape into valid JSON that no UTF-8 reader can
    decode, is refused here), compact."""
    validate_event(event, where)
    for name, value in event.items():
        bad = lone_surrogate(value)
        if bad is not None:
            raise ContractError(where, name, "text encodable as UTF-8 (no lone surrogates)", bad)
    return json.dumps(event, separators=(",", ":"), ensure_ascii=False)


# --- run.json: its end ---------------------------------------------------------------------------

def interruption(run: Mapping[str, Any]) -> str | None:
    """Why the run has no trustworthy end, or None when it ended normally: the reason the runner
    recorded when it was stopped (``interrupted``), or — run.json without ``ended_ms``, never
    completed — the harness was killed before it could say."""
    reason = run.get("interrupted")
    if reason:
        return reason if isinstance(reason, str) else "the harness was interrupted"
    ended = run.get("ended_ms") or 0
    if not (isinstance(ended, int) and ended > 0):
        return "the harness stopped before the run ended (run.json has no end)"
    return None
