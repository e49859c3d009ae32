"""The invariants judged per key, one unit each: the event-at-a-time rule and the columnar fast
path side by side (:class:`reports.invariants.base.Invariant`), as :mod:`reports.offsets` holds
OFFSET_PERSISTENCE and Jepsen's ``checker.clj`` one checker per property.

The catalogue (:data:`reference.contract.INVARIANTS`) is the registration: the unit of invariant
``NAME`` is the module ``reports.invariants.name`` (its ``UNIT``), found by name, in catalogue
order, by both judging paths (:mod:`reports.judge_events`, :mod:`reports.judge_columnar`). The
invariants that span keys are judged per run by their own modules (:data:`PER_RUN`). A new
per-key invariant is its name in the catalogue, its module here, and its line in
``docs/contract.md``.
"""

from __future__ import annotations

from importlib import import_module

from hourglass.reference.contract import INVARIANTS
from hourglass.reports.invariants.base import Invariant

#: Judged per run, across keys, by these modules (not units).
PER_RUN: dict[str, str] = {"LEVEL_ORDER": "hourglass.reports.level_order", "QUEUE_ORDER": "hourglass.reports.queue_order",
                           "OFFSET_PERSISTENCE": "hourglass.reports.offsets"}


def _units() -> tuple[Invariant, ...]:
    units = []
    for name in INVARIANTS:
        if name not in PER_RUN:
            unit = import_module(f"{__name__}.{name.lower()}").UNIT
            if unit.name != name:
                raise ImportError(f"{__name__}.{name.lower()} holds the unit of {unit.name}, not of {name}")
            units.append(unit)
    return tuple(units)


#: Every per-key invariant's unit, in catalogue order: what both judging paths iterate.
UNITS: tuple[Invariant, ...] = _units()


def undecided(violations: list[dict], pending: list[dict], unkeyed: list[dict], run: dict) -> tuple[list[dict], list[dict]]:
    """What the run's recorded circumstances leave undecided of ``violations``, by each unit's own
    rule (:meth:`~reports.invariants.base.Invariant.undecided`: a lagging consumer's NO_LOSS, the
    host's stalls on an ON_TIME's path, the client's re-sends of a message whose send-back failed):
    one call for the checker's driver (:mod:`reports.check`) and the in-process judge
    (:mod:`reports.judge_run`) alike, so both give the same answer for the same run."""
    for unit in UNITS:
        violations, pending = unit.undecided(violations, pending, unkeyed, run)
    return violations, pending
