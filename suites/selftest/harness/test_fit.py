"""Fitting a scenario to a cluster that runs another table (``harness.fit``): levels by their role,
the budget, what is left out and why, and the anchors that follow their level."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hourglass.harness.catalogue.conformance import CONFORMANCE
from hourglass.harness.fit import fit_to_broker, level_by_role
from hourglass.harness.scenario import DEFAULT_LEVELS, ConsumerGroup, FaultAnchor, FaultStep, Message, Profile, Scenario
from hourglass.harness.summary import scenario_wait_ms
from hourglass.reference.levels import parse_level_table

DEFAULT = {"messageDelayLevel": DEFAULT_LEVELS, "flushDelayOffsetInterval": "10000"}


def by_name(name: str) -> Scenario:
    return next(s for s in CONFORMANCE if s.name == name)


@given(st.integers(-3, 40), st.integers(1, 18), st.integers(1, 30))
def test_a_level_keeps_its_role(level, n_from, n_to):
    got = level_by_role(level, n_from, n_to)
    if level <= 0:
        assert got == level  # not delayed
    elif level > n_from:
        assert got > n_to  # above the maximum: still clamped
    elif level == n_from:
        assert got == n_to  # the longest
    else:
        assert 1 <= got <= n_to and (got == level or got < n_to or n_to == 1)  # the same number, a middle one, or the only one


def test_the_same_profile_changes_nothing():
    s = by_name("each-level")
    f = fit_to_broker(s, {"messageDelayLevel": s.profile.message_delay_level, "flushDelayOffsetInterval": "10000"})
    assert f.scenario is s and not f.changes


def test_the_default_table_keeps_what_fits_and_says_what_it_left_out():
    f = fit_to_broker(by_name("each-level"), DEFAULT, max_wait_ms=45_000)
    assert f.scenario.profile.message_delay_level == DEFAULT_LEVELS
    assert sorted({m.delay_level for m in f.scenario.messages}) == [1, 2, 3, 4]
    assert len(f.left_out) == 28 and f.left_out[0].startswith("L05-0: done after 60 s")
    assert scenario_wait_ms(f.scenario) <= 45_000 + f.scenario.drain_margin_ms


def test_nothing_that_fits_is_a_reason_not_to_run():
    f = fit_to_broker(by_name("dlq-default"), DEFAULT)
    assert f.scenario is None and "no message of it is done within 10 min" in f.reason


def test_retries_use_the_brokers_table_for_the_budget():
    f = fit_to_broker(by_name("retry-then-ok"), DEFAULT, max_wait_ms=45_000)
    # LATER once: retry level 3 (10 s); twice: + level 4 (30 s) = 40 s; four times: 3 min 40 s
    assert {m.key for m in f.scenario.messages} == {"R1-0", "R1-1", "R2-0", "R2-1"}


def test_an_anchor_follows_its_level_and_a_level_left_empty_is_a_reason():
    def scenario(anchor_level: int) -> Scenario:
        msgs = (Message("a", "T", delay_level=2), Message("b", "T", at_ms=100, delay_level=4))
        return Scenario("anch", msgs, (ConsumerGroup("g", ("T",)),),
                        faults=(FaultStep(0, "kill_restart", after=FaultAnchor("reput", level=anchor_level)),),
                        profile=Profile(message_delay_level="1s 2s 3s 4s"))

    f = fit_to_broker(scenario(2), DEFAULT)  # level 2 keeps its number; level 4, the longest, is 18 (2 h)
    assert [m.key for m in f.scenario.messages] == ["a"] and f.scenario.faults[0].after.level == 2
    f = fit_to_broker(scenario(4), DEFAULT)  # its anchor's level kept no message: the step cannot be reached
    assert f.scenario is None and "fault step 0 waits for re-puts of level 4 (the broker's 18)" in f.reason


def test_the_flush_interval_comes_from_the_broker():
    s = by_name("level-zero")
    f = fit_to_broker(s, {"messageDelayLevel": s.profile.message_delay_level, "flushDelayOffsetInterval": "5000"})
    assert f.scenario.profile.flush_delay_offset_interval_ms == 5000 and "flushDelayOffsetInterval" in f.changes[0]


@pytest.mark.parametrize("scenario", CONFORMANCE, ids=lambda s: s.name)
def test_every_fitted_catalogue_scenario_is_valid_and_within_budget(scenario):
    from hourglass.harness.scenario import validate_scenario

    f = fit_to_broker(scenario, DEFAULT)
    if f.scenario is None:
        assert scenario.name in ("above-max", "dlq-default")
        return
    validate_scenario(f.scenario)
    table = parse_level_table(DEFAULT_LEVELS)
    assert all(m.delay_level <= table.max_level or scenario.name == "custom-table" for m in f.scenario.messages)
    assert scenario_wait_ms(f.scenario) <= 600_000 + f.scenario.drain_margin_ms


def test_the_limits_are_the_brokers_own_on_a_cluster_the_harness_did_not_configure():
    """A limits scenario on a staging cluster that runs the default maxMessageSize and
    timerMaxDelaySec: the model judges by the broker's (a body over the scenario's 64 KiB is taken
    there), and the change is said."""
    from hourglass.harness.catalogue.limits import body_sizes

    s = body_sizes()
    f = fit_to_broker(s, {"messageDelayLevel": s.profile.message_delay_level, "flushDelayOffsetInterval": "10000",
                          "maxMessageSize": "4194304", "timerMaxDelaySec": "259200"})
    assert f.scenario.profile.max_message_size == 4194304 and f.scenario.profile.timer_max_delay_sec == 259200
    assert any("maxMessageSize: the broker's 4194304 instead of the scenario's 65536" in c for c in f.changes)
