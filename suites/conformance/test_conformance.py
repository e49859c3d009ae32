"""The conformance suite: each rule of the model, run against the system under test.

All scenarios of the session run as one batch (concurrently, sharing a broker) at the first
verdict; each test asserts that its run kept every invariant it exercised.
"""

from __future__ import annotations

import pytest

from hourglass.harness.verdicts import assert_conforms
from hourglass.harness.catalogue.conformance import CONFORMANCE

pytestmark = [pytest.mark.conformance, pytest.mark.main]


@pytest.mark.parametrize("scenario", CONFORMANCE, ids=lambda s: s.name)
def test_conforms(scenario, hg_verdict):
    if hg_verdict.get("skipped"):
        pytest.skip(hg_verdict["skipped"])
    assert_conforms(hg_verdict)
