"""The chaos suite: the contract holds through faults, within the model's tolerances.

``SHORT`` scenarios are part of the main job and of CI; the rest are ``slow`` (nightly).
"""

from __future__ import annotations

import pytest

from hourglass.harness.verdicts import assert_conforms
from hourglass.harness.catalogue.chaos import NIGHTLY, SHORT

pytestmark = pytest.mark.chaos
_short = {s.name for s in SHORT}


@pytest.mark.parametrize(
    "scenario",
    [pytest.param(s, marks=[pytest.mark.main] if s.name in _short else [pytest.mark.slow]) for s in NIGHTLY],
    ids=lambda s: s.name,
)
def test_survives(scenario, hg_verdict):
    if hg_verdict.get("skipped"):
        pytest.skip(hg_verdict["skipped"])
    assert_conforms(hg_verdict)
