"""The broker's clock stepped by a scenario (reference.clock): ahead re-puts early, back re-puts late
or at once (correctDeliverTimestamp), store times read back as true times, and the windows of the
model only widen."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hourglass.reference.clock import DRIFT_ANCHOR_MS, MAX_CLOCK_RATE_PERMILLE, MAX_CLOCK_STEP_MS, BrokerClock, Step, on_true_clock, waiting_levels

T0 = 1_763_800_000_000
steps_ms = st.integers(-MAX_CLOCK_STEP_MS, MAX_CLOCK_STEP_MS).filter(bool)


def one_step(at: int, offset: int, settle: int = 0) -> BrokerClock:
    return BrokerClock((Step(at, at + settle, offset),))


@st.composite
def clocks(draw):
    t, steps = T0, []
    for _ in range(draw(st.integers(1, 3))):
        t += draw(st.integers(1, 60_000))
        settle = draw(st.integers(0, 2_000))
        steps.append(Step(t, t + settle, draw(steps_ms)))
        t += settle
    return BrokerClock(tuple(steps))


@given(st.integers(0, 100_000), st.integers(0, 20_000), st.integers(1, 60_000))
def test_a_step_ahead_re_puts_what_waits_early_by_the_step_never_before_the_step(stored_off, delay, ahead):
    step_at = T0 + 50_000
    stored = T0 + stored_off
    lo, hi = one_step(step_at, ahead).due_range(stored, stored, delay)
    due = stored + delay
    expect = due if stored >= step_at or due <= step_at else max(step_at, due - ahead)
    assert lo == hi == expect


@given(st.integers(20_000, 120_000), st.integers(0, 20_000), st.integers(1, 60_000))
def test_a_step_back_re_puts_late_by_the_step_or_at_once_when_stored_within_it(stored_off, delay, back):
    step_at = T0 + 50_000
    stored = T0 + stored_off
    lo, hi = one_step(step_at, -back).due_range(stored, stored, delay)
    due = stored + delay
    if stored >= step_at:  # what the level held at the step may hold it, until step + delay + back
        assert lo == due and hi == max(due, step_at + delay + back)
    elif due <= step_at:
        assert lo == hi == due
    elif step_at - stored < back:  # the broker's clock went back below the store time: due at once
        assert lo == step_at and hi == due + back
    else:
        assert lo == hi == due + back


@given(clocks(), st.integers(0, 300_000), st.integers(0, 5_000), st.integers(0, 20_000))
def test_steps_make_it_late_by_at_most_their_sizes_and_never_due_before_the_store(clock, stored_off, spread, delay):
    lo_store = T0 + stored_off
    lo, hi = clock.due_range(lo_store, lo_store + spread, delay)
    offsets = [0] + [s.offset_ms for s in clock.steps]
    back = sum(abs(b - a) for a, b in zip(offsets, offsets[1:]))  # each step moves it at most its size
    assert lo_store <= lo <= hi  # a step back may make it due at once (corrected), never before its store
    settle = sum(s.settled_ms - s.ts_ms for s in clock.steps)  # when in its settling the step landed
    assert hi <= lo_store + spread + delay + back + settle
    no_steps = BrokerClock(())
    assert no_steps.due_range(lo_store, lo_store + spread, delay) == (lo_store + delay, lo_store + spread + delay)


@given(clocks(), st.integers(0, 300_000))
def test_a_store_time_read_back_is_the_true_moment_it_was_stored(clock, off):
    t = T0 + off
    for late in (False, True):
        if any(s.ts_ms < t < s.settled_ms for s in clock.steps):
            continue  # inside a step's settling: either offset may have been in force
        assert clock.true_ms(clock.broker_ms(t, late), before_ms=t) == t


def test_deliveries_are_rewritten_only_in_runs_whose_clock_moved():
    steady = [{"type": "deliver", "ts_ms": T0 + 10, "store_ms": T0 + 5}]
    assert on_true_clock(steady) is steady
    moved = [{"type": "fault", "ts_ms": T0, "action": "clock", "target": "broker", "offset_ms": 4000, "settled_ms": T0},
             {"type": "deliver", "ts_ms": T0 + 10, "store_ms": T0 + 4005}, {"type": "send", "ts_ms": T0 + 1}]
    got = on_true_clock(moved)
    assert got[1]["store_ms"] == T0 + 5 and got[2] == moved[2] and moved[1]["store_ms"] == T0 + 4005


@given(st.integers(0, 40_000), st.integers(1, 20_000), st.integers(1, 60_000), st.integers(1, 18))
def test_after_a_step_back_only_the_levels_that_held_entries_hold_what_comes_later(after, delay, back, level):
    """Entries of a level waiting at a step back are due by step + delay + back and hold what is
    stored after the step; a level that held nothing re-puts it on time."""
    step_at = T0 + 50_000
    stored = step_at + after
    held = BrokerClock((Step(step_at, step_at, -back, frozenset({level})),))
    lo, hi = held.due_range(stored, stored, delay, level)
    assert lo == stored + delay and hi == max(stored + delay, step_at + delay + back)
    empty = BrokerClock((Step(step_at, step_at, -back, frozenset({level + 1})),))
    assert empty.due_range(stored, stored, delay, level) == (stored + delay, stored + delay)


def test_waiting_levels_are_the_sent_and_retried_not_yet_delivered():
    events = [{"type": "send", "key": "a", "delay_level": 2, "status": "SEND_OK"},
              {"type": "send", "key": "b", "delay_level": 30, "status": "SEND_OK"},  # clamped to 18
              {"type": "send", "key": "c", "delay_level": 5, "status": "FAILED"},
              {"type": "send", "key": "d", "delay_level": 4, "status": "SEND_OK"},
              {"type": "deliver", "key": "d", "group": "g", "reconsume_times": 0, "outcome": "LATER"},
              {"type": "send", "key": "e", "delay_level": 6, "status": "SEND_OK"},
              {"type": "deliver", "key": "e", "group": "g", "reconsume_times": 0, "outcome": "OK"}]
    assert waiting_levels(events, 18, lambda lv: min(lv, 18)) == "2,3,18"  # d's retry 1 waits at level 3


# -- drifts: the broker's clock runs fast or slow for a while (reference.clock) -------------------
rates = st.integers(-MAX_CLOCK_RATE_PERMILLE, MAX_CLOCK_RATE_PERMILLE).filter(bool)


def drift(at: int, rate: int, duration: int) -> BrokerClock:
    """A drift from ``at`` for ``duration``, then the true rate from the offset reached (as the
    harness records it: harness.faults)."""
    start = Step(at, at, 0, rate_permille=rate)
    return BrokerClock((start, Step(at + duration, at + duration, start.offset_ms_at(at + duration), rate_permille=0)))


@given(rates, st.integers(1_000, 60_000), st.integers(0, 100_000))
def test_a_drifting_clock_keeps_increasing_and_its_readings_map_back_to_their_moment(rate, duration, t_off):
    clock = drift(T0 + 10_000, rate, duration)
    t = T0 + t_off
    assert clock.broker_ms(t + 1) >= clock.broker_ms(t)
    assert clock.true_ms(clock.broker_ms(t), before_ms=t) == t
    events = [{"type": "fault", "ts_ms": s.ts_ms, "action": "clock", "offset_ms": s.offset_ms, "rate_permille": s.rate_permille}
              for s in clock.steps] + [{"type": "deliver", "ts_ms": t, "store_ms": clock.broker_ms(t)}]
    assert on_true_clock(events)[-1]["store_ms"] == t  # as the judges read it from the events


@given(rates, st.integers(0, 20_000), st.integers(1, 20_000))
def test_a_drift_through_the_wait_re_puts_when_the_broker_clock_reads_the_due_time(rate, stored_off, delay):
    at = T0 + 10_000
    clock = drift(at, rate, 60_000)  # lasts past every due time drawn here
    stored = at - 10_000 + stored_off
    lo, hi = clock.due_range(stored, stored, delay)
    slack = clock.reading_slack_ms()  # a real broker's line is known to DRIFT_ANCHOR_MS
    assert 0 < slack <= 2 * (abs(rate) * DRIFT_ANCHOR_MS // (1000 + rate) + 1) + 2
    lo, hi = lo + slack, hi - slack
    assert lo == hi  # a drift leaves nothing to chance: no correction, nothing held behind a head
    assert clock.correction_ms(stored, hi) is None
    assert clock.broker_ms(hi) >= clock.broker_ms(stored) + delay > clock.broker_ms(hi - 1)
    on_time = stored + delay
    assert (hi <= on_time) if rate > 0 else (hi >= on_time)  # fast: early in true time; slow: late
    if stored >= at:  # the whole wait drifts: by delay / (1 + r)
        assert abs((hi - stored) - delay * 1000 / (1000 + rate)) <= 1


@given(rates, st.integers(1_000, 30_000))
def test_scenario_refuses_a_drift_beyond_its_bounds(rate, duration):
    from hourglass.harness.scenario import ScenarioError, scenario_from_json
    import pytest

    raw = {"name": "d", "messages": [{"key": "k", "topic": "T", "delay_level": 3}], "consumers": [{"group": "g", "topics": ["T"]}],
           "faults": [{"at_ms": 0, "action": "clock_drift", "rate_permille": rate, "duration_ms": duration}]}
    if abs(rate) * duration > MAX_CLOCK_STEP_MS * 1000:
        with pytest.raises(ScenarioError, match=r"faults\[0\]\.duration_ms"):
            scenario_from_json(raw)
    else:
        assert scenario_from_json(raw).faults[0].rate_permille == rate
    too_fast = dict(raw, faults=[dict(raw["faults"][0], rate_permille=MAX_CLOCK_RATE_PERMILLE + 1)])
    with pytest.raises(ScenarioError, match=r"faults\[0\]\.rate_permille"):
        scenario_from_json(too_fast)


def test_a_reading_a_step_back_repeats_is_judged_late_by_its_earliest_moment():
    """Found by the generated clock chaos: the broker's clock 3003 ms ahead from 2000 to 4000, a
    plain message stored at 2000 reads 5003, which the clock reads again at 5003 after the step
    back. true_ms takes the later (nothing judged early), earliest_true_ms the earlier (ON_TIME does
    not call the copy late on a guess)."""
    clock = BrokerClock.from_faults([{"action": "clock", "target": "broker", "ts_ms": 2000, "offset_ms": 3003},
                                     {"action": "clock", "target": "broker", "ts_ms": 4000, "offset_ms": 0}])
    assert clock.true_ms(5003, 5524) == 5003
    assert clock.earliest_true_ms(5003, 5524) == 2000
    assert clock.earliest_true_ms(1500, 1600) == 1500  # not ambiguous: itself
