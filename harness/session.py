"""A session: scenarios queued per system, run in batches and checked together — the library the
CLI (``python -m hourglass``) and the pytest plugin (``harness.pytest_plugin``, hooks only) share.

A batch runs every queued scenario of one system (shared brokers, concurrency: ``harness.batch``)
and checks all its runs in one Spark job (``reports.check.check_runs``): :func:`run_and_check`.
:class:`Session` keeps the verdicts by (system, scenario) and the batches it ran for the summary.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

from hourglass.reference.rundir import REPORT_HTML, run_json


@dataclass(frozen=True)
class SessionOptions:
    """How a session runs its systems (the plugin's ``--hg-*`` options)."""

    runtime: str = "auto"
    image: str | None = None
    namesrv: str | None = None
    faults: str | None = None
    max_systems: int = 2
    max_wait_s: float | None = None  # None: harness.fit's default
    baseline: str | None = None
    master: str | None = None
    spark_conf: dict[str, str] = field(default_factory=dict)
    progress: str = "auto"  # auto: real systems only; always: virtual-time systems too; off
    progress_interval_s: float = 5.0
    proxy: str | None = None  # external runtime: the cluster's 5.x proxy
    retries: int = 0  # runs once more, this many times, what ends undecided or broken (reports.verdict.RETRIED)


@dataclass(frozen=True)
class BatchRun:
    """One system's batch: every scenario's verdict by name, and how long the runs and the check took."""

    verdicts: dict[str, dict]
    wall_s: float
    check_s: float


def system_dirname(system: str) -> str:
    """The directory of a system's runs under the output directory."""
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in system)


def run_and_check(scenarios: list, opts, baseline: str | None, master: str | None,
                  spark_conf: dict[str, str] | None = None) -> BatchRun:
    """Run ``scenarios`` as one batch (``opts``: :class:`harness.batch.BatchOptions`) and check
    its runs in one job: :func:`batch_verdicts`."""
    from hourglass.harness.batch import CheckProgress, run_batch

    started = time.monotonic()
    settled = None
    if not opts.system.virtual:  # the checker's Spark starts while the runs wait: warm when they end
        from hourglass.reports.spark import guard_interrupts, warm_spark

        guard_interrupts()
        settled = lambda: warm_spark(master, spark_conf)  # noqa: E731
    results, errors = run_batch(scenarios, replace(opts, checked=True, when_settled=settled))
    wall_s = time.monotonic() - started
    runs = sum(1 for r in results if not r.skipped)
    with CheckProgress(opts, runs, len(scenarios), started, started):
        by_name = batch_verdicts(scenarios, results, errors, baseline, master, spark_conf)
    return BatchRun(by_name, wall_s, time.monotonic() - started - wall_s)


class Session:
    """All scenarios of a session, run and checked in batches per system."""

    def __init__(self, out_dir: Path, options: SessionOptions | None = None):
        self.out_dir = out_dir
        self.options = options or SessionOptions()
        self.pending: dict[str, dict[str, object]] = {}  # system -> scenario name -> scenario
        self.verdicts: dict[tuple[str, str], dict] = {}
        self.batches: list[dict] = []
        self.progress_out: TextIO | None = None  # the plugin: the real stderr, duplicated before capture
        self._n = 0

    def register(self, system: str, scenario) -> None:
        """Queue ``scenario`` for ``system``'s batch; a scenario that breaks the schema or its
        cross-checks raises :class:`~reference.contract.ContractError` naming the scenario and
        field, before anything runs."""
        from hourglass.harness.scenario import validate_scenario

        validate_scenario(scenario)
        self.pending.setdefault(system, {})[scenario.name] = scenario

    def verdict(self, system: str, scenario) -> dict:
        if (system, scenario.name) not in self.verdicts:
            self.register(system, scenario)
            self._run(system)
        return self.verdicts[(system, scenario.name)]

    def run_seconds(self, system: str, scenario_name: str) -> float:
        """The run's own duration (run.json ``started_ms`` to ``ended_ms``), 0 without a run."""
        from hourglass.adapters.rundir import read_run_json
        from hourglass.reports.junit import run_seconds

        run_dir = self.verdicts.get((system, scenario_name), {}).get("run_dir")
        try:
            return run_seconds(read_run_json(Path(run_dir))) if run_dir else 0.0
        except (OSError, ValueError):
            return 0.0

    def verdict_now(self, system: str, scenario) -> dict:
        """Run one scenario now, alone, under a fresh name (hypothesis examples, generated on the fly)."""
        self._n += 1
        named = replace(scenario, name=f"{scenario.name}-{self._n:04d}")
        self.pending.setdefault(system, {})
        saved, self.pending[system] = self.pending[system], {named.name: named}
        try:
            self._run(system, record=False)
        finally:
            self.pending[system] = saved
        return self.verdicts.pop((system, named.name))

    def batch_options(self, system: str, sys_dir: Path):
        from hourglass.harness.batch import BatchOptions
        from hourglass.harness.fit import MAX_WAIT_MS
        from hourglass.harness.systems import SystemSpec

        o = self.options
        spec = SystemSpec(system, o.runtime, o.image, o.namesrv, o.faults, o.proxy)
        return BatchOptions(spec, sys_dir, o.max_systems, progress=o.progress != "off", progress_interval_s=o.progress_interval_s,
                            progress_out=self.progress_out, progress_virtual=o.progress == "always",
                            max_wait_ms=MAX_WAIT_MS if o.max_wait_s is None else int(o.max_wait_s * 1000))

    def _run(self, system: str, record: bool = True) -> None:
        from hourglass.harness.outdir import lock_out
        from hourglass.reports.verdict import flaky

        scenarios = list(self.pending.pop(system, {}).values())
        if not scenarios:
            return
        sys_dir = self.out_dir / system_dirname(system)
        sys_dir.mkdir(parents=True, exist_ok=True)
        lock_out(self.out_dir)
        batch = self._attempts(system, scenarios, sys_dir)
        for sc in scenarios:
            self.verdicts[(system, sc.name)] = batch.verdicts[sc.name]
        if not record:
            return
        self.batches.append({"system": system, "dir": str(sys_dir), "wall_s": round(batch.wall_s, 1),
                             "check_s": round(batch.check_s, 1), "scenarios": len(scenarios),
                             "retried": sorted(n for n, v in batch.verdicts.items() if v.get("earlier")),
                             "flaky": sorted(n for n, v in batch.verdicts.items() if flaky(v))})
        write_summary(sys_dir, system, [self.verdicts[(system, s.name)] for s in scenarios], batch.wall_s, scenarios,
                      batch.check_s)

    def _attempts(self, system: str, scenarios: list, sys_dir: Path) -> BatchRun:
        """The batch, then up to ``retries`` more of the scenarios whose run ended undecided or
        broken (reports.verdict.RETRIED: never a violation), each on a system of its own; a
        scenario's verdict is its last attempt's, with the ones before under ``earlier``."""
        from hourglass.reports.verdict import retried

        def once(batch_scenarios: list) -> BatchRun:
            return run_and_check(batch_scenarios, self.batch_options(system, sys_dir), self.options.baseline,
                                 self.options.master, dict(self.options.spark_conf))

        batch = once(scenarios)
        verdicts, wall_s, check_s = dict(batch.verdicts), batch.wall_s, batch.check_s
        for _ in range(self.options.retries):
            again = [s for s in scenarios if retried(verdicts[s.name])]
            if not again:
                break
            batch = once(again)
            wall_s, check_s = wall_s + batch.wall_s, check_s + batch.check_s
            for s in again:
                before = verdicts[s.name]
                verdicts[s.name] = {**batch.verdicts[s.name], "earlier": [*before.get("earlier", ()), earlier_attempt(before)]}
        return BatchRun(verdicts, wall_s, check_s)


def earlier_attempt(verdict: dict) -> dict:
    """What a retried attempt left in its scenario's verdict: its status, its run and why it
    decided nothing (the break, or its first undecided example's reason)."""
    from hourglass.reports.verdict import status

    undecided = verdict.get("undecided") or {}
    examples = undecided.get("examples") or [{}]
    return {"status": status(verdict), "run_id": verdict.get("run_id"), "run_dir": verdict.get("run_dir"),
            "why": verdict.get("broken") or examples[0].get("reason")}


def batch_verdicts(scenarios, results, errors: dict[str, str], baseline, master: str | None,
                   spark_conf: dict[str, str] | None = None) -> dict[str, dict]:
    """A verdict for every scenario of a batch, by name, from one checker job over all its runs:
    the checker's verdict, marked broken where the harness could not carry the run out; a
    scenario the system cannot run (``skipped``) gets no verdict on the broker."""
    from hourglass.reports.check import check_runs
    from hourglass.reports.verdict import mark_broken

    by_result = {r.scenario.name: r for r in results}
    runs = [r for r in results if not r.skipped and run_json(r.run_dir).exists()]
    checked = check_runs([r.run_dir for r in runs], out_dir=None, master=master, baseline=baseline,
                         spark_conf=spark_conf) if runs else []
    by_id = {v["run_id"]: v for v in checked}
    out: dict[str, dict] = {}
    for sc in scenarios:
        r = by_result.get(sc.name)
        if r is not None and r.skipped:
            out[sc.name] = {"run_id": r.run_id, "scenario": sc.name, "skipped": r.skipped, "passed": None, "invariants": {}}
            continue
        v = dict(by_id.get(r.run_id) if r is not None and r.run_id in by_id else
                 {"run_id": r.run_id if r is not None else sc.name, "passed": None, "invariants": {}})
        v["scenario"] = sc.name
        if r is not None and run_json(r.run_dir).exists():
            v["run_dir"] = str(r.run_dir)
            v["report"] = str(Path(r.run_dir) / REPORT_HTML)
            if not r.drained:
                v.setdefault("pending", list(r.pending[:20]))
        reason = errors.get(sc.name) or (r.error if r is not None else None)
        if reason:  # the run could not be carried out: broken (an observed violation still stands)
            v = mark_broken(v, reason)
        elif r is None or r.run_id not in by_id:
            v = mark_broken(v, "the harness produced no run directory the checker could judge")
        out[sc.name] = v
    return out


def write_summary(sys_dir: Path, system: str, verdicts: list[dict], wall_s: float, scenarios, check_s: float | None = None) -> None:
    """``summary.json``, ``index.html`` and ``summary.md`` of one system's batch: ``verdicts`` are
    every scenario's, the skipped ones included (each summary counts and lists them); ``wall_s``:
    the batch's runs; ``check_s``: their check (None: not measured)."""
    from hourglass.harness.summary import split_skipped, write_index, write_markdown
    from hourglass.reference.contract import VERSION_FIELD
    from hourglass.reports.verdict import flaky
    from hourglass.reports.version import hourglass_version

    longest_wait_s = max((expected_wait_s(s) for s in scenarios), default=0)
    sys_dir.mkdir(parents=True, exist_ok=True)
    judged, skipped = split_skipped(verdicts)
    (sys_dir / "summary.json").write_text(json.dumps({
        "system": system, VERSION_FIELD: hourglass_version(), "wall_s": round(wall_s, 1),
        "check_s": None if check_s is None else round(check_s, 1),
        "longest_scenario_wait_s": round(longest_wait_s, 1),
        "ratio": round(wall_s / longest_wait_s, 2) if longest_wait_s else None,
        "verdicts": judged,
        # passed only on CI's retry (reports.verdict.FLAKY): counted apart, never plain green
        "flaky": [v.get("scenario") or v.get("run_id") for v in judged if flaky(v)],
        "skipped": [{"scenario": v.get("scenario"), "reason": v["skipped"]} for v in skipped],
    }, indent=1, default=str))
    write_index(sys_dir, system, verdicts, wall_s, longest_wait_s)
    write_markdown(sys_dir, system, verdicts, wall_s, check_s)
    from hourglass.harness.outdir import link_latest

    link_latest(sys_dir)  # the batch is complete: runs/latest -> its output tree


def expected_wait_s(scenario) -> float:
    from hourglass.harness.summary import scenario_wait_ms

    return scenario_wait_ms(scenario) / 1000
