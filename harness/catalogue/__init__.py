"""The scenario catalogues, shipped with the package so ``--suite`` and the pytest plugin work
outside a checkout: ``conformance`` (every rule of the model), ``chaos`` (faults: ``SHORT`` and
``NIGHTLY``), ``persistence`` (the schedule offset's life at a stop: ``SHORT`` and ``FULL``), ``timer`` (the
5.x timer store's life at a stop: ``SHORT`` and ``FULL``), ``limits`` (every input at its edges,
part of conformance) and
``generate`` (hypothesis strategies and the seeded ``sample`` of the nightly job).
The test modules that run them stay in ``suites/``."""

from __future__ import annotations

import re

#: a generated scenario's name: ``gen-<seed>-<n>`` (the nightly sample), ``generated[-NNNN]``
#: (hypothesis examples run on the fly)
_GENERATED = re.compile(r"^(gen-\d+-\d+|generated(-\d+)?)$")


def suite_of(scenario_name: str) -> str | None:
    """The catalogue a scenario comes from, by its name (``conformance``, ``chaos``, ``generated``),
    or None for a scenario of no catalogue (a file, a test's own): JUnit names and ``run.json``."""
    from hourglass.harness.catalogue.chaos import NIGHTLY
    from hourglass.harness.catalogue.conformance import CONFORMANCE
    from hourglass.harness.catalogue.persistence import FULL, FULL_ASYNC
    from hourglass.harness.catalogue.timer import FULL as TIMER

    if any(s.name == scenario_name for s in CONFORMANCE):
        return "conformance"
    if any(s.name == scenario_name for s in NIGHTLY):
        return "chaos"
    if any(s.name == scenario_name for s in FULL + FULL_ASYNC):
        return "persistence"
    if any(s.name == scenario_name for s in TIMER):
        return "timer"
    return "generated" if _GENERATED.match(scenario_name) else None
