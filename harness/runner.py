"""The runner: executes one scenario against one system and writes its run directory.

``RUN/run.json`` (written at the start, completed at the end), ``RUN/scenario.json`` (for replay),
``RUN/events/harness.jsonl`` (send, fault, snapshot, dlq — each flushed as it happens), the
consumers' own ``RUN/events/consumer-<name>.jsonl`` and, at the end, copies of the system's logs in
``RUN/logs/`` (``harness.logcopy``). The timeline (sends and primitive faults) is
executed in order on the system's clock; a fault step timed from what the broker did joins it when
its anchor is observed (``harness.anchors``); then the run drains until the model says every
message is final (``harness.drain``), heals all faults, reads the DLQ and takes a last snapshot.
"""

from __future__ import annotations

from collections import Counter
from contextlib import nullcontext
import heapq
import itertools
import os
import random
import threading
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Collection, ContextManager
from hourglass.adapters.base import (ConsumerSpec, ConsumersNotRestarted, ConsumeStatsReading, Consuming, DlqReading, LogFiles, OffsetFlushWatching, SendRequest,
                           TimerCheckpointWatching,
                           System)
from hourglass.harness.anchors import ANCHOR_POLL_MS, AnchorNeverCame, StepPlan
from hourglass.harness.drain import DrainState, drain_state, duplicate_watch_until_ms
from hourglass.adapters.rundir import EventLog, EventTail, read_run_json, write_run_json
from hourglass.reports.version import hourglass_version
from hourglass.harness.faults import FaultDriver, TimedFault
from hourglass.harness import families, hostwatch
from hourglass.harness.logcopy import copy_logs, log_sizes, timed_lines
from hourglass.harness.catalogue import suite_of
from hourglass.harness.scenario import Scenario
from hourglass.reference.modes import BROADCASTING, ORDERLY
from hourglass.reference.orderly import effective_suspend_ms
from hourglass.reference.pop import POP_MODES, V1_NOTIFY_AGAIN
from hourglass.reports.baseline import version_number
from hourglass.reference.cluster import SINGLE, broker_targets
from hourglass.reference.contract import CONSUMERS_STOPPED, CONSUMER_STARTED_BY_SCENARIO, CONSUMER_TARGET, FLUSH_MOMENT, POP_REVIVED, SEND_BACK_FAILED, VERSION_FIELD, consumer_fault, retry_topic
from hourglass.reference.clock import waiting_levels
from hourglass.reference.levels import parse_level_table
from hourglass.reference import faults as kinds
from hourglass.reference.expected import build_expected
from hourglass.reference.reach import unreached
from hourglass.reference.network import RESEND_MARK, SEND_BACK_FAILS_AFTER_MS, SEND_BACK_FAILURE_MARKS, parse_send_back_failure
from hourglass.reference.pop import POP_LOG, REVIVE_MARKS, parse_revived
from hourglass.reference.retry import DLQ_READ_MS, DLQ_ROUTABLE_WITHIN_MS, dlq_bound
from hourglass.reference.stalls import HOST_WATCHED_UNTIL, SAFEPOINT_LOG, log_time_ms
from hourglass.reference.rundir import CLIENT_LOG_EVENTS, consumer_name, EVENTS_DIR, HARNESS_EVENTS, LOGS_DIR, SCENARIO_JSON, STALL_EVENTS
from hourglass.reference.contract import BROKER_TARGETS

#: ``system.info.details`` key: [start, ready] of the system's setup (the broker's start before the
#: run), recorded as the run's first broker ``start``/``ready`` events (``cause: setup``): a kill
#: soon after the broker started may repeat every re-put since — its first persist comes 10 s
#: after its schedule service started (ScheduleMessageService.start), maybe after the run began
BROKER_SETUP = "broker_setup_ms"

SECOND_BROKER = BROKER_TARGETS[1]
#: how often the runner has dead consumers restarted, and looks at progress, while it waits
POLL_MS = 250
#: how often the DLQ is read again while entries the model owes are missing (read_dlq_until_owed)
DLQ_REREAD_MS = 2_000


class ConsumerWatch:
    """Shares one system's ``poll_consumers`` among the runs on it: a consumer that died (on a
    ``CRASH`` answer, or its process exited) is restarted promptly, whichever run polls. It writes
    nothing: the death is recorded by whoever saw it (the consumer itself, or the runtime's exit
    watch) and the restart by the system's restart path, each in the consumer's own events file."""

    def __init__(self, system: System):
        self.system = system
        self._lock = threading.Lock()

    def poll(self, mine: Collection[str] | None = None) -> None:
        """Restart the dead consumers. A replacement that could not start is the failure of the
        run whose consumer it is (``mine``: the caller's consumers; None: every consumer is its
        own): another run's poll goes on, and the next poll tries that restart again. While another
        run's poll is under way (a consumer JVM's restart takes seconds, 20 s and more on a busy
        host) this one returns at once: that poll restarts every dead consumer, and a run waiting
        for it would hold its own timeline (seen: batch-ack-index's resume 3 s after its pause came
        9.8 to 24.7 s late, behind a crash group's restart on the shared system)."""
        if not self._lock.acquire(blocking=False):
            return
        try:
            self.system.poll_consumers()
        except ConsumersNotRestarted as e:
            own = {name: why for name, why in e.failed.items() if mine is None or name in mine}
            if own:
                raise ConsumersNotRestarted(own, e.restarted) from None
        finally:
            self._lock.release()


class Cancelled(RuntimeError):
    """The batch was interrupted (Ctrl-C, a failure elsewhere): stop waiting, heal, clean up."""


@dataclass
class RunResult:
    run_dir: Path
    run_id: str
    scenario: Scenario
    drained: bool
    pending: tuple[str, ...]
    started_ms: int
    ended_ms: int
    error: str | None = None
    skipped: str | None = None  # why the scenario was not run on this system


def capabilities(system: System) -> set[str]:
    """What the system can do beyond delay levels and retry: ``timer`` (5.x timer messages). What
    the system says (``info.details["capabilities"]``), else its family's rule
    (:func:`harness.families.capabilities`); a system no family claims: nothing beyond."""
    info = system.info
    if "capabilities" in info.details:
        return set(info.details["capabilities"])
    return families.capabilities(info) or set()


#: the anchors only a system that watches the broker's files can see: what it must be, what it cannot do else
_WATCHED_ANCHORS = {
    "flush": (OffsetFlushWatching, "tell when the broker persists its schedule offsets"),
    "timer_flush": (TimerCheckpointWatching, "read the broker's timer checkpoint"),
}


def skip_reason(scenario: Scenario, system: System) -> str | None:
    """Why ``scenario`` cannot run on ``system`` (decided before the run), or None: a capability
    it ``requires``, or a fault step timed from the broker's offset flushes on a system that
    cannot tell when it flushes (:class:`~adapters.base.OffsetFlushWatching`; the external runtime)."""
    info = system.info
    missing = set(scenario.requires) - capabilities(system)
    if missing:
        return f"{info.adapter} {info.version} has no {', '.join(sorted(missing))}"
    cluster = scenario.profile.cluster
    if info.details.get("cluster", SINGLE) != cluster:
        why = info.details.get("cluster_unsupported") or "it runs a single broker"
        return f"{info.adapter} {info.version} ({info.runtime} runtime) cannot run a {cluster} cluster: {why}"
    for event, (watching, cannot) in _WATCHED_ANCHORS.items():
        steps = [i for i, f in enumerate(scenario.faults) if f.after is not None and f.after.event == event]
        if steps and not isinstance(system, watching):
            return (f"{info.adapter} {info.version} ({info.runtime} runtime) cannot {cannot}: fault step {steps[0]} "
                    f"is timed from a {event}")
    return _fault_refused(scenario, system)



def _fault_refused(scenario: Scenario, system: System) -> str | None:
    """Why ``system`` cannot do a primitive ``scenario``'s fault steps may perform (healing
    included), in the words of the first fault family it refuses (reference.faults); None: it can."""
    info, needed = system.info, kinds.primitives_needed(scenario.faults)
    for family in kinds.families():
        refused = [(a, t, why) for a, t in sorted(needed) if kinds.family_of(a) is family
                   and (why := system.cannot(a, t)) is not None]
        if refused:
            what = (f"{family.skip_words} {', '.join(sorted({t for _, t, _ in refused}))}" if family.skip_words
                    else ", ".join(f"{a} {t}" for a, t, _ in refused))
            return f"{info.adapter} {info.version} ({info.runtime} runtime) cannot {what}: {refused[0][2]}"
    return None


def _client_log(name: str) -> bool:
    """Whether a run's log copy is a client's (the client and consumer processes' own, and the
    client JVMs' logs under ``clients/``): where the official client logs a failed send-back; or
    the broker's POP log (``reference.pop.POP_LOG``), where it records a revive."""
    return "client" in name or name.startswith("consumer") or name.rsplit("/", 1)[-1] == POP_LOG


#: what the client logs of a failed send-back and the broker's POP log of a revive (:func:`_client_log`)
_REPORT_MARKS = SEND_BACK_FAILURE_MARKS + (RESEND_MARK,) + REVIVE_MARKS


class RunLogs:
    """What a run leaves of the system's logs: their copies in ``RUN/logs/`` (``harness.logcopy``),
    the stalls they and the host watch saw, and the send-backs the client logged as failed."""

    def __init__(self, system: System, run_dir: Path):
        self.system = system
        self.run_dir = run_dir
        self.events_dir = run_dir / EVENTS_DIR
        self._held: hostwatch.HostWatch | None = None  # a shared system's watch: kept until its consumers stop
        self._groups: set[str] = set()  # the run's groups, whose failed send-backs are recorded
        self._failure_lines: Counter = Counter()  # each failure line recorded so far: a repeat is numbered

    def record_stalls(self, run: dict, watch: hostwatch.HostWatch | None, held: bool = False) -> None:
        """The stalls of the run's period into ``events/stalls.jsonl`` (the host watch's, and those
        the broker reported in its log copies), and what was observed into run.json's ``host``, the
        watch lasting until the run's end; ``held``: the run's consumers run on (a shared system),
        the watch is kept for :meth:`record_stalls_until` and released there."""
        self._held = watch if held else None
        try:
            run["host"] = hostwatch.observation(self.system, watch)
            if watch is None:
                return
            run["host"][HOST_WATCHED_UNTIL] = run["ended_ms"]
            found = watch.stalls_between(run["started_ms"], run["ended_ms"])
            for name, copy, written in self.copies(run):
                if ("broker" in name or "store" in name or name.rsplit("/", 1)[-1] == SAFEPOINT_LOG) \
                        and not name.startswith("clients/"):
                    subject = SECOND_BROKER if SECOND_BROKER in name else BROKER_TARGETS[0]
                    found += hostwatch.log_stalls([copy], subject, run["started_ms"], run["ended_ms"],
                                                  {copy: written} if written else None)
            self._write_stalls(found)
        finally:
            if not (held and watch is not None):
                hostwatch.release(self.system)

    def record_stalls_until(self, until_ms: int) -> None:
        """A shared system's run, whose consumers delivered until ``until_ms`` (when the batch stopped
        them): the host watch's stalls after the run's end too, run.json's ``host`` saying how long
        it watched (reference.stalls: an attempt is judged on the stalls of its own wait); the
        watch held by :meth:`record_stalls` released."""
        watch, self._held = self._held, None
        if watch is None:
            return
        try:
            run = read_run_json(self.run_dir)
            ended = int(run.get("ended_ms") or 0)
            if until_ms > ended and isinstance(run.get("host"), dict):
                # the periods begun since (one open at the end was written with it, as far as it went)
                self._write_stalls([e for e in watch.stalls_between(ended + 1, until_ms) if e["from_ms"] > ended])
                run["host"][HOST_WATCHED_UNTIL] = until_ms
                write_run_json(self.run_dir, run)
        finally:
            hostwatch.release(self.system)

    def _write_stalls(self, found: list[dict]) -> None:
        with EventLog(self.events_dir / STALL_EVENTS) as out:
            for e in sorted(found, key=lambda e: (e["ts_ms"], e["source"], e["subject"])):
                out.write(e)

    def copies(self, run: dict) -> list[tuple[str, Path, int | None]]:
        """(name, copy, when its source was last written: the log's zone) of each log copy of the run."""
        out = []
        for name, entry in sorted((run.get("logs") or {}).items()):
            if "source" not in entry:
                continue
            try:
                written = int(os.stat(entry["source"]).st_mtime * 1000)
            except OSError:
                written = None
            out.append((name, self.run_dir / LOGS_DIR / name, written))
        return out

    def record_client_failures(self, run: dict, groups: set[str]) -> None:
        """The send-backs the official client logged as failed in the run's period, of the run's
        ``groups``, into ``events/client-log.jsonl`` (``fault`` ``send_back_failed``: the model allows
        what the client does then, ``reference.network.send_back_failures``); and the revives the
        broker's POP log recorded for them (``fault`` ``pop_revived``: ``reference.pop.popped_unseen``)."""
        self._groups = groups
        reads = []
        for name, copy, written in self.copies(run):
            if not _client_log(name):
                continue
            # a copy cut to its size cap may have lost such lines: read the run's part of the source
            entry = run["logs"][name]
            source = Path(entry["source"])
            whole = entry.get("cut_bytes") and source.exists() and "from_byte" in entry and "to_byte" in entry
            reads.append((name, timed_lines(source, written, _REPORT_MARKS, (entry["from_byte"], entry["to_byte"]))
                          if whole else timed_lines(copy, written, _REPORT_MARKS)))
        self._write_client_failures(reads, groups, run["started_ms"], run["ended_ms"])

    def record_until(self, until_ms: int) -> None:
        """A shared system's run whose consumers went on until ``until_ms``: its stalls and its
        client's failures until then."""
        self.record_stalls_until(until_ms)
        self.record_client_failures_until(until_ms)

    def record_client_failures_until(self, until_ms: int) -> None:
        """A shared system's run, whose consumers went on until ``until_ms``: the send-backs they
        logged as failed after the run's end too (its attempts after the end are judged, and so is
        what such a failure explains), read from what each client log's source gained since."""
        groups = self._groups
        if not groups:
            return
        run = read_run_json(self.run_dir)
        ended = int(run.get("ended_ms") or 0)
        if until_ms <= ended:
            return
        reads = []
        for name, entry in sorted((run.get("logs") or {}).items()):
            if not _client_log(name) or "source" not in entry or "to_byte" not in entry:
                continue
            source = Path(entry["source"])
            try:
                size = source.stat().st_size
            except OSError:
                continue
            if size > entry["to_byte"]:
                reads.append((name, timed_lines(source, None, _REPORT_MARKS, (entry["to_byte"], size))))
        self._write_client_failures(reads, groups, ended + 1, until_ms)

    def _write_client_failures(self, reads: list, groups: set[str], from_ms: int, to_ms: int) -> None:
        found = []
        seen = self._failure_lines
        for name, read in reads:
            if read is None:
                continue
            offset, lines = read
            for line in lines:
                at = log_time_ms(line)
                revived = parse_revived(line)
                # a revive is matched by the copy it put, not by its time (logged to the second): any in the run's part
                if revived is not None and at is not None and revived[0] in groups:
                    found.append({"type": "fault", "ts_ms": at - offset * 1000, "action": POP_REVIVED, "target": "broker",
                                  "group": revived[0], "commit_log_offset": revived[1], "cause": f"{name}: {revived[2]}"})
                    continue
                parsed = parse_send_back_failure(line)
                if parsed is None or at is None or parsed[0] not in groups:
                    continue
                ts = at - offset * 1000
                if from_ms <= ts <= to_ms:
                    # a batch's send-backs failing in one millisecond log the same line: each is one
                    # failure (numbered, so no two events repeat: reports.inputs.repeated_lines)
                    seen[(name, line)] += 1
                    again = f" (#{seen[(name, line)]} such line)" if seen[(name, line)] > 1 else ""
                    found.append({"type": "fault", "ts_ms": ts, "action": SEND_BACK_FAILED, "target": CONSUMER_TARGET,
                                  "group": parsed[0], **({"key": parsed[1]} if parsed[1] else {}),
                                  "cause": f"{name}: {line.strip()[:300]}{again}"})
        if found:
            with EventLog(self.events_dir / CLIENT_LOG_EVENTS) as out:
                for e in sorted(found, key=lambda e: e["ts_ms"]):
                    out.write(e)

    def sizes(self) -> dict[str, int]:
        if not isinstance(self.system, LogFiles):
            return {}
        try:
            return log_sizes(self.system.log_files())
        except Exception:  # noqa: BLE001 - the copy at the end says what failed
            return {}

    def copy(self, run: dict, since: dict[str, int]) -> None:
        """The system's logs into ``RUN/logs/`` (``harness.logcopy``), recorded in run.json's
        ``logs``; what the system cannot give, or a copy that failed, in ``logs_not_collected``."""
        sysm = self.system
        if not isinstance(sysm, LogFiles):
            return
        try:
            missing = sysm.logs_not_collected()
            record = copy_logs(sysm.log_files(), self.run_dir, since)
        except Exception as e:  # noqa: BLE001 - the run's observations stand without its logs
            run["logs_not_collected"] = f"logs: not collected ({type(e).__name__}: {e})"[:500]
            return
        if record:
            run["logs"] = record
        if missing:
            run["logs_not_collected"] = missing


@dataclass
class _Outcome:
    """How a run ended, as its phases find out: what it observed of the drain, and why it broke or stopped."""

    state: DrainState
    observed: bool = False  # whether ``state`` is what the run observed (an interrupted run never drained)
    error: str | None = None
    interrupted: str | None = None
    host: "hostwatch.HostWatch | None" = None  # the host watch while the run lasts: its stalls lengthen the drain


@dataclass
class Progress:
    """What a run is doing now; read by the progress display of a batch."""

    scenario: str
    phase: str = "queued"
    messages: int = 0
    final: int = 0
    deadline_ms: int | None = None
    extra: dict = field(default_factory=dict)
    #: when each phase first began (``clock()`` seconds): the batch's ETA re-anchors on them (harness.eta)
    began: dict = field(default_factory=dict)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False, compare=False)

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        if name == "phase" and "clock" in self.__dict__:
            self.began.setdefault(value, self.clock())


def body_for(key: str, size: int, seed: int) -> bytes:
    """``size`` bytes exactly (a body at a limit is at it): the key and random bytes."""
    rng = random.Random(f"{seed}:{key}")
    head = key.encode() + b"|"
    return (head + rng.randbytes(max(0, size - len(head))))[:size]


def _next_due(timeline: list, now_ms: int) -> tuple:
    """The timeline's next item to play at ``now_ms``: the earliest, except that an overdue fault
    step goes before overdue sends. A send to a paused broker blocks the timeline for the client's
    send timeout (3 s); five such sends held a kill planned 1.5 s after the pause back by 15 s,
    long enough for everything due to fall due and the next step's anchor never to come (4.9.7,
    persist-levels-afterflush-pausekill-slow-duringbacklog). The steps are the scenario's
    structure; a late send is recorded at the time it was really sent."""
    overdue = [e for e in timeline if e[1] == 0 and e[0] <= now_ms]
    if not overdue or timeline[0][1] == 0:
        return heapq.heappop(timeline)
    first = min(overdue)
    timeline.remove(first)
    heapq.heapify(timeline)
    return first


def send_message(system: System, m, seed: int, log: EventLog) -> None:
    """Send scenario message ``m`` and record its ``send`` event."""
    body = body_for(m.key, m.body_size, seed)
    timer = m.timer_request(system.clock.now_ms())
    deliver_at = timer.deliver_at_ms
    res = system.send(SendRequest(m.topic, m.key, body, m.delay_level, deliver_at, tuple(m.plan),
                                  timer.delay_sec, timer.delay_ms))
    ev = {
        "type": "send",
        "ts_ms": res.ts_ms,
        "key": m.key,
        "topic": m.topic,
        "delay_level": m.delay_level,
        "status": res.status,
        "born_ms": res.born_ms,
        "body_crc": zlib.crc32(body),
    }
    if deliver_at is not None:
        ev["deliver_at_ms"] = deliver_at
    for name, value in (("delay_time_sec", timer.delay_sec), ("delay_time_ms", timer.delay_ms)):
        if value is not None:
            ev[name] = value
    ev["body_size"] = len(body)
    if res.response_code is not None:
        ev["response_code"] = res.response_code
    if m.plan:
        ev["plan"] = list(m.plan)
    if res.msg_id:
        ev["msg_id"] = res.msg_id
    if res.broker:
        ev["broker"] = res.broker
    if res.queue_id is not None:
        ev["queue_id"] = res.queue_id
    if res.error:
        ev["error"] = res.error[:300]
    log.write(ev)


def record_consume_stats(sysm: System, sc: Scenario, log: EventLog, run: dict) -> None:
    """Each group's committed and stored offsets once its consumers stopped (their graceful
    stop committed them): what the broker holds that the group never consumed tells a stalled
    consumer from a lost message (``reports.stalls``). A system that cannot say records why."""
    if not isinstance(sysm, ConsumeStatsReading):
        return
    for group in sorted({c.group for c in sc.consumers}):
        topics = sorted({t for c in sc.consumers if c.group == group for t in c.topics} | {retry_topic(group)})
        try:
            snap = sysm.consume_stats(group, topics)
        except Exception as e:  # noqa: BLE001 - the run's observations stand without it
            run.setdefault("consume_stats_errors", []).append(f"{group}: {type(e).__name__}: {e}"[:300])
            continue
        log.write({"type": "snapshot", "ts_ms": sysm.clock.now_ms(), **snap, "moment": CONSUMERS_STOPPED})


def _group_max_reconsume_times(sc: Scenario, version: str = "") -> dict:
    """Groups whose consumers set their own maxReconsumeTimes (it wins over the profile's), and
    each mode's groups with what the model reads of them (run.json's profile). A POP group's entry
    carries the broker's release (``version``: what its revive and client do differs by release)."""
    by_group = {c.group: c.max_reconsume_times for c in sc.consumers if c.max_reconsume_times is not None}
    orderly = {c.group: effective_suspend_ms(c.suspend_ms) for c in sc.consumers if c.mode == ORDERLY}
    broadcasting = {c.group: c.instances for c in sc.consumers if c.mode == BROADCASTING}
    timeouts = {c.group: c.consume_timeout_min for c in sc.consumers if c.consume_timeout_min is not None}
    parsed = version_number(version or "")  # 5.5.0 of 5.5.0-acme; none: the newest release the model knows
    release = tuple(parsed.release) if parsed is not None else V1_NOTIFY_AGAIN
    popping = {c.group: c.pop_profile(release) for c in sc.consumers if c.mode in POP_MODES}
    return {**({"max_reconsume_times_by_group": by_group} if by_group else {}),
            **({"pop_groups": popping} if popping else {}),
            **({"consume_timeouts": timeouts} if timeouts else {}),
            **({"orderly_groups": orderly} if orderly else {}),
            **({"broadcasting_groups": broadcasting} if broadcasting else {})}


def consumer_spec(sc: Scenario, c, i: int, events_dir: Path) -> ConsumerSpec:
    """Instance ``i`` of the scenario's consumer group ``c``, ``hosted`` where :func:`hosted` says."""
    mrt = c.max_reconsume_times if c.max_reconsume_times is not None else sc.profile.max_reconsume_times
    return ConsumerSpec(consumer_name(c.group, i), c.group, c.topics, mrt, events_dir, c.batch_size, c.retry_max_times,
                        c.mode, effective_suspend_ms(c.suspend_ms), i, c.consume_timeout_min, c.pop_invisible_ms,
                        hosted=hosted(sc, c))


def hosted(sc: Scenario, c) -> bool:
    """Whether group ``c`` of ``sc`` may run in the system's consumer host, one JVM with the other
    hosted groups (adapters.rocketmq.consumer_host), warmed up beside the broker's start: a group no
    plan CRASHes (its death alone takes a process of its own) of a scenario no fault step of which
    acts on its consumers (a signal to a host stops every consumer in it). A broker's faults leave
    the consumers be, hosted or not; a shared system runs only scenarios without other faults
    (harness.batch.shares_a_system)."""
    return not sc.crashes(c) and not any(f.target == CONSUMER_TARGET for f in sc.faults)


def run_consumers(sc: Scenario) -> frozenset[str]:
    """The names of a run's consumers: a restart of one that fails is that run's failure only."""
    return frozenset(consumer_name(c.group, i) for c in sc.consumers for i in range(c.instances))


def read_dlq_until_owed(sysm, clock, cancel: threading.Event, group: str, owed: tuple[set[str], int] | None) -> list[dict]:
    """The DLQ entries of ``group``. Where the model owes entries it does not hold yet, read
    again until the name server may know the DLQ topic (``reference.retry.DLQ_ROUTABLE_WITHIN_MS``
    after the last send-back to it, which may itself have taken a failed send-back and the
    re-send: ``reference.network.SEND_BACK_FAILS_AFTER_MS``): a starved broker registers the
    topic late, and a DLQ without a route reads as empty. A correct broker's DLQ is read at once.
    ``clock``: the system's own (a simulator's virtual time moves by it)."""
    while True:
        records = sysm.read_dlq(group)
        if owed is None or owed[0] <= {r.get("key") for r in records}:
            return records
        now = clock.now_ms()
        if now >= owed[1] + SEND_BACK_FAILS_AFTER_MS + DLQ_ROUTABLE_WITHIN_MS or cancel.is_set():
            return records
        clock.sleep_until(now + DLQ_REREAD_MS)


class FlushRecorder:
    """Each persist of the schedule offsets the harness sees (``delayOffset.json`` written anew): a
    ``snapshot`` of what it holds, ``moment`` ``flush``, at the write's time — what OFFSET_PERSISTENCE
    judges against the re-puts the broker completed before it (reference.persistence.flush_covers_reputs).
    Polled at every wait of the run, so at most ``POLL_MS`` late (a second write within that time is
    read with the first's time: its offsets are only larger)."""

    def __init__(self, system: System, log: EventLog):
        self.system = system if isinstance(system, OffsetFlushWatching) else None
        self.log = log
        self.last_ms: int | None = None

    def poll(self) -> None:
        if self.system is None:
            return
        flush_ms = self.system.last_offset_flush_ms()
        if flush_ms is None or flush_ms == self.last_ms:
            return
        self.last_ms = flush_ms
        for snap in self.system.persisted_offsets():
            self.log.write({"type": "snapshot", "ts_ms": flush_ms, **snap, "moment": FLUSH_MOMENT})


def _unreached(scenario: Scenario, seen: list[dict]) -> str | None:
    """Why the run did not reach a state its scenario exists for (reference.reach), or None."""
    if not scenario.reach:
        return None
    return unreached(scenario.reach, seen, parse_level_table(scenario.profile.message_delay_level))


#: run.json: when the run's setup (its topics and consumers) began: its start, or on a shared system
#: once its turn came (harness.turns); ``harness.bench`` tells the turn's wait from the setup by it
SETUP_BEGAN_MS = "setup_began_ms"


def record_broker_setup(system: System, log: EventLog) -> None:
    """The brokers' own start, before the run: when their schedule services can first have persisted."""
    info = system.info
    setup = info.details.get(BROKER_SETUP)
    if not setup:
        return
    chain = info.details.get("versions")  # an across-store chain starts at its first version
    for target in broker_targets(info.details.get("cluster", SINGLE)):  # started together (reference.cluster)
        for action, ts in zip(("start", "ready"), setup):
            log.write({"type": "fault", "ts_ms": ts, "action": action, "target": target, "cause": "setup",
                       **({"version": chain[0]} if chain and action == "ready" else {})})


class ScenarioRun:
    def __init__(
        self,
        scenario: Scenario,
        system: System,
        run_dir: Path,
        run_id: str | None = None,
        progress: Progress | None = None,
        cancel: threading.Event | None = None,
        watch: ConsumerWatch | None = None,
        owns_consumers: bool = True,
        system_spec: str | None = None,
        shared_system: bool = False,
        fitted: dict | None = None,
        setup_turn: Callable[[], ContextManager] = nullcontext,
    ):
        self.scenario = scenario
        self._setup_turn = setup_turn  # while it sets up (a shared system's runs take turns: harness.turns)
        self.fitted = fitted  # what harness.fit changed to run it on this broker: run.json ``fitted``
        self.system = system
        self.run_dir = Path(run_dir)
        self.run_id = run_id or self.run_dir.name
        self.progress = progress or Progress(scenario.name)
        self.events_dir = self.run_dir / EVENTS_DIR
        self.system_spec = system_spec  # recorded in run.json: replay runs the same system
        self._tail = EventTail(self.events_dir)
        self._seen: list[dict] = []
        self._steps: StepPlan | None = None  # the fault steps, while the timeline plays
        self._cancel = cancel or threading.Event()
        self._watch = watch or ConsumerWatch(system)
        self._owns_consumers = owns_consumers  # False on a shared system: stopped at teardown
        self._shared_system = shared_system  # other runs use the system meanwhile: its logs are copied from this run's start
        self._watched_ms = 0  # when consumers were last looked after (every POLL_MS)
        self._flushes: FlushRecorder | None = None
        self._logs = RunLogs(system, self.run_dir)

    # --- the run, by phase: begin, set up, send, drain; then heal, read the DLQ, close ---------
    def execute(self) -> RunResult:
        sc = self.scenario
        why = skip_reason(sc, self.system)
        if why:
            self.progress.phase = "done"
            return RunResult(self.run_dir, self.run_id, sc, True, (), 0, 0, skipped=why)
        run = self._begin()
        logs_since = self._logs.sizes() if self._shared_system else {}
        log = EventLog(self.events_dir / HARNESS_EVENTS)
        self._flushes = FlushRecorder(self.system, log)
        record_broker_setup(self.system, log)
        faults = FaultDriver(self.system, log, run_consumers(sc) if self._shared_system else None)  # batch.shares_a_system
        faults.waiting_levels = self._waiting_levels
        watch = hostwatch.acquire(self.system)  # the host's and the system's stalls meanwhile (reference.stalls)
        out = _Outcome(DrainState((), None, len(sc.messages), 0), host=watch)
        try:
            with self._setup_turn():
                run[SETUP_BEGAN_MS] = self.system.clock.now_ms()  # its turn came (harness.turns)
                self._set_up(log)
            faults.snapshot("run_start")
            self._send_and_drain(run, faults, log, out)
        except (Cancelled, KeyboardInterrupt, SystemExit) as e:  # stopped from outside: not the broker's doing
            why = str(e) if isinstance(e, Cancelled) else f"{type(e).__name__}: {e or 'Ctrl-C'}"
            out.interrupted = f"the run was stopped before it ended ({why})"
            raise
        except BaseException as e:  # record, heal, and re-raise below
            out.error = f"{type(e).__name__}: {e}"
            if not isinstance(e, Exception):  # SIGTERM and the like unwind as BaseException
                out.interrupted = f"the run was stopped before it ended ({type(e).__name__}: {e})"
            raise
        finally:
            try:
                self._heal_and_read_dlq(run, faults, log, out)
            finally:
                self._close(run, log, out, logs_since, watch)
        self.progress.phase = "done"
        state = out.state
        return RunResult(self.run_dir, self.run_id, sc, not state.pending, state.pending, run["started_ms"], run["ended_ms"],
                         out.error)

    def _begin(self) -> dict:
        """The run directory, its scenario and its first run.json (completed at the end)."""
        sc, info = self.scenario, self.system.info
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.events_dir.mkdir(exist_ok=True)
        sc.save(self.run_dir / SCENARIO_JSON)
        spec = {"spec": self.system_spec} if self.system_spec else {}
        run = {
            "run_id": self.run_id,
            "scenario": sc.name,
            "system": {"adapter": info.adapter, "version": info.version, "runtime": info.runtime, **info.details, **spec},
            "planned_sends": len(sc.messages),
            "profile": {**sc.profile.to_run_profile(), **_group_max_reconsume_times(sc, info.version)},
            "started_ms": self.system.clock.now_ms(),
            "ended_ms": 0,
            "seed": sc.seed,
            "description": sc.description,
            VERSION_FIELD: hourglass_version(),
        }
        suite = suite_of(sc.name)
        if suite:
            run["suite"] = suite
        if self.fitted:
            run["fitted"] = self.fitted
        write_run_json(self.run_dir, run)
        return run

    def _set_up(self, log: EventLog) -> None:
        """The scenario's topics and consumers."""
        sc, sysm = self.scenario, self.system
        self.progress.phase = "setup"
        for topic in sorted({m.topic for m in sc.messages} | {t for c in sc.consumers for t in c.topics}):
            sysm.create_topic(topic)
        for c in sc.consumers:
            for i in range(c.instances - (1 if c.starts_late() else 0)):
                self._membership(c, i, "start", log)

    def _membership(self, c, i: int, action: str, log: EventLog) -> None:
        """Instance ``i`` of group ``c`` joins (``start``) or leaves (``stop``, gracefully): the
        group's membership changes (a rebalance), recorded like any consumer start (cause
        ``scenario``); a leave is recorded before the consumer stops."""
        sysm = self.system
        spec = consumer_spec(self.scenario, c, i, self.events_dir)
        if action == "start":
            sysm.start_consumer(spec)
            log.write(consumer_fault("start", sysm.clock.now_ms(), spec.name, c.group, CONSUMER_STARTED_BY_SCENARIO))
        else:
            log.write(consumer_fault("stop", sysm.clock.now_ms(), spec.name, c.group, CONSUMER_STARTED_BY_SCENARIO))
            sysm.stop_consumer(spec.name)

    def _send_and_drain(self, run: dict, faults: FaultDriver, log: EventLog, out: "_Outcome") -> None:
        """The timeline, then the drain; a missed anchor ends the run at once (broken: the scenario
        missed its state, not the broker's doing)."""
        self.progress.phase = "sending"
        try:
            self._play(faults, log)
        except AnchorNeverCame as e:
            out.error = str(e)
            self._seen.extend(self._tail.new_events())
            out.state, out.observed = drain_state(run, self._seen, self.system.clock.now_ms()), True
        else:
            self.progress.phase = "draining"
            out.state, out.observed = self._drain(run, out.host), True
            self._seen.extend(self._tail.new_events())
            out.error = _unreached(self.scenario, self._seen)

    def _heal_and_read_dlq(self, run: dict, faults: FaultDriver, log: EventLog, out: "_Outcome") -> None:
        sysm, clock = self.system, self.system.clock
        faults.heal()
        if isinstance(sysm, DlqReading):
            owed = self._dlq_owed(run) if not (out.interrupted or out.error) else {}
            now = run[DLQ_READ_MS] = clock.now_ms()  # an entry owed by a later answer cannot be in it (reports.judge_events)
            for group in sorted({c.group for c in self.scenario.consumers}):
                try:
                    records = read_dlq_until_owed(sysm, clock, self._cancel, group, owed.get(group))
                except Exception as e:  # noqa: BLE001 - an unread DLQ is the harness's blind spot: broken, not a loss
                    out.error = out.error or f"reading the DLQ of {group} failed: {type(e).__name__}: {e}"[:500]
                    continue
                for rec in records:
                    # an earlier run's, on a cluster that outlives runs (store times are the
                    # broker's clock: a clock stepped back by the run reads earlier, reference.clock)
                    if rec.get("store_ms", now) < run["started_ms"] - faults.clock_reach_ms:
                        run.setdefault("dlq_ignored", {})[group] = run.get("dlq_ignored", {}).get(group, 0) + 1
                        continue
                    log.write({"type": "dlq", "ts_ms": now, **rec})
        faults.snapshot("run_end")

    def _close(self, run: dict, log: EventLog, out: "_Outcome", logs_since: dict[str, int],
               watch: hostwatch.HostWatch | None) -> None:
        """Consumers stopped, what the run leaves recorded, and run.json completed."""
        if isinstance(self.system, Consuming) and self._owns_consumers:
            self.system.stop_consumers()
        record_consume_stats(self.system, self.scenario, log, run)
        log.close()
        run["ended_ms"] = self.system.clock.now_ms()
        self._logs.copy(run, logs_since)
        self._logs.record_stalls(run, watch, held=not self._owns_consumers)
        self._logs.record_client_failures(run, {c.group for c in self.scenario.consumers})
        run["drained"] = out.observed and not out.interrupted and not out.state.pending
        run["pending"] = list(out.state.pending[:50])
        if out.error:
            run["error"] = out.error
        if out.interrupted:  # judged as undecided up to the last observation, never as a loss
            run["interrupted"] = out.interrupted
            self._seen.extend(self._tail.new_events())
            run["last_observed_ms"] = max((e.get("ts_ms") or 0 for e in self._seen), default=run["started_ms"])
        write_run_json(self.run_dir, run)

    def consumers_stopped(self, at_ms: int) -> None:
        """A shared system's consumers stopped at ``at_ms``: the run's stalls and client failures until then."""
        self._logs.record_until(at_ms)

    def _dlq_owed(self, run: dict) -> dict[str, tuple[set[str], int]]:
        """Per group, the keys a DLQ entry is owed for by now, and when the last was sent back
        (``reference.retry.dlq_bound``); empty where the model cannot say."""
        self._seen.extend(self._tail.new_events())
        try:
            return dlq_bound(build_expected(run, self._seen), self._seen)
        except Exception:  # noqa: BLE001 - the checker says what is wrong with the events; read once
            return {}

    def _pull(self) -> None:
        """What the events files gained since the last look, into what the run has seen (and what
        the anchored steps count)."""
        new = list(self._tail.new_events())
        self._seen.extend(new)
        if self._steps is not None:
            self._steps.watch.observe(new)

    def _waiting_levels(self) -> str:
        """reference.clock.waiting_levels of what the run has seen now (recorded with a clock step)."""
        self._pull()
        table = parse_level_table(self.scenario.profile.message_delay_level)
        return waiting_levels(self._seen, table.max_level, table.clamp)

    def _play(self, faults: FaultDriver, log: EventLog) -> None:
        """The timeline: sends and the primitives of the steps timed from the start at their
        offsets; an anchored step's primitives join it when its anchor is seen (looked for every
        ``ANCHOR_POLL_MS`` while a step is armed)."""
        sc, sysm, clock = self.scenario, self.system, self.system.clock
        t0 = clock.now_ms()
        steps = self._steps = StepPlan(sc, t0)
        order = itertools.count()
        timeline: list[tuple[int, int, int, object]] = []  # (when, faults, sends, joins/leaves; order, item)
        for f in steps.absolute():
            heapq.heappush(timeline, (t0 + f.at_ms, 0, next(order), f))
        for m in sc.messages:
            heapq.heappush(timeline, (t0 + m.at_ms, 1, next(order), m))
        for c in sc.consumers:  # a group's last instance joins or leaves (reference.orderly: a rebalance)
            for at_ms, action in c.membership():
                heapq.heappush(timeline, (t0 + at_ms, 2, next(order), (c, action)))
        flushes = sysm if isinstance(sysm, OffsetFlushWatching) else None
        timer_flushes = sysm if isinstance(sysm, TimerCheckpointWatching) else None
        while timeline or steps.waiting():
            if steps.armed():
                self._pull()
                if flushes is not None and steps.needs_flushes():
                    steps.watch.observe_flush(flushes.last_offset_flush_ms())
                if timer_flushes is not None and steps.needs_timer_checkpoints():
                    steps.watch.observe_timer_checkpoint(timer_flushes.timer_checkpoint(), clock.now_ms())
                for f in steps.resolve():
                    heapq.heappush(timeline, (t0 + f.at_ms, 0, next(order), f))
                steps.check_overdue(clock.now_ms())
            now = clock.now_ms()
            if timeline and timeline[0][0] <= now:
                _, kind, _, item = _next_due(timeline, now)
                if kind == 0:
                    assert isinstance(item, TimedFault)
                    self.progress.phase = f"fault {item.action} {item.target}"
                    steps.firing(item, now)
                    faults.apply(item.action, item.target, item.event_fields())
                    steps.finished(item, clock.now_ms())
                elif kind == 2:
                    group, action = item
                    self.progress.phase = f"consumer {action} {group.group}-{group.instances - 1}"
                    self._membership(group, group.instances - 1, action, log)
                else:
                    steps.sent(now)
                    send_message(sysm, item, sc.seed, log)
                continue
            wake = timeline[0][0] if timeline else now + ANCHOR_POLL_MS
            armed = bool(steps.armed())
            self._wait_until(min(wake, now + ANCHOR_POLL_MS) if armed else wake, armed)

    def _wait_until(self, ts_ms: int, armed: bool = False) -> None:
        """Wait on the system's clock, having dead consumers restarted every ``POLL_MS`` or so
        (``armed``: a short wait between looks for an anchor, polling consumers only when due)."""
        clock = self.system.clock
        while True:
            if self._cancel.is_set():
                raise Cancelled(getattr(self._cancel, "reason", None) or "the batch was cancelled")
            now = clock.now_ms()
            if now >= ts_ms:
                return
            clock.sleep_until(min(ts_ms, now + POLL_MS))
            if self._flushes is not None:
                self._flushes.poll()
            if not armed or clock.now_ms() - self._watched_ms >= POLL_MS:
                # restarts dead consumers; their deaths and restarts record themselves
                self._watched_ms = clock.now_ms()
                self._watch.poll(run_consumers(self.scenario))

    def _drain(self, run: dict, host: hostwatch.HostWatch | None) -> DrainState:
        sc, clock = self.scenario, self.system.clock
        while True:
            self._seen.extend(self._tail.new_events())
            now = clock.now_ms()
            state = drain_state(run, self._seen, now, hostwatch.recorded(host, run["started_ms"], now), os.cpu_count() or 1)
            self.progress.messages, self.progress.final, self.progress.deadline_ms = state.messages, state.final, state.deadline_ms
            if not state.pending:  # late duplicates show up here
                self._wait_until(max(now + sc.drain_margin_ms, duplicate_watch_until_ms(self._seen) or 0))
                return state
            if state.deadline_ms is None or now > state.deadline_ms + sc.drain_margin_ms:
                return state
            self._wait_until(min(now + 1000, state.deadline_ms + sc.drain_margin_ms + 1))
