"""The shipped state machine (:mod:`harness.stateful`) run on the simulated broker: every step keeps
the safety invariants, and with a defect injected the machine finds it."""

from __future__ import annotations

import pytest

from hypothesis import Phase, settings
from hypothesis.stateful import run_state_machine_as_test

from hourglass.adapters.simulated import open_simulated
from hourglass.harness.stateful import BrokerMachine

STEPS = 25
#: made at import, under the profile suites/properties/conftest.py loads (ci: derandomized)
SETTINGS = settings(stateful_step_count=STEPS)


def simulated(defects: tuple[str, ...] = ()):
    return lambda profile: open_simulated(profile, defects=defects, seed=0)


def test_the_simulated_broker_keeps_every_invariant():
    run_state_machine_as_test(lambda: BrokerMachine(simulated()), settings=SETTINGS)


@pytest.mark.parametrize("defect,invariant", [("early-delivery", "NOT_EARLY"), ("wrong-retry-level", "NOT_EARLY"),
                                               ("lost-reput-on-write-failure", "NO_LOSS")])
def test_the_machine_finds_an_injected_defect(defect, invariant):
    """Generation only (shrinking a stateful failure takes minutes): the defect must be found."""
    with pytest.raises((AssertionError, BaseExceptionGroup)) as e:
        run_state_machine_as_test(lambda: BrokerMachine(simulated((defect,))),
                                  settings=settings(stateful_step_count=STEPS, max_examples=300, database=None,
                                                    phases=(Phase.explicit, Phase.generate)))
    assert invariant in str(e.value) or any(invariant in str(x) for x in getattr(e.value, "exceptions", ()))
