"""The host watch: samples, while runs last, how long the host and the system's processes could not
run, as ``stall`` events (``reference.stalls`` says what each source measures and what it excuses).

One watch per system, shared by the runs on it (a suite runs a dozen scenarios on one broker at
once): :func:`acquire` starts it with the first run and :func:`release` stops it after the last.
Each run takes the stalls of its own period (:meth:`HostWatch.stalls_between`) and writes them,
with the broker's own stall reports from its log copies (:func:`log_stalls`), into
``events/stalls.jsonl`` at its end. Everything is read from ``/proc`` without root: the kernel's
pressure-stall information, each watched thread's run-queue wait (``schedstat``) and block-I/O
delay (``stat`` field 42, where the kernel's delay accounting is on), and this thread's own lateness.

Cost, measured on this 2-core machine: one sample of PSI and a broker, a name server and a dozen
consumers (about 900 threads) takes a few milliseconds every :data:`SAMPLE_MS`.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Mapping

from hourglass.harness.logcopy import timed_lines
from hourglass.reference import stalls as rule

#: how often the watch samples; a sample below MIN_STALL_MS (per series, per sample) is no stall
#: (the rule owns both: its corroboration allows for what a sample leaves unrecorded); consecutive
#: stalled samples merge into one period of at most MAX_PERIOD_MS
SAMPLE_MS, MIN_STALL_MS = rule.SAMPLE_MS, rule.MIN_STALL_MS
MAX_PERIOD_MS = 5000
#: how often the process trees are listed again (new consumers, a restarted broker)
TREE_REFRESH_MS = 2000
#: stalls kept in memory for the runs still to take theirs (a run lasts at most hours)
KEEP_STALLS = 200_000
PROC = Path("/proc")
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def read_psi(proc: Path = PROC) -> dict[str, tuple[int, int]]:
    """``{"cpu": (some_us, full_us), "io": ..., "memory": ...}``: the kernel's cumulative stall
    totals (``/proc/pressure/*``), for the resources it reports (none without PSI)."""
    out = {}
    for resource in ("cpu", "io", "memory"):
        try:
            text = (proc / "pressure" / resource).read_text()
        except OSError:
            continue
        totals = {}
        for line in text.splitlines():
            kind, *fields = line.split()
            totals[kind] = int(next(f for f in fields if f.startswith("total="))[len("total="):])
        out[resource] = (totals.get("some", 0), totals.get("full", 0))
    return out


def descendants(roots: Mapping[str, int], proc: Path = PROC) -> dict[str, list[int]]:
    """Each root pid with its live descendants, by subject (one pass over ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir(proc):
        if not entry.isdigit():
            continue
        try:
            stat = (proc / entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if fields[0] == "Z":
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    out = {}
    for subject, root in roots.items():
        tree, todo = [], [root]
        while todo:
            pid = todo.pop()
            tree.append(pid)
            todo.extend(children.get(pid, ()))
        out[subject] = tree
    return out


def _read(path: str, size: int = 512) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, size)
    finally:
        os.close(fd)


def thread_waits(pids: Iterable[int], proc: Path = PROC, blkio: bool = False) -> dict[tuple[int, int], tuple[int, int]]:
    """``{(pid, tid): (run_delay_ns, blkio_ticks)}`` of every thread of ``pids`` (``blkio``: also
    read the block-I/O delay, 0 otherwise). Raw reads of small files: a broker's JVM has hundreds
    of threads, read twice a second, and the watch must not load the host it watches (pathlib and
    text decoding cost eight times as much, measured)."""
    out = {}
    root = str(proc)
    for pid in pids:
        base = f"{root}/{pid}/task/"
        try:
            tids = os.listdir(base)
        except OSError:
            continue
        for tid in tids:
            try:
                run_delay = int(_read(base + tid + "/schedstat", 128).split()[1])
                ticks = 0
                if blkio:
                    stat = _read(base + tid + "/stat", 1024)
                    fields = stat[stat.rfind(b")") + 2:].split()
                    ticks = int(fields[39]) if len(fields) > 39 else 0  # field 42 of stat: delayacct_blkio_ticks
            except (OSError, IndexError, ValueError):
                continue
            out[(pid, int(tid))] = (run_delay, ticks)
    return out


def thread_name(pid: int, tid: int, proc: Path = PROC) -> str:
    try:
        return _read(f"{proc}/{pid}/task/{tid}/comm", 64).decode(errors="replace").strip()
    except OSError:
        return "?"


@dataclass
class _Series:
    """One source and subject's open period, merged from consecutive stalled samples."""

    source: str
    subject: str
    period: list | None = None  # [from_ms, to_ms, stalled_ms, full_ms, detail]
    path: str | None = None  # a thread's wait: the message path whose worst it is (reference.stalls.thread_paths)

    def add(self, from_ms: int, to_ms: int, stalled_ms: int, full_ms: int, detail: str | None, out: deque) -> None:
        """A stall of ``stalled_ms`` within ``[from_ms, to_ms]``, merged into the open period when
        it follows or overlaps it; a period never holds more stall than it lasts."""
        p = self.period
        if p is not None and p[1] >= from_ms - SAMPLE_MS // 2 and to_ms - min(p[0], from_ms) <= MAX_PERIOD_MS:
            p[0] = min(p[0], from_ms)
            p[1], p[2], p[3] = to_ms, min(p[2] + stalled_ms, to_ms - p[0]), min(p[3] + full_ms, to_ms - p[0])
            if detail and not p[4]:
                p[4] = detail
            return
        self.flush(out)
        self.period = [from_ms, to_ms, min(stalled_ms, to_ms - from_ms), min(full_ms, to_ms - from_ms), detail]

    def flush(self, out: deque) -> None:
        p, self.period = self.period, None
        if p is None:
            return
        e = {"type": "stall", "ts_ms": p[1], "source": self.source, "subject": self.subject, "from_ms": p[0],
             "stalled_ms": p[2]}
        if self.source in rule.PSI_SOURCES:
            e["full_ms"] = p[3]
        if p[4]:
            e["detail"] = p[4]
        if self.path:
            e["path"] = self.path
        out.append(e)


@dataclass
class HostWatch:
    """Samples the host and ``processes()`` (subject -> root pid) every :data:`SAMPLE_MS`."""

    processes: Callable[[], Mapping[str, int]]
    proc: Path = PROC
    now_ms: Callable[[], int] = lambda: int(time.time() * 1000)
    stalls: deque = field(default_factory=lambda: deque(maxlen=KEEP_STALLS))
    sources: list[str] = field(default_factory=list)
    error: str | None = None  # why sampling stopped early, if it did

    def __post_init__(self):
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._series: dict[tuple[str, str, str | None], _Series] = {}
        self._thread: threading.Thread | None = None
        self._psi = read_psi(self.proc)
        self._waits: dict[tuple[int, int], tuple[int, int]] = {}
        self._trees: dict[str, list[int]] = {}
        self._trees_ms = 0
        self._last_ms = self.now_ms()
        self.sources = [f"psi-{r}" for r in self._psi] + [rule.HEARTBEAT, rule.RUN_QUEUE]
        if _delayacct_on(self.proc):
            self.sources.append(rule.IO_DELAY)

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="hourglass-hostwatch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            for s in self._series.values():
                s.flush(self.stalls)

    def _loop(self) -> None:
        next_at = time.monotonic() + SAMPLE_MS / 1000
        while not self._stop.wait(max(0.0, next_at - time.monotonic())):
            woke = time.monotonic()
            late_ms = int((woke - next_at) * 1000)
            try:
                self.sample(late_ms)
            except Exception as e:  # noqa: BLE001 - a watch that fails says so; the run goes on
                self.error = f"{type(e).__name__}: {e}"
                return
            next_at = max(next_at + SAMPLE_MS / 1000, time.monotonic())

    # -- one sample --------------------------------------------------------------------------
    def sample(self, late_ms: int = 0) -> None:
        """One sample: what stalled since the last one (``late_ms``: how late this sample's thread
        woke: the harness's own stall)."""
        now = self.now_ms()
        since, self._last_ms = self._last_ms, now
        # (source, subject, stalled ms, full ms, detail, began at, message path)
        found: list[tuple[str, str, int, int, str | None, int, str | None]] = []
        if late_ms >= MIN_STALL_MS:
            found.append((rule.HEARTBEAT, rule.HARNESS, late_ms, 0, None, since, None))
        psi = read_psi(self.proc)
        for resource, (some, full) in psi.items():
            before = self._psi.get(resource, (some, full))
            some_ms, full_ms = (some - before[0]) // 1000, (full - before[1]) // 1000
            if some_ms >= MIN_STALL_MS or full_ms >= MIN_STALL_MS // 5:
                found.append((f"psi-{resource}", rule.HOST, some_ms, full_ms, None, since, None))
        self._psi = psi
        if now - self._trees_ms >= TREE_REFRESH_MS:
            self._trees = descendants(self.processes(), self.proc)
            self._trees_ms = now
        pids_subject = {pid: subject for subject, pids in self._trees.items() for pid in pids}
        waits = thread_waits(pids_subject, self.proc, blkio=rule.IO_DELAY in self.sources)
        worst: dict[tuple[str, str, str | None], tuple[int, str]] = {}
        for key, (run_delay, blkio) in waits.items():
            old = self._waits.get(key)
            if old is None:
                continue
            subject = pids_subject[key[0]]
            name = None
            for source, ms in ((rule.RUN_QUEUE, (run_delay - old[0]) // 1_000_000),
                               (rule.IO_DELAY, (blkio - old[1]) * 1000 // _TICKS)):
                if ms < MIN_STALL_MS:
                    continue
                name = name or thread_name(*key, proc=self.proc)  # read for the few that waited (a thread may rename itself)
                # the worst wait on each message path apart (reference.stalls.thread_paths): the worst
                # of the timer store's threads must not hide the schedule service's in that sample
                for path in rule.thread_paths(subject, name):
                    if ms > worst.get((source, subject, path), (0,))[0]:
                        worst[(source, subject, path)] = (ms, name)
        self._waits = waits
        for (source, subject, path), (ms, name) in worst.items():
            # the kernel adds a thread's whole wait when the wait ends (sched_info_arrive, the
            # delay accounting's end): it may span earlier samples, and it ended by now
            found.append((source, subject, ms, 0, f"thread {name}", min(since, now - ms), path))
        with self._lock:
            stalled = set()
            for source, subject, ms, full, detail, began, path in found:
                series = self._series.setdefault((source, subject, path), _Series(source, subject, path=path))
                series.add(began, now, ms, full, detail, self.stalls)
                stalled.add((source, subject, path))
            for key, series in self._series.items():
                if key not in stalled:
                    series.flush(self.stalls)

    def stalls_between(self, from_ms: int, to_ms: int) -> list[dict]:
        """The stalls recorded so far (open periods included) that overlap ``[from_ms, to_ms]``."""
        with self._lock:
            open_now = deque()
            for s in self._series.values():
                if s.period is not None:
                    copy = _Series(s.source, s.subject, list(s.period), s.path)
                    copy.flush(open_now)
            return [dict(e) for e in list(self.stalls) + list(open_now) if e["ts_ms"] >= from_ms and e["from_ms"] <= to_ms]


def recorded(watch: HostWatch | None, from_ms: int, to_ms: int) -> list[dict]:
    """The stalls ``watch`` recorded so far over ``[from_ms, to_ms]`` (none without a watch): what
    lengthens a run's wait for a pending attempt (``harness.drain``)."""
    return watch.stalls_between(from_ms, to_ms) if watch is not None else []


def _delayacct_on(proc: Path) -> bool:
    try:
        return (proc / "sys" / "kernel" / "task_delayacct").read_text().strip() == "1"
    except OSError:
        return False


# --- one watch per system ---------------------------------------------------------------------
_watches: dict[int, tuple[HostWatch, int]] = {}
_watches_lock = threading.Lock()


def acquire(system) -> HostWatch | None:
    """The system's watch, started with its first user; None for a system that cannot be watched
    (it says why in :func:`observation`)."""
    from hourglass.adapters.base import HostWatching

    if not isinstance(system, HostWatching) or system.host_not_observed() or getattr(system, "VIRTUAL_TIME", None):
        return None
    with _watches_lock:
        watch, users = _watches.get(id(system), (None, 0))
        if watch is None:
            watch = HostWatch(system.watched_processes)
            watch.start()
        _watches[id(system)] = (watch, users + 1)
        return watch


def release(system) -> None:
    with _watches_lock:
        watch, users = _watches.get(id(system), (None, 0))
        if watch is None:
            return
        if users <= 1:
            del _watches[id(system)]
            watch.stop()
        else:
            _watches[id(system)] = (watch, users - 1)


def observation(system, watch: HostWatch | None) -> dict:
    """run.json ``host``: the sources sampled, or why the host was not observed."""
    from hourglass.adapters.base import HostWatching

    virtual = getattr(system, "VIRTUAL_TIME", None)
    if virtual:
        return {rule.HOST_VIRTUAL: virtual}
    if watch is not None:
        host = {rule.HOST_OBSERVED: list(watch.sources), rule.HOST_CPUS: os.cpu_count() or 1}
        if watch.error:
            host[rule.HOST_NOT_OBSERVED] = f"the host watch stopped: {watch.error}"
        return host
    why = system.host_not_observed() if isinstance(system, HostWatching) else None
    return {rule.HOST_NOT_OBSERVED: why or f"the {type(system).__name__} system names no processes to watch"}


def log_stalls(files: Iterable[Path], subject: str, from_ms: int, to_ms: int, written_ms: Mapping[Path, int] | None = None
               ) -> list[dict]:
    """The stalls the broker reported in its log copies (``reference.stalls.LOG_STALLS``) that
    overlap ``[from_ms, to_ms]``. A log's zone is read from the file itself: its last line's time
    against when its source was last written (``written_ms``; else the copy's own time), so RocketMQ's
    GMT+8 patterns and the harness's host-zone one are both read right. The JVM's safepoint log
    (``reference.stalls.SAFEPOINT_LOG``) gives its JVM-wide pauses, its times printed with their zone."""
    out = []
    for path in files:
        if Path(path).name == rule.SAFEPOINT_LOG:
            out += _safepoint_stalls(Path(path), subject, from_ms, to_ms)
            continue
        read = timed_lines(Path(path), (written_ms or {}).get(Path(path)), ("cost",))
        if read is None:
            continue
        offset, candidates = read
        for line in candidates:
            found = rule.parse_log_stall(line, offset)
            if found and found[1] >= from_ms and found[0] <= to_ms:
                start, end, what = found
                out.append({"type": "stall", "ts_ms": end, "source": rule.BROKER_LOG, "subject": subject,
                            "from_ms": start, "stalled_ms": end - start,
                            "detail": f"{Path(path).name}: {what}: {line.strip()[:300]}"})
    return out


def _safepoint_stalls(path: Path, subject: str, from_ms: int, to_ms: int) -> list[dict]:
    """The JVM-wide pauses of ``subject``'s JVM that its safepoint log copy recorded within
    ``[from_ms, to_ms]`` (``reference.stalls.parse_safepoint``)."""
    out = []
    try:
        with open(path, "rb") as f:
            for raw in f:
                line = raw.decode("utf-8", errors="replace")
                found = rule.parse_safepoint(line) if "Safepoint" in line else None
                if found and found[1] >= from_ms and found[0] <= to_ms:
                    start, end, what = found
                    out.append({"type": "stall", "ts_ms": end, "source": rule.BROKER_LOG, "subject": subject,
                                "from_ms": start, "stalled_ms": end - start, "path": rule.JVM,
                                "detail": f"{path.name}: {what}: {line.strip()[:300]}"})
    except OSError:
        pass
    return out
