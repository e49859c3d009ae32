"""The expected table: what a correct broker must do with each message of a run.

INTERFACE (agreed between the model and the checker; the model issue implements it, the checker
consumes it). Pure: no I/O, no clock. Inputs are the parsed ``run.json`` and the run's contract
events (any order); outputs are plain frozen dataclasses whose fields are flat scalars, so a Spark
job can turn them into rows (``dataclasses.asdict``) and join deliveries on
``(run_id, key, attempt)`` (and ``group`` where a topic has several consumer groups: one row per
group that consumed the topic).

- attempt k of a message is the set of deliveries with ``reconsume_times`` = k.
- A LATER can be repeated (a redelivery of an attempt whose send-back failed, see
  ``reference.plans.later_not_stored``): ``earliest_ms`` then follows the first LATER,
  ``latest_ms`` the last one.
- Attempt 0 is anchored at the send (``born_ms`` for NOT_EARLY, the send's ``ts_ms`` for ON_TIME);
  attempt k >= 1 is anchored at the ``ts_ms`` of the first ``LATER`` delivery of attempt k-1 (an
  observation: when it is missing, ``earliest_ms``/``latest_ms`` are ``None``, the attempt cannot
  be judged for timing and the message is judged by NO_LOSS/RETRY_SCHEDULE instead); its
  ``latest_ms`` counts from the last send-back request the client sent for attempt k-1 where the
  consumer recorded one (``contract.SENT_BACK``), not from the answer.
- ``latest_ms`` already includes ``slack_ms`` and the widening by broker outages; ``None`` with a
  ``widened_by`` means the broker never came back (no deadline).
- A retry the client re-consumes locally because its send-back failed is the *same stored copy* as
  the ``LATER`` it follows; its ``store_ms`` is old, so it is judged by its delivery ``ts_ms``
  against ``local_earliest_ms``/``local_latest_ms`` instead.
- :func:`build_expected_rows` gives the same table as tuples in :data:`EXPECTED_COLUMNS` order
  (faster, and what ``spark.createDataFrame`` wants).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from operator import itemgetter
from typing import Callable, Iterable, Mapping

from hourglass.reference.contract import BROKER_TARGETS, CONSUMER_TARGET, ContractError, RETRY_PREFIX, SENT_BACK
from hourglass.reference.persistence import scheduler_duplicate_allowed
from hourglass.reference.stored_copy import same_stored_copy
from hourglass.reference.plans import CRASH, by_ack_index, parse_plan, plan_outcome, resent_instead, with_ack_laters
from hourglass.reference.profile import Profile, profile_from_run
from hourglass.reference.retry import asked_retry_level, clamped_level, requested_retry_level, retry_level
from hourglass.reference.limits import body_refusal, refusal_name
from hourglass.reference.timer import TimerRequest, send_ruling, timer_duplicate_allowed
from hourglass.reference.timeout import effective_timeout_min, sent_back_within
from hourglass.reference.faults import effect
from hourglass.reference.network import local_retry_lag_ms, send_back_lag_ms, send_back_may_repeat
from hourglass.reference.clock import BrokerClock
from hourglass.reference.cluster import CONTROLLER, MASTER_SLAVE, REPLICA_SYNC_BOUND_MS, down_broker_lag_ms, is_broker, outages_by_broker
from hourglass.reference.windows import OutageIndex, merge_outages
from hourglass.reference.orderly import LOCK_RETRY_MS, send_back_refused
from hourglass.reference.broadcast import broadcast_outcome
from hourglass.reference.modes import GRPC_MODES, group_of
from hourglass.reference.pop import (ANSWERED_LATER, GRPC_PUSH, GRPC_REQUEST_TIMEOUT_MS, GRPC_SIMPLE, NOT_ANSWERED,
                                     grpc_outages, proxy_clear_ms, next_window, pop_outcome,
                                     pop_retry_topic, second_copy_allowed)


@dataclass(frozen=True)
class ExpectedAttempt:
    run_id: str
    key: str
    attempt: int  # reconsume_times of this attempt
    topic: str  # the application topic the consumer must see
    queue_topic: str | None  # topic of the queue it must come from (None: the application topic)
    send_status: str  # SEND_OK / UNKNOWN / FAILED
    requested_level: int  # attempt 0: the send's delay_level; retry k: 3 + k - 1 (before clamping)
    level: int  # effective level after clamping; 0 = not delayed
    clamped: bool
    delay_ms: int  # delay of ``level`` (timer: deliver_at - born)
    earliest_ms: int | None  # NOT_EARLY: store_ms of the first delivery must be >= this
    latest_ms: int | None  # ON_TIME: store_ms of the first delivery must be <= this
    widened_by: str | None  # the outage that widened latest_ms, human-readable, or None
    final: bool  # the last attempt the plan leads to
    final_state: str  # of the message: "CONSUMED" or "DLQ"
    # -- added by the model (all optional for the checker) --
    group: str | None = None  # consumer group of this row (None: no delivery of the topic seen)
    anchor_ms: int | None = None  # the observation the window is anchored at (send / LATER ts_ms)
    local_earliest_ms: int | None = None  # retry re-consumed locally (same stored copy): ts_ms >= this
    local_latest_ms: int | None = None  # ... and ts_ms <= this
    born_ms: int | None = None
    deliver_at_ms: int | None = None  # timer messages: the requested deliver time
    expected_rejection: str | None = None  # the broker must refuse this send (e.g. timer too far ahead)
    send_refused: str | None = None  # the send was refused as illegal input (reference.limits: its answer code's name)
    timer_slot_ms: int | None = None  # attempt 0 of a 5.x timer message parked in the wheel: its slot (reference.timer)


#: What a ``send`` event's key must be: the error of a key sent twice names it (the checker finds its lines).
SENT_ONCE = "a key sent once per run"
#: Column names of :func:`build_expected_rows` tuples (the fields of :class:`ExpectedAttempt`).
EXPECTED_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(ExpectedAttempt))
#: One expected attempt, named field by field (a dict of every field of :class:`ExpectedAttempt`),
#: as the tuple :func:`build_expected_rows` returns (in :data:`EXPECTED_COLUMNS` order; a field
#: left out is a KeyError). A dict display and one C call: a namedtuple's keywords cost twice as much.
_row = itemgetter(*EXPECTED_COLUMNS)


@dataclass(frozen=True)
class DuplicateRuling:
    allowed: bool
    cause: str  # "scheduler" (new stored copy) or "consumer" (same stored copy redelivered)
    reason: str  # one sentence: which rule allowed or forbade it, and the fault involved


def _send_where(key) -> str:
    return f"events: send of key {key!r}"


def _first_attempt(send: Mapping, profile: Profile, key) -> tuple[int, int, bool, int, int, int, int | None, str | None, int | None]:
    """CommitLog.asyncPutMessage + ScheduleMessageService.computeDeliverTimestamp (4.9.x),
    HookUtils.transformTimerMessage (5.x): requested level, level, clamped, delay, earliest, due
    anchor for ON_TIME, deliver_at, rejection of the first attempt, and the slot a timer message is
    parked until (None: not parked in the wheel)."""
    born = send.get("born_ms")
    ts = send["ts_ms"]
    if born is None:
        born = ts
    requested = send.get("delay_level") or 0
    if not isinstance(requested, int):
        raise ContractError(_send_where(key), "delay_level", "an int", requested)
    deliver_at = send.get("deliver_at_ms")
    timer = TimerRequest(deliver_at, send.get("delay_time_sec"), send.get("delay_time_ms"))
    size = send.get("body_size")
    rejection = body_refusal(size, profile.max_message_size) if size is not None else None
    table = profile.level_table
    if requested > 0 or not timer.is_timer:
        level = table.clamp(requested)
        delay = table.delays_ms[level - 1] if level else 0
        return requested, level, level != requested and requested > 0, delay, born + delay, ts + delay, deliver_at, rejection, None
    # a timer message (no level): due at the rounded deliver time, or at once when it is past; the
    # broker's clock at its arrival lies between the send and its answer
    ruling = send_ruling(timer, 0, born, ts, profile.timer_precision_ms, profile.timer_max_delay_sec)
    delay = max(0, ruling.earliest_ms - born)
    slot = ruling.earliest_ms if ruling.timer else None  # parked, maybe in a slot already due (deliverMs > now, rounded down)
    return 0, 0, False, delay, born + delay, max(ruling.latest_ms, ts), deliver_at, rejection or ruling.refused, slot


def _on_broker_clock(clock: BrokerClock, stored_lo: int, stored_hi: int, delay: int, timer_due: int | None,
                     earliest: int, due: int, level: int) -> tuple[int, int, str | None]:
    """reference.clock: an attempt stored in ``[stored_lo, stored_hi]`` with ``delay`` (or a timer
    message due at ``timer_due`` in the broker's clock) when a scenario moved the broker's clock:
    its earliest and on-time due moments moved to what a correct broker may do on its own clock
    (a window in true time that a move of the clock shifts: a drift's re-put on true time is early
    or late), and why."""
    lo, hi = (clock.deadline_range(stored_lo, timer_due) if timer_due is not None
              else clock.due_range(stored_lo, stored_hi, delay, level))
    if lo == earliest and hi == due:
        return earliest, due, None
    steps = ", ".join(f"{s.offset_ms:+d} ms at {s.ts_ms}" + (f" drifting {s.rate_permille:+d}‰" if s.rate_permille else "")
                      for s in clock.steps if s.ts_ms <= max(hi, due))
    return lo, hi, f"broker clock moved ({steps})"


def _joined(widened_latest: tuple[int | None, str | None], before: str | None) -> tuple[int | None, str | None]:
    latest, widened = widened_latest
    return latest, "; ".join(w for w in (before, widened) if w) or None


def _unknown_send_latest(born: int, ts: int, delay: int, latest: int, widened: str | None,
                         outages: list, slack: int, first_delay: int) -> tuple[int | None, str | None]:
    """NettyRemotingServer (4.9.x): a send that timed out against a paused broker waits in the socket
    and is stored when the broker resumes, so its delay runs from there (a partitioned broker: when
    TCP retransmits the request after the heal, reference.network.unknown_send_outages)."""
    for o in outages:
        if o.down_ms <= ts and (o.up_ms is None or o.up_ms >= born):
            if o.up_ms is None:
                return None, o.describe()
            pushed = o.up_ms + delay + first_delay + slack
            if pushed > latest:
                latest = pushed
                widened = (widened + "; " if widened else "") + f"UNKNOWN send stored after {o.describe()}"
    return latest, widened


@dataclass
class _Observed:
    """What the model reads of a run's events: sends by key, faults, the anchors of retries (the
    first and, where a LATER was repeated, the last LATER of each (key, group, attempt)) and the
    groups that consume each topic."""

    sends: dict[str, Mapping]
    faults: list[Mapping]
    anchors: dict[tuple, int]  # (key, group, reconsume_times) -> ts_ms of the first LATER
    last_laters: dict[tuple, int]  # ... of the last LATER, where a LATER was repeated
    topic_groups: dict[str, list[str]]
    #: (key, group) -> {attempt: level asked} of the attempts a batch consumer sent back by its ack
    #: index (reference.plans.by_ack_index: LATERs its plan did not answer)
    by_ack: dict[tuple, dict[int, int]]
    #: (key, group) -> the attempts delivered, for orderly groups only (reference.orderly: whether a
    #: refused send-back to the DLQ was followed by one more attempt)
    orderly_attempts: dict[tuple, set[int]]
    #: (key, group) -> when an orderly group's deliveries of it were answered OK
    orderly_oks: dict[tuple, list[int]]
    #: (key, group) of the DLQ entries read
    in_dlq: set[tuple]
    #: (key, group, reconsume_times) -> the pop time of a POP group's first delivery of that attempt
    #: (reference.pop: a copy nobody answered is revived its invisible time after it)
    pops: dict[tuple, int] = field(default_factory=dict)
    #: (key, group, reconsume_times) -> when the client sent that attempt's last send-back
    #: (contract.SENT_BACK: the broker stores the retry when it arrives)
    sent_backs: dict[tuple, int] = field(default_factory=dict)


def _observed(events: Iterable[Mapping], orderly: frozenset = frozenset(), popping: frozenset = frozenset()) -> _Observed:
    seen = _Observed({}, [], {}, {}, {}, {}, {}, {}, set())
    anchors, last_laters = seen.anchors, seen.last_laters
    seen_topic_group: set[tuple[str, str]] = set()
    for e in events:
        t = e.get("type")
        if t == "deliver":
            tg = (e["topic"], e["group"])
            if tg not in seen_topic_group:
                seen_topic_group.add(tg)
                seen.topic_groups.setdefault(tg[0], []).append(tg[1])
            if tg[1] in popping and e.get("pop_ms") is not None:
                pk = (e["key"], tg[1], e["reconsume_times"])
                seen.pops[pk] = min(e["pop_ms"], seen.pops.get(pk, e["pop_ms"]))
            if tg[1] in orderly:
                seen.orderly_attempts.setdefault((e["key"], tg[1]), set()).add(e["reconsume_times"])
                if e["outcome"] == "OK":
                    seen.orderly_oks.setdefault((e["key"], tg[1]), []).append(e["ts_ms"])
            if e["outcome"] == "LATER" and not (tg[1] in popping and e.get("timed_out")):
                # (a POP group's SLOW is no answer: its copy's pop time anchors the next attempt)
                ak = (e["key"], tg[1], e["reconsume_times"])
                ts = e["ts_ms"]
                prev = anchors.get(ak)
                if prev is None:
                    anchors[ak] = ts
                elif ts < prev:
                    anchors[ak], last_laters[ak] = ts, max(prev, last_laters.get(ak, prev))
                elif ts > last_laters.get(ak, prev):
                    last_laters[ak] = ts
                if by_ack_index(e):
                    seen.by_ack.setdefault(ak[:2], {})[ak[2]] = int(e.get("next_level") or 0)
        elif t == "send":
            key = e.get("key")
            if key in seen.sends:
                raise ContractError("events", "key", SENT_ONCE, key)  # the checker names the lines
            seen.sends[key] = e
        elif t == "fault" and e.get("action") == SENT_BACK:  # the client's report, no fault
            if e.get("key") is not None and e.get("reconsume_times") is not None:
                sk = (e["key"], e.get("group"), int(e["reconsume_times"]))
                seen.sent_backs[sk] = max(int(e["ts_ms"]), seen.sent_backs.get(sk, int(e["ts_ms"])))
        elif t == "fault":
            seen.faults.append(e)
        elif t == "dlq":
            seen.in_dlq.add((e.get("key"), e.get("group")))
    return seen


@dataclass
class _Windows:
    """How a run's faults move the windows (reference.windows, .cluster, .network, .clock) and the
    profile's figures: what every expected row of the run is computed with."""

    profile: Profile
    clock: BrokerClock | None
    outages: list
    widen: Callable  # (stored_from, earliest, latest) -> (latest, widened_by): by any broker's outages
    widen_on: dict[str, Callable]  # ... by a broker name's own outages (reference.cluster)
    consumer_outages: list
    widen_local: Callable  # a paused/killed consumer re-consumes later
    unknown_outages: list
    local_lag: Callable  # (ts_ms, group, key) -> ms a local re-consume may come later
    back_lag: Callable  # (ts_ms, group, key) -> ms a send-back may be stored later
    back_failed: Callable  # (ts_ms, group, key) -> the send-back may have failed (the client re-sent it)
    retry_levels: list[tuple[int, int]]  # attempt k -> (requested, effective) level
    retry_delays: list[int]  # attempt k -> delay of its level
    #: an orderly consumer's re-consume waits for the queue's lock after a broker outage (reference.orderly)
    widen_locked: Callable | None = None
    #: the brokers' outages behind ``widen`` (reference.windows.OutageIndex: its ``touches`` too)
    index: OutageIndex | None = None
    #: a gRPC group's outages: the brokers' and the proxy's as its clients live them
    #: (reference.pop.grpc_outages); None: it lives none beyond the brokers' (``index`` then)
    grpc_index: OutageIndex | None = None
    faults: list = field(default_factory=list)  # the run's fault events (reference.pop.proxy_clear_ms)


def build_expected_rows(run: Mapping, events: Iterable[Mapping]) -> list[tuple]:
    """Expected attempts of every message sent in the run, as tuples in :data:`EXPECTED_COLUMNS`
    order; see :func:`build_expected`."""
    profile = profile_from_run(run)
    seen = _observed(events, frozenset(g for g, _ in profile.orderly_groups), frozenset(g for g, _ in profile.pop_groups))
    faults = seen.faults
    outages = merge_outages(effect("store", faults))  # every fault family's (reference.faults)
    slack = profile.slack_ms
    first_delay = profile.first_delay_ms
    # reference.cluster: what a broker name stores waits for its own processes only
    widen_on = {name: OutageIndex(own, first_delay, slack).widen for name, own in outages_by_broker(run, faults).items()}
    consumer_outages = effect("consumer", faults)
    # reference.network: a partition widens the windows of UNKNOWN sends only (a request stored
    # after the heal) and the local re-consume of a LATER whose send-back met it; latency delays
    # the storing of a retry by a round trip
    unknown_outages = merge_outages(outages + effect("unknown_send", faults))
    net_local, net_back, down_lag = local_retry_lag_ms(faults), send_back_lag_ms(faults), down_broker_lag_ms(faults)
    retry_levels, retry_delays = _retry_levels(profile, seen.sends)
    index = OutageIndex(outages, first_delay, slack)
    w = _Windows(profile=profile, clock=BrokerClock.from_faults(faults),  # reference.clock: due times in the broker's clock
                 outages=outages, widen=index.widen, widen_on=widen_on, index=index,
                 consumer_outages=consumer_outages, widen_local=OutageIndex(consumer_outages, 0, slack).widen,
                 unknown_outages=unknown_outages,
                 local_lag=lambda ts, group, key: max(net_local(ts, group, key), down_lag(ts)),
                 back_lag=lambda ts, group, key: max(net_back(ts, group, key), down_lag(ts)),
                 back_failed=send_back_may_repeat(faults), retry_levels=retry_levels, retry_delays=retry_delays,
                 widen_locked=OutageIndex(outages, LOCK_RETRY_MS, slack).widen if profile.orderly_groups else None,
                 grpc_index=_grpc_index(outages, faults, first_delay, slack, profile.proxy_mode), faults=faults)
    group_rt = dict(profile.max_reconsume_times_by_group)
    outcome_cache: dict[tuple, object] = {}
    rows: list[tuple] = []
    run_id = run.get("run_id", "")
    for key, send in seen.sends.items():
        first = _first_window(w, key, send)
        plan_key = tuple(send.get("plan") or ())
        for group in _units(profile, seen.topic_groups.get(send["topic"])) or (None,):
            max_rt = group_rt.get(group, profile.max_reconsume_times)
            if profile.broadcasting_groups and group is not None and profile.broadcast_units(group_of(group)):
                outcome = broadcast_outcome(parse_plan(list(plan_key) or None, _send_where(key)))
            elif profile.pop_groups and (popping := profile.pop_group(group)) is not None:
                outcome = pop_outcome(parse_plan(list(plan_key) or None, _send_where(key)), popping)
            elif profile.orderly_groups and profile.suspend_ms_of(group) is not None:
                outcome = _orderly_outcome(plan_key, max_rt, seen, key, group, outages, w.back_failed)
            else:
                sent_back = seen.by_ack.get((key, group))
                cache_key = (plan_key, max_rt, tuple(sorted(sent_back.items())) if sent_back else ())
                outcome = outcome_cache.get(cache_key)
                if outcome is None:
                    plan = parse_plan(list(plan_key) or None, _send_where(key))
                    outcome = outcome_cache[cache_key] = plan_outcome(with_ack_laters(plan, sent_back or {}), max_rt)
                outcome = _resent_outcome(w, seen, key, group, outcome, plan_key, sent_back, max_rt)
            rows.extend(_group_rows(w, seen, run_id, key, send, first, group, outcome))
    return rows


def _resent_outcome(w: _Windows, seen: _Observed, key: str, group: str | None, outcome, plan_key: tuple,
                    sent_back: dict | None, max_rt: int):
    """A LATER that asked for the DLQ at once (``LATER:-1``) whose send-back may have failed
    (reference.network.send_back_may_repeat: the client logged a failure of its group, or of its
    key, then) and whose message is not in the DLQ: the client re-sent it as a retry at 3 +
    reconsumeTimes (reference.retry.send_back_route; 5.0.0 refuses every retry's send-back,
    AbstractSendMessageProcessor's topic fence), so the plan goes on (reference.plans.resent_instead).
    Decided by what was read: an entry in the DLQ says the send-back was stored."""
    m = outcome.last_attempt
    if outcome.final_state != "DLQ" or m >= max_rt or (key, group) in seen.in_dlq:
        return outcome
    later = seen.last_laters.get((key, group, m), seen.anchors.get((key, group, m)))
    if later is None or not w.back_failed(later, group, key):
        return outcome
    plan = with_ack_laters(parse_plan(list(plan_key) or None, _send_where(key)), sent_back or {})
    return plan_outcome(resent_instead(plan, m), max_rt)


def _units(profile: Profile, groups: list[str] | None) -> list[str] | None:
    """The judging units that consume a topic (reference.modes): its groups as seen, each instance
    of a broadcasting group among them standing for all of that group's instances (one that
    delivered nothing still owes every message)."""
    if not groups or not profile.broadcasting_groups:
        return groups
    out: list[str] = []
    for g in groups:
        units = profile.broadcast_units(group_of(g))
        for u in units or (g,):
            if u not in out:
                out.append(u)
    return out


def _orderly_outcome(plan: tuple[str, ...], max_rt: int, seen: _Observed, key: str, group: str, outages: list,
                     back_failed: Callable):
    """Where an orderly consumer's plan leads (reference.orderly): as a concurrent one's, except that
    a LATER on the last allowed attempt answered while the broker may not have stored its send-back
    (down, frozen or full, or cut off from the client: reference.network.send_back_may_repeat;
    ConsumeMessageOrderlyService.checkReconsumeTimes, sendMessageBack
    failed) suspends the queue and consumes it again, count raised: one more attempt, each time the
    next attempt was seen (whether a write was refused in such a period only the client saw)."""
    parsed = parse_plan(list(plan) or None, _send_where(key))
    outcome = plan_outcome(parsed, max_rt)
    got = seen.orderly_attempts.get((key, group), ())

    def refused(later: int | None) -> bool:
        return send_back_refused(later, outages) or (later is not None and back_failed(later, group, key))

    while outcome.final_state == "DLQ" and outcome.last_attempt + 1 in got:
        if not refused(seen.anchors.get((key, group, outcome.last_attempt))):
            break
        max_rt += 1
        outcome = plan_outcome(parsed, max_rt)
    later = seen.anchors.get((key, group, outcome.last_attempt))
    if outcome.final_state == "DLQ" and (key, group) not in seen.in_dlq and refused(later) \
            and any(ts > later for ts in seen.orderly_oks.get((key, group), ())):
        # the refused send-back's chain died with its consumer before the next attempt: the stored
        # copy came back and was answered OK (the chain had ended for the harness's consumer,
        # reference.plans.orderly_next): consumed, not in the DLQ
        outcome = replace(outcome, final_state="CONSUMED")
    return outcome


def _retry_levels(profile: Profile, sends: Mapping[str, Mapping]) -> tuple[list[tuple[int, int]], list[int]]:
    """(requested, effective) level and delay of each retry: no attempt goes beyond the longest plan
    (each LATER one more), whatever maxReconsumeTimes allows."""
    table = profile.level_table
    top_rt = max([profile.max_reconsume_times] + [v for _, v in profile.max_reconsume_times_by_group])
    top_rt = min(top_rt, max((len(s.get("plan") or ()) for s in sends.values()), default=0))
    levels = [(0, 0)] + [(requested_retry_level(k), retry_level(k, table.max_level)) for k in range(1, top_rt + 2)]
    return levels, [0] + [table.delay_ms(lv) for _, lv in levels[1:]]


def _first_window(w: _Windows, key: str, send: Mapping) -> tuple:
    """Attempt 0 of a message: requested level, level, clamped, delay, earliest, latest, widened
    by, deliver_at, rejection (the same in every group)."""
    profile = w.profile
    born = send.get("born_ms")
    requested, level, clamped, delay, earliest, due_on_time, deliver_at, rejection, slot = _first_attempt(send, profile, key)
    anchor0 = send["ts_ms"]
    stored_from = born if born is not None else anchor0
    widened = None
    if w.clock is not None and delay:  # a timer message's due time (earliest) is in the broker's clock too
        earliest, due_on_time, widened = _on_broker_clock(w.clock, stored_from, anchor0, delay,
                                                          None if level else earliest, earliest, due_on_time, level)
    latest = due_on_time + profile.slack_ms
    if w.outages:
        latest, widened = _joined(w.widen_on.get(send.get("broker"), w.widen)(stored_from, earliest, latest), widened)
    if send["status"] == "UNKNOWN" and latest is not None and w.unknown_outages:
        latest, widened = _unknown_send_latest(stored_from, anchor0, delay, latest, widened, w.unknown_outages,
                                               profile.slack_ms, profile.first_delay_ms)
    return requested, level, clamped, delay, earliest, latest, widened, deliver_at, rejection, slot


def _orderly_window(w: _Windows, seen: _Observed, key: str, group: str | None, k: int, suspend: int) -> tuple:
    """Retry ``k`` of a message in an orderly group (reference.orderly): the same stored copy,
    re-consumed ``suspend`` after the LATER of attempt k-1 (ConsumeMessageOrderlyService.
    submitConsumeRequestLater), later by a consumer's outage, and after a broker's outage by the
    lock the client must take again first (tryLockLaterAndReconsume). Both windows are that one:
    a new stored copy of an orderly retry is judged by its store time against it. Earliest,
    latest, widened by, anchor, local earliest, local latest."""
    anchor = seen.anchors.get((key, group, k - 1))
    if anchor is None:
        return None, None, None, None, None, None
    last_anchor = seen.last_laters.get((key, group, k - 1), anchor)
    earliest = anchor + suspend
    latest = last_anchor + suspend + w.profile.slack_ms + w.local_lag(last_anchor, group, key)
    widened = None
    if w.consumer_outages:
        latest = w.widen_local(anchor, earliest, latest)[0]
    if w.outages and w.widen_locked is not None and latest is not None:  # None: a consumer never back
        latest, widened = w.widen_locked(anchor, earliest, latest)
    return earliest, latest, widened, anchor, earliest, latest


def _pop_window(w: _Windows, seen: _Observed, key: str, group: str, popping, k: int, outcome, born: int | None) -> tuple:
    """Retry ``k`` of a message in a POP group (reference.pop.next_window): attempt k-1 answered
    LATER is revived the POP level's invisible time after the answer (the change of its invisible
    time, ConsumeMessagePopConcurrentlyService.changePopInvisibleTime; a PushConsumer's FAILURE: the
    retry policy's backoff); not answered (a SLOW, a SimpleConsumer's LATER), the pop's own invisible
    time after its pop. Judged by the revived copy's store time (a new stored
    copy in the POP retry topic: PopReviveService.reviveRetry). A change that may have met a broker's
    outage may have failed: the pop's own invisible time stands then, so the window is both. No
    observation of attempt k-1 (its LATER, or its pop time): no window. Delay, earliest, latest,
    widened by, anchor."""
    answered, popped = seen.anchors.get((key, group, k - 1)), seen.pops.get((key, group, k - 1))
    index = w.grpc_index if popping.mode in GRPC_MODES and w.grpc_index is not None else w.index
    if popping.mode == GRPC_SIMPLE:  # a SimpleConsumer's LATER is no answer to the broker: its invisible duration runs out
        answered = None
    asked = outcome.asked[k - 1] if k - 1 < len(outcome.asked) else 0
    precision, slack = w.profile.timer_precision_ms, w.profile.slack_ms
    windows = []
    if answered is not None:
        last = seen.last_laters.get((key, group, k - 1), answered)
        first_w = next_window(popping, k - 1, ANSWERED_LATER, popped if popped is not None else answered, answered, precision,
                              slack, asked, born)
        last_w = next_window(popping, k - 1, ANSWERED_LATER, popped if popped is not None else answered, last, precision,
                             slack, asked, born)
        if first_w is not None and last_w is not None:
            delay = first_w.earliest_ms - answered
            earliest, latest = first_w.earliest_ms, last_w.latest_ms
            if w.clock is not None:  # the new checkpoint is due in the broker's clock, from the change (true time)
                earliest, latest = _pop_on_broker_clock(w.clock, answered, w.clock.broker_ms(answered) + delay,
                                                        latest - last_w.earliest_ms + (last - answered))
            windows.append((answered, delay, earliest, latest))
    # a change answered up to the client's request timeout before an outage may still be in flight when it begins
    if popped is not None and (answered is None or index.touches(popped, answered + GRPC_REQUEST_TIMEOUT_MS)):
        nw = next_window(popping, k - 1, NOT_ANSWERED, popped, None, precision, slack)
        earliest, latest = nw.earliest_ms, nw.latest_ms
        if w.clock is not None:  # pop_ms is the broker's reading (POP_CK): the revive is due in its clock
            earliest, latest = _pop_on_broker_clock(w.clock, born if born is not None else popped - popping.invisible_ms,
                                                    popped + popping.invisible_ms, nw.latest_ms - nw.earliest_ms)
        windows.append((popped, popping.invisible_ms, earliest, latest))
    if not windows:
        return 0, None, None, None, None
    anchor, delay, earliest, latest = windows[0]
    widened = None
    if len(windows) > 1:
        earliest, latest = min(x[2] for x in windows), max(x[3] for x in windows)
        widened = "the change of the invisible time may have failed in a broker's outage: the pop's own invisible time may stand"
    cleared = proxy_clear_ms(w.faults, popped, answered, w.profile.proxy_mode) \
        if popping.mode == GRPC_PUSH and popped is not None else None
    if cleared is not None and cleared < earliest:  # the stopping proxy set its receipt handle's invisible time to 1 s
        earliest = cleared
        widened = _joined((latest, widened), "the proxy's graceful stop cleared its receipt handle (1 s: ReceiptHandleProcessor.clearAllHandle)")[1]
    if w.outages or index is not w.index:
        latest, widened = _joined(index.widen(anchor, earliest, latest), widened)
    return delay, earliest, latest, widened, anchor


def _grpc_index(outages: list, faults: list, first_delay: int, slack: int, proxy_mode: str) -> OutageIndex | None:
    """A gRPC group's outages (reference.pop.grpc_outages) indexed, or None when it lives no outage
    beyond the brokers'."""
    proxy = grpc_outages(faults, proxy_mode)
    return OutageIndex(merge_outages(outages + proxy), first_delay, slack) if proxy else None


def _pop_on_broker_clock(clock: BrokerClock, from_ms: int, due_broker_ms: int, after_ms: int) -> tuple[int, int]:
    """reference.clock: a POP checkpoint due at ``due_broker_ms`` in the broker's clock (a timer
    message of the revive topic, PopReviveService comparing the broker's time) as a true-time window,
    searched from ``from_ms``: the earliest and latest true moment the clock reads it, the latest
    plus ``after_ms`` (the revive's lag and the slack)."""
    lo, hi = clock.deadline_range(from_ms, due_broker_ms)
    return lo, hi + after_ms


def _retry_level(w: _Windows, outcome, k: int) -> tuple[int, int, int, int]:
    """Retry ``k``'s requested level, its level, its delay, and the delay of the level the client's
    re-send would ask for instead (DefaultMQPushConsumerImpl.sendMessageBack's fallback asks for
    3 + reconsumeTimes whatever the consumer asked: :func:`reference.retry.send_back_route`)."""
    asked = outcome.asked[k - 1] if k - 1 < len(outcome.asked) else 0
    if asked == 0 and k < len(w.retry_levels):
        requested, level = w.retry_levels[k]
        return requested, level, w.retry_delays[k], w.retry_delays[k]
    table = w.profile.level_table
    requested = asked_retry_level(k, asked)
    level = clamped_level(requested, table.max_level)
    return requested, level, table.delay_ms(level), table.delay_ms(retry_level(k, table.max_level))


def _retry_window(w: _Windows, seen: _Observed, key: str, group: str | None, k: int, r_level: int, r_delay: int,
                  fallback_delay: int, timeout_min: int | None = None) -> tuple:
    """Retry ``k`` of a message in ``group``: anchored at the first LATER of attempt k-1, due by its
    last one: earliest, latest, widened by, anchor, local earliest, local latest (no LATER
    observed: no window, the attempt is judged by NO_LOSS and RETRY_SCHEDULE). A LATER that asked
    for its own level and whose send-back may have failed may be re-sent at ``fallback_delay``.
    ``timeout_min``: attempt k-1 was held past the group's consumeTimeout (``SLOW``): the anchor is
    its consume start and the send-back comes at the client's next clean-up after a timeout
    (reference.timeout.sent_back_within), the delay counted from there; no local re-consume (a
    failed clean-up send-back is tried again at the next clean-up)."""
    anchor = seen.anchors.get((key, group, k - 1))
    if anchor is None:
        return None, None, None, None, None, None
    slack = w.profile.slack_ms
    last_anchor = seen.last_laters.get((key, group, k - 1), anchor)
    # the broker stores the retry when the send-back arrives: the client's own time to send it is
    # no part of the broker's wait (contract.SENT_BACK, when the consumer recorded it)
    sent = seen.sent_backs.get((key, group, k - 1))
    if timeout_min is not None:
        back_from, back_by = sent_back_within(anchor, timeout_min)[0], sent_back_within(last_anchor, timeout_min)[1]
        back_by = max(back_by, sent or back_by)
        r_earliest, r_latest = back_from + r_delay, back_by + r_delay + slack
        if w.outages:
            r_latest = w.widen(anchor, r_earliest, r_latest)[0]
        return r_earliest, r_latest, None, anchor, r_earliest, r_latest
    sent_by = max(last_anchor, sent or last_anchor)
    r_earliest, r_due, r_widened = anchor + r_delay, sent_by + r_delay, None
    if fallback_delay != r_delay and w.back_failed(last_anchor, group, key):
        r_earliest, r_due = anchor + min(r_delay, fallback_delay), sent_by + max(r_delay, fallback_delay)
        r_widened = "the send-back may have failed: the client's re-send asks for 3 + reconsumeTimes"
    stored_lag = w.back_lag(last_anchor, group, key)
    if w.clock is not None:  # the retry is stored by the broker when the send-back arrives
        r_earliest, r_due, r_widened = _on_broker_clock(w.clock, anchor, sent_by + stored_lag, r_delay, None, r_earliest, r_due, r_level)
    r_latest = r_due + slack + stored_lag
    if w.outages:
        r_latest, r_widened = _joined(w.widen(anchor, r_earliest, r_latest), r_widened)
    l_earliest = anchor + w.profile.local_retry_delay_ms
    l_latest = last_anchor + w.profile.local_retry_delay_ms + slack + w.local_lag(last_anchor, group, key)
    if w.consumer_outages:
        l_latest = w.widen_local(anchor, l_earliest, l_latest)[0]
    return r_earliest, r_latest, r_widened, anchor, l_earliest, l_latest


def _group_rows(w: _Windows, seen: _Observed, run_id: str, key: str, send: Mapping, first: tuple, group: str | None,
                outcome) -> list[tuple]:
    """The expected rows of one message in one consumer group: attempt 0, then each retry its plan leads to."""
    requested, level, clamped, delay, earliest, latest, widened, deliver_at, rejection, slot = first
    last, final_state, topic, status, born = outcome.last_attempt, outcome.final_state, send["topic"], send["status"], send.get("born_ms")
    rows = [_row({"run_id": run_id, "key": key, "attempt": 0, "topic": topic, "queue_topic": None, "send_status": status,
                  "requested_level": requested, "level": level, "clamped": clamped, "delay_ms": delay, "earliest_ms": earliest,
                  "latest_ms": latest, "widened_by": widened, "final": last == 0, "final_state": final_state, "group": group,
                  "anchor_ms": send["ts_ms"], "local_earliest_ms": None, "local_latest_ms": None, "born_ms": born,
                  "deliver_at_ms": deliver_at, "expected_rejection": rejection,
                  "send_refused": refusal_name(send.get("response_code")) if status == "FAILED" else None,
                  "timer_slot_ms": slot})]
    suspend = w.profile.suspend_ms_of(group)
    popping = w.profile.pop_group(group) if w.profile.pop_groups else None
    retry_queue = None if suspend is not None else RETRY_PREFIX + (group if group is not None else "*")
    if popping is not None:
        retry_queue = pop_retry_topic(group, topic, popping.v2)
    for k in range(1, last + 1):
        if popping is not None:  # revived by the broker (reference.pop): a new stored copy, no delay level
            r_requested = r_level = 0
            r_delay, r_earliest, r_latest, r_widened, anchor = _pop_window(w, seen, key, group, popping, k, outcome, born)
            l_earliest = l_latest = None
        elif suspend is not None:  # orderly: re-consumed locally, no delay level (reference.orderly)
            r_requested = r_level = 0
            r_delay = suspend
            r_earliest, r_latest, r_widened, anchor, l_earliest, l_latest = _orderly_window(w, seen, key, group, k, suspend)
        else:
            r_requested, r_level, r_delay, fallback_delay = _retry_level(w, outcome, k)
            timeout = effective_timeout_min(w.profile.consume_timeout_of(group)) if k - 1 in outcome.timed_out else None
            r_earliest, r_latest, r_widened, anchor, l_earliest, l_latest = _retry_window(
                w, seen, key, group, k, r_level, r_delay, fallback_delay, timeout)
        rows.append(_row({"run_id": run_id, "key": key, "attempt": k, "topic": topic, "queue_topic": retry_queue,
                          "send_status": status, "requested_level": r_requested, "level": r_level,
                          "clamped": r_level != r_requested, "delay_ms": r_delay, "earliest_ms": r_earliest,
                          "latest_ms": r_latest, "widened_by": r_widened, "final": last == k, "final_state": final_state,
                          "group": group, "anchor_ms": anchor, "local_earliest_ms": l_earliest, "local_latest_ms": l_latest,
                          "born_ms": born, "deliver_at_ms": deliver_at, "expected_rejection": None, "send_refused": None,
                          "timer_slot_ms": None}))
    return rows


def build_expected(run: Mapping, events: Iterable[Mapping]) -> list[ExpectedAttempt]:
    """Expected attempts of every message sent in the run (FAILED sends yield attempt rows with
    ``send_status`` FAILED so the checker can flag deliveries of them).

    ``run`` is ``run.json`` as a dict; its ``profile`` is parsed with the model's profile parser
    (a bad field raises ``reference.contract.ContractError`` naming it)."""
    new = object.__new__
    out = []
    for row in build_expected_rows(run, events):
        obj = new(ExpectedAttempt)
        obj.__dict__.update(zip(EXPECTED_COLUMNS, row))
        out.append(obj)
    return out


def sent_back_copies(previous_attempt: Iterable[Mapping], faults: Iterable[Mapping] = ()) -> int:
    """ConsumeMessageConcurrentlyService.processConsumeResult: every delivery answered LATER sends its
    own message back (sendMessageBack per message), so attempt k may have as many stored copies as
    attempt k-1 had LATER answers: a duplicated attempt (a consumer redelivery, a re-put repeated
    after a failover: ``reference.cluster``) doubles the rest of its chain, each copy of the retry
    being an attempt of its own. A LATER whose send-back failed may store one more
    (:func:`reference.network.send_back_may_repeat`: timed out in a cut, TCP retransmits it beside the
    client's re-send; or the client logged the failure, and the request it gave up on was stored too).
    In a POP group an OK whose ack the proxy refused (``ack_failed``, a SimpleConsumer's) is revived
    like a LATER (PopReviveService: its checkpoint was never acked).
    ``previous_attempt``: the deliveries of attempt k-1; ``faults``: the run's fault events."""
    repeats = send_back_may_repeat(faults)
    laters = [d for d in previous_attempt if d.get("outcome") == "LATER"]
    unacked = sum(1 for d in previous_attempt if d.get("outcome") == "OK" and d.get("ack_failed"))
    return len(laters) + unacked + sum(1 for d in laters if repeats(d["ts_ms"], d.get("group"), d.get("key")))


_I_SLOT = EXPECTED_COLUMNS.index("timer_slot_ms")


def timer_slot_ms(row: tuple | None, attempt: int) -> int | None:
    """The slot a 5.x timer message was parked until (HookUtils.transformTimerMessage), from its
    expected row (a :data:`EXPECTED_COLUMNS` tuple); None for anything else (a retry, a delay-level
    message, a deliver time not in the future: stored in its topic at once)."""
    return row[_I_SLOT] if row is not None and attempt == 0 else None


def rule_duplicate(run: Mapping, faults: Iterable[Mapping], first: Mapping, second: Mapping,
                   timer_slot_ms: int | None = None) -> DuplicateRuling:
    """Rule on a second delivery ``second`` of the same (key, attempt) as ``first`` (both
    ``deliver`` events, in either order), given the run's ``fault`` events: NO_DUPLICATE of
    DESIGN.md. The same stored copy is ordered by delivery time, two copies by store time.

    Consumer redelivery (same stored copy): RemoteBrokerOffsetStore.persistAll /
    ConsumeMessageConcurrentlyService (4.9.x) — consume offsets reach the broker every 5 s, so a
    consumer that dies redelivers what it consumed since: allowed after a CRASH answer to ``first``,
    after any CRASH answer in the same group in between (pass those ``deliver`` events among
    ``faults``, or as ``{"type": "fault", "action": "crash", "target": "consumer", "group": g,
    "ts_ms": t}``: a crash is a consumer fault the plan injected), or after a consumer kill or restart
    (``start``) or a broker kill in between. Scheduler duplicate (new stored copy):
    ScheduleMessageService.persist (4.9.x) — see :func:`reference.persistence.scheduler_duplicate_allowed`;
    a timer message parked until ``timer_slot_ms`` (attempt 0 of a 5.x timer message): the timer
    checkpoint instead (:func:`reference.timer.timer_duplicate_allowed`)."""
    profile = profile_from_run(run)
    cluster = (run.get("profile") or {}).get("cluster")
    faults = list(faults)
    if same_stored_copy(first, second):
        if first["ts_ms"] > second["ts_ms"]:
            first, second = second, first
        return _consumer_redelivery(faults, first, second, cluster == MASTER_SLAVE)
    # two stored copies: in the order they were stored (the later-stored one may arrive first)
    if (first["store_ms"], first["ts_ms"]) > (second["store_ms"], second["ts_ms"]):
        first, second = second, first
    if profile.pop_groups and timer_slot_ms is None and profile.pop_group(first.get("group")) is not None:
        popping = profile.pop_group(first.get("group"))
        fault_events = [f for f in faults if f.get("type", "fault") == "fault"]
        grpc = grpc_outages(fault_events, profile.proxy_mode) if popping.mode in GRPC_MODES else ()
        allowed, reason = second_copy_allowed(fault_events, first["store_ms"], second["store_ms"], grpc_outages=grpc)
        return DuplicateRuling(allowed, "scheduler", reason)
    if first.get("outcome") == CRASH and first.get("reconsume_times", 0) > 0:
        return DuplicateRuling(True, "consumer", f"the first delivery (at {first['ts_ms']}) was a local re-consume "
                               "answered CRASH: that retry lived only in the crashed consumer, whose redelivered "
                               "previous attempt sent it back again as a new stored copy")
    if timer_slot_ms is not None:
        allowed, reason = timer_duplicate_allowed([f for f in faults if f.get("type", "fault") == "fault"], timer_slot_ms,
                                                  first["store_ms"], second["store_ms"], profile.timer_flush_interval_ms,
                                                  profile.timer_precision_ms, profile.slack_ms, first.get("born_ms"))
        return DuplicateRuling(allowed, "scheduler", reason)
    allowed, reason = scheduler_duplicate_allowed([f for f in faults if f.get("type", "fault") == "fault"],
                                                  first["store_ms"], second["store_ms"],
                                                  profile.flush_delay_offset_interval_ms,
                                                  profile.first_flush_delay_ms, profile.slack_ms,
                                                  REPLICA_SYNC_BOUND_MS if cluster == CONTROLLER else None,
                                                  profile.schedule_async_deliver)
    return DuplicateRuling(allowed, "scheduler", reason)


#: RebalanceService.waitInterval (20 s: a member rebalances at the latest this long after the group
#: changed) + ClientConfig.persistConsumerOffsetInterval (5 s: offsets it had not committed).
REBALANCE_WINDOW_MS = 25_000


def _membership_change(faults: list[Mapping], group: str | None, second_ts_ms: int) -> Mapping | None:
    """RebalancePushImpl / RebalanceImpl.rebalanceByTopic (4.9.x): when a consumer joins a group that
    has another member, queues move between members and the new owner starts from the last
    committed offset, so what the old owner consumed since is delivered again (at-least-once).
    The start of a consumer of ``group`` (not its first member) up to ``REBALANCE_WINDOW_MS`` before
    ``second_ts_ms``, or ``None``."""
    starts = 0
    for f in sorted(faults, key=lambda f: f["ts_ms"]):
        if f.get("target") != "consumer" or f.get("action") != "start" or f.get("group") != group or group is None:
            continue
        if f["ts_ms"] > second_ts_ms:
            break
        if starts and second_ts_ms - f["ts_ms"] <= REBALANCE_WINDOW_MS:
            return f
        starts += 1
    return None


def _moved_between_members(first: Mapping, second: Mapping) -> str | None:
    """RebalanceImpl.updateProcessQueueTableInRebalance: a queue that a rebalance moves from one
    member of a group to another is pulled by the new owner from the offset committed at the broker
    (RemoteBrokerOffsetStore: every persistConsumerOffsetInterval, 5 s, and the old owner's oneway
    update as it drops the queue, RebalancePushImpl.removeUnnecessaryMessageQueue), so what the old
    owner consumed since is delivered again, to the new owner (at-least-once). The delivery itself
    shows the move: the same stored copy taken by another member (``member``) within
    :data:`REBALANCE_WINDOW_MS` of its answer. Not for POP (a popped copy belongs to no member's queue:
    its redelivery is the revive's, ``reference.pop``). Why, or ``None``."""
    a, b = first.get("member"), second.get("member")
    if not a or not b or a == b or first.get("pop_ms") is not None or second.get("pop_ms") is not None:
        return None
    if second["ts_ms"] - first["ts_ms"] > REBALANCE_WINDOW_MS:
        return None
    return (f"redelivery of the same stored copy to member {b!r} after member {a!r} answered it at {first['ts_ms']}: "
            f"a rebalance moved its queue ({first.get('queue_topic') or first.get('topic')} {first.get('queue_id')}) "
            "before its consume offset was committed")


def _consumer_redelivery(faults: list[Mapping], first: Mapping, second: Mapping, slave_serves: bool = False) -> DuplicateRuling:
    """``slave_serves``: a master and its slave (reference.cluster): what was consumed from the
    slave while the master was down was committed there, so after the master's ``start`` it may be
    delivered again (the master resumes with its own consume offsets)."""
    if first.get("outcome") == CRASH:
        return DuplicateRuling(True, "consumer", f"redelivery of the same stored copy after a CRASH answer at {first['ts_ms']}")
    lo, hi = first["ts_ms"], second["ts_ms"]
    # a POP copy is out of its queue from its pop, which may come well before its listener's turn (a
    # push consumer hands out what it popped earlier): PopMessageProcessor.popMsgFromQueue commits the
    # pop's offset in memory (ConsumerOffsetManager.commitOffset), persisted every
    # flushConsumerOffsetInterval (BrokerController), so a broker killed after the pop pops it again
    lo = min(lo, first.get("pop_ms") or lo)
    for f in sorted(faults, key=lambda f: f["ts_ms"]):
        if not lo <= f["ts_ms"] <= hi:
            continue
        crash = (f.get("type") == "deliver" and f.get("outcome") == CRASH) or \
            (f.get("action") == "crash" and f.get("target") == CONSUMER_TARGET)
        if crash or f.get("type") == "deliver":
            if crash and f.get("group", first.get("group")) == first.get("group"):
                return DuplicateRuling(True, "consumer", f"redelivery of the same stored copy after a consumer of group "
                                       f"{first.get('group')!r} crashed at {f['ts_ms']} (key {f.get('key')!r}): "
                                       "its consume offset was not yet committed")
            continue
        action, target = f.get("action"), f.get("target")
        if (target == CONSUMER_TARGET and action in ("kill", "start", "stop")) or (is_broker(target) and action == "kill") \
                or (slave_serves and target == BROKER_TARGETS[0] and action == "start"):
            return DuplicateRuling(True, "consumer", f"redelivery of the same stored copy after the {target} "
                                   f"{action} at {f['ts_ms']} (consume offset not yet committed)")
    joined = _membership_change(faults, first.get("group"), hi)
    if joined is not None:
        return DuplicateRuling(True, "consumer", f"redelivery of the same stored copy after consumer {joined.get('name')!r} "
                               f"joined group {first.get('group')!r} at {joined['ts_ms']}: the rebalance moved the queue "
                               "before its consume offset was committed")
    moved = _moved_between_members(first, second)
    if moved is not None:
        return DuplicateRuling(True, "consumer", moved)
    return DuplicateRuling(False, "consumer", f"the same stored copy delivered again at {hi} after an answer "
                           f"{first.get('outcome')} at {lo}, with no CRASH and no consumer or broker kill in between")
