"""Running many scenarios: shared brokers, concurrency, progress, cleanup.

Scenarios without faults share one broker per profile (each with its own topics and groups, by
prefix) and run at the same time; a scenario with faults gets its own system (a consumer fault acts
on all consumers of a system, a broker fault on everything).
At most ``max_systems`` real systems run at once (this is a 2-core machine: more brokers would
make the timing the test judges unfair). Simulated systems run one after the other in virtual
time. Every system opened is torn down, also on failure and Ctrl-C.
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from adapters.base import AdapterError, ConfigReading, System
from harness.runner import BROKER_SETUP, Cancelled, ConsumerWatch, Progress, RunResult, ScenarioRun, skip_reason
from reference.profile import BROKER_CONFIG_KEYS, profile_mismatches
from harness.fit import MAX_WAIT_MS, fit_to_broker
from harness.scenario import Scenario
from reference import faults as kinds
from reference.rundir import slug
from harness.summary import scenario_wait_ms
from harness.systems import SystemSpec, open_system
from harness.outdir import run_stamp


#: How long an interrupted batch waits for its runs to heal their faults and complete run.json.
RECORD_TIMEOUT_S = 30


@dataclass(frozen=True)
class BatchOptions:
    system: SystemSpec
    out_dir: Path
    max_systems: int = 2
    progress: bool = True
    progress_interval_s: float = 5.0
    #: where progress lines go (default ``sys.__stderr__``); the pytest plugin hands a duplicate of
    #: the real stderr taken before capture, so the lines reach a CI log while a fixture runs
    progress_out: TextIO | None = None
    #: progress also for a virtual-time system (off by default: its runs take milliseconds)
    progress_virtual: bool = False
    #: on a cluster that runs another table: a message not done within this is left out (harness.fit)
    max_wait_ms: int = MAX_WAIT_MS


@dataclass(frozen=True)
class Job:
    """The scenarios that run together on one system."""

    scenarios: tuple[Scenario, ...]
    shared: bool


def plan_jobs(scenarios: list[Scenario], virtual: bool) -> list[Job]:
    if virtual:
        return [Job((s,), False) for s in scenarios]
    shared: dict[tuple, list[Scenario]] = {}
    alone: list[Job] = []
    for s in scenarios:
        if s.faults:  # a consumer fault acts on every consumer of a system: alone too
            alone.append(Job((s,), False))
        else:
            key = s.profile  # one broker runs one profile
            shared.setdefault(key, []).append(s)
    # the faulting jobs are usually the longest: start them first
    return alone + [Job(tuple(v), True) for v in shared.values()]


class Batch:
    def __init__(self, scenarios: list[Scenario], opts: BatchOptions):
        names = [s.name for s in scenarios]
        if len(set(names)) != len(names):
            raise ValueError(f"scenario names must be unique in a batch: {sorted(n for n in set(names) if names.count(n) > 1)}")
        self.scenarios = scenarios
        self.opts = opts
        self.stamp = run_stamp()  # one harness's runs never share an id with another's
        self.token = uuid.uuid4().hex[:8]  # names on a cluster that outlives runs
        self.progress = {s.name: Progress(s.name) for s in scenarios}
        self._systems: list[System] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.results: dict[str, RunResult] = {}
        self.errors: dict[str, str] = {}
        self.fitted: dict[str, dict] = {}  # scenario -> what harness.fit changed to run it on this broker
        self.started = time.monotonic()
        self.started_at: dict[str, float] = {}  # scenario -> when its job began (monotonic)
        self.expected_s = {s.name: scenario_wait_ms(s) / 1000 for s in scenarios}

    def run(self) -> list[RunResult]:
        self.opts.out_dir.mkdir(parents=True, exist_ok=True)
        jobs = plan_jobs(self.scenarios, self.opts.system.virtual)
        shower = None
        if self.opts.progress and (self.opts.progress_virtual or not self.opts.system.virtual):
            shower = threading.Thread(target=self._show_progress, daemon=True, name="hg-progress")
            shower.start()
        workers = 1 if self.opts.system.virtual else max(1, self.opts.max_systems)
        pool = ThreadPoolExecutor(workers, thread_name_prefix="hg-job")
        futures = []
        try:
            futures = [pool.submit(self._run_job, i, j) for i, j in enumerate(jobs)]
            for f in futures:
                f.result()
        except BaseException as e:  # the runs record why they were stopped
            self._stop.reason = f"{type(e).__name__}: {e}" if str(e) else f"{type(e).__name__} (Ctrl-C)"
            raise
        finally:
            # on Ctrl-C, SIGTERM or a failure: runs stop waiting and record that they were
            # interrupted (bounded wait), then every system is torn down
            self._stop.set()
            pool.shutdown(wait=False, cancel_futures=True)
            wait(futures, timeout=RECORD_TIMEOUT_S)
            self.teardown_all()
            if shower is not None:
                shower.join(timeout=5)
        return [self.results[s.name] for s in self.scenarios if s.name in self.results]

    def teardown_all(self) -> None:
        with self._lock:
            systems, self._systems = self._systems, []
        for s in systems:
            try:
                s.teardown()
            except Exception as e:  # noqa: BLE001 - cleanup goes on for the others
                print(f"[hourglass] teardown of {s.info.version} failed: {e}", file=sys.__stderr__)

    def _run_job(self, index: int, job: Job) -> None:
        first = job.scenarios[0]
        workdir = self.opts.out_dir / "_systems" / f"job{index:02d}-{slug(first.name) if not job.shared else 'shared'}"
        workdir.mkdir(parents=True, exist_ok=True)
        for s in job.scenarios:
            self.progress[s.name].phase = "starting broker"
            self.started_at[s.name] = time.monotonic()
        if self._stop.is_set():
            return
        try:
            needs = kinds.setup_needed(f for s in job.scenarios for f in s.faults)
            system = open_system(self.opts.system, first.profile, workdir, seed=first.seed, needs=needs)
        except Exception as e:  # noqa: BLE001 - e.g. an unknown system or version: every scenario is broken
            for s in job.scenarios:
                self.errors.setdefault(s.name, f"{type(e).__name__}: {e}")
                self.progress[s.name].phase = "error"
            return
        with self._lock:
            self._systems.append(system)
        try:
            setup_started = system.clock.now_ms()
            system.setup()
            system.info.details[BROKER_SETUP] = [setup_started, system.clock.now_ms()]
            self._read_broker_config(system)
            watch = ConsumerWatch(system)
            scenarios = job.scenarios
            if self.opts.system.runtime == "external":  # a cluster that outlives runs: names unique per run
                scenarios = tuple(s.with_prefix(f"{slug(s.name)[:12]}_{self.token}_") for s in scenarios)
                job = Job(scenarios, job.shared)
            if job.shared and len(job.scenarios) > 1:
                external = self.opts.system.runtime == "external"  # already unique per run
                threads = [
                    threading.Thread(target=self._run_one, args=(s if external else s.with_prefix(slug(s.name)[:24] + "_"),
                                                                 system, s.name, watch, True), name=f"hg-{s.name}")
                    for s in job.scenarios
                ]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
            else:
                for s in job.scenarios:
                    self._run_one(s, system, s.name, watch, False)
        except Exception as e:  # noqa: BLE001 - the scenarios of this job are reported broken
            for s in job.scenarios:
                self.errors.setdefault(s.name, f"{type(e).__name__}: {e}")
                self.progress[s.name].phase = "error"
        finally:
            with self._lock:
                if system in self._systems:
                    self._systems.remove(system)
            system.teardown()

    def _read_broker_config(self, system: System) -> None:
        """What the broker runs, into run.json's system (``broker_config``): the scenarios are
        judged against it, and one that needs another profile is not run on it."""
        if not isinstance(system, ConfigReading):
            return
        try:
            config = system.broker_config()
        except AdapterError as e:
            system.info.details["broker_config_error"] = str(e)[:300]
            return
        system.info.details["broker_config"] = {k: config[k] for k in BROKER_CONFIG_KEYS.values() if k in config}

    def _prepare(self, scenario: Scenario, system: System) -> tuple[Scenario, dict | None, str | None, str | None]:
        """(the scenario as it runs, what was fitted to the broker, why it is skipped, why it is
        broken), decided before it starts: what the system cannot do
        (:func:`harness.runner.skip_reason`); a profile the broker does not run — on a cluster the
        harness did not configure the scenario is fitted to it (:mod:`harness.fit`), on its own
        broker that is broken."""
        why = skip_reason(scenario, system)
        if why:
            return scenario, None, why, None
        config = system.info.details.get("broker_config") or {}
        mismatch = profile_mismatches(scenario.profile.to_run_profile(), config)
        if not mismatch:
            return scenario, None, None, None
        text = "; ".join(mismatch)
        if self.opts.system.runtime != "external":
            return scenario, None, None, f"the broker does not run what the harness configured: {text}"
        fitted = fit_to_broker(scenario, config, self.opts.max_wait_ms)
        if fitted.scenario is None:
            return scenario, fitted.note(), f"{text}; fitted to the broker: {fitted.reason}", None
        return fitted.scenario, fitted.note(), None, None

    def _run_one(self, scenario: Scenario, system: System, name: str, watch: ConsumerWatch, shared: bool) -> None:
        """``shared``: other runs use ``system`` at the same time: the run leaves the consumers to
        the system's teardown, and its copy of the logs is the part written while it ran."""
        tag = system.info.version + "".join("+" + d for d in self.opts.system.defects)
        run_id = f"{slug(name)}-{slug(tag)}-{self.stamp}"
        scenario, fitted, skipped, broken = self._prepare(scenario, system)
        if fitted:
            self.fitted[name] = fitted
            out = self.opts.progress_out or sys.stderr
            print(f"[hourglass] {name}: fitted to the broker: " + "; ".join(fitted["changes"])
                  + (f"; left out {len(fitted['left_out'])} message(s): " + "; ".join(fitted["left_out"][:3])
                     + (" …" if len(fitted["left_out"]) > 3 else "") if fitted["left_out"] else ""), file=out, flush=True)
        if skipped or broken:
            self.progress[name].phase = "done" if skipped else "error"
            if broken:
                self.errors[name] = broken
            self.results[name] = RunResult(self.opts.out_dir / run_id, run_id, scenario, True, (), 0, 0,
                                           error=broken, skipped=skipped)
            return
        run = ScenarioRun(scenario, system, self.opts.out_dir / run_id, run_id, self.progress[name], cancel=self._stop,
                          watch=watch, owns_consumers=not shared, system_spec=self.opts.system.spec, shared_system=shared,
                          fitted=fitted)
        try:
            self.results[name] = run.execute()
        except Cancelled:  # run.json says it was interrupted: the checker judges it undecided
            self.progress[name].phase = "interrupted"
            self.results[name] = RunResult(run.run_dir, run_id, scenario, False, (), 0, 0)
        except Exception as e:  # noqa: BLE001 - one broken scenario does not stop the others
            self.errors[name] = f"{type(e).__name__}: {e}"
            self.progress[name].phase = "error"
            self.results[name] = RunResult(run.run_dir, run_id, scenario, False, (), 0, 0, self.errors[name])

    def _show_progress(self) -> None:
        """A line at the start, every ``progress_interval_s`` and at the end (CI systems kill a
        job silent for 10 minutes)."""
        self._print_progress()
        while not self._stop.wait(self.opts.progress_interval_s):
            self._print_progress()
        self._print_progress()

    def _print_progress(self) -> None:
        out = self.opts.progress_out or sys.__stderr__
        try:
            print(self.progress_line(), file=out, flush=True)
        except (OSError, ValueError):  # a closed or broken stream never stops the batch
            pass

    def eta_s(self) -> float:
        """Seconds until the batch should be done, from the scenarios' own waits (the model's
        expected table, ``harness.summary.scenario_wait_ms``): what the running ones still have
        to wait, plus the queued ones spread over the systems that run at once."""
        now = time.monotonic()
        running = queued = 0.0
        workers = 1 if self.opts.system.virtual else max(1, self.opts.max_systems)
        for name, p in self.progress.items():
            if p.phase in ("done", "error", "interrupted"):
                continue
            if name in self.started_at:
                running = max(running, self.expected_s[name] - (now - self.started_at[name]))
            else:
                queued += self.expected_s[name]
        return max(0.0, running) + queued / workers

    def progress_line(self) -> str:
        now_ms = int(time.time() * 1000)
        done = sum(1 for p in self.progress.values() if p.phase in ("done", "error", "interrupted"))
        waiting = []
        for p in self.progress.values():
            if p.phase in ("done", "error", "interrupted", "queued"):
                continue
            part = f"{p.scenario}: {p.phase}"
            if p.phase == "draining":
                part += f" {p.final}/{p.messages} final"
                if p.deadline_ms:
                    part += f", window closes in {max(0, (p.deadline_ms - now_ms) // 1000)}s"
            waiting.append(part)
        elapsed = int(time.monotonic() - self.started)
        eta = int(self.eta_s() + 0.5)
        head = (f"[hourglass {elapsed // 60:02d}:{elapsed % 60:02d}] {done}/{len(self.progress)} scenarios done"
                + (f", ETA {eta // 60:02d}:{eta % 60:02d}" if done < len(self.progress) else ""))
        return head + ("" if not waiting else " | " + " | ".join(waiting[:4]) + (" | …" if len(waiting) > 4 else ""))


def run_batch(scenarios: list[Scenario], opts: BatchOptions) -> tuple[list[RunResult], dict[str, str]]:
    b = Batch(scenarios, opts)
    results = b.run()
    return results, b.errors
