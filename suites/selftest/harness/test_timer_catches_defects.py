"""The timer suite catches every timer-store defect of the simulated broker, each by at least two of
its scenarios, and the clean simulator conforms on all of them (no false failure). Its catalogue is
a pairwise cover of reference.timer_axes, CI's short set has every stop kind, and both fit their
time budgets."""

from __future__ import annotations

import pytest

from hourglass.harness.catalogue.pairwise import all_pairs, pairs_of
from hourglass.harness.catalogue.timer import FULL, FULL_COORDINATES, SHORT
from hourglass.harness.scenario import validate_scenario
from hourglass.harness.summary import scenario_wait_ms
from hourglass.harness.verdicts import assert_conforms
from hourglass.reference.timer_axes import AXES, Stop
from suites.selftest.harness.defect_runs import TIMER_DEFECTS, assert_caught_twice, verdicts_by_defect


def test_full_is_a_pairwise_cover_and_short_has_every_stop():
    axes = [list(a) for a in AXES]
    assert set().union(*(pairs_of(c.values()) for c in FULL_COORDINATES)) == all_pairs(axes)
    assert {s.name.split("-")[3] for s in SHORT} == {v.value for v in Stop}
    for s in FULL:
        validate_scenario(s)
    assert sum(scenario_wait_ms(s) for s in SHORT) < 4 * 60_000
    assert sum(scenario_wait_ms(s) for s in FULL) < 15 * 60_000


@pytest.fixture(scope="module")
def verdicts_by_system(tmp_path_factory):
    return verdicts_by_defect(FULL, TIMER_DEFECTS, tmp_path_factory.mktemp("timer"))


def test_clean_simulator_conforms_on_every_timer_scenario(verdicts_by_system):
    clean = verdicts_by_system[None]
    assert len(clean) == len(FULL)
    for v in clean:
        assert_conforms(v)


@pytest.mark.parametrize("defect", TIMER_DEFECTS, ids=lambda d: d.slug)
def test_timer_suite_catches_the_defect_twice(defect, verdicts_by_system):
    assert_caught_twice(defect, verdicts_by_system[defect], "timer")
