"""The harness's own suites catch every defect of the simulated broker, end to end.

The conformance and chaos catalogues run through the real runner and batch (virtual time) on the
clean simulator and on one simulator per injected defect; all runs are checked in one Spark job.
The clean simulator must conform on every scenario (no false failure), and for each defect some
scenario must fail the invariant that names it (the defect is caught).
"""

from __future__ import annotations

import pytest

from adapters.simulated.defects import Defect
from harness.batch import BatchOptions, run_batch
from harness.systems import SystemSpec
from harness.verdicts import assert_conforms, describe
from harness.catalogue.chaos import NIGHTLY
from harness.catalogue.conformance import CONFORMANCE

DEFECTS = list(Defect)


@pytest.fixture(scope="module")
def verdicts_by_system(tmp_path_factory):
    from reports.check import check_runs

    out = tmp_path_factory.mktemp("defects")
    runs = {}
    for d in [None] + DEFECTS:
        spec = "simulated" if d is None else f"simulated[{d.slug}]"
        results, errors = run_batch(list(CONFORMANCE + NIGHTLY), BatchOptions(SystemSpec(spec), out / (d.slug if d else "clean"), progress=False))
        assert not errors, errors
        runs[d] = [r for r in results if not r.skipped]
    verdicts = {v["run_id"]: v for v in check_runs([r.run_dir for rs in runs.values() for r in rs])}
    return {d: [verdicts[r.run_id] for r in rs] for d, rs in runs.items()}


def test_clean_simulator_conforms_on_every_suite_scenario(verdicts_by_system):
    clean = verdicts_by_system[None]
    assert len(clean) == len(CONFORMANCE + NIGHTLY)
    for v in clean:
        assert_conforms(v)


@pytest.mark.parametrize("defect", DEFECTS, ids=lambda d: d.slug)
def test_suites_catch_the_defect(defect, verdicts_by_system):
    verdicts = verdicts_by_system[defect]
    caught = [v["run_id"] for v in verdicts if v["invariants"][defect.invariant]["passed"] is False]
    assert caught, f"no suite scenario failed {defect.invariant} with {defect.slug} injected:\n" + "\n".join(describe(v) for v in verdicts)
