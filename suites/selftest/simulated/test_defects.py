"""Every defect of the simulator's catalogue is caught by the invariant that names it, and the
clean simulator passes the very scenario that exposes it (so the catch is the defect's doing)."""

from __future__ import annotations

import pytest

from hourglass.adapters.simulated.defects import Defect, parse_defects
from hourglass.reference.contract import INVARIANTS
from hourglass.reports.judge_run import violations
from suites.selftest.simulated.driver import run_scenario
from suites.selftest.simulated.scenarios import LEVELS, exposing


@pytest.mark.parametrize("defect", list(Defect), ids=lambda d: d.slug)
def test_defect_is_caught_by_its_invariant(defect, tmp_path):
    sends, faults, options = exposing(defect)
    broken = run_scenario(tmp_path / "broken", sends, faults, levels=LEVELS, defects=(defect,), **options)
    found = violations(broken.run, broken.events)
    assert defect.invariant in found, f"{defect.slug}: expected {defect.invariant} to fail, violations: {found}"


@pytest.mark.parametrize("defect", list(Defect), ids=lambda d: d.slug)
def test_clean_simulator_passes_the_exposing_scenario(defect, tmp_path):
    sends, faults, options = exposing(defect)
    clean = run_scenario(tmp_path / "clean", sends, faults, levels=LEVELS, **options)
    assert violations(clean.run, clean.events) == {}


def test_each_defect_names_a_catalogue_invariant_and_says_what_it_breaks():
    for d in Defect:
        assert d.invariant in INVARIANTS
        assert d.value.what and d.value.exposed_by


def test_defects_are_found_by_slug_or_name_and_unknown_names_are_refused():
    assert parse_defects(["early-delivery", "SKIPPED_DLQ"]) == {Defect.EARLY_DELIVERY, Defect.SKIPPED_DLQ}
    with pytest.raises(ValueError, match="unknown defect 'lazy-delivery'.*early-delivery"):
        parse_defects(["lazy-delivery"])
