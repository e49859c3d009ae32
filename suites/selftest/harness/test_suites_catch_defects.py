"""The harness's own suites catch every defect of the simulated broker, end to end.

The conformance and chaos catalogues run through the real runner and batch (virtual time) on the
clean simulator and on one simulator per injected defect (each running the scenarios its defect can
reach: a POP defect the POP and gRPC scenarios, every other defect the rest: ``defect_runs.reaches``); all runs are checked in one Spark job.
The clean simulator must conform on every scenario (no false failure), and for each defect some
scenario must fail the invariant that names it (the defect is caught) — or the defect is one of
the persistence suite's, which ``test_persistence_catches_defects`` shows caught by two of its
scenarios each.
"""

from __future__ import annotations

import pytest

from hourglass.adapters.simulated.defects import Defect
from hourglass.harness.verdicts import assert_conforms, describe
from hourglass.adapters.simulated.system import SIMULATED_CLUSTERS
from hourglass.harness.catalogue.chaos import NIGHTLY
from hourglass.harness.catalogue.conformance import CONFORMANCE
from suites.selftest.harness.defect_runs import (PERSISTENCE_DEFECTS, POP_DEFECTS, TIMER_DEFECTS, assert_caught_twice, reaches,
                                                 verdicts_by_defect)

DEFECTS = list(Defect)


#: what the simulator runs: one broker, or a master and its slave (two masters and controller mode: real brokers only)
SIMULATED = tuple(s for s in NIGHTLY if s.profile.cluster in SIMULATED_CLUSTERS)


@pytest.fixture(scope="module")
def verdicts_by_system(tmp_path_factory):
    return verdicts_by_defect(CONFORMANCE + SIMULATED, DEFECTS, tmp_path_factory.mktemp("defects"), reaches=reaches)


def test_clean_simulator_conforms_on_every_suite_scenario(verdicts_by_system):
    clean = verdicts_by_system[None]
    assert len(clean) == len(CONFORMANCE + SIMULATED)
    for v in clean:
        assert_conforms(v)


@pytest.mark.parametrize("defect", DEFECTS, ids=lambda d: d.slug)
def test_suites_catch_the_defect(defect, verdicts_by_system):
    verdicts = verdicts_by_system[defect]
    caught = [v["run_id"] for v in verdicts if v["invariants"][defect.invariant]["passed"] is False]
    if not caught and defect in PERSISTENCE_DEFECTS:
        pytest.skip(f"{defect.slug}: not reached by conformance or chaos; caught by the persistence suite "
                    "(test_persistence_catches_defects)")
    if not caught and defect in TIMER_DEFECTS:
        pytest.skip(f"{defect.slug}: not reached by conformance or chaos; caught by the timer suite "
                    "(test_timer_catches_defects)")
    assert caught, f"no suite scenario failed {defect.invariant} with {defect.slug} injected:\n" + "\n".join(describe(v) for v in verdicts)
    if defect in POP_DEFECTS:  # issue 23: each POP defect by two scenarios at least
        assert_caught_twice(defect, verdicts, "conformance and chaos")
