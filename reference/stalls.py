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
``run-queue``  a process  the longest time one of its threads waited, runnable, for a CPU
                          (``/proc/<pid>/task/<tid>/schedstat``; a throttled CPU quota counts)
``io-delay``   a process  the longest time one of its threads waited for block I/O (the kernel's
                          delay accounting, where it is on)
``heartbeat``  harness    how much later than asked the harness's own sampling thread woke
``broker-log`` broker     a stall the broker reported itself in its log (:data:`LOG_STALLS`)
=============  =========  ====================================================================

The rule (:func:`cover`): a stall delays what the stalled subject does by at most its length. An
attempt's deadline is pushed by each stall of one series (one source and subject) that begins
before the deadline so far (and before the attempt arrived) and ends after the attempt was due — by
the share of it that lies after the due time — in time order: deadlines chain as
outages do (``reference.windows``), and a subject stalled a share ``f < 1`` of the time gets at
most ``slack / (1 - f)``. The series that pushes furthest is the one that explains most; series are
never added together (two sources measure the same stall twice). A late attempt within that
deadline is **undecided** ("the host stalled the broker for N ms"), never a violation and never a
pass; beyond it the violation stands and says what was recorded.

What counts for what: a re-put's time is the broker's store time, so the broker's processes and
the host (PSI's *full* stalls: every runnable task waited; the harness's heartbeat) explain it. A
local re-consume's time is the consumer's, so the consumer's processes and the host explain it.
PSI's *some* stall (some task waited) does not: on a busy machine it is near 100 % while a
correct broker keeps its times (measured: CPU pressure 91 %, no broker late) — it is named in the
reason as context only.

The stalls are recorded while the run lasts. On a shared system the consumers outlive the run
and may deliver after its end: a lateness that arrived after the host was last watched and that
the stalls recorded until then do not cover is undecided as well (the stalls that may explain it
were not observed).

Where the harness could not observe the host (an external cluster on other hosts), a run.json says
so (``host``: :func:`not_observed`) and every late verdict says it too, instead of assuming a quiet
machine.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from typing import Iterable, Mapping

from hourglass.reference.contract import STALL_SOURCES

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


def counted_ms(stall: Mapping, local: bool) -> int:
    """How long ``stall`` held back an attempt: of a re-put (``local`` False: the broker's store
    time) or of a local re-consume (the consumer's time). 0 for what does not explain it."""
    source, subject = stall["source"], str(stall.get("subject") or "")
    if source in PSI_SOURCES:
        return int(stall.get("full_ms") or 0)
    if source == HEARTBEAT:
        return int(stall["stalled_ms"])
    mine = subject.startswith(CONSUMER_SUBJECT) if local else subject in BROKER_SUBJECTS
    return int(stall["stalled_ms"]) if mine else 0


@dataclass(frozen=True)
class Cover:
    """The furthest a recorded stall series pushes one attempt's deadline."""

    deadline_ms: int
    series: tuple[str, str] | None  # (source, subject) that pushed it, None when none did
    stalled_ms: int  # that series' stalls counted
    largest: tuple[int, int] | None  # (from_ms, stalled_ms) of its largest stall


def cover(stalls: Iterable[Mapping], earliest_ms: int, latest_ms: int, local: bool = False, until_ms: int | None = None) -> Cover:
    """The deadline of an attempt due at ``earliest_ms`` with deadline ``latest_ms`` once the
    recorded ``stalls`` are allowed for (see the module docstring); ``until_ms`` (the attempt's
    arrival): stalls that begin after it are not counted (they cannot have delayed it)."""
    series: dict[tuple[str, str], list[tuple[int, int, int]]] = {}
    for s in stalls:
        n = counted_ms(s, local)
        if n > 0:
            series.setdefault((s["source"], str(s.get("subject") or "")), []).append((int(s["from_ms"]), int(s["ts_ms"]), n))
    best = Cover(latest_ms, None, 0, None)
    for name, periods in series.items():
        deadline, total, largest = latest_ms, 0, None
        for start, end, n in sorted(periods):
            if start > deadline or (until_ms is not None and start > until_ms):
                break
            if end < earliest_ms:
                continue
            if start < earliest_ms:  # only what of it came after the due time can have held the attempt
                n = n * (end - earliest_ms) // (end - start)
            deadline += n
            total += n
            if largest is None or n > largest[1]:
                largest = (start, n)
        if deadline > best.deadline_ms:
            best = Cover(deadline, name, total, largest)
    return best


def pressure(stalls: Iterable[Mapping], from_ms: int, to_ms: int) -> dict[str, int]:
    """Per PSI resource, the percentage of ``[from_ms, to_ms]`` in which some task waited for it
    (what the recorded periods overlapping it say; context for a reason, never a cover)."""
    span = max(1, to_ms - from_ms)
    out: dict[str, int] = {}
    for s in stalls:
        if s["source"] not in PSI_SOURCES or s["ts_ms"] < from_ms or s["from_ms"] > to_ms:
            continue
        period = max(1, int(s["ts_ms"]) - int(s["from_ms"]))
        overlap = min(to_ms, int(s["ts_ms"])) - max(from_ms, int(s["from_ms"]))
        name = s["source"][len("psi-"):]
        out[name] = out.get(name, 0) + int(s["stalled_ms"]) * max(0, overlap) // period
    return {name: min(100, 100 * ms // span) for name, ms in sorted(out.items())}


def _context(stalls: list[Mapping], from_ms: int, to_ms: int) -> str:
    p = pressure(stalls, from_ms, to_ms)
    return ", ".join(f"{name} pressure {pct} %" for name, pct in p.items() if pct) or "no pressure recorded"


def explain_late(stalls: list[Mapping], earliest_ms: int, latest_ms: int, observed_ms: int, started_ms: int,
                 local: bool = False, observed_until_ms: int | None = None) -> tuple[bool, str]:
    """(covered, reason) for an attempt due at ``earliest_ms``, on time until ``latest_ms``, seen at
    ``observed_ms`` (> ``latest_ms``): covered by a recorded stall (undecided, the reason says by
    which), or not (a violation, the reason says what was recorded meanwhile). ``observed_until_ms``:
    when the harness stopped watching the host (the run's end; on a shared system its consumers run
    on and deliver later): a lateness the stalls recorded until then do not cover but that
    arrived after it is undecided too — the stalls after it were not observed."""
    c = cover(stalls, earliest_ms, latest_ms, local, until_ms=observed_ms)
    late = observed_ms - latest_ms
    context = _context(stalls, earliest_ms, observed_ms)
    if observed_ms > c.deadline_ms and observed_until_ms is not None and observed_ms > observed_until_ms:
        return True, (f"arrived {late} ms after its window closed, {(observed_ms - observed_until_ms) / 1000:.1f} s "
                      f"after the harness stopped watching the host (the run's end at "
                      f"+{(observed_until_ms - started_ms) / 1000:.1f} s): the stalls that may explain it were "
                      f"not observed, so whether the broker was late is undecided")
    if c.series is None:
        return False, f"no stall of the host or the broker was recorded between its due time and its arrival ({context})"
    source, subject = c.series
    at = f" at +{(c.largest[0] - started_ms) / 1000:.1f} s" if c.largest else ""
    what = (f"{source}: the {subject if subject != HOST else 'host'} stalled {c.stalled_ms} ms between its due time and "
            f"its arrival (largest {c.largest[1] if c.largest else 0} ms{at}; {context})")
    if observed_ms <= c.deadline_ms:
        return True, (f"arrived {late} ms after its window closed, within the stalls recorded meanwhile ({what}): "
                      f"whether the broker was late is undecided")
    return False, f"{late} ms late, beyond the stalls recorded meanwhile ({what}; they explain {c.deadline_ms - latest_ms} ms)"


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


def explain_resent(stalls: Iterable[Mapping], failed_ms: int, give_up_ms: int) -> tuple[bool, str]:
    """(covered, reason) for what a client did after a send-back it logged failed at ``failed_ms``:
    covered when the broker or its host was recorded stalled within ``give_up_ms`` before it (the
    time the client waited for the broker's answer) — the host's stall explains the failure, and
    what the client's re-sends stored then is undecided — not covered when nothing was recorded."""
    meanwhile = [s for s in stalls if counted_ms(s, local=False) > 0  # what explains a re-put: PSI's *some* is context only
                 and int(s["from_ms"]) <= failed_ms and int(s["from_ms"]) + int(s["stalled_ms"]) >= failed_ms - give_up_ms]
    if not meanwhile:
        return False, "no stall of the host or the broker was recorded while the client's send-back waited"
    largest = max(meanwhile, key=lambda s: counted_ms(s, local=False))
    return True, (f"the client's send-back failed while the {largest.get('subject') or HOST} stalled "
                  f"({largest['source']}: {counted_ms(largest, local=False)} ms): what the client's re-sends stored then — copies "
                  f"with their reconsume count dropped (DefaultMQProducerImpl.sendKernelImpl), an orderly consumer's "
                  f"re-consume past its maximum (ConsumeMessageOrderlyService.checkReconsumeTimes) — is undecided")
