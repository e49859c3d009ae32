"""Schedule-offset persistence (``delayOffset.json``) and the scheduler duplicates it allows.

The schedule service keeps, per level, the offset of the next entry of its schedule queue to
re-put. It persists that table every ``flushDelayOffsetInterval`` (the first time 10 s after its
start) and on graceful shutdown. After a kill -9 it restarts from the last persisted offsets: the
re-puts made since the last flush are made again (new stored copies: scheduler duplicates);
nothing is lost, because the offset only moves past an entry once its re-put succeeded.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from hourglass.reference.contract import BROKER_TARGETS

#: ScheduleMessageService.HandlePutResultTask (asynchronous delivery, enableScheduleAsyncDeliver, 4.9.3+):
#: how often the completed asynchronous re-puts move the schedule offset, in order (5.x reschedules
#: it every DELAY_FOR_A_SLEEP = 10 ms; 4.9.x spins on a running head and reschedules every 10 ms)
ASYNC_ACK_MS = 10


def next_flush_ms(service_start_ms: int, now_ms: int, first_flush_delay_ms: int, interval_ms: int) -> int:
    """ScheduleMessageService.start (scheduleAtFixedRate(persist, 10000, flushDelayOffsetInterval)):
    the first periodic persist strictly after ``now_ms``."""
    first = service_start_ms + first_flush_delay_ms
    if now_ms < first:
        return first
    return first + ((now_ms - first) // interval_ms + 1) * interval_ms


def corrected_delay_offset(persisted: int, cq_min_offset: int, cq_max_offset: int) -> int:
    """ScheduleMessageService.correctDelayOffset (4.9.x): a loaded offset outside the schedule
    queue's [min, max] is moved to the nearest bound."""
    if persisted < cq_min_offset:
        return cq_min_offset
    if persisted > cq_max_offset:
        return cq_max_offset
    return persisted


def broker_faults(faults: Iterable[Mapping], target: str = BROKER_TARGETS[0]) -> list[tuple[int, str]]:
    """(ts_ms, action) of the ``fault`` events ``faults`` on ``target``, in time order."""
    return sorted(((f["ts_ms"], f["action"]) for f in faults if f.get("target") == target),
                  key=lambda e: e[0])


def last_flush_lower_bound_ms(broker_faults: list[tuple[int, str]], kill_ms: int, interval_ms: int,
                              first_flush_delay_ms: int, jitter_ms: int) -> int | None:
    """ScheduleMessageService.start/shutdown/persist (4.9.x): a lower bound of the time of the last
    persist before a kill at ``kill_ms`` (``None``: possibly never, since the run began).

    ``broker_faults`` are the broker's ``(ts_ms, action)`` in time order. The service starts
    somewhere between a ``start`` and its ``ready``: when a periodic persist surely happened in
    the killed incarnation the bound is ``max(kill - interval, start + 10 s) - jitter``; when none
    surely happened it is the previous incarnation's end: its graceful stop (persisted), or, for a
    kill, that kill's own bound. A broker paused until the kill persisted nothing after its pause
    (the persist task is frozen with it): the bound is taken at the pause."""
    start_ms = ready_ms = paused_ms = None
    prev_end: tuple[int, str] | None = None
    for ts, action in broker_faults:
        if ts > kill_ms:
            break
        if action == "pause" and paused_ms is None:
            paused_ms = ts
        elif action == "resume":
            paused_ms = None
        if action == "start":
            start_ms, ready_ms = ts, None
        elif action == "ready" and start_ms is not None and ready_ms is None:
            ready_ms = ts
        elif action in ("stop", "kill") and ts < kill_ms:
            prev_end, start_ms, ready_ms, paused_ms = (ts, action), None, None, None
    if paused_ms is not None:  # frozen (SIGSTOP) until the kill: no persist ran after the pause
        kill_ms = paused_ms
    if start_ms is None and prev_end is None:
        return kill_ms - interval_ms - jitter_ms  # running since before the run: steady state
    if start_ms is not None:
        surely_started = ready_ms if ready_ms is not None else kill_ms
        if kill_ms >= surely_started + first_flush_delay_ms:
            return max(kill_ms - interval_ms, start_ms + first_flush_delay_ms) - jitter_ms
        if prev_end is None:
            return None
    assert prev_end is not None
    end_ms, how = prev_end
    if how == "stop":
        return end_ms - jitter_ms
    before = [f for f in broker_faults if f[0] < end_ms]
    return last_flush_lower_bound_ms(before, end_ms, interval_ms, first_flush_delay_ms, jitter_ms)


def scheduler_duplicate_allowed(faults: Iterable[Mapping], first_store_ms: int, second_store_ms: int,
                                interval_ms: int, first_flush_delay_ms: int, jitter_ms: int,
                                replica_sync_ms: int | None = None, async_deliver: bool = False) -> tuple[bool, str]:
    """ScheduleMessageService.persist vs. a kill -9 (4.9.x): a second stored copy of an attempt is
    allowed when the first was re-put after the last persist before a broker kill that happened
    between the two re-puts (``first_store_ms`` .. ``second_store_ms``: the offset was restored
    there, so that is where the cause lies). Returns (allowed, reason); the reason names the
    broker's faults between the two re-puts. In a cluster (``reference.cluster``) each broker
    process keeps its own offsets: a kill of either may explain it (the rule does not tell which
    broker re-put the copies). ``replica_sync_ms`` (5.x controller mode): the replica elected after
    the master leaves — a kill, a graceful stop (it persists its own offsets, not the replica's), or
    a freeze long enough for the controller to miss its heartbeats — resumes from the delay offsets
    it synced at most that long before, so a first re-put from that long before may repeat
    (``reference.cluster``). ``async_deliver``: :func:`async_stop_duplicate` too."""
    faults = list(faults)
    if async_deliver:
        ruling = async_stop_duplicate(faults, first_store_ms, second_store_ms, jitter_ms)
        if ruling is not None:
            return True, ruling
    if replica_sync_ms is not None:
        for f in sorted(faults, key=lambda f: f["ts_ms"]):
            if f.get("action") in ("kill", "stop", "pause") and f.get("target") in BROKER_TARGETS \
                    and f["ts_ms"] - replica_sync_ms - jitter_ms <= first_store_ms <= f["ts_ms"] + jitter_ms < second_store_ms + jitter_ms:
                return True, (f"first copy re-put at {first_store_ms}, at most {replica_sync_ms} ms before the {f['action']} of "
                              f"{f['target']} at {f['ts_ms']}: the replica elected after it resumed from delay offsets "
                              f"it had synced before that re-put; second copy re-put at {second_store_ms}")
    targets = [t for t in BROKER_TARGETS if any(f.get("target") == t for f in faults)] or list(BROKER_TARGETS[:1])
    rulings = [_scheduler_duplicate_allowed(broker_faults(faults, t), t, first_store_ms, second_store_ms, interval_ms,
                                            first_flush_delay_ms, jitter_ms) for t in targets]
    allowed = [r for r in rulings if r[0]]
    return allowed[0] if allowed else (False, "; ".join(r[1] for r in rulings))


def async_stop_duplicate(faults: Iterable[Mapping], first_store_ms: int, second_store_ms: int, jitter_ms: int) -> str | None:
    """ScheduleMessageService.shutdown with asynchronous delivery (4.9.3+, 5.x): the deliver executor
    stops, then the handle executor (its periodic HandlePutResultTask cancelled), then the offsets
    are persisted; a re-put whose put completed after the handle task's last run is not covered by
    the persisted offset, and the restarted broker re-puts it again. So a graceful stop of a broker
    between two re-puts allows a second copy of one re-put from :data:`ASYNC_ACK_MS` (and the
    harness's ``jitter_ms``) before the stop on. Returns why it is allowed, or None."""
    for f in sorted(faults, key=lambda f: f["ts_ms"]):
        stop_ms = f["ts_ms"]
        if f.get("action") == "stop" and f.get("target") in BROKER_TARGETS \
                and stop_ms - ASYNC_ACK_MS - jitter_ms <= first_store_ms and stop_ms <= second_store_ms:
            return (f"first copy re-put at {first_store_ms}, as the {f['target']} stopped gracefully at {stop_ms} with "
                    "asynchronous delivery: its put completed after HandlePutResultTask last ran, so the offset the "
                    f"shutdown persisted did not cover it; second copy re-put at {second_store_ms}")
    return None


def level_order_kept(async_deliver: bool) -> bool:
    """ScheduleMessageService.asyncDeliver / HandlePutResultTask (asynchronous delivery, 4.9.3+):
    only the head of a level's pending puts is resent, after a pause (PutResultProcess.doResend:
    resendCount * 100 ms in 5.x, from 0 ms in 4.9.x), and the level is blocked only once the head
    has been resent more than 3 times (need2Blocked); meanwhile the deliver task hands the entries
    behind it to the store, so after a failed put a later entry of the level may be stored first
    (seen on 5.5.0 after a full disk: 80 ms apart). The mode's author says so (apache/rocketmq#3449:
    "the drawback of async delivery is that message order cannot be guaranteed"). LEVEL_ORDER is a
    rule of the synchronous mode only."""
    return not async_deliver


def _scheduler_duplicate_allowed(broker: list[tuple[int, str]], target: str, first_store_ms: int, second_store_ms: int,
                                 interval_ms: int, first_flush_delay_ms: int, jitter_ms: int) -> tuple[bool, str]:
    name = "broker" if target == BROKER_TARGETS[0] else target
    # the harness records a kill before it signals: the broker may still re-put for a moment after
    # the event (container kill latency), so a re-put up to ``jitter_ms`` after it precedes the kill
    between = [(ts, action) for ts, action in broker if first_store_ms - jitter_ms <= ts <= second_store_ms]
    kills = [ts for ts, action in between if action == "kill"]
    for kill_ms in kills:
        bound = last_flush_lower_bound_ms(broker, kill_ms, interval_ms, first_flush_delay_ms, jitter_ms)
        if bound is None or first_store_ms >= bound:
            since = "the run began" if bound is None else f"{bound}"
            return True, (f"first copy re-put at {first_store_ms}, after the last persist of schedule "
                          f"offsets (not before {since}) and before the {name} kill -9 at {kill_ms}; "
                          f"second copy re-put at {second_store_ms}")
    seen = ", ".join(f"{action} at {ts}" for ts, action in between) or "none"
    if kills:
        return False, (f"first copy re-put at {first_store_ms}, before the last persist of schedule "
                       f"offsets preceding the {name} kill -9 at {kills[0]}: its offset was already persisted; "
                       f"second copy re-put at {second_store_ms} ({name} faults between the re-puts: {seen})")
    return False, (f"new stored copy with no {name} kill -9 between the first re-put ({first_store_ms}) "
                   f"and the second ({second_store_ms}) ({name} faults between them: {seen}): "
                   "graceful stops persist the offsets")


# --- OFFSET_PERSISTENCE: white-box rules on the offsets themselves (``snapshot`` events) ---------

def persisted_after_graceful_stop(memory_before_stop: int, persisted_after_stop: int) -> str | None:
    """ScheduleMessageService.shutdown → persist (4.9.3+; 5.x via BrokerController.shutdownBasicService):
    a graceful stop writes the in-memory offsets to ``delayOffset.json``, so the offset persisted by
    the stop is not below the in-memory offset read before it (the offset only moves forward; it
    may have moved between that reading and the stop, so more is no finding). Returns why it
    fails, or None."""
    if persisted_after_stop < memory_before_stop:
        return (f"persisted {persisted_after_stop} after the graceful stop, below the in-memory offset "
                f"{memory_before_stop} read before it: the re-puts in between will be made again after the restart")
    return None


def resumed_after_start(persisted_before_start: int, max_offset: int | None, memory_after_ready: int,
                        reputs_between: int) -> str | None:
    """ScheduleMessageService.start → load → correctDelayOffset (4.9.2+/5.x): the schedule service
    resumes from the persisted offset, moved into [0, max offset of the schedule queue], and only
    moves forward from there. Lower: rewound (re-puts repeat). Higher is no finding: by the first
    in-memory reading after a start the service may already have re-put a backlog whose copies the
    consumers receive only later (found on 4.9.7: 11 re-puts before the broker answered, their
    copies not yet delivered when the run ended), so the re-puts *observed* (``reputs_between``,
    for the explanation) bound nothing; messages skipped for good are NO_LOSS findings.
    ``max_offset`` None: no correction (the reading did not say). Returns why it fails, or None."""
    expected = persisted_before_start if max_offset is None else corrected_delay_offset(persisted_before_start, 0, max_offset)
    corrected = "" if expected == persisted_before_start else f" (corrected to {expected}, the schedule queue's max)"
    if memory_after_ready < expected:
        return (f"in memory {memory_after_ready} after the start, below the persisted {persisted_before_start}{corrected} "
                f"({reputs_between} re-put(s) of the level observed since the start): rewound, the re-puts in "
                "between will be made again")
    return None


#: how long before an observed persist of the schedule offsets a re-put must have been stored for the
#: persist to cover it: ScheduleMessageService.persist reads offsetTable and writes the file at once,
#: and DeliverDelayedMessageTimerTask moves the offset right after the put returns; the margin is the
#: write itself on a loaded host (the flush's time is the file's mtime, the re-put's its store time)
FLUSH_COVERS_MARGIN_MS = 1_000


def flush_applies(cluster: str | None, async_deliver: bool, clock_moved: bool, send_back_failed: bool = False) -> bool:
    """Where :func:`flush_covers_reputs` can be judged: one broker (a cluster's re-puts may be either
    broker's), synchronous delivery (HandlePutResultTask moves the offset only over an unbroken
    prefix of completed puts: a failed head holds it back legitimately), store times on the true
    clock (no clock step), and no send-back the client logged failed (reference.network: it re-sends
    the retry through its own producer, at 3 + reconsumeTimes, and the request it gave up on may be
    stored too, so a retry's schedule-queue entry is not the one the count assumes — found on 5.0.0,
    which refuses every retry's send-back: level 5 counted 10 entries where 6 were)."""
    return (cluster in (None, "single")) and not async_deliver and not clock_moved and not send_back_failed


def flush_covers_reputs(persisted: int, reput_before: int) -> str | None:
    """ScheduleMessageService.persist (periodic, and at a graceful stop): ``delayOffset.json`` gets
    offsetTable, which DeliverDelayedMessageTimerTask.executeOnTimeup sets past each entry right
    after its re-put (4.9.4+; 4.9.3 sets it to the task run's start offset + 1, apache/rocketmq #3966).
    So a persist at t holds at least the number of the level's entries re-put before t (less
    :data:`FLUSH_COVERS_MARGIN_MS`) — counted from the run's own deliveries, each schedule-queue entry
    once: a lower bound (entries from before the run, or never delivered, only add). What a kill -9
    then repeats is judged against this, not trusted from it."""
    if persisted >= reput_before:
        return None
    return (f"delayOffset.json persisted {persisted}, but {reput_before} entries of the level had been re-put "
            f"at least {FLUSH_COVERS_MARGIN_MS} ms before that persist: the offset it wrote does not cover them, "
            "so a kill -9 after it repeats re-puts the broker had completed")
