"""The broker's clock stepped by a scenario (reference.clock): ahead re-puts early, back re-puts late
or at once (correctDeliverTimestamp), store times read back as true times, and the windows of the
model only widen."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from reference.clock import MAX_CLOCK_STEP_MS, BrokerClock, Step, on_true_clock, waiting_levels

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
