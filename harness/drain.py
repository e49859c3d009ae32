"""When is a run over? The model says.

A message is *final* when the attempt its plan ends with has been delivered with the answer that
ends it (``OK``: consumed; ``LATER`` on the last allowed attempt: on its way to the DLQ). While
some message is not final, the run waits until the latest window the model allows for the pending
attempts (``ExpectedAttempt.latest_ms``, already widened by outages) has closed, plus a margin for
consumer redelivery; then it stops and leaves the verdict to the checker.
"""

from __future__ import annotations

from dataclasses import dataclass

from hourglass.reference.cluster import is_broker
from hourglass.reference.contract import BROKER_TARGETS, CONSUMER_DIED, CONSUMER_EXITED, CONSUMER_STARTED_BY_SCENARIO, CONSUMER_TARGET
from hourglass.reference.expected import ExpectedAttempt, build_expected
from hourglass.reference.orderly import handed_over_ms, locks_freed_ms
from hourglass.reference.pop import NOT_ACKED

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


def drain_state(run: dict, events: list[dict], now_ms: int) -> DrainState:
    expected = build_expected(run, events)
    by_key: dict[str, list[ExpectedAttempt]] = {}
    for a in expected:
        if a.send_status == "FAILED":
            continue
        by_key.setdefault(a.key, []).append(a)
    answered: dict[tuple[str, int], set[str]] = {}
    crashed_at: dict[str, int] = {}
    locks_freed = _orderly_locks_freed_ms(run, events)
    recovered_ms = max((e["ts_ms"] for e in events if e.get("type") == "fault" and e.get("action") in ("ready", "resume")
                        and e.get("target") in BROKER_TARGETS + ("namesrv", "proxy")), default=None)
    consumers_back = consumers_back_ms(events, now_ms)
    # the harness resumed or started the run's consumers (a fault step's: no ``cause``): they pull
    # again, rebalanced, before what waited for them comes (the model's windows judge store times)
    consumers_faulted = max((e["ts_ms"] for e in events if e.get("type") == "fault" and e.get("target") == CONSUMER_TARGET
                             and e.get("action") in ("resume", "start") and not e.get("cause")), default=None)
    for e in events:
        if e.get("type") == "deliver":
            answered.setdefault((e["key"], e["reconsume_times"]), set()).add(e["outcome"])
            if e["outcome"] == "CRASH":
                crashed_at[e["key"]] = max(crashed_at.get(e["key"], 0), e["ts_ms"])
    pending: list[str] = []
    deadline: int | None = None
    final = 0
    popping = set((run.get("profile") or {}).get("pop_groups") or ())
    for key, attempts in by_key.items():
        attempts.sort(key=lambda a: a.attempt)
        last = attempts[-1]
        # what moves a message on: an OK or a LATER; in a POP group a CRASH too (reference.pop.NOT_ACKED)
        moves_on = {"OK", *NOT_ACKED} if last.group in popping else {"OK", "LATER"}
        ends_with = {"OK"} if last.final_state == "CONSUMED" else moves_on - {"OK"}
        if ends_with & answered.get((key, last.attempt), set()):
            final += 1
            continue
        # the first attempt that has not been answered with what moves the message on
        todo = next(
            (a for a in attempts if not (moves_on & answered.get((key, a.attempt), set()))),
            last,
        )
        if todo.send_status == "UNKNOWN" and (key, 0) not in answered and todo.latest_ms is not None and now_ms > todo.latest_ms:
            final += 1  # an indeterminate send that never arrived: not lost, nothing to wait for
            continue
        pending.append(key)
        d = todo.latest_ms
        if key in crashed_at:
            d = max(d or 0, crashed_at[key] + CONSUMER_REDELIVERY_MS)
        if recovered_ms is not None and d is not None:
            d = max(d, recovered_ms + CONSUMER_RECOVERY_MS)
        if locks_freed is not None and d is not None:
            d = max(d, locks_freed)
        if consumers_back is not None and d is not None:
            d = max(d, consumers_back)
        if consumers_faulted is not None and d is not None:
            d = max(d, consumers_faulted + CONSUMER_REDELIVERY_MS)
        if d is not None:
            deadline = d if deadline is None else max(deadline, d)
    return DrainState(tuple(sorted(pending)), deadline, len(by_key), final)
