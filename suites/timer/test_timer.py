"""The timer suite: 5.x timer messages survive every stop in every state the axes name
(reference.timer_axes): nothing lost, late only by the outage, repeated only where the timer
checkpoint the broker restarted from did not cover them (reference.timer.timer_duplicate_allowed).

``SHORT`` scenarios run in CI (newest 5.x); the rest of the pairwise ``FULL`` set is ``slow``
(nightly). Every scenario injects broker faults, so each gets its own broker; a system without
timer messages (4.9.x) skips them.
"""

from __future__ import annotations

import pytest

from hourglass.harness.catalogue.timer import FULL, SHORT
from hourglass.harness.verdicts import assert_conforms

pytestmark = pytest.mark.timer
_short = {s.name for s in SHORT}


@pytest.mark.parametrize("scenario", [pytest.param(s, marks=[] if s.name in _short else [pytest.mark.slow]) for s in FULL],
                         ids=lambda s: s.name)
def test_timers_survive(scenario, hg_verdict):
    if hg_verdict.get("skipped"):
        pytest.skip(hg_verdict["skipped"])
    assert_conforms(hg_verdict)
