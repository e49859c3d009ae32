"""The schedule offset's life (``reference.persistence_axes``) and the anchored wait estimate
(``harness.summary.fault_times_ms``): the rules the persistence suite is built on."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from hourglass.harness.catalogue.persistence import FLUSH_INTERVAL_MS, SHORT
from hourglass.harness.scenario import ConsumerGroup, FaultAnchor, FaultStep, Message, Profile, Scenario
from hourglass.harness.summary import READY_ESTIMATE_MS, fault_times_ms, scenario_wait_ms
from hourglass.reference.persistence_axes import (AXES, Coordinates, LevelOffsets, Stop, enqueue, expected, flush, reput,
                                        repeated_after_restart, start, stop)

STEPS = st.lists(st.sampled_from(("enqueue", "reput", "flush")), max_size=40)


def _run(steps) -> LevelOffsets:
    s = LevelOffsets()
    for step in steps:
        s = {"enqueue": enqueue, "reput": reput, "flush": flush}[step](s)
    return s


@given(STEPS)
def test_a_running_broker_never_persists_ahead_of_memory_nor_re_puts_past_the_queue(steps):
    s = _run(steps)
    assert 0 <= s.persisted <= s.in_memory == s.reput <= s.cq_max


@given(STEPS, st.sampled_from(list(Stop)))
def test_a_graceful_stop_repeats_nothing_and_a_kill_repeats_exactly_what_was_not_persisted(steps, how):
    at_stop = _run(steps)
    repeated = repeated_after_restart(at_stop, how)
    assert repeated == (0 if how is Stop.GRACEFUL else at_stop.unpersisted())
    resumed = start(stop(at_stop, how))
    assert resumed.in_memory == resumed.persisted <= at_stop.in_memory  # resumes at the persisted offset, never past


def test_expectations_follow_the_stop_and_no_state_allows_a_loss():
    for values in itertools.product(*[list(a) for a in AXES]):
        c = Coordinates.of(values)
        e = expected(c)
        assert e.persisted_equals_memory == (c.stop is Stop.GRACEFUL)
        assert e.duplicates_allowed == (c.stop is not Stop.GRACEFUL)
        assert not e.loss_allowed and e.resumes_at_persisted
        assert c.name == "persist-" + "-".join(v.value for v in values)


def _anchored(*faults: FaultStep, flush_ms: int = 2_000) -> Scenario:
    msgs = tuple(Message(f"m{i}", "T", at_ms=i * 1_000, delay_level=3) for i in range(5))
    return Scenario("est", msgs, (ConsumerGroup("g", ("T",)),), faults=faults,
                    profile=Profile(message_delay_level="1s 2s 3s", flush_delay_offset_interval_ms=flush_ms))


def test_a_flush_anchor_is_estimated_no_earlier_than_the_first_persist_after_the_start():
    # ready of the setup counts as time 0: the first persist comes 10 s after it, then every 2 s
    (fired, _), = fault_times_ms(_anchored(FaultStep(0, "kill_restart", after=FaultAnchor("flush", count=1))))
    assert fired == 10_000
    (fired, _), = fault_times_ms(_anchored(FaultStep(500, "kill_restart", after=FaultAnchor("flush", count=3))))
    assert fired == 10_000 + 2 * 2_000 + 500


def test_a_reput_anchor_is_estimated_at_the_count_th_due_message_of_its_level():
    # level 3 = 3 s; messages sent at 0, 1, 2, 3, 4 s fall due at 3, 4, 5, 6, 7 s
    (fired, _), = fault_times_ms(_anchored(FaultStep(100, "kill", after=FaultAnchor("reput", level=3, count=2))))
    assert fired == 4_000 + 100


def test_a_ready_anchor_waits_for_a_start_and_the_wait_covers_it():
    sc = _anchored(FaultStep(0, "kill_restart", after=FaultAnchor("reput", level=3, count=1)),
                   FaultStep(1_000, "kill_restart", after=FaultAnchor("ready")))
    (first, _), (second, _) = fault_times_ms(sc)
    assert second == first + READY_ESTIMATE_MS + 1_000
    assert scenario_wait_ms(sc) >= second + READY_ESTIMATE_MS  # the second start's ready is waited for too


def test_the_short_persistence_suite_uses_the_short_flush_interval():
    assert {s.profile.flush_delay_offset_interval_ms for s in SHORT} == {FLUSH_INTERVAL_MS}
