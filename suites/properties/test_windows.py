"""Due times and windows: never due before the delay, outages only widen, the 5.x timer rounding,
the deliver-time correction, the persistence rules behind scheduler duplicates."""

from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from hourglass.reference.persistence import next_flush_ms, scheduler_duplicate_allowed
from hourglass.reference.limits import body_refusal
from hourglass.reference.timer import TimerRequest, java_long, rounded_deliver_ms, send_ruling, timer_ruling
from hourglass.reference.windows import Outage, broker_outages, corrected_deliver_ms, window

T0 = 1_763_800_000_000
ms = st.integers(0, 200_000)


@st.composite
def outages(draw):
    out, t = [], T0 + draw(st.integers(0, 50_000))
    for _ in range(draw(st.integers(0, 4))):
        action = draw(st.sampled_from(["kill", "stop", "pause"]))
        up = t + draw(st.integers(1, 30_000))
        out.append(Outage(action, t, up))
        t = up + draw(st.integers(1, 30_000))
    return out


@given(ms, ms, ms, outages(), st.integers(0, 5000))
def test_windows_start_at_the_due_time_and_outages_only_widen_them(anchor_off, delay, extra, outs, slack):
    anchor = T0 + anchor_off
    earliest = anchor + delay
    base = earliest + extra + slack
    w = window(anchor, earliest, base, outs, 1000, slack)
    assert w.earliest_ms == earliest
    assert w.latest_ms is None or w.latest_ms >= base
    assert (w.widened_by is None) == (w.latest_ms == base)
    for cut in range(len(outs)):  # more outages never narrow the window
        fewer = window(anchor, earliest, base, outs[:cut], 1000, slack)
        assert w.latest_ms is None or (fewer.latest_ms is not None and fewer.latest_ms <= w.latest_ms)


@given(outages(), ms)
def test_a_deadline_inside_an_outage_moves_to_ready_plus_first_delay(outs, offset):
    assume(outs)
    o = outs[0]
    due = o.down_ms + offset % max(1, o.up_ms - o.down_ms)
    w = window(due - 1000, due, due + 3000, outs, 1000, 3000)
    assert w.latest_ms >= o.up_ms + 1000 + 3000


def test_outages_from_fault_events():
    f = [{"ts_ms": 10, "action": "kill", "target": "broker"}, {"ts_ms": 20, "action": "start", "target": "broker"},
         {"ts_ms": 30, "action": "ready", "target": "broker"}, {"ts_ms": 40, "action": "pause", "target": "broker"},
         {"ts_ms": 50, "action": "resume", "target": "broker"}, {"ts_ms": 60, "action": "stop", "target": "broker"},
         {"ts_ms": 61, "action": "kill", "target": "consumer"}]
    assert broker_outages(f) == [Outage("kill", 10, 30), Outage("pause", 40, 50), Outage("stop", 60, None)]


def test_a_paused_broker_killed_and_slow_started_is_back_at_its_ready_not_at_the_resume():
    """pause, kill -9 while paused, start, pause before ready (slow start), resume, ready: one
    outage from the first pause to the ready (found by the persistence suite on 4.9.7: windows
    closed at the slow start's resume, 6 s before the broker answered)."""
    f = [{"ts_ms": t, "action": a, "target": "broker"} for t, a in
         ((10, "pause"), (20, "kill"), (30, "start"), (31, "pause"), (40, "resume"), (47, "ready"))]
    assert broker_outages(f) == [Outage("kill", 10, 47)]


@given(st.integers(T0, T0 + 10**9), st.sampled_from([1, 10, 100, 1000, 5000]))
def test_timer_rounding_is_never_late_and_at_most_one_precision_early(deliver_at, precision):
    r = rounded_deliver_ms(deliver_at, precision)
    assert deliver_at - precision <= r < deliver_at
    assert r % precision == 0


def test_timer_rules_level_wins_past_is_immediate_too_far_is_illegal():
    assert not timer_ruling(TimerRequest(T0 + 5000), 2, T0, 1000, 259_200).timer
    assert not timer_ruling(TimerRequest(T0 - 1), 0, T0, 1000, 259_200).timer
    assert not timer_ruling(TimerRequest(T0 + 259_200_001), 0, T0, 1000, 259_200).accepted
    ok = timer_ruling(TimerRequest(T0 + 259_200_000), 0, T0, 1000, 259_200)
    assert ok.accepted and ok.timer and ok.deliver_ms == T0 + 259_199_000


def test_timer_apis_count_from_the_brokers_clock_and_wrap_as_java_longs():
    """HookUtils.transformTimerMessage: TIMER_DELAY_SEC wins, then TIMER_DELAY_MS; a delay at
    timerMaxDelaySec exactly is taken, one unit more refused; a product or sum beyond a Java long
    wraps into the past and is delivered at once."""
    long_max = 2**63 - 1
    assert timer_ruling(TimerRequest(delay_sec=8), 0, T0, 1000, 8).accepted
    assert not timer_ruling(TimerRequest(delay_sec=9), 0, T0, 1000, 8).accepted
    assert timer_ruling(TimerRequest(delay_ms=8000), 0, T0, 1000, 8).accepted
    assert not timer_ruling(TimerRequest(delay_ms=8001), 0, T0, 1000, 8).accepted
    for wraps in (TimerRequest(delay_sec=long_max), TimerRequest(delay_sec=long_max // 1000), TimerRequest(delay_ms=long_max)):
        r = timer_ruling(wraps, 0, T0, 1000, 8)
        assert r.accepted and not r.timer and r.deliver_ms == T0, wraps
    wins = timer_ruling(TimerRequest(long_max, delay_sec=2, delay_ms=long_max), 0, T0, 1000, 8)
    assert wins.accepted and wins.timer and wins.deliver_ms == T0 + 1000
    assert java_long(long_max + 1) == -(2**63)


@given(st.integers(0, 5000), st.integers(-20_000, 20_000))
def test_a_send_is_refused_only_when_refused_wherever_the_brokers_clock_stood(rtt, ahead):
    """The broker's clock at a send's arrival lies between born and ts: the model refuses only
    what every reading refuses, and its due window holds the due time of every reading."""
    born, ts = T0, T0 + rtt
    req = TimerRequest(born + ahead)
    ruling = send_ruling(req, 0, born, ts, 1000, 8)
    for now in (born, (born + ts) // 2, ts):
        r = timer_ruling(req, 0, now, 1000, 8)
        if ruling.refused is not None:
            assert not r.accepted
        elif r.accepted:
            assert ruling.earliest_ms <= r.deliver_ms <= ruling.latest_ms


def test_bodies_at_the_limits():
    """Validators.checkMessage and MessageExtEncoder.encode: empty and above the client's limit
    refused by the client; above the broker's maxMessageSize refused; at it, stored."""
    assert body_refusal(0, 1024) and body_refusal(1025, 1024) and body_refusal(2**22 + 1, 2**23)
    assert body_refusal(1, 1024) is None and body_refusal(1024, 1024) is None


@given(ms, ms, st.integers(1, 100_000))
def test_the_deliver_time_correction_never_waits_longer_than_one_level(now_off, ahead, delay):
    now = T0 + now_off
    d = corrected_deliver_ms(now, now + ahead, delay)
    assert d <= now + delay
    assert d == (now if ahead > delay else now + ahead)


@given(st.integers(0, 10**6), st.integers(0, 10**6), st.integers(1, 20_000))
def test_flushes_follow_the_fixed_rate_grid(start_off, now_off, interval):
    start, now = T0 + start_off, T0 + start_off + now_off
    nxt = next_flush_ms(start, now, 10_000, interval)
    assert nxt > now and (nxt - start - 10_000) % interval == 0 and nxt - interval <= max(now, start + 10_000 - interval)


def _faults(*items):
    return [{"type": "fault", "ts_ms": t, "action": a, "target": "broker"} for t, a in items]


def test_scheduler_duplicates_need_a_kill_after_the_last_flush():
    faults = _faults((0, "start"), (1000, "ready"), (60_000, "kill"), (61_000, "start"), (62_000, "ready"))
    # flushes at 10 s, 20 s, ... 60 s (interval 10 s): a re-put at 55 s is after the last flush before the kill
    assert scheduler_duplicate_allowed(faults, 55_500, 63_000, 10_000, 10_000, 0)[0]
    assert not scheduler_duplicate_allowed(faults, 45_000, 63_000, 10_000, 10_000, 0)[0]
    graceful = _faults((0, "start"), (1000, "ready"), (60_000, "stop"), (61_000, "start"), (62_000, "ready"))
    assert not scheduler_duplicate_allowed(graceful, 59_999, 63_000, 10_000, 10_000, 0)[0]


def test_a_kill_before_the_first_flush_allows_everything_since_the_last_graceful_stop():
    faults = _faults((0, "start"), (1000, "ready"), (30_000, "stop"), (31_000, "start"), (32_000, "ready"),
                     (35_000, "kill"), (36_000, "start"), (37_000, "ready"))
    assert scheduler_duplicate_allowed(faults, 32_500, 38_000, 10_000, 10_000, 0)[0]
    assert not scheduler_duplicate_allowed(faults, 29_000, 38_000, 10_000, 10_000, 0)[0]


@given(ms, ms, ms, outages(), st.integers(0, 5000))
def test_the_indexed_widening_equals_the_rule(anchor_off, delay, extra, outs, slack):
    from hourglass.reference.windows import OutageIndex

    anchor = T0 + anchor_off
    w = window(anchor, anchor + delay, anchor + delay + extra + slack, outs, 1000, slack)
    assert OutageIndex(outs, 1000, slack).widen(anchor, anchor + delay, anchor + delay + extra + slack) == (w.latest_ms, w.widened_by)
