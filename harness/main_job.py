"""The main job's tests (``python -m hourglass main``): the conformance catalogue and the short chaos
set, one test per scenario. Shipped with the package (the installed CLI has no ``suites/``); pytest
collects it because the CLI names the file. ``suites/conformance`` and ``suites/chaos`` run the same
catalogues in a checkout."""

from __future__ import annotations

import pytest

from hourglass.harness.catalogue.chaos import SHORT
from hourglass.harness.catalogue.conformance import CONFORMANCE
from hourglass.harness.verdicts import assert_conforms


SCENARIOS = [pytest.param(s, marks=pytest.mark.conformance) for s in CONFORMANCE] + [pytest.param(s, marks=pytest.mark.chaos) for s in SHORT]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
def test_main_job(scenario, hg_verdict):
    if hg_verdict.get("skipped"):
        pytest.skip(hg_verdict["skipped"])
    assert_conforms(hg_verdict)
