"""Generated chaos scenarios (hypothesis): workloads, plans and fault schedules nobody wrote by hand.

On the simulated broker (CI): the clean model-as-broker must conform on every generated scenario,
with shrinking. On a real broker (nightly, ``slow``): the same strategies only generate, with a
fixed seed per night (``HOURGLASS_SEED``), and each scenario is run and checked afterwards.
"""

from __future__ import annotations

import os
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hourglass.reference.cluster import CLUSTERS
from hourglass.harness.verdicts import assert_conforms
from hourglass.harness.catalogue.generate import chaos_scenarios, sample
from hourglass.harness.scenario import FaultStep
from hourglass.reference.clock import CLOCK, CLOCK_DRIFT, MAX_CLOCK_RATE_PERMILLE, MAX_CLOCK_STEP_MS

pytestmark = pytest.mark.chaos


@settings(max_examples=int(os.environ.get("HOURGLASS_GENERATED_EXAMPLES", "12")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large])
@given(scenario=chaos_scenarios())
def test_simulated_broker_conforms_on_generated_chaos(scenario, request):
    hs = request.config._hourglass
    verdict = hs.verdict_now("simulated", scenario)
    assert_conforms(verdict)


@pytest.mark.slow
@pytest.mark.realbroker
@pytest.mark.parametrize("scenario", sample(int(os.environ.get("HOURGLASS_SEED", "1")), int(os.environ.get("HOURGLASS_GENERATED_COUNT", "6")),
                                            CLUSTERS),
                         ids=lambda s: s.name)
def test_real_broker_conforms_on_generated_chaos(scenario, hg_verdict):
    assert_conforms(hg_verdict)


@st.composite
def clock_scenarios(draw):
    """A generated workload whose only faults are one move of the broker's clock — a step (ahead or
    back, undone after a while or at the heal) or a drift (fast or slow for a while, the offset it
    reached undone at the heal) — and name-server outages (reference.clock)."""
    scenario = draw(chaos_scenarios())
    keep = tuple(f for f in scenario.faults if f.target == "namesrv" and f.after is None)
    at = draw(st.integers(500, 6_000))
    if draw(st.booleans()):
        move = FaultStep(at_ms=at, action=CLOCK, offset_ms=draw(st.integers(1_000, 20_000)) * draw(st.sampled_from((1, -1))),
                         duration_ms=draw(st.sampled_from((0, 0, 2_000, 6_000))))
    else:
        rate = draw(st.integers(100, MAX_CLOCK_RATE_PERMILLE)) * draw(st.sampled_from((1, -1)))
        move = FaultStep(at_ms=at, action=CLOCK_DRIFT, rate_permille=rate,
                         duration_ms=draw(st.integers(1_000, min(30_000, MAX_CLOCK_STEP_MS * 1000 // abs(rate)))))
    return replace(scenario, name=scenario.name + ("-clock" if move.action == CLOCK else "-drift"), faults=keep + (move,))


@settings(max_examples=int(os.environ.get("HOURGLASS_GENERATED_EXAMPLES", "12")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large])
@given(scenario=clock_scenarios())
def test_simulated_broker_conforms_with_its_clock_stepped_or_drifting(scenario, request):
    hs = request.config._hourglass
    assert_conforms(hs.verdict_now("simulated", scenario))
