"""When is a run over? The model says.

A message is *final* when the attempt its plan ends with has been delivered with the answer that
ends it (``OK``: consumed; ``LATER`` on the last allowed attempt: on its way to the DLQ). While
some message is not final, the run waits until the latest window the model allows for the pending
attempts (``ExpectedAttempt.latest_ms``, already widened by outages) has closed, plus a margin for
consumer redelivery, and plus what the broker's stalls recorded on the pending attempt's path since it
was due explain (``reference.stalls.held_back_ms``: a starved broker's copy may be stored in time and
reach its consumer seconds later; the drain that gave up before it came judged a retrying message
lost), at most :data:`CONSUMER_RECOVERY_MS` as after an outage (under a load that never ends the
stalls would explain it all); then it stops and leaves the verdict to the checker.
"""

from __future__ import annotations

from dataclasses import dataclass

from hourglass.reference.cluster import is_broker
from hourglass.reference.contract import BROKER_TARGETS, CONSUMER_DIED, CONSUMER_EXITED, CONSUMER_STARTED_BY_SCENARIO, CONSUMER_TARGET
from hourglass.reference.expected import ExpectedAttempt, build_expected
from hourglass.reference.orderly import handed_over_ms, locks_freed_ms
from hourglass.reference.pop import NOT_ACKED
from hourglass.reference.stalls import held_back_ms

#: A consumer that crashed is restarted and must rebalance before it is redelivered a message.
CONSUMER_REDELIVERY_MS = 25_000
#: After the broker (or name server) is ready again, consumers must heartbeat, rebalance and pull
#: again before they receive what the broker re-put (4.9.x: up to a heartbeat interval, then the
#: pull back-off after an exception). This only makes the run *wait*: the timing invariants judge
#: the broker's store time, not when the consumer got round to it.
CONSUMER_RECOVERY_MS = 30_000


#: After the broker restarted from a kill or stop, the schedule service re-puts what it had not
#: persisted at once, before it answers; consumers receive those copies (scheduler duplicates, or
#: their absence) only once they pulled again. A run whose messages are all final still watches
#: this long after the broker's last ``ready`` (found on 4.9.7: copies re-put before the ready were
#: not delivered yet when the run ended 3 s after it). Waiting only: it changes no verdict rule.
DUPLICATE_WATCH_MS = 15_000


def duplicate_watch_until_ms(events: list[dict]) -> int | None:
    """Until when a run whose messages are all final keeps watching for scheduler duplicates:
    :data:`DUPLICATE_WATCH_MS` after a broker's last ``ready`` that followed its kill or stop
    (either broker of a cluster: ``reference.cluster``)."""
    last_down: dict[str, int] = {}
    last_ready = None
    for e in sorted((e for e in events if e.get("type") == "fault" and is_broker(e.get("target"))), key=lambda e: e["ts_ms"]):
        if e["action"] in ("kill", "stop"):
            last_down[e["target"]] = e["ts_ms"]
        elif e["action"] == "ready" and e["target"] in last_down:
            last_ready = e["ts_ms"]
    return None if last_ready is None else last_ready + DUPLICATE_WATCH_MS


def _orderly_locks_freed_ms(run: dict, events: list[dict]) -> int | None:
    """When the queue locks of the last consumer of an orderly group that died are free again
    (reference.orderly.locks_freed_ms), or ``None``: no such death."""
    orderly = set((run.get("profile") or {}).get("orderly_groups") or ())
    if not orderly:
        return None
    deaths = [e["ts_ms"] for e in events
              if (e.get("type") == "fault" and e.get("target") == CONSUMER_TARGET and e.get("action") == "kill"
                  and e.get("group", next(iter(orderly))) in orderly)  # a kill of every consumer names no group
              or (e.get("type") == "deliver" and e.get("outcome") == "CRASH" and e.get("group") in orderly)]
    first_send = min((e["ts_ms"] for e in events if e.get("type") == "send"), default=None)
    changes = [e["ts_ms"] for e in events  # a member joined or left once messages flowed (not the setup's starts)
               if e.get("type") == "fault" and e.get("target") == CONSUMER_TARGET and e.get("group") in orderly
               and e.get("cause") == CONSUMER_STARTED_BY_SCENARIO and first_send is not None and e["ts_ms"] > first_send]
    return max([locks_freed_ms(d) for d in deaths] + [handed_over_ms(c) for c in changes], default=None)


def consumers_back_ms(events: list[dict], now_ms: int) -> int | None:
    """Until when a run waits for its consumers that died (``died``, ``exited``) to be back:
    :data:`CONSUMER_REDELIVERY_MS` after the last replacement's ``start`` (a replacement's JVM can
    take a minute to start on a starved host: seen 69 s, and a broadcasting instance's messages
    came only after it); while one is still down, that long after now (its restart is the harness's
    and is tried at every poll; one that cannot start fails its run). None: no death."""
    down: dict[str, int] = {}
    back = None
    deaths = (CONSUMER_DIED, CONSUMER_EXITED)
    for e in sorted((e for e in events if e.get("type") == "fault" and e.get("target") == CONSUMER_TARGET
                     and e.get("cause") in deaths and e.get("name")), key=lambda e: e["ts_ms"]):
        if e["action"] == "kill":
            down[e["name"]] = e["ts_ms"]
        elif e["action"] == "start":
            down.pop(e["name"], None)
            back = max(back or 0, e["ts_ms"])
    if down:
        back = now_ms
    return None if back is None else back + CONSUMER_REDELIVERY_MS


@dataclass(frozen=True)
class DrainState:
    pending: tuple[str, ...]  # keys not final yet
    deadline_ms: int | None  # when to give up waiting for them (None: nothing to wait for)
    messages: int
    final: int


@dataclass(frozen=True)
class _RunWaits:
    """What a run's pending attempts wait for beyond their windows, from its events."""

    recovered_ms: int | None  # the broker's (or name server's, proxy's) last ready or resume
    locks_freed_ms: int | None  # an orderly group's queue locks free again
    consumers_back_ms: int | None  # died consumers back (consumers_back_ms)
    consumers_faulted_ms: int | None  # the harness resumed or started the run's consumers (a fault step's)

    @classmethod
    def of(cls, run: dict, events: list[dict], now_ms: int) -> "_RunWaits":
        faults = [e for e in events if e.get("type") == "fault"]
        return cls(
            max((e["ts_ms"] for e in faults if e.get("action") in ("ready", "resume")
                 and e.get("target") in BROKER_TARGETS + ("namesrv", "proxy")), default=None),
            _orderly_locks_freed_ms(run, events),
            consumers_back_ms(events, now_ms),
            # they pull again, rebalanced, before what waited for them comes (the windows judge store times)
            max((e["ts_ms"] for e in faults if e.get("target") == CONSUMER_TARGET
                 and e.get("action") in ("resume", "start") and not e.get("cause")), default=None))

    def until_ms(self, latest_ms: int | None, crashed_ms: int | None) -> int | None:
        """Until when an attempt whose window closes at ``latest_ms`` is waited for (None: no end)."""
        d = latest_ms
        if crashed_ms is not None:
            d = max(d or 0, crashed_ms + CONSUMER_REDELIVERY_MS)
        if d is None:
            return None
        for at, extra in ((self.recovered_ms, CONSUMER_RECOVERY_MS), (self.locks_freed_ms, 0),
                          (self.consumers_back_ms, 0), (self.consumers_faulted_ms, CONSUMER_REDELIVERY_MS)):
            if at is not None:
                d = max(d, at + extra)
        return d


def drain_state(run: dict, events: list[dict], now_ms: int, stalls: list[dict] = (), cpus: int = 1) -> DrainState:
    """Which messages are not final at ``now_ms``, and until when to wait for them. ``stalls``: what
    the host watch recorded so far (``harness.hostwatch``; ``cpus``: the host's), which lengthen the
    wait for an attempt by what they explain of its own wait on its path, never shorten it. Each
    (message, judging unit) apart: another group's OK, or a broadcasting twin's, ends nothing of this one's."""
    by_unit: dict[tuple[str, str], list[ExpectedAttempt]] = {}
    for a in build_expected(run, events):
        if a.send_status != "FAILED":
            by_unit.setdefault((a.key, a.group or ""), []).append(a)
    answered: dict[tuple[str, str, int], set[str]] = {}
    crashed_at: dict[tuple[str, str], int] = {}
    for e in events:
        if e.get("type") == "deliver":
            unit = (e["key"], e.get("group") or "")
            answered.setdefault((*unit, e["reconsume_times"]), set()).add(e["outcome"])
            if e["outcome"] == "CRASH":
                crashed_at[unit] = max(crashed_at.get(unit, 0), e["ts_ms"])
    waits = _RunWaits.of(run, events, now_ms)
    held: dict[int, int] = {}  # earliest_ms -> what the broker's stalls held back since (one explain each)
    pending: set[str] = set()
    deadline: int | None = None
    popping = set((run.get("profile") or {}).get("pop_groups") or ())
    for (key, group), attempts in by_unit.items():
        attempts.sort(key=lambda a: a.attempt)
        last = attempts[-1]
        # what moves a message on: an OK or a LATER; in a POP group a CRASH too (reference.pop.NOT_ACKED)
        moves_on = {"OK", *NOT_ACKED} if last.group in popping else {"OK", "LATER"}
        ends_with = {"OK"} if last.final_state == "CONSUMED" else moves_on - {"OK"}
        if ends_with & answered.get((key, group, last.attempt), set()):
            continue
        # the first attempt that has not been answered with what moves the message on
        todo = next((a for a in attempts if not (moves_on & answered.get((key, group, a.attempt), set()))), last)
        if todo.send_status == "UNKNOWN" and (key, group, 0) not in answered and todo.latest_ms is not None \
                and now_ms > todo.latest_ms:
            continue  # an indeterminate send that never arrived: not lost, nothing to wait for
        pending.add(key)
        d = waits.until_ms(todo.latest_ms, crashed_at.get((key, group)))
        # a held broker recovers as from an outage; weighed only once the wait without it is over (it
        # only lengthens a wait: until then the run waits anyway, and explain is costly on a long run)
        if d is not None and now_ms > d and stalls and todo.earliest_ms is not None:
            if todo.earliest_ms not in held:
                held[todo.earliest_ms] = min(CONSUMER_RECOVERY_MS, held_back_ms(stalls, todo.earliest_ms, now_ms, cpus))
            d += held[todo.earliest_ms]
        if d is not None:
            deadline = d if deadline is None else max(deadline, d)
    keys = {key for key, _ in by_unit}
    return DrainState(tuple(sorted(pending)), deadline, len(keys), len(keys - pending))
