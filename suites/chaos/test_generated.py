"""Generated chaos scenarios (hypothesis): workloads, plans and fault schedules nobody wrote by hand.

On the simulated broker (CI): the clean model-as-broker must conform on every generated scenario,
with shrinking. On a real broker (nightly, ``slow``): the same strategies only generate, with a
fixed seed per night (``HOURGLASS_SEED``), and each scenario is run and checked afterwards.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from harness.verdicts import assert_conforms
from harness.catalogue.generate import chaos_scenarios, sample

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
@pytest.mark.parametrize("scenario", sample(int(os.environ.get("HOURGLASS_SEED", "1")), int(os.environ.get("HOURGLASS_GENERATED_COUNT", "6"))),
                         ids=lambda s: s.name)
def test_real_broker_conforms_on_generated_chaos(scenario, hg_verdict):
    assert_conforms(hg_verdict)
