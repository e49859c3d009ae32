"""The logs of a run as its report shows them: links to the copies in ``RUN/logs/``, what was not
collected, and for a failed run (violated or broken) the broker's log around the first violations'
times and its tail.

What was copied comes from run.json's ``logs`` record (the runner writes it: ``harness.logcopy``),
what was not from its ``logs_not_collected``; the excerpts are read from the copy itself, where the
run directory is on this host. A run whose system has no logs (the simulator) has neither: no section.

- A run that shared its broker with other scenarios (a batch) has every consumer's log in its
  ``logs/``: the report lists only those of its own groups (its ``scenario.json``), and says how
  many others it left out.
- Each copy's times are labelled with the zone they are printed in (RocketMQ's own patterns print
  GMT+8, the harness's the host's zone; the harness sets no zone for the JVMs): the zone the copy
  recorded (``utc_offset_s``), else its first timed line against the run's start.
"""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from hourglass.reference.rundir import BROKER_LOGS, LOGS_DIR, consumer_name, local_path, log_copy, scenario_json
from hourglass.reference.stalls import log_time_ms, log_utc_offset_s
from hourglass.reports.verdict import BROKEN, VIOLATED, status

#: How many lines of the broker's log a failed run's report shows at its end.
TAIL_LINES = 40
#: How much of the end of that log is read to find them.
_TAIL_READ_BYTES = 256 * 1024
#: How much of the beginning of a copy is read to find its first timed line (its zone).
_HEAD_READ_BYTES = 64 * 1024
#: The broker's lines this long either side of a violation's expected and observed times are shown,
AROUND_MS = 5_000
#: for this many violations (the earliest),
AROUND_VIOLATIONS = 3
#: at most this many lines per span (its first and last halves).
AROUND_MAX_LINES = 80
_CONSUMER_LOG = re.compile(r"consumer-(.+)-\d+\.log")


@dataclass(frozen=True)
class LogLink:
    name: str  # the copy's name in RUN/logs/
    href: str | None  # relative to the report where the run directory is local; None: not copied
    note: str  # its size, what of the source it holds, or why it is missing
    full_href: str | None = None  # the whole copy (gzipped) of a copy that left logback's status lines out


@dataclass(frozen=True)
class Span:
    """The broker's log lines printed between ``from_ms`` and ``to_ms`` (epoch ms, UTC)."""

    from_ms: int
    to_ms: int
    why: tuple[str, ...]  # the violations' times it is around
    lines: str
    count: int  # lines in the span (more than ``lines`` holds when it was long)


@dataclass(frozen=True)
class RunLogs:
    links: tuple[LogLink, ...]
    not_collected: str | None
    tail: tuple[str, str] | None  # (name, its last lines) for a failed run
    zone_s: int | None = None  # the broker log's zone, seconds east of UTC (None: unknown)
    around: tuple[Span, ...] = ()  # the broker log's lines around the first violations' times
    others: tuple[str, ...] = ()  # the other scenarios' consumer logs the run's logs/ holds, not listed
    started_ms: int | None = None
    own: tuple[str, ...] = ()  # what the run's own lines in a shared broker's log name (its groups, topics, keys)


def _size(n: int) -> str:
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def zone_text(offset_s: int) -> str:
    """``UTC`` or ``UTC+08:00``."""
    if offset_s == 0:
        return "UTC"
    sign, a = ("+" if offset_s > 0 else "-"), abs(offset_s)
    return f"UTC{sign}{a // 3600:02d}:{a % 3600 // 60:02d}"


def zone_words(name: str, offset_s: int | None) -> str | None:
    """What a log's times are: ``times in the broker's local zone, UTC+08:00``."""
    if offset_s is None:
        return None
    if name in BROKER_LOGS:
        return f"times in the broker's local zone, {zone_text(offset_s)}"
    return f"times in {zone_text(offset_s)}"


def log_clock(ts_ms: int, offset_s: int) -> str:
    """``ts_ms`` as the log prints it (``HH:MM:SS`` in its zone)."""
    return time.strftime("%H:%M:%S", time.gmtime(ts_ms / 1000 + offset_s))


def _note(entry: dict, zone: str | None) -> str:
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
    if entry.get("status_lines"):
        parts.append(f"{entry['status_lines']} logback status lines left out")
    if zone:
        parts.append(zone)
    return ", ".join(parts)


def zone_offset_s(copy, entry: dict, run: dict) -> int | None:
    """The zone a copy prints its times in, seconds east of UTC: what the copy recorded
    (``utc_offset_s``), else its first timed line against when its part began (the run's start
    for a run's part of a shared log, else the broker's setup), or None (no timed line)."""
    if isinstance(entry.get("utc_offset_s"), int):
        return entry["utc_offset_s"]
    setup = (run.get("system") or {}).get("broker_setup_ms") or [None]
    began = run.get("started_ms") if entry.get("from_byte") or not setup[0] else setup[0]
    if not began:
        return None
    try:
        with open(copy, "rb") as f:
            head = f.read(_HEAD_READ_BYTES).decode("utf-8", "replace")
    except OSError:
        return None
    for line in head.splitlines():
        at = log_time_ms(line)
        if at is not None:
            return log_utc_offset_s(at, int(began))
    return None


def scenario_names(local) -> tuple[set[str] | None, tuple[str, ...]]:
    """The consumer names' prefixes (``consumer_name`` without its instance) and the groups of the
    run's consumers (its ``scenario.json``), None when it is not there to read; and the names its
    lines in a shared broker's log carry (its groups and topics)."""
    try:
        scenario = json.loads(Path(scenario_json(local)).read_text())
        groups = [c["group"] for c in scenario.get("consumers") or ()]
        topics = {t for c in scenario.get("consumers") or () for t in c.get("topics") or ()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None, ()
    prefixes = {consumer_name(g, 0).rsplit("-", 1)[0] for g in groups} | set(groups)
    return prefixes, tuple(sorted(set(groups) | topics))


def others_consumer(name: str, own: set[str] | None) -> bool:
    """Whether copy ``name`` is a consumer's of a group not the run's (``consumer-<name>.log``, a
    broadcast consumer's ``clients/offsets/<client>/<group>/…``)."""
    if own is None:
        return False
    m = _CONSUMER_LOG.fullmatch(name)
    if m:
        return m.group(1) not in own
    parts = name.split("/")
    if parts[:2] == ["clients", "offsets"] and len(parts) >= 5:
        return parts[-2] not in own
    return False


def other_names(others: list[str]) -> tuple[str, ...]:
    """What the lines of the other scenarios sharing the broker name, from their consumer logs'
    names: their groups, and the prefix a batch gives a shared scenario's names (``<scenario>_``)."""
    groups = {m.group(1) for m in map(_CONSUMER_LOG.fullmatch, others) if m}
    return tuple(sorted(groups | {g.split("_", 1)[0] + "_" for g in groups if "_" in g}))


def run_logs(verdict: dict, run: dict | None, run_dir: str | None, target: Path) -> RunLogs | None:
    """The logs section of the report written into ``target`` for the run in ``run_dir`` (a path or
    URI), or None when the run recorded no logs."""
    if not run or not (run.get("logs") or run.get("logs_not_collected")):
        return None
    local = local_path(run_dir) if run_dir else None
    own, words = scenario_names(local) if local is not None else (None, ())
    copied = run.get("logs") or {}
    links, others = [], []
    for name, entry in sorted(copied.items(), key=lambda item: (item[0].startswith("clients/"), item[0])):
        if others_consumer(name, own):
            others.append(name)
            continue
        zone = zone_offset_s(log_copy(local, name), entry, run) if local is not None or "utc_offset_s" in entry else None
        href = None if entry.get("error") else _href(local, run_dir, name, target)
        full = _href(local, run_dir, entry["full"], target) if entry.get("full") and href else None
        links.append(LogLink(name, href, _note(entry, zone_words(name, zone)), full))
    result = RunLogs(tuple(links), run.get("logs_not_collected"), None,
                     others=tuple(others), started_ms=run.get("started_ms"))
    broker = _broker_copy(copied) if local is not None and status(verdict) in (VIOLATED, BROKEN) else None
    if broker is None:
        return result
    path = log_copy(local, broker)
    zone = zone_offset_s(path, copied[broker], run)
    spans = violation_spans(verdict, run.get("ended_ms"))
    keys = tuple(x["key"] for j in (verdict.get("invariants") or {}).values() for x in j.get("examples") or () if x.get("key"))
    around = excerpts(path, spans, zone, words + keys, other_names(others)) if spans and zone is not None else ()
    tail = _tail(path)
    return RunLogs(result.links, result.not_collected, (broker, tail) if tail is not None else None, zone,
                   around, result.others, result.started_ms, words + keys if others else ())


def _href(local, run_dir, name: str, target: Path) -> str:
    if local is not None:
        return quote(Path(os.path.relpath(log_copy(local, name), Path(target))).as_posix())
    return f"{str(run_dir).rstrip('/')}/{LOGS_DIR}/{name}"


def _broker_copy(copied: dict) -> str | None:
    return next((n for n in BROKER_LOGS if n in copied and not copied[n].get("error")), None)


def _tail(path) -> str | None:
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(max(0, size - _TAIL_READ_BYTES))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    return "\n".join(text.splitlines()[-TAIL_LINES:])


def violation_spans(verdict: dict, ended_ms: int | None = None, around_ms: int = AROUND_MS,
                    first: int = AROUND_VIOLATIONS) -> list[tuple[int, int, tuple[str, ...]]]:
    """(from, to, why) of the spans of the run's time around the ``first`` earliest violations (the
    verdict's examples): ``around_ms`` either side of each one's expected window and of when it was
    observed (a loss: the run's end); overlapping spans are merged."""
    found = []
    for inv, judged in (verdict.get("invariants") or {}).items():
        for x in judged.get("examples") or ():
            window = x.get("expected_window") or {}
            times = [t for t in (window.get("earliest_ms"), window.get("latest_ms"), x.get("observed_ms")) if isinstance(t, int)]
            if times:
                found.append((min(times), inv, x, window))
    spans = []
    for _, inv, x, window in sorted(found, key=lambda f: f[0])[:first]:
        what = f"{x.get('key')} attempt {x.get('attempt')} ({inv})"
        if isinstance(window.get("earliest_ms"), int):
            spans.append((window["earliest_ms"] - around_ms, window.get("latest_ms", window["earliest_ms"]) + around_ms,
                          f"{what}: expected"))
        seen = x.get("observed_ms")
        if isinstance(seen, int):
            spans.append((seen - around_ms, seen + around_ms, f"{what}: {'the run ended' if seen == ended_ms else 'observed'}"))
    merged: list[tuple[int, int, tuple[str, ...]]] = []
    for lo, hi, why in sorted(spans):
        if merged and lo <= merged[-1][1]:
            plo, phi, pwhy = merged[-1]
            merged[-1] = (plo, max(phi, hi), pwhy + ((why,) if why not in pwhy else ()))
        else:
            merged.append((lo, hi, (why,)))
    return merged


def excerpts(path, spans: list[tuple[int, int, tuple[str, ...]]], offset_s: int, own: tuple[str, ...] = (),
             others: tuple[str, ...] = (), max_lines: int = AROUND_MAX_LINES) -> tuple[Span, ...]:
    """The lines of the log at ``path`` (times printed ``offset_s`` east of UTC) in each span (a
    line without a time, a stack trace's, goes with the line before), as :func:`pick_lines` picks
    them: ``own``, the run's names (groups, topics, keys), ``others``, the other scenarios' that
    shared the broker."""
    found: list[list[str]] = [[] for _ in spans]
    at, whole = None, 0
    try:
        with open(path, "rb") as f:
            for raw in f:
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                local = log_time_ms(line)
                if local is not None:  # a time printed in seconds stands for its whole second
                    at, whole = local - offset_s * 1000, 999 if local % 1000 == 0 else 0
                for i, (lo, hi, _) in enumerate(spans):
                    if at is not None and lo <= at + whole and at <= hi:
                        found[i].append(line)
    except OSError:
        return ()
    return tuple(Span(lo, hi, why, pick_lines(lines, own, max_lines, others), len(lines))
                 for (lo, hi, why), lines in zip(spans, found))


def pick_lines(lines: list[str], own: tuple[str, ...], max_lines: int, others: tuple[str, ...] = ()) -> str:
    """``lines`` in their order, at most ``max_lines`` of them: a line naming any of ``others`` (the
    other scenarios' names in a shared broker's log) and none of ``own`` is left out; of too many
    left, those naming ``own`` first, then the first and the last. A gap says what it left out."""
    def mine(line: str) -> bool:
        return any(w in line for w in own)

    def theirs(line: str) -> bool:
        return not mine(line) and any(w in line for w in others)

    kept = [i for i, line in enumerate(lines) if not theirs(line)]
    if len(kept) > max_lines:
        chosen = [i for i in kept if mine(lines[i])][:max_lines]
        room = max_lines - len(chosen)
        rest = [i for i in kept if i not in set(chosen)]
        kept = sorted(set(chosen) | set(rest[:room // 2]) | set(rest[len(rest) - (room - room // 2):]))
    out, last = [], -1
    for i in kept + [len(lines)]:
        if i > last + 1:
            gap = lines[last + 1:i]
            other = sum(map(theirs, gap))
            what = f"{len(gap)} line{'s' if len(gap) > 1 else ''}"
            out.append(f"[… {what} of the other scenarios …]" if other == len(gap) else
                       f"[… {what} left out{f' ({other} of the other scenarios)' if other else ''}: see the copy …]")
        if i < len(lines):
            out.append(lines[i])
        last = i
    return "\n".join(out)
