"""Finding run directories (through Hadoop's FileSystem, so any path Spark reads) and rescanning suspect files.

A run directory holds ``run.json`` and its events as ``events*.jsonl``, ``events/*.jsonl`` or the
same as Parquet. Any path Spark reads works (the listing goes through Hadoop's FileSystem); a path
that is not itself a run directory is searched for run directories below it.

Contract checking is split so that a healthy history costs one scan: the tasks that parse the
files (``reports.run_files``) leave out rows that break the contract and report their file, and
only those files are read again line by line here, in the driver, which names file, line and
field (``reference.contract.validate_event``) or recognises a torn last line.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from pyspark.sql import SparkSession
from pyspark.sql import types as T

from hourglass.reference.contract import CONSUMER_TARGET, ContractError, EVENT_FIELDS, validate_event, validate_run
from hourglass.reference.expected import SENT_ONCE
from hourglass.reference.rundir import (EVENT_GLOBS, EVENTS_DIR, HARNESS_EVENTS, RUN_JSON, decode_line, find_dirs, local_path,
                              lone_surrogate, missing_consumer_files)

#: Typical bytes per event (JSONL as the harness writes it; Parquet compressed), for bucket sizing.
BYTES_PER_JSON_EVENT = 200
BYTES_PER_PARQUET_EVENT = 30

_SPARK_KIND = {
    "str": T.StringType(),
    "int": T.LongType(),
    "bool": T.BooleanType(),
    "list[str]": T.ArrayType(T.StringType()),
    "dict": T.MapType(T.StringType(), T.LongType()),
}


def event_schema() -> T.StructType:
    """All contract fields of all event types, typed as the contract says (explicit: no inference)."""
    fields = {"type": T.StringType(), "ts_ms": T.LongType()}
    for specs in EVENT_FIELDS.values():
        for f in specs:
            fields.setdefault(f.name, _SPARK_KIND[f.kind])
    return T.StructType([T.StructField(n, t, True) for n, t in fields.items()])


EVENT_COLUMNS = tuple(event_schema().fieldNames())


@dataclass
class RunInput:
    run_dir: str  # qualified URI of the directory
    run: dict  # run.json
    json_files: list[str] = field(default_factory=list)  # qualified URIs
    parquet_files: list[str] = field(default_factory=list)
    sizes: dict[str, int] = field(default_factory=dict)  # file URI -> bytes

    @property
    def estimated_events(self) -> int:
        """Events in the run, estimated from its files' sizes (sizes the buckets of keys: a wrong
        guess costs memory or parallelism, never correctness)."""
        return sum(n // (BYTES_PER_PARQUET_EVENT if f.endswith(".parquet") else BYTES_PER_JSON_EVENT)
                   for f, n in self.sizes.items())

    @property
    def run_id(self) -> str:
        return self.run["run_id"]


@dataclass
class BrokenRun:
    """A run the checker cannot judge (exit 3): where and why."""

    where: str
    message: str
    run_id: str | None = None
    is_run: bool = True  # False: a directory with events but no run.json (no outputs are written into it)


class _FS:
    """Hadoop FileSystem through the session's JVM: the same listing for file:, hdfs:, s3a:, ..."""

    def __init__(self, spark: SparkSession):
        self._jvm = spark._jvm
        self._conf = spark._jsc.hadoopConfiguration()

    def _path(self, uri: str):
        return self._jvm.org.apache.hadoop.fs.Path(uri)

    def _fs(self, uri: str):
        return self._path(uri).getFileSystem(self._conf)

    def qualify(self, uri: str) -> str:
        p = self._path(uri)
        return str(self._fs(uri).makeQualified(p).toUri().toString())

    def exists(self, uri: str) -> bool:
        return bool(self._fs(uri).exists(self._path(uri)))

    def glob(self, pattern: str) -> list[str]:
        return sorted(self.glob_sized(pattern))

    def glob_sized(self, pattern: str) -> dict[str, int]:
        """Files matching ``pattern``: URI -> size in bytes."""
        found = self._fs(pattern).globStatus(self._path(pattern))
        return {str(s.getPath().toUri().toString()): int(s.getLen()) for s in (found or []) if s.isFile()}

    def children(self, uri: str) -> list[str]:
        # Path.toString(), not toUri(): a URI escapes '%' and ' ' (%25, %20), and Path(text) reads
        # that back literally (a broker store's %DLQ%group directory was "not found")
        return sorted(str(s.getPath().toString()) for s in self._fs(uri).listStatus(self._path(uri)) if s.isDirectory())

    def read_bytes(self, uri: str) -> bytes:
        stream = self._fs(uri).open(self._path(uri))
        try:
            return bytes(self._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
        finally:
            stream.close()


def discover_runs(spark: SparkSession, paths: list[str]) -> tuple[list[RunInput], list[BrokenRun]]:
    """Run directories at or below ``paths``: the readable ones and the broken ones."""
    fs = _FS(spark)
    runs: list[RunInput] = []
    broken: list[BrokenRun] = []
    for path in paths:
        if not fs.exists(path):
            broken.append(BrokenRun(path, f"{path}: expected a run directory (with run.json) or a tree of them, found nothing"))
            continue
        found = _run_dirs(fs, fs.qualify(path))
        if not found:
            broken.append(BrokenRun(path, f"{path}: expected run.json in it or in a directory below it, found none"))
        for run_dir in found:
            item = _load_run(fs, run_dir)
            (broken if isinstance(item, BrokenRun) else runs).append(item)
    seen: dict[str, str] = {}
    unique: list[RunInput] = []
    for r in runs:
        if r.run_id in seen:
            broken.append(BrokenRun(r.run_dir, f"{r.run_dir}/{RUN_JSON}: field 'run_id': expected unique across the runs checked, found {r.run_id!r} also in {seen[r.run_id]}", r.run_id))
            continue
        seen[r.run_id] = r.run_dir
        unique.append(r)
    return unique, broken


def _run_dirs(fs: _FS, uri: str) -> list[str]:
    """The run directories at or below ``uri``, and the directories holding events but no run.json
    (:func:`_load_run` breaks them), each real directory once (a symlink loop adds nothing)."""
    def holds(d: str) -> bool:
        return bool(fs.glob(f"{d}/{RUN_JSON}")) or any(fs.glob_sized(f"{d}/{g}") for g in EVENT_GLOBS)

    return find_dirs(uri, holds, fs.children, _real)


def _real(uri: str) -> str:
    """Which real directory ``uri`` is: a local one resolved (symlinks), others as they are."""
    local = local_path(uri) if uri.startswith("file:") else None
    return os.path.realpath(local) if local is not None else uri


def _load_run(fs: _FS, run_dir: str) -> RunInput | BrokenRun:
    where = f"{run_dir}/{RUN_JSON}"
    if not fs.glob(where):  # the harness writes run.json before any event: a run directory that lost it
        return BrokenRun(run_dir, f"{_display(run_dir)}: expected {RUN_JSON} beside its events, found none", is_run=False)
    try:
        run = json.loads(fs.read_bytes(where))
        if isinstance(run, dict) and run.get("ended_ms") is None:
            run["ended_ms"] = 0  # the harness never completed run.json: an interrupted run (reports.completeness)
        validate_run(run, _display(where))  # errors name the file as people type it
    except ContractError as e:
        return BrokenRun(run_dir, str(e))
    except (ValueError, UnicodeDecodeError) as e:
        return BrokenRun(run_dir, f"{where}: expected a JSON object, found unreadable JSON ({e})")
    sizes = {f: n for g in EVENT_GLOBS for f, n in sorted(fs.glob_sized(run_dir + "/" + g).items())}
    files = list(sizes)
    if not files:
        return BrokenRun(run_dir, f"{run_dir}: expected events*.jsonl, events/*.jsonl or Parquet events, found none", run["run_id"])
    return RunInput(
        run_dir,
        run,
        json_files=[f for f in files if f.endswith(".jsonl")],
        parquet_files=[f for f in files if f.endswith(".parquet")],
        sizes=sizes,
    )


def missing_consumers(spark: SparkSession, run: RunInput, faults: list[dict]) -> str | None:
    """Why the run is broken when a consumer the harness started left no events file (or a
    directory in its place: :func:`reference.rundir.missing_consumer_files`), else None.
    ``faults``: the run's ``fault`` events (a judging's unkeyed rows)."""
    started: dict[str, int] = {}
    for f in faults:
        if f.get("target") == CONSUMER_TARGET and f.get("action") == "start" and f.get("name"):
            started.setdefault(f["name"], f["ts_ms"])
    prefix = _display(run.run_dir).rstrip("/") + "/"  # the listing spells file: URIs its own way
    files = [_display(f)[len(prefix):] for f in run.json_files + run.parquet_files if _display(f).startswith(prefix)]
    missing = missing_consumer_files(files, started)
    if not missing:
        return None
    fs = _FS(spark)
    return "; ".join(
        f"{prefix + path}: expected the events of consumer {name!r}, started at {started[name]} "
        f"({EVENTS_DIR}/{HARNESS_EVENTS}), found {'a directory' if fs.exists(run.run_dir.rstrip('/') + '/' + path) else 'no such file'}: "
        "its deliveries were not recorded (not a loss by the broker)"
        for name, path in missing)


#: Exact repeats named per file in a broken run's message.
REPEATS_NAMED = 3


def repeated_lines(spark: SparkSession, run: RunInput) -> str | None:
    """Why the run is broken when one of its JSONL files holds a byte-identical repeat of an
    earlier line of the same file, else None. Nothing writes the same line twice: each consumer
    process has its own file, and two deliveries of one stored copy to it differ at least in
    ``ts_ms`` (``adapters.rocketmq.consumer_proc``), two DLQ entries in their offsets. A repeat is
    a recording fault (a copied or replayed file), not a redelivery; counted, it would be a
    NO_DUPLICATE or DLQ_ROUTING violation. Read only for runs judged to hold duplicates."""
    fs = _FS(spark)
    found = []
    for uri in run.json_files:
        first: dict[bytes, int] = {}
        repeats = []
        for number, raw in enumerate(fs.read_bytes(uri).split(b"\n"), start=1):
            if raw.strip():
                was = first.setdefault(raw, number)
                if was != number:
                    repeats.append((number, was))
        if len(repeats) == 1:
            found.append(f"{_display(uri)}:{repeats[0][0]}: {_repeat(f'line {repeats[0][1]}')}")
        elif repeats:
            more = f" and {len(repeats) - REPEATS_NAMED} more" if len(repeats) > REPEATS_NAMED else ""
            named = ", ".join(f"{n} (of {was})" for n, was in repeats[:REPEATS_NAMED])
            found.append(f"{_display(uri)}: lines {named}{more}: {_repeat('earlier lines')}")
    return "; ".join(found) or None


def _repeat(of: str) -> str:
    return f"expected each event recorded once, found an exact repeat of {of} (a recording fault: a redelivery differs at least in ts_ms)"


def sent_twice(spark: SparkSession, run: RunInput, key: str) -> str | None:
    """The error of a key sent twice (:data:`reference.expected.SENT_ONCE`) naming both lines, or
    an exact repeat of the first; None where they cannot be found (Parquet events)."""
    needles = {json.dumps(key, ensure_ascii=False).encode("utf-8", "surrogatepass"), json.dumps(key).encode()}
    fs = _FS(spark)
    lines: list[tuple[str, bytes]] = []
    for uri in run.json_files:
        for number, raw in enumerate(fs.read_bytes(uri).split(b"\n"), start=1):
            if any(n in raw for n in needles):
                try:
                    obj = json.loads(raw)
                except (ValueError, UnicodeDecodeError):
                    continue
                if isinstance(obj, dict) and obj.get("type") == "send" and obj.get("key") == key:
                    lines.append((f"{_display(uri)}:{number}", raw))
    if len(lines) < 2:
        return None
    (first, raw_first), (second, raw_second) = lines[:2]
    if raw_first == raw_second:
        return f"{second}: {_repeat(first)}"
    return str(ContractError(f"{first} and {second}", "key", SENT_ONCE, key))


@dataclass
class FileFinding:
    file: str
    torn_line: int | None = None  # a torn last line, skipped
    error: str | None = None  # a contract error (the run is broken)


def rescan_file(spark: SparkSession, uri: str) -> FileFinding:
    """Read one suspect file line by line: the first contract error, or a torn last line."""
    fs = _FS(spark)
    if uri.endswith(".parquet"):
        return _rescan_parquet(fs, uri)
    lines = fs.read_bytes(uri).split(b"\n")
    ends_clean = lines[-1] == b""
    if ends_clean:
        lines.pop()
    last = len(lines)
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        where = f"{_display(uri)}:{number}"
        torn = number == last and not ends_clean
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            if torn:  # cut inside a character
                return FileFinding(uri, torn_line=number)
            return FileFinding(uri, error=f"{where}: expected UTF-8 text, found byte {raw[e.start:e.start + 1]!r} at "
                                          f"column {e.start + 1} in {raw[:80]!r}")
        try:
            obj = decode_line(text, where)
        except ContractError as e:
            return FileFinding(uri, error=str(e))
        except ValueError:
            if torn:
                return FileFinding(uri, torn_line=number)
            return FileFinding(uri, error=f"{where}: expected one JSON object per line, found {text[:80]!r}")
        surrogate = lone_surrogate(obj)
        if surrogate is not None:
            return FileFinding(uri, error=f"{where}: expected a string without lone surrogates, found {surrogate!r} in {text[:80]!r}")
        try:
            validate_event(obj, where)
        except ContractError as e:
            return FileFinding(uri, error=str(e))
    return FileFinding(uri)


def _rescan_parquet(fs: _FS, uri: str) -> FileFinding:
    import io

    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(fs.read_bytes(uri)))
    for number in range(1, table.num_rows + 1):
        where = f"{_display(uri)}: row {number}"
        try:
            obj = table.slice(number - 1, 1).to_pylist()[0]
        except UnicodeDecodeError as e:
            return FileFinding(uri, error=f"{where}: expected UTF-8 strings, found {e.object[:80]!r}")
        clean = {k: v for k, v in obj.items() if v is not None}
        try:
            validate_event(clean, where)
        except ContractError as e:
            return FileFinding(uri, error=str(e))
    return FileFinding(uri)


def _display(uri: str) -> str:
    """A local file's path as people type it; other URIs unchanged."""
    return str(local_path(uri)) if uri.startswith("file:") else uri
