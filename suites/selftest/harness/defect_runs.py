"""Run scenarios on the clean simulator and on one simulator per defect, and check them all in one
Spark job: the verdicts by defect (``None``: clean), each list in the scenarios' order."""

from __future__ import annotations

import os
from pathlib import Path

from hourglass.adapters.simulated import open_simulated
from hourglass.adapters.simulated.defects import Defect
from hourglass.harness.batch import BatchOptions, run_batch
from hourglass.harness.runner import ScenarioRun
from hourglass.harness.systems import SystemSpec, broker_profile
from hourglass.reference.pop import POP_MODES

#: the defects of the schedule offset's persistence (stale, rewound, lost, and the new classes)
PERSISTENCE_DEFECTS = [
    Defect.DUPLICATE_AFTER_GRACEFUL_RESTART, Defect.OFFSETS_REWOUND_ON_RESTART, Defect.LOST_ON_RESTART,
    Defect.LOST_REPUT_ON_WRITE_FAILURE, Defect.REPUT_OFFSET_FROM_TASK_START, Defect.PERSIST_BEFORE_DELIVERY_STOPS,
    Defect.EMPTY_OFFSETS_PERSISTED_BEFORE_LOAD,
]


#: the defects of the 5.x timer store across a stop (caught by the timer suite)
TIMER_DEFECTS = [Defect.TIMER_CHECKPOINT_IGNORED, Defect.TIMER_LOST_ON_KILL]
#: the defects of POP consumption (reference.pop), each caught by two conformance or chaos scenarios
POP_DEFECTS = [Defect.POP_UNACKED_NEVER_REVIVED, Defect.POP_REVIVE_IGNORES_CHANGE, Defect.POP_COUNT_RESET_ON_RESTART,
               Defect.POP_WRONG_BACKOFF_STEP]


def pops(scenario) -> bool:
    """Whether a scenario's groups consume by POP (remoting or gRPC: reference.pop)."""
    return any(c.mode in POP_MODES for c in scenario.consumers)


def reaches(defect, scenario) -> bool:
    """A POP defect lives in the POP paths only, every other one outside them: each simulator runs
    the scenarios its defect can reach (the clean one runs all)."""
    return (defect in POP_DEFECTS) == pops(scenario)


def verdicts_by_defect(scenarios, defects, out: Path, clean_too=(), reaches=None) -> dict:
    """``clean_too``: more scenarios for the clean simulator only (after ``scenarios``);
    ``reaches(defect, scenario)``: whether a defect's simulator runs the scenario (default: all)."""
    from hourglass.reports.check import check_runs

    runs = simulate(scenarios, defects, out, clean_too, reaches)
    verdicts = {v["run_id"]: v for v in check_runs([run_dir for rs in runs.values() for _, run_dir in rs])}
    return {d: [verdicts[run_id] for run_id, _ in rs] for d, rs in runs.items()}


def simulate(scenarios, defects, out: Path, clean_too=(), reaches=None) -> dict:
    """Each run's id and directory by defect (``None``: clean), the runs in the scenarios' order.
    The simulators run in virtual time, each batch on one core: one process per core (spawned:
    this process may hold a JVM, which a fork would copy half-alive)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    todo = {d: [s for s in scenarios if d is None or reaches is None or reaches(d, s)] + (list(clean_too) if d is None else [])
            for d in [None] + list(defects)}
    with ProcessPoolExecutor(max_workers=os.cpu_count() or 1, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {d: pool.submit(_simulate, d.slug if d else None, sc, out / (d.slug if d else "clean")) for d, sc in todo.items()}
        return {d: f.result() for d, f in futures.items()}


def _simulate(slug: str | None, scenarios: list, out: Path) -> list[tuple[str, Path]]:
    """One simulator's batch (``slug``: its defect, None the clean one): each run's id and directory."""
    spec = "simulated" if slug is None else f"simulated[{slug}]"
    results, errors = run_batch(scenarios, BatchOptions(SystemSpec(spec), out, progress=False))
    assert not errors, errors
    return [(r.run_id, r.run_dir) for r in results if not r.skipped]


def run_on_simulator(tmp_path: Path, scenario, defects=()):
    """One scenario on a simulated broker (seed 1, no random write failures, so a fault alone
    decides what fails): its RunResult, the run directory under ``tmp_path``."""
    run_id = f"{scenario.name}-{tmp_path.name}"
    system = open_simulated(broker_profile(scenario.profile), defects=defects, seed=1, put_failure_rate=0.0)
    system.setup()
    try:
        return ScenarioRun(scenario, system, tmp_path / run_id, run_id).execute()
    finally:
        system.teardown()


def assert_caught_twice(defect, verdicts: list[dict], suite: str) -> None:
    """At least two of ``suite``'s scenarios failed the invariant that names ``defect``."""
    from hourglass.harness.verdicts import describe

    caught = [v["run_id"] for v in verdicts if v["invariants"][defect.invariant]["passed"] is False]
    assert len(caught) >= 2, (f"{len(caught)} {suite} scenario(s) failed {defect.invariant} with {defect.slug} "
                              f"injected ({caught}):\n" + "\n".join(describe(v) for v in verdicts))
