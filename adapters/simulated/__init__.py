"""The reference model run as a broker in virtual time, behind the adapter protocol, with
injectable defects (:mod:`adapters.simulated.defects`).

    system = open_simulated(BrokerProfile(), defects=("early-delivery",), seed=7)
    system.setup()
    ...  # the harness runner drives it like any other system; system.clock is virtual
"""

from __future__ import annotations

from typing import Iterable

from adapters.base import BrokerProfile
from adapters.simulated.defects import Defect, DefectInfo, parse_defects
from adapters.simulated.system import SimulatedSystem

#: A fixed virtual epoch (2025-11-22T08:26:40Z), so runs with the same seed are byte-identical.
DEFAULT_START_MS = 1_763_800_000_000

__all__ = ["open_simulated", "SimulatedSystem", "Defect", "DefectInfo", "parse_defects", "DEFAULT_START_MS"]


def open_simulated(profile: BrokerProfile, defects: Iterable = (), seed: int = 0,
                   start_ms: int = DEFAULT_START_MS, **options) -> SimulatedSystem:
    """A simulated broker system (not set up yet: call ``setup()``). ``defects``: names or
    :class:`Defect` members. ``options``: ``put_failure_rate`` (re-put writes that fail),
    ``send_back_failure_rate`` (consumer send-backs and client re-sends that fail),
    ``unknown_stored_rate`` (sends to a paused broker stored at resume), ``timers`` (5.x timer
    messages; False behaves as 4.x), ``version``."""
    return SimulatedSystem(profile, parse_defects(defects), seed, start_ms, **options)
