"""The fault families (``reference.faults``) hold together, and what derives from them follows: a
family added inconsistently (a step expanding into another family's primitive, a heal that names no
primitive, a verb the simulator lacks, a parameter no step takes) fails here, not in a run."""

from __future__ import annotations

import pytest

from hourglass.adapters.base import BrokerProfile
from hourglass.adapters.simulated import open_simulated
from hourglass.harness.scenario import FAULT_ACTIONS_SCHEDULABLE, FaultStep, scenario_schema
from hourglass.reference import faults as kinds
from hourglass.reference.contract import EVENT_FIELDS, FAULT_ACTIONS
from hourglass.reference.faults.process import START
from hourglass.reports.judge_columnar import FAULT_FIELDS

FAMILIES = kinds.families()


def test_the_registry_finds_every_family_module_in_rank_order():
    assert [f.name for f in FAMILIES] == ["process", "cpu", "disk", "io", "network", "clock"]
    assert [f.rank for f in FAMILIES] == sorted(f.rank for f in FAMILIES)


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_a_family_expands_into_its_own_primitives_and_heals_with_them(family):
    own = {p.action for p in family.primitives}
    for step in family.steps:  # a start is no fault of its own: a throttled_start starts the broker
        assert set(kinds.expansion(step.action)) - {START} <= own, step.action
    for p in family.primitives:
        assert p.heals is None or p.heals in own, p


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_every_parameter_is_taken_by_a_step_of_its_family(family):
    taken = {name for step in family.steps for name in step.params}
    assert {p.name for p in family.params} == taken


def test_the_scenario_schema_and_the_fault_step_carry_every_step_and_parameter():
    fault = scenario_schema()["$defs"]["fault"]["properties"]
    assert fault["action"]["enum"] == list(FAULT_ACTIONS_SCHEDULABLE) == list(kinds.schedulable())
    for p in kinds.params():
        assert fault[p.name]["minimum"] == p.low and fault[p.name]["maximum"] == p.high
        assert getattr(FaultStep(0, "kill"), p.name) == 0


def test_the_event_contract_and_the_checker_columns_carry_every_family_field():
    names = {f.name for f in EVENT_FIELDS["fault"]}
    for name, _, _ in kinds.event_fields():
        assert name in names and name in FAULT_FIELDS
    assert set(kinds.event_actions()) <= set(FAULT_ACTIONS)


def test_the_simulated_broker_performs_every_family_verb():
    system = open_simulated(BrokerProfile())
    for family in FAMILIES:
        for p in family.primitives:
            if p.verb is not None:
                assert system.cannot(p.action, "broker") is None, p.action
                faculty = system.part("broker").faculties[p.action]
                assert callable(getattr(faculty, p.verb)), (family.name, p.verb)


def test_a_system_is_asked_about_every_primitive_a_step_needs_heals_included():
    assert kinds.step_primitives("disk_full") == ("disk_full", "disk_free")
    assert kinds.step_primitives("clock_drift") == ("clock_drift", "clock")
    assert kinds.step_primitives("slow_start") == ("start_paused", "resume")
    assert kinds.setup_needed([FaultStep(0, "clock_drift", duration_ms=1, rate_permille=5)]) == {"own_clock",
                                                                                                 "drifting_clock"}
