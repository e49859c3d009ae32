"""Stalls of the host and of the broker's own threads: when a late attempt is the machine's doing.

A correct broker re-puts a message due at ``t`` within its slack of ``t`` *if its threads run*. On a
shared machine they may not: a write to the page cache that takes seconds, a CPU quota that
throttles the broker's process group, a host so loaded that the schedule service's thread waits
to be scheduled. The harness records what it could measure of this while a run lasts, as ``stall``
events (``reference.contract``; ``events/stalls.jsonl``), one per period in which a *subject* could
not run:

=============  =========  ====================================================================
source         subject    what ``stalled_ms`` is
=============  =========  ====================================================================
``psi-cpu``,   host       the kernel's pressure-stall information (``/proc/pressure/*``): the
``psi-io``,               time some task waited for that resource (``stalled_ms``) and the time
``psi-memory``            every non-idle task did (``full_ms``) within the period
``run-queue``  a process  the longest time one of its threads on a message's path (the
                          worst of any thread, for a process without such a list) waited,
                          runnable, for a CPU (``/proc/<pid>/task/<tid>/schedstat``; a
                          throttled CPU quota counts); ``detail`` names the thread
``io-delay``   a process  the same for block I/O (the kernel's delay accounting, where it is on)
``heartbeat``  harness    how much later than asked the harness's own sampling thread woke
``broker-log`` broker     a stall the broker reported itself in its log (:data:`LOG_STALLS`)
                          or a JVM-wide pause its JVM logged (:data:`SAFEPOINT_LOG`)
=============  =========  ====================================================================

The rule (:func:`explain`): a stall can hold back only what lies on its path, and only for as long
as it lasted. What is on a message's path (:func:`on_path`): for a re-put (its time is the broker's
store time) the waits of the broker's threads that move it up to that store (:data:`PATH_THREADS`:
the put into its delay queue, the dispatch that makes it visible, the schedule service, the timer
store, POP revive) and the broker's own stall reports; for a local re-consume (the consumer's time) the
consumer's consume threads (:data:`CLIENT_PATH_THREADS`); for both, PSI's *full* stall (every
non-idle task waited). A compiler, GC or housekeeping thread's wait excuses nothing, nor does PSI's
*some* stall (on a busy machine it is near 100 % while a correct broker keeps its times: measured,
CPU pressure 91 %, no broker late) or the harness's heartbeat: they are context, and corroboration.
A thread's wait counts only when the host corroborates it (:func:`corroborated`: the kernel's own
pressure figure saw that much waiting); a reading it contradicts excuses nothing.

A late attempt is **undecided** ("the broker stalled N ms on its path") when its lateness is within
what such stalls explain of its own wait — the share of each that lies between its due time and its
arrival, a series' shares summed, series never added together (two sources measure one stall
twice) — never a violation and never a pass. Beyond that the violation stands and says by how much
it was late and how much of it the recorded stalls explain.

The stalls are recorded while the run's consumers run: on a shared system until they stop, after
the run's end (run.json ``host`` ``watched_until_ms``); an attempt that arrived after the watch
ended is undecided, its stalls unobserved.

Where the harness could not observe the host (an external cluster on other hosts), a run.json says
so (``host``: :func:`not_observed`) and every late verdict says it too, instead of assuming a quiet
machine.
"""

from __future__ import annotations

import bisect
import calendar
import re
from dataclasses import dataclass
from typing import Iterable, Mapping

from hourglass.reference.contract import STALL_SOURCES
from hourglass.reference.persistence import FLUSH_COVERS_MARGIN_MS

PSI_SOURCES = ("psi-cpu", "psi-io", "psi-memory")
RUN_QUEUE, IO_DELAY, HEARTBEAT, BROKER_LOG = "run-queue", "io-delay", "heartbeat", "broker-log"
assert set(PSI_SOURCES + (RUN_QUEUE, IO_DELAY, HEARTBEAT, BROKER_LOG)) == set(STALL_SOURCES)
HOST, HARNESS = "host", "harness"
#: subject prefixes of the processes a stall may be recorded for (``consumer <name>``)
CONSUMER_SUBJECT = "consumer"
BROKER_SUBJECTS = ("broker", "broker-2")

#: run.json ``host``: what the harness observed of the machine the broker ran on
HOST_OBSERVED = "observed"  # list of the sources sampled
HOST_NOT_OBSERVED = "not_observed"  # why none could be
HOST_VIRTUAL = "virtual"  # a broker in virtual time (the simulator): no host stall reaches it
HOST_CPUS = "cpus"  # how many CPUs the host had (the scale of its pressure figures: corroborated)
HOST_WATCHED_UNTIL = "watched_until_ms"  # when the watch of the run's host ended (its consumers stopped)

#: the broker's own stall reports, each with the RocketMQ method that logs it (4.9.x and 5.x
#: tags; group 1 is the cost in ms, logged at the end of what took that long)
LOG_STALLS: tuple[tuple[re.Pattern, str], ...] = (
    # CommitLog.putMessage / putMessages (4.9.7, 5.3.3): the append held the commit log's put lock
    # this long (logged over 500 ms; 5.x's AppendMessageResult adds pagecacheRT, the page-cache write)
    (re.compile(r"putMessages? in lock cost time\(ms\)=(\d+)"), "a put held the commit log's lock"),
    # DefaultMessageStore.putMessage (5.x): the whole asynchronous put, over 500 ms
    (re.compile(r"CommitLog#putMessage cost (\d+) ?ms"), "a put took"),
    # PullRequestHoldService.run: checkHoldRequest, a loop over held pulls that takes milliseconds,
    # over 5 s (4.9.x "[NOTIFYME] check hold request cost N ms", 5.x "check hold pull request cost Nms"):
    # the broker's threads did not run meanwhile
    (re.compile(r"check hold (?:pull )?request cost (\d+) ?ms"), "the pull hold check (milliseconds of work) took"),
)
#: a RocketMQ log line's leading time: RocketMQ's own logback patterns (4.9.x ``conf/logback_*.xml``,
#: 5.x ``rmq.*.logback.xml``) print ``%d{yyy-MM-dd HH:mm:ss,GMT+8}`` (seconds, in GMT+8, whatever
#: the host's zone); the 4.9.x configuration the harness writes prints milliseconds in the host's zone
_LOG_TIME = re.compile(r"^(\d{4})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:[,.](\d{3}))?")
#: the zone of RocketMQ's own patterns
ROCKETMQ_LOG_UTC_OFFSET_S = 8 * 3600


def log_time_ms(line: str) -> int | None:
    """A log line's leading time as epoch ms *read as UTC* (shift it by the log's zone), or None."""
    t = _LOG_TIME.match(line)
    if t is None:
        return None
    y, mo, d, h, mi, s, ms = (int(x or 0) for x in t.groups())
    return calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0)) * 1000 + ms


def log_utc_offset_s(last_line_ms: int, written_ms: int) -> int:
    """The zone a log prints its times in, from its last line's time (:func:`log_time_ms`) and when
    the file was last written: their difference, to the nearest quarter hour (zones are quarter hours)."""
    return round((last_line_ms - written_ms) / 900_000) * 900
#: a broker log stall shorter than this says nothing a slack does not cover
LOG_STALL_MIN_MS = 500


#: The JVM's own record of its JVM-wide pauses: the broker runs with ``-Xlog:safepoint`` into this file
#: of its logs (JDK 9 and later; a JDK 8 image's broker has none), each line a safepoint, with when it
#: ended (the ``time`` decoration, its zone printed) and how long all of it took — the only source
#: of a JVM-wide pause (GC included): a thread stopped at a safepoint is not runnable, so no
#: run-queue wait records it, and a GC or VM thread's own wait says nothing of the others. Recorded
#: as a ``broker-log`` stall on the :data:`JVM` path: on every re-put's path, counted only as far as
#: the JVM's threads waited for a CPU meanwhile (:func:`explain`).
SAFEPOINT_LOG = "safepoint.log"
#: the JVM option that writes it (``path``: the broker's logs folder's :data:`SAFEPOINT_LOG`)
SAFEPOINT_LOG_OPTION = "-Xlog:safepoint:file={path}:time,uptime"
_SAFEPOINT = re.compile(r'^\[(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d{3})([+-])(\d\d)(\d\d)\]'
                        r'.*?Safepoint "([^"]+)".*?Total: (\d+) ns')


def parse_safepoint(line: str) -> tuple[int, int, str] | None:
    """(from_ms, to_ms, what) of one :data:`SAFEPOINT_LOG` line whose pause lasted at least
    :data:`MIN_STALL_MS` (JDK 17: ``[2026-11-30T01:27:40.168+0000][1.285s] Safepoint "G1CollectForAllocation",
    ..., Total: 22189429 ns``), None for any other line."""
    m = _SAFEPOINT.match(line)
    if m is None:
        return None
    y, mo, d, h, mi, sec, ms = (int(x) for x in m.groups()[:7])
    sign, zh, zm, operation, total_ns = m.groups()[7:]
    total = int(total_ns) // 1_000_000
    if total < MIN_STALL_MS:
        return None
    zone_s = (1 if sign == "+" else -1) * (int(zh) * 3600 + int(zm) * 60)
    end = (calendar.timegm((y, mo, d, h, mi, sec, 0, 0, 0)) - zone_s) * 1000 + ms
    return end - total, end, f"a JVM-wide pause (safepoint {operation}) {total} ms"


def parse_log_stall(line: str, utc_offset_s: int) -> tuple[int, int, str] | None:
    """(from_ms, to_ms, what) of one broker log line that reports a stall (:data:`LOG_STALLS`), its
    local time read with ``utc_offset_s`` (the broker's zone); None for any other line."""
    for pattern, what in LOG_STALLS:
        m = pattern.search(line)
        if m is None:
            continue
        at = log_time_ms(line)
        cost = int(m.group(1))
        if at is None or cost < LOG_STALL_MIN_MS:
            return None
        end = at - utc_offset_s * 1000
        return end - cost, end, f"{what} {cost} ms"
    return None


#: The broker under test gets the machine first: the harness's own processes run niced (the client
#: and consumer processes at CLIENT_NICE; the checker's Spark, whose work never has a deadline, at
#: CHECKER_NICE), so that on a busy host it is they that wait for a CPU, not the broker's threads on
#: a message's path (the stalls the rule below weighs are then rarer, and never the harness's making).
CLIENT_NICE = 10
CHECKER_NICE = 19
#: Linux's autogroup scheduling (``/proc/sys/kernel/sched_autogroup_enabled``, on by default on
#: Debian's kernels) shares the CPU first between sessions, equally, and a process's nice value weighs
#: only within its own session's group: a consumer process in a session of its own (as the harness
#: starts them, so a fault can kill its whole tree) competed with the broker as an equal, whatever
#: its nice value — with a dozen consumers, the broker had a dozenth of a busy CPU. So a niced
#: process sets its session's group's nice too (``/proc/self/autogroup``; an unprivileged writer may
#: do so once per 100 ms on the whole machine: it tries again), then execs its command at that nice
#: value (coreutils' nice: the same process, its threads inherit it).
_NICED = ('n=$1; g=$2; shift 2; for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do '
          'echo "$g" 2>/dev/null > /proc/self/autogroup && break; [ -e /proc/self/autogroup ] || break; sleep 0.1; done; '
          'exec nice -n "$n" "$@"')
#: The consumer host's session (adapters.rocketmq.consumer_host) holds every hosted consumer: the
#: harness's measuring instrument, whose answers anchor the retries it judges. As one session niced
#: like one consumer process, it had a tenth of the CPU a dozen consumer processes had together: beside
#: the load generator's hogs it waited 7-17 s for a CPU, and a correct broker's POP retries and
#: redeliveries were judged against answers that had not reached it (RETRY_SCHEDULE, NOT_EARLY,
#: NO_DUPLICATE violations on 5.5.0). Its session competes as the broker's does (weight 1024, about
#: what nine niced consumer sessions had); its threads stay at CLIENT_NICE within it. The client
#: process's too (the producer the runs send with, and every admin call): niced as a session beside
#: the load generator's hogs, its JVM did not start within 60 s and six runs broke at their setup.
HOST_SESSION_NICE = 0


def niced(argv: list[str], nice: int, session_nice: int | None = None) -> list[str]:
    """``argv`` run at ``nice``, its session's autogroup at ``session_nice`` (default ``nice``; see
    :data:`_NICED`): for a command started in a session of its own (``start_new_session``), else it
    would nice its parent's session."""
    return ["sh", "-c", _NICED, "hourglass-niced", str(nice), str(nice if session_nice is None else session_nice), *argv]


#: how often the host watch samples, and the least stall one sample records per series (the watch
#: samples by these; :func:`corroborated` allows for what a sample below the floor leaves unrecorded)
SAMPLE_MS = 500
MIN_STALL_MS = 50

#: The threads that move a message, as ``/proc/<pid>/task/<tid>/comm`` names them (a Java thread's
#: name cut to 15 characters), by the process that runs them and by the message's path. Only their
#: waits can have held back a message; a compiler, GC, sweeper, statistics or housekeeping thread's
#: wait never does (a JVM-wide pause stops these threads without making them wait for a CPU: it is
#: the JVM's safepoint log's to tell, not the run queue's). Names read in RocketMQ's source at
#: rocketmq-all-4.9.7 and 5.3.3.
#: Every re-put's path on the broker, up to its store time (what ON_TIME judges: the copy's
#: ``store_ms``, set when the put appends it to the commit log): the put (SendMessageProcessor's
#: executor, which also takes the consumers' send-backs and holds the commit log's put lock a re-put
#: waits for), the next mapped file a put may wait for, the sync flush a synchronous re-put waits
#: for before the next (GroupCommitService), the transient pool's commit. The delivery to the
#: consumer after the store (the pull executor, PullRequestHoldService, the Netty server) and the
#: asynchronous flushes (they persist, they do not store) are on no re-put's path.
PUT_THREADS: tuple[str, ...] = ("SendMessageThre", "AllocateMappedF", "GroupCommitServ", "CommitRealTimeS")
#: The dispatch to the consume queues (ReputMessageService; 5.x's concurrent and batch dispatchers):
#: it makes a message visible where it is read — a message not delayed to its consumers, a delayed
#: copy to the service that re-puts it (its delay queue, the timer's topic, the revive topic). For a
#: delayed copy it runs when the copy is put, not when it comes due: its waits hold a re-put only
#: when they kept the copy out of its queue past the due time (:func:`explain`: the dispatch's waits
#: from the copy's put on, beyond its delay). A thread that wakes every millisecond (the reput loop)
#: sums hundreds of short waits a second on a busy host; counted against the due-to-store wait, they
#: excused a broker whose schedule service had not run at all.
DISPATCH_THREADS: tuple[str, ...] = ("ReputMessageSer", "ConcurrentReput", "MainBatchDispat", "BatchDispatchRe")
STORE_PATH_THREADS: tuple[str, ...] = PUT_THREADS + DISPATCH_THREADS
#: the message paths: a message not delayed (its put and its dispatch to the consumers); a delay
#: level's or a retry's (ScheduleMessageService: its timer threads, 4.9.3's deliver pool and the
#: asynchronous mode's handle executor, which run the re-put's put; delay levels stay there in 5.x;
#: its 5.x persist thread shares the name cut to 15 characters, so a wait of it counts too); a 5.x
#: timer message's (TimerMessageStore's enqueue and dequeue services, the dequeue's put; its flush
#: persists); a POP group's retry (PopReviveService per revive queue; its checkpoints are timer
#: messages on 5.x; the ack executor and the checkpoint buffer's merge decide what is revived); and
#: the dispatch of a delayed copy into the queue its re-put reads (recorded apart, weighed from the
#: copy's put: :data:`DISPATCH_THREADS`)
DIRECT, SCHEDULE, TIMER, POP, DISPATCH = "direct", "schedule", "timer", "pop", "dispatch"
_TIMER_THREADS = ("TimerEnqueueGet", "TimerEnqueuePut", "TimerDequeueGet", "TimerDequeuePut")
PATH_THREADS: dict[str, tuple[str, ...]] = {
    DIRECT: STORE_PATH_THREADS,
    SCHEDULE: PUT_THREADS + ("ScheduleMessage",),
    TIMER: PUT_THREADS + _TIMER_THREADS,
    POP: PUT_THREADS + _TIMER_THREADS + ("PopReviveServic", "AckMessageThrea", "PopBufferMergeS"),
    DISPATCH: DISPATCH_THREADS,
}
#: the paths of a delayed copy, whose dispatch into its queue (:data:`DISPATCH`) is weighed from its put
DELAYED_PATHS = (SCHEDULE, TIMER, POP)
#: The broker's JVM as a whole: the worst wait of any of its threads, recorded apart per sample (the
#: compiler's, the GC's and the VM thread's too). It is on no message's path and excuses nothing by
#: itself; it tells how much of a JVM-wide pause (:data:`SAFEPOINT_LOG`, recorded with this path)
#: was the host's: a safepoint is late to come, or its GC slow, when the threads that must run to
#: reach it or do its work wait for a CPU, and those waits are in this series. A pause no thread
#: waited through (a thread in a long loop, a frozen one, a long GC on an idle host) is the broker's own.
JVM = "jvm"
#: threads a safepoint does not wait for, nor needs to run: the JIT compilers and the code cache's
#: sweeper go on in native code through it, so their waits say nothing of a pause (never in :data:`JVM`)
RUN_THROUGH_SAFEPOINTS = ("C1 CompilerThre", "C2 CompilerThre", "Sweeper thread")
#: a thread on any message's path (a stall drawn in a report, a send-back's path)
BROKER_PATH_THREADS: tuple[str, ...] = tuple(sorted({t for names in PATH_THREADS.values() for t in names}))
#: a consumer process's threads on a local re-consume's path (DefaultMQPushConsumerImpl: the consume
#: executor "ConsumeMessageThread_" and ConsumeMessageScheduledThread_, which re-submits a message
#: whose send-back failed; the listener runs Python through JPype on the consume thread)
CLIENT_PATH_THREADS: tuple[str, ...] = ("ConsumeMessage",)


def stalled_thread(stall: Mapping) -> str | None:
    """The thread a run-queue or I/O-delay stall was recorded for (its ``detail``), or None."""
    detail = str(stall.get("detail") or "")
    return detail[len("thread "):] if detail.startswith("thread ") else None


def on_path_thread(subject: str, thread: str, path: str | None = None) -> bool:
    """Whether ``thread`` of ``subject``'s process moves a message on ``path`` (:data:`PATH_THREADS`;
    None: any path), or a local re-consume (:data:`CLIENT_PATH_THREADS`); every thread of a process
    without such a list (the name server, the proxy: context only, they excuse nothing)."""
    if subject in BROKER_SUBJECTS:
        return thread.startswith(PATH_THREADS[path] if path else BROKER_PATH_THREADS)
    if subject.startswith(CONSUMER_SUBJECT):
        return thread.startswith(CLIENT_PATH_THREADS)
    return True


def thread_paths(subject: str, thread: str) -> tuple[str | None, ...]:
    """The message paths ``thread`` of ``subject``'s process is on (:data:`PATH_THREADS`), for which
    the host watch records the worst wait apart: a broker thread, the paths that name it and the
    whole JVM's (:data:`JVM`, every thread); any other process's thread on a path
    (:func:`on_path_thread`), one record (None); else none."""
    if subject in BROKER_SUBJECTS:
        paths = tuple(p for p, names in PATH_THREADS.items() if thread.startswith(names))
        return paths if thread.startswith(RUN_THROUGH_SAFEPOINTS) else paths + (JVM,)
    return (None,) if on_path_thread(subject, thread) else ()


def on_path(stall: Mapping, local: bool, path: str | None = None) -> bool:
    """Whether ``stall`` lies on the path of an attempt: a re-put (``local`` False: the broker's
    store time) on ``path`` (:data:`PATH_THREADS`; None: any), or a local re-consume (the consumer's
    time). PSI's *full* stall (every non-idle task waited) is on every path; a thread's wait only for
    a thread that moves the message (:func:`on_path_thread`) of the process that moves it; the
    broker's own stall reports (of its put) for a re-put. PSI's *some* and the harness's heartbeat
    are on no message's path: they corroborate."""
    source, subject = stall["source"], str(stall.get("subject") or "")
    if source in PSI_SOURCES:
        return int(stall.get("full_ms") or 0) > 0
    if source == HEARTBEAT or (stall.get("path") == JVM and source != BROKER_LOG):
        return False  # the JVM's worst thread: only a measure of a JVM-wide pause (:data:`JVM`)
    mine = subject.startswith(CONSUMER_SUBJECT) if local else subject in BROKER_SUBJECTS
    if not mine:
        return False
    if source == BROKER_LOG:
        return True  # its put's own report, or a JVM-wide pause (every thread of it stopped)
    if path is not None and not local and stall.get("path") not in (None, path):
        return False  # the worst wait of another path's threads in that sample
    thread = stalled_thread(stall)
    return thread is not None and on_path_thread(subject, thread, None if local else path)


def _overlap_ms(stall: Mapping, from_ms: int, to_ms: int) -> int:
    return max(0, min(to_ms, int(stall["ts_ms"])) - max(from_ms, int(stall["from_ms"])))


def _share(stall: Mapping, amount: int, from_ms: int, to_ms: int) -> int:
    """The part of ``amount`` (spread over the stall's period) that lies within ``[from_ms, to_ms]``."""
    period = max(1, int(stall["ts_ms"]) - int(stall["from_ms"]))
    return amount * min(period, _overlap_ms(stall, from_ms, to_ms)) // period


class PsiPeriods:
    """The recorded PSI periods, indexed by time: how long some task waited for a resource within a
    span (:meth:`some_ms`), found by bisection among the periods that can overlap it (each period
    starting after the span's start less the longest period), the same sum as over all of them."""

    def __init__(self, stalls: Iterable[Mapping]):
        by: dict[str, list[Mapping]] = {}
        for s in stalls:
            if s["source"] in PSI_SOURCES:
                by.setdefault(s["source"], []).append(s)
        self._periods = {name: sorted(found, key=lambda s: int(s["from_ms"])) for name, found in by.items()}
        self._starts = {name: [int(s["from_ms"]) for s in found] for name, found in self._periods.items()}
        self._longest = {name: max(int(s["ts_ms"]) - int(s["from_ms"]) for s in found) for name, found in self._periods.items()}

    def some_ms(self, resource: str, from_ms: int, to_ms: int) -> int:
        """How long some task waited for ``resource`` within ``[from_ms, to_ms]``: each period's
        ``stalled_ms`` by the share of its period that lies within it (:func:`_share`)."""
        name = f"psi-{resource}"
        periods = self._periods.get(name)
        if not periods:
            return 0
        starts = self._starts[name]
        first = bisect.bisect_left(starts, from_ms - self._longest[name])
        last = bisect.bisect_left(starts, to_ms)
        return sum(_share(s, int(s["stalled_ms"]), from_ms, to_ms) for s in periods[first:last])


def psi_some_ms(stalls: Iterable[Mapping], resource: str, from_ms: int, to_ms: int) -> int:
    """How long some task waited for ``resource`` within ``[from_ms, to_ms]``, by the PSI periods recorded."""
    return PsiPeriods(stalls).some_ms(resource, from_ms, to_ms)


def corroborated(stall: Mapping, psi: PsiPeriods | Iterable[Mapping], cpus: int) -> bool:
    """Whether the host saw ``stall`` (a thread's run-queue or I/O wait, or the broker's own report):
    while one thread waited W ms runnable (or for block I/O), some task waited on its CPU all that
    time, which the kernel's pressure-stall information counts, averaged over the CPUs in use, as no
    less than W / ``cpus`` (recorded periods, plus what samples below :data:`MIN_STALL_MS` left
    unrecorded). A reading the host contradicts (one thread's 41.9 s "wait" at 12 % CPU pressure)
    is the measurement's, and excuses nothing. PSI's full stall needs no one else's word. ``psi``:
    the recorded periods (:class:`PsiPeriods`, built once for many stalls)."""
    source = stall["source"]
    if source in PSI_SOURCES or source == HEARTBEAT:
        return True
    if not isinstance(psi, PsiPeriods):
        psi = PsiPeriods(psi)
    a, b = int(stall["from_ms"]), int(stall["ts_ms"])
    resources = ("cpu",) if source == RUN_QUEUE else ("io",) if source == IO_DELAY else ("cpu", "io")
    seen = max(psi.some_ms(r, a, b) for r in resources) + (b - a) * MIN_STALL_MS // SAMPLE_MS
    return seen * max(1, cpus) >= int(stall["stalled_ms"])


def held_ms(stall: Mapping) -> int:
    """How long ``stall`` held what it stalled: a PSI period's full stall, anything else's stall."""
    return int(stall.get("full_ms") or 0) if stall["source"] in PSI_SOURCES else int(stall["stalled_ms"])


@dataclass(frozen=True)
class Explained:
    """How much of an attempt's own wait the recorded stalls on its path explain."""

    explained_ms: int  # the series that explains most: its stalls within the wait, summed
    series: tuple[str, str, str | None] | None  # (source, subject, path recorded), None when none did
    largest: tuple[int, int, str | None] | None  # (from_ms, ms within the wait, thread) of its largest stall
    refuted: tuple[int, str | None] | None  # the largest on-path reading the host contradicted: (ms, thread)


def explain(stalls: Iterable[Mapping], earliest_ms: int, arrived_ms: int, local: bool = False, cpus: int = 1,
            path: str | None = None, put_ms: int | None = None) -> Explained:
    """What the recorded ``stalls`` explain of an attempt due at ``earliest_ms`` that arrived at
    ``arrived_ms``: each on-path (:func:`on_path`), host-corroborated (:func:`corroborated`) stall
    counts by the share of it within that wait; a series' shares add up (never beyond the wait),
    series never add together (two sources measure one stall twice) — the one that explains most.
    A delayed copy (:data:`DELAYED_PATHS`) put at ``put_ms`` (its window's anchor: the send, the
    answer that sent it back) was held by its dispatch only as far as the dispatch's waits from
    ``put_ms`` on reach past its due time (``put_ms`` + waits - ``earliest_ms``): until then it
    was in its queue in time; without ``put_ms`` the dispatch explains nothing."""
    stalls = list(stalls)
    psi = PsiPeriods(stalls)
    series: dict[tuple[str, str], list] = {}
    refuted = None
    dispatched = not local and path in DELAYED_PATHS and put_ms is not None and put_ms <= earliest_ms
    for s in stalls:
        dispatch = dispatched and s.get("path") == DISPATCH
        since = put_ms if dispatch else earliest_ms
        if _overlap_ms(s, since, arrived_ms) <= 0 or not on_path(s, local, DISPATCH if dispatch else path):
            continue
        if not corroborated(s, psi, cpus):
            if refuted is None or int(s["stalled_ms"]) > refuted[0]:
                refuted = (int(s["stalled_ms"]), stalled_thread(s))
            continue
        n = _share(s, held_ms(s), since, arrived_ms)
        if n > 0 and s["source"] == BROKER_LOG and s.get("path") == JVM:
            n = min(n, _jvm_waited_ms(stalls, psi, cpus, s, since, arrived_ms))
        if n > 0:
            name = (s["source"], str(s.get("subject") or ""), s.get("path"))  # one series per path recorded apart
            series.setdefault(name, []).append((int(s["from_ms"]), n, stalled_thread(s)))
    best = Explained(0, None, None, refuted)
    for name, found in sorted(series.items(), key=lambda kv: tuple(x or "" for x in kv[0])):  # a path may be None
        total = sum(n for _, n, _ in found)
        if name[2] == DISPATCH and dispatched:  # only what kept the copy out of its queue past its due time
            total -= earliest_ms - put_ms
        total = min(arrived_ms - earliest_ms, total)
        if total > best.explained_ms:
            best = Explained(total, name, max(found, key=lambda f: f[1]), refuted)
    return best


def _jvm_waited_ms(stalls: list[Mapping], psi: PsiPeriods, cpus: int, pause: Mapping, from_ms: int, to_ms: int) -> int:
    """How long the broker's threads (its :data:`JVM` series, host-corroborated) waited for a CPU
    within a JVM-wide ``pause`` and ``[from_ms, to_ms]``: as much of the pause as was the host's."""
    a, b = max(from_ms, int(pause["from_ms"])), min(to_ms, int(pause["ts_ms"]))
    return sum(_share(w, held_ms(w), a, b) for w in stalls
               if w["source"] == RUN_QUEUE and w.get("path") == JVM and w.get("subject") == pause.get("subject")
               and _overlap_ms(w, a, b) > 0 and corroborated(w, psi, cpus))


def held_back_ms(stalls: Iterable[Mapping], earliest_ms: int, now_ms: int, cpus: int = 1) -> int:
    """How long the recorded ``stalls`` may have held back, in the broker, an attempt due at
    ``earliest_ms`` and not seen by ``now_ms``: the most that on-path, corroborated stalls
    (:func:`explain`) of the broker's threads on any message path explain of that wait. Only for how
    long a run waits for it (``harness.drain``, which bounds it); what a late attempt is judged is
    :func:`explain_late`'s. A consumer's own waits are left out: the harness's consumers run niced
    (:data:`CLIENT_NICE`), so on a busy host they wait nearly all the time, and the run would wait
    as long as the load lasted."""
    if now_ms <= earliest_ms:
        return 0
    return explain(stalls, earliest_ms, now_ms, False, cpus).explained_ms


def pressure(stalls: Iterable[Mapping], from_ms: int, to_ms: int) -> dict[str, int]:
    """Per PSI resource, the percentage of ``[from_ms, to_ms]`` in which some task waited for it
    (what the recorded periods overlapping it say; context for a reason, never a cover)."""
    span = max(1, to_ms - from_ms)
    out: dict[str, int] = {}
    for s in stalls:
        if s["source"] not in PSI_SOURCES or s["ts_ms"] < from_ms or s["from_ms"] > to_ms:
            continue
        name = s["source"][len("psi-"):]
        out[name] = out.get(name, 0) + _share(s, int(s["stalled_ms"]), from_ms, to_ms)
    return {name: min(100, 100 * ms // span) for name, ms in sorted(out.items())}


def _context(stalls: list[Mapping], from_ms: int, to_ms: int) -> str:
    p = pressure(stalls, from_ms, to_ms)
    return ", ".join(f"{name} pressure {pct} %" for name, pct in p.items() if pct) or "no pressure recorded"


def _what(e: Explained, started_ms: int, context: str) -> str:
    """The series that explains most, in words."""
    if e.series is None:
        what = f"no stall on its path was recorded ({context})"
    else:
        source, subject, _ = e.series
        start, largest, thread = e.largest
        by = f" ({thread})" if thread else ""
        what = (f"{source}: the {subject if subject != HOST else 'host'} stalled {e.explained_ms} ms on its path{by} "
                f"(largest {largest} ms at +{(start - started_ms) / 1000:.1f} s; {context})")
    if e.refuted is not None:
        ms, thread = e.refuted
        what += (f"; a {ms} ms wait{f' of thread {thread}' if thread else ''} the host's pressure did not corroborate "
                 f"excuses nothing")
    return what


def explain_late(stalls: list[Mapping], earliest_ms: int, latest_ms: int, observed_ms: int, started_ms: int,
                 local: bool = False, cpus: int = 1, watched_until_ms: int | None = None, path: str | None = None,
                 put_ms: int | None = None) -> tuple[bool, str]:
    """(covered, reason) for an attempt due at ``earliest_ms``, on time until ``latest_ms``, seen at
    ``observed_ms`` (> ``latest_ms``): undecided when its lateness is within what the recorded stalls
    on its path explain of its own wait (:func:`explain`: bounded by those stalls), the reason says
    by which; else a violation, the reason saying how late and how much of it the stalls explain.
    ``watched_until_ms`` (run.json ``host``): when the harness stopped watching the host — an
    attempt that arrived after it lies where no stall could be observed, so whether it was late is
    undecided (the watch lasts until the run's consumers stop, so none should)."""
    late = observed_ms - latest_ms
    context = _context(stalls, earliest_ms, observed_ms)
    if watched_until_ms is not None and observed_ms > watched_until_ms:
        return True, (f"arrived {late} ms after its window closed, {(observed_ms - watched_until_ms) / 1000:.1f} s after "
                      f"the harness stopped watching the host (at +{(watched_until_ms - started_ms) / 1000:.1f} s): the "
                      f"stalls that may explain it were not observed, so whether the broker was late is undecided")
    e = explain(stalls, earliest_ms, observed_ms, local, cpus, path, put_ms)
    what = _what(e, started_ms, context)
    if late <= e.explained_ms:
        return True, (f"arrived {late} ms after its window closed, within the stalls recorded on its path meanwhile "
                      f"({what}): whether the broker was late is undecided")
    return False, f"late by {late / 1000:.1f} s, of which recorded stalls explain {e.explained_ms / 1000:.1f} s ({what})"


def not_observed(host: Mapping | None) -> str | None:
    """run.json ``host``: why the harness could not observe the broker's host, or None."""
    if not host:
        return "the run did not record its host (a run written before host stalls were observed)"
    if host.get(HOST_VIRTUAL):
        return None
    return host.get(HOST_NOT_OBSERVED)


#: What a client does after its send-back failed, beyond the model's own allowance of one more copy
#: of the retry (reference.network.send_back_may_repeat): DefaultMQPushConsumerImpl.sendMessageBack
#: re-sends the retry through the client's producer, whose own retries (retryTimesWhenSendFailed 2,
#: "sendKernelImpl exception, resend at once") each may store a copy, and every try after the first
#: carries no reconsume count (DefaultMQProducerImpl.sendKernelImpl clears PROPERTY_RECONSUME_TIME on
#: the first: seen on 5.5.0, a %RETRY% copy with reconsume_times 0); an orderly consumer whose DLQ
#: send fails consumes the message again past its maximum (ConsumeMessageOrderlyService
#: .checkReconsumeTimes), while the send it gave up on may be stored (read at 4.9.7 and 5.3.3). The
#: invariants these copies and attempts break:
RESENT_INVARIANTS = ("NO_DUPLICATE", "RETRY_SCHEDULE", "DLQ_ROUTING")


def explain_resent(stalls: Iterable[Mapping], failed_ms: int, give_up_ms: int, cpus: int = 1) -> tuple[bool, str]:
    """(covered, reason) for what a client did after the send-back of the judged message that it
    logged failed at ``failed_ms`` (the caller matched the failure to one of that message's own
    ``LATER`` answers: :func:`reference.network.send_back_failures`): covered when a stall on the
    broker's path (:func:`on_path`, :func:`corroborated` by the host) was recorded within
    ``give_up_ms`` before it (the time the client waited for the broker's answer) — the host's stall
    explains the failure, and what the client's re-sends of that message stored then is undecided —
    not covered when none was."""
    stalls = list(stalls)
    psi = PsiPeriods(stalls)
    meanwhile = [s for s in stalls if on_path(s, local=False, path=DIRECT) and _overlap_ms(s, failed_ms - give_up_ms, failed_ms) > 0
                 and corroborated(s, psi, cpus)]
    if not meanwhile:
        return False, "no stall on the broker's path was recorded while the client's send-back waited"
    largest = max(meanwhile, key=held_ms)
    thread = stalled_thread(largest)
    return True, (f"the client's send-back of this message failed while the {largest.get('subject') or HOST} stalled "
                  f"({largest['source']}: {held_ms(largest)} ms{f', thread {thread}' if thread else ''}): what the client's "
                  f"re-sends of it stored then — copies with their reconsume count dropped "
                  f"(DefaultMQProducerImpl.sendKernelImpl), an orderly consumer's re-consume past its maximum "
                  f"(ConsumeMessageOrderlyService.checkReconsumeTimes) — is undecided")


def _held(stalls: Iterable[Mapping], from_ms: int, to_ms: int, margin_ms: int, path: str, started_ms: int,
          cpus: int) -> tuple[bool, int, Explained, str]:
    """Whether the recorded stalls on ``path`` (host-corroborated: :func:`explain`) held the broker
    for all of ``[from_ms, to_ms]`` but ``margin_ms``, some such stall recorded at all; with the
    span, what they explain and that in words (the held-ack and held-offset rules' shared test)."""
    span = max(0, to_ms - from_ms)
    stalls = list(stalls)
    e = explain(stalls, from_ms, max(to_ms, from_ms), False, cpus, path)
    what = _what(e, started_ms, _context(stalls, from_ms, max(to_ms, from_ms)))
    return e.explained_ms > 0 and e.explained_ms >= span - margin_ms, span, e, what


def explain_held_ack(stalls: Iterable[Mapping], acked_ms: int, revive_ms: int, started_ms: int,
                     cpus: int = 1) -> tuple[bool, str]:
    """(covered, reason) for a POP copy answered OK at ``acked_ms`` and revived all the same as the
    next attempt (a RETRY_SCHEDULE "never answered LATER"), its checkpoint due at ``revive_ms`` (its
    pop time + invisible time: PopReviveService revives a checkpoint no ack in the revive topic
    matched by then; the client's ack is asynchronous, and logs no failure the broker never
    answered). Covered only when the recorded stalls on the POP path (:data:`POP`: the ack's put and
    PopReviveService's threads, host-corroborated: :func:`explain`) held the broker for all of the
    ack's time to be stored, from the answer to the checkpoint's due time, but one sample
    (:data:`SAMPLE_MS`), and some such stall was recorded at all: then the ack may have been stored
    after the revive, and whether the broker lost it is undecided; else the revive after an OK is
    the broker's (an OK within one sample of the due time, or after it, excuses nothing by itself)."""
    held, span, e, what = _held(stalls, acked_ms, revive_ms, SAMPLE_MS, POP, started_ms, cpus)
    if held:
        return True, (f"its OK's ack had {span} ms to be stored before the checkpoint was due, and the broker's POP path "
                      f"was stalled for {e.explained_ms} ms of them ({what}): the ack may have been stored after the "
                      f"revive, so whether the broker lost it is undecided")
    return False, (f"its OK's ack had {span} ms to be stored before the checkpoint was due, of which recorded stalls "
                   f"explain {e.explained_ms / 1000:.1f} s ({what})")


def explain_held_offset(stalls: Iterable[Mapping], uncovered: int, last_reput_ms: int, persist_ms: int,
                        started_ms: int, cpus: int = 1) -> tuple[bool, str]:
    """(covered, reason) for a periodic persist of the schedule offsets at ``persist_ms`` that left
    ``uncovered`` entries of a level re-put before it uncovered (``reference.persistence.
    flush_covers_reputs``), the last of them stored at ``last_reput_ms``. A synchronous re-put
    (DeliverDelayedMessageTimerTask.syncDeliver, 4.9.4+ and 5.x) moves the offset right after its put
    returns and before the next entry's put, so one entry at most can be stored and not yet counted:
    the last. Covered only when exactly one is uncovered and the recorded stalls on the schedule
    path (:data:`SCHEDULE`: the put's threads and ScheduleMessageService's, whose persist shares the
    name; host-corroborated: :func:`explain`) held the broker for all of the time from that put to
    the persist but the persist's own margin (``FLUSH_COVERS_MARGIN_MS``), and some such stall was
    recorded at all: the offset's move may then have come after the persist read it, and whether
    the broker lost it is undecided. Two or more uncovered entries are the broker's, whatever the host."""
    held, span, e, what = _held(stalls, last_reput_ms, persist_ms, FLUSH_COVERS_MARGIN_MS, SCHEDULE, started_ms, cpus)
    if uncovered == 1 and held:
        return True, (f"the last entry re-put before the persist was stored {span} ms before it, and the broker's schedule "
                      f"path was stalled for {e.explained_ms} ms of them ({what}): the offset's move past it may have come "
                      f"after the persist read the table, so whether the broker lost it is undecided")
    if uncovered > 1:
        return False, (f"{uncovered} entries uncovered: each synchronous re-put moves the offset before the next one's put, "
                       f"so no stall holds back more than one")
    return False, (f"the last entry re-put before the persist was stored {span} ms before it, of which recorded stalls "
                   f"explain {e.explained_ms / 1000:.1f} s ({what})")
