"""The persistence suite: the schedule offset survives every stop in every state the axes name.

``SHORT`` scenarios run in CI (newest 4.9.x and 5.x); the rest of the pairwise ``FULL`` set, and
the same cover with asynchronous delivery (``FULL_ASYNC``), is ``slow`` (nightly). Every scenario
injects broker faults, so each gets its own broker.
"""

from __future__ import annotations

import pytest

from hourglass.harness.verdicts import assert_conforms
from suites.persistence.scenarios import FULL, FULL_ASYNC, SHORT

pytestmark = pytest.mark.persistence
_short = {s.name for s in SHORT}


@pytest.mark.parametrize(
    "scenario",
    [pytest.param(s, marks=[] if s.name in _short else [pytest.mark.slow]) for s in FULL + FULL_ASYNC],
    ids=lambda s: s.name,
)
def test_offsets_survive(scenario, hg_verdict):
    if hg_verdict.get("skipped"):
        pytest.skip(hg_verdict["skipped"])
    assert_conforms(hg_verdict)
