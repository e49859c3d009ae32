"""Running many scenarios: shared brokers, concurrency, progress, cleanup.

Scenarios without faults share one broker per profile (each with its own topics and groups, by
prefix) and run at the same time, and so do those whose faults stop, kill or pause their own
consumers (there, of that run only); a scenario with other faults gets its own system (a broker
fault acts on everything on it).
At most ``max_systems`` real systems run at once (this is a 2-core machine: more brokers would
make the timing the test judges unfair). Simulated systems run one after the other in virtual
time. Every system opened is torn down, also on failure and Ctrl-C.
"""

from __future__ import annotations

import statistics
import sys
import threading
from contextlib import nullcontext
import time
import uuid
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, TextIO

from hourglass.adapters import phase as adapter_phase
from hourglass.adapters.base import AdapterError, ConfigReading, ConsumerHosting, Consuming, System
from hourglass.adapters.parts import PROCESS_ACTIONS
from hourglass.harness import eta
from hourglass.harness.runner import BROKER_SETUP, Cancelled, ConsumerWatch, Progress, RunResult, ScenarioRun, hosted, skip_reason
from hourglass.reference.profile import BROKER_CONFIG_KEYS, profile_mismatches
from hourglass.harness.fit import MAX_WAIT_MS, fit_to_broker
from hourglass.harness.scenario import Scenario
from hourglass.reference import faults as kinds
from hourglass.reference import pop
from hourglass.reference.contract import CONSUMER_TARGET
from hourglass.reference.rundir import slug
from hourglass.harness.summary import scenario_wait_ms
from hourglass.harness.systems import SystemSpec, open_system
from hourglass.harness.turns import AT_ONCE, WAITING, SetUpTurns, lane
from hourglass.harness.outdir import run_stamp


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
    #: a check of the runs follows (``harness.session.run_and_check``): the ETA counts it
    checked: bool = False
    #: called once when the batch's first brokers are up and its first runs set up, and nothing
    #: else starts (:func:`settled`): the checker's Spark starts then, in the runs' own
    #: waits, not beside the brokers' and consumers' starts it would slow down; at the latest when
    #: the runs end
    when_settled: Callable[[], None] | None = None


#: the longest the other jobs wait for the first job's start (:class:`FirstSetUp`)
FIRST_SETUP_WAIT_S = 90.0


class FirstSetUp:
    """The first job (the longest: :func:`plan_jobs`) starts alone: the other jobs' brokers,
    proxies and clients start once its runs are past their setup (``ready``: its broker, its proxy
    and its runs' consumers up), it ended, or :data:`FIRST_SETUP_WAIT_S` passed. Measured on 2
    cores: three systems starting at once took 29 s to bring the first one's name server, broker
    and proxy up (each JVM's start three times as slow as alone), and the longest job's runs waited
    for it; started once its broker was up, the others' brokers took the cores from its proxy (20 s
    instead of 6) and its gRPC groups' JVMs. The others' runs are shorter and have the time.
    ``harness.bench suite`` on an idle machine: 1.46x its longest own wait when all started at once."""

    def __init__(self, stop: threading.Event, ready: Callable[[], bool]):
        self._up = threading.Event()
        self._stop, self._ready = stop, ready
        self.waiting = 0  # jobs waiting to start: the batch is not settled (:func:`settled`)
        self._lock = threading.Lock()

    def done(self) -> None:
        self._up.set()

    def wait(self) -> None:
        """Until the first job is ready or ended, the batch stops, or :data:`FIRST_SETUP_WAIT_S` passed."""
        deadline = time.monotonic() + FIRST_SETUP_WAIT_S
        with self._lock:
            self.waiting += 1
        try:
            while not self._up.wait(0.2) and not self._ready() and not self._stop.is_set() and time.monotonic() < deadline:
                pass
        finally:
            with self._lock:
                self.waiting -= 1


@dataclass(frozen=True)
class Job:
    """The scenarios that run together on one system."""

    scenarios: tuple[Scenario, ...]
    shared: bool


def plan_jobs(scenarios: list[Scenario], virtual: bool) -> list[Job]:
    """The jobs of a batch, longest first. A scenario with faults beyond its own consumers runs alone
    (:func:`shares_a_system`); the others share one
    system per broker profile, whatever their consumers: the system is set up for what any of its
    scenarios needs (a proxy for gRPC groups: ``_open_and_run``), one broker's start for all.
    Longest first (by the model's waits, ``job_wait_ms``): the jobs take the batch's slots in this
    order, and the longest job started last would hold the batch up by itself."""
    if virtual:
        return [Job((s,), False) for s in scenarios]
    shared: dict[tuple, list[Scenario]] = {}
    alone: list[Job] = []
    for s in scenarios:
        if not shares_a_system(s):
            alone.append(Job((s,), False))
        else:  # one broker runs one profile
            shared.setdefault(s.profile, []).append(s)
    jobs = alone + [Job(tuple(v), True) for v in shared.values()]
    return sorted(jobs, key=job_wait_ms, reverse=True)  # stable: equal waits keep the catalogue's order


def shares_a_system(scenario: Scenario) -> bool:
    """Whether ``scenario`` may run on a system other runs share: no fault of it acts beyond its own
    consumers — none at all, or only process faults (stop, kill, start, pause, resume) on
    ``consumer``, which there act on its own consumers (``harness.faults.FaultDriver``'s
    ``consumers``), each a process of its own (``harness.runner.consumer_spec``: never hosted), timed
    from the run's own clock (an anchor on the broker's flushes or re-puts would count other runs' there)."""
    return all(f.target == CONSUMER_TARGET and set(kinds.step_primitives(f.action)) <= set(PROCESS_ACTIONS)
               and (f.after is None or f.after.event == "previous")  # a broker's events: other runs' too there
               for f in scenario.faults)


def first_job_critical(jobs: list[Job], slots: int) -> bool:
    """Whether the first job is the batch's longest path: it takes at least as long as the other
    jobs in the other slots (the model's waits and :data:`eta.COSTS`, as the ETA counts them). Only
    then do the others wait for its start (:class:`FirstSetUp`); else the chain of the others is the
    longest, and holding its first start back lengthens the batch (the main job: 197 s instead of 175 s)."""
    def took(job: Job) -> float:
        c = eta.COSTS
        return job_wait_ms(job) / 1000 + c.broker_s + c.setup_for(len(job.scenarios)) + c.end_s + c.teardown_s
    if len(jobs) < 2:
        return False
    return took(jobs[0]) >= eta.runs_left_s([], [took(j) for j in jobs[1:]], max(1, slots - 1))


def job_wait_ms(job: Job) -> int:
    """The model's wait of a job: its longest scenario's (shared: side by side), else their sum."""
    waits = [scenario_wait_ms(s) for s in job.scenarios]
    return max(waits) if job.shared else sum(waits)


class Batch:
    def __init__(self, scenarios: list[Scenario], opts: BatchOptions, clock: Callable[[], float] = time.monotonic):
        names = [s.name for s in scenarios]
        if len(set(names)) != len(names):
            raise ValueError(f"scenario names must be unique in a batch: {sorted(n for n in set(names) if names.count(n) > 1)}")
        self.scenarios = scenarios
        self.opts = opts
        self.stamp = run_stamp()  # one harness's runs never share an id with another's
        self.token = uuid.uuid4().hex[:8]  # names on a cluster that outlives runs
        self.clock = clock  # seconds; the ETA's, the progress line's (a test's fake clock)
        self.progress = {s.name: Progress(s.name, clock=clock) for s in scenarios}
        self.jobs = plan_jobs(scenarios, opts.system.virtual)
        self.job_started: dict[int, float] = {}  # job index -> when it began (clock)
        self.jobs_ended: set[int] = set()  # its system torn down
        self.steps_s: dict[int, float] = {}  # job index -> the time its adapter's slow steps took (adapters.phase)
        self.costs = eta.VIRTUAL if opts.system.virtual else eta.COSTS
        self.pace = 1.0  # how much slower than the estimates this machine starts brokers (harness.eta)
        self.spark_warm_at: float | None = None  # when the checker's Spark was first seen warm (clock)
        self.spark_started_at: float | None = None  # when the batch started it (BatchOptions.when_settled; clock)
        self._systems: list[System] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        critical = first_job_critical(self.jobs, opts.max_systems)  # then the other jobs wait for its start
        self._first_up = FirstSetUp(self._stop, (lambda: job_settled(self, 0)) if critical else (lambda: True))
        self.results: dict[str, RunResult] = {}
        self.errors: dict[str, str] = {}
        self.fitted: dict[str, dict] = {}  # scenario -> what harness.fit changed to run it on this broker
        self.started = clock()
        self.started_at: dict[str, float] = {}  # scenario -> when its job began (clock)
        self.expected_s = {s.name: scenario_wait_ms(s) / 1000 for s in scenarios}

    def run(self) -> list[RunResult]:
        self.opts.out_dir.mkdir(parents=True, exist_ok=True)
        jobs = self.jobs
        shower = None
        if self.opts.progress and (self.opts.progress_virtual or not self.opts.system.virtual):
            shower = threading.Thread(target=self._show_progress, daemon=True, name="hg-progress")
            shower.start()
        if self.opts.when_settled is not None and shower is None:  # no progress thread to watch the batch
            self._settle()
        workers = 1 if self.opts.system.virtual else max(1, self.opts.max_systems)
        pool = ThreadPoolExecutor(workers, thread_name_prefix="hg-job")
        futures = []
        try:
            futures = [pool.submit(self._run_job, i, j) for i, j in enumerate(jobs)]
            for f in futures:
                f.result()
            self._settle()  # at the latest now (an interrupted batch starts no check's Spark)
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
        teardown_each(systems)

    def _run_job(self, index: int, job: Job) -> None:
        workdir = job_workdir(self.opts.out_dir, self.token, index, job)
        workdir.mkdir(parents=True, exist_ok=True)
        if index > 0 and not self.opts.system.virtual:
            self._first_up.wait()
        self.job_started[index] = now = self.clock()
        for s in job.scenarios:
            self.progress[s.name].phase = "starting broker"
            self.started_at[s.name] = now
        if self._stop.is_set():
            self.jobs_ended.add(index)
            return
        try:
            with adapter_phase.reporting(self._phase_sink(index, job)):
                self._open_and_run(job, workdir)
        finally:
            self.jobs_ended.add(index)
            if index == 0:
                self._first_up.done()

    def _phase_sink(self, index: int, job: Job) -> adapter_phase.Sink:
        """An adapter's slow step (an image's first build, a download) as the phase of the job's
        scenarios that have not begun their runs, until it ends (its time is no broker's start:
        ``broker_starts``)."""
        def sink(text: str) -> Callable[[], None]:
            began = self.clock()
            before = {s.name: self.progress[s.name].phase for s in job.scenarios}
            for name in before:
                if "setup" not in self.progress[name].began:  # its run has not begun
                    self.progress[name].phase = text

            def undo() -> None:
                self.steps_s[index] = self.steps_s.get(index, 0.0) + self.clock() - began
                for name, was in before.items():
                    if self.progress[name].phase == text:
                        self.progress[name].phase = was
            return undo
        return sink

    def _open_and_run(self, job: Job, workdir: Path) -> None:
        first = job.scenarios[0]
        try:
            needs = kinds.setup_needed(f for s in job.scenarios for f in s.faults) \
                | pop.setup_needed(c.mode for s in job.scenarios for c in s.consumers)
            system = open_system(self.opts.system, first.profile, workdir, seed=first.seed, needs=needs)
        except Exception as e:  # noqa: BLE001 - e.g. an unknown system or version: every scenario is broken
            for s in job.scenarios:
                self.errors.setdefault(s.name, f"{type(e).__name__}: {e}")
                self.progress[s.name].phase = "error"
            return
        with self._lock:
            self._systems.append(system)
        try:
            if isinstance(system, ConsumerHosting):  # beside its start
                system.warm_consumer_hosts({c.mode for s in job.scenarios for c in s.consumers if hosted(s, c)})
            setup_started = system.clock.now_ms()
            system.setup()
            system.info.details[BROKER_SETUP] = [setup_started, system.clock.now_ms()]
            read_broker_config(system)
            watch = ConsumerWatch(system)
            scenarios = job.scenarios
            if self.opts.system.runtime == "external":  # a cluster that outlives runs: names unique per run
                scenarios = tuple(s.with_prefix(f"{slug(s.name)[:12]}_{self.token}_") for s in scenarios)
                job = Job(scenarios, job.shared)
            if job.shared and len(job.scenarios) > 1:
                external = self.opts.system.runtime == "external"  # already unique per run
                runs: list[ScenarioRun] = []
                turns = SetUpTurns(job.scenarios, self._stop)
                threads = [
                    threading.Thread(target=self._run_one, args=(s if external else s.with_prefix(slug(s.name)[:24] + "_"),
                                                                 system, s.name, watch, True, runs, turns), name=f"hg-{s.name}")
                    for s in job.scenarios
                ]
                try:
                    for t in threads:
                        t.start()
                    for t in threads:
                        t.join()
                finally:
                    _consumers_stopped(system, runs)
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

    def _run_one(self, scenario: Scenario, system: System, name: str, watch: ConsumerWatch, shared: bool,
                 runs: list | None = None, turns: SetUpTurns | None = None) -> None:
        """``shared``: other runs use ``system`` at the same time: the run leaves the consumers to
        the system's teardown, and its copy of the logs is the part written while it ran; it joins
        ``runs`` (:meth:`_consumers_stopped`) and sets up in its turn (``turns``)."""
        tag = system.info.version + "".join("+" + d for d in self.opts.system.defects)
        run_id = f"{slug(name)}-{slug(tag)}-{self.stamp}"
        scenario, fitted, skipped, broken = self._prepare(scenario, system)
        if fitted:
            self.fitted[name] = fitted
            print_fitted(self.opts.progress_out or sys.stderr, name, fitted)
        if skipped or broken:
            self.progress[name].phase = "done" if skipped else "error"
            if broken:
                self.errors[name] = broken
            self.results[name] = RunResult(self.opts.out_dir / run_id, run_id, scenario, True, (), 0, 0,
                                           error=broken, skipped=skipped)
            return
        run = ScenarioRun(scenario, system, self.opts.out_dir / run_id, run_id, self.progress[name], cancel=self._stop,
                          watch=watch, owns_consumers=not shared, system_spec=self.opts.system.spec, shared_system=shared,
                          fitted=fitted, setup_turn=(lambda: turns.turn(name, self.progress[name])) if turns else nullcontext)
        if runs is not None:
            runs.append(run)
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
        job silent for 10 minutes); :attr:`BatchOptions.when_settled` once the batch is settled."""
        self._print_progress()
        while not self._stop.wait(self.opts.progress_interval_s):
            if settled(self):
                self._settle()
            self._print_progress()
        self._print_progress()

    def _settle(self) -> None:
        """:attr:`BatchOptions.when_settled`, once (:attr:`spark_started_at` says it was)."""
        if self.opts.when_settled is None or self.spark_started_at is not None:
            return
        self.spark_started_at = self.clock()
        try:
            self.opts.when_settled()
        except Exception as e:  # noqa: BLE001 - the batch goes on; the check says what failed
            print(f"[hourglass] {e}", file=sys.__stderr__)

    def _print_progress(self) -> None:
        out = self.opts.progress_out or sys.__stderr__
        try:
            print(self.progress_line(), file=out, flush=True)
        except (OSError, ValueError):  # a closed or broken stream never stops the batch
            pass

    def eta_s(self) -> float:
        """Seconds until the batch's verdicts (:mod:`harness.eta`): every job's scenarios from
        what they are doing and their own waits, the jobs on the batch's slots in order, then the
        check (``opts.checked``) with what is left of the Spark start."""
        now = self.clock()
        spark = spark_state()
        if spark == "warm" and self.spark_warm_at is None:
            self.spark_warm_at = now
        # a start still under way is a lower bound of its duration: it may raise the pace the
        # finished ones give, never lower it
        self.pace = max(eta.pace_of(broker_starts(self, now, running=False), self.costs),
                        eta.pace_of(broker_starts(self, now), self.costs),
                        eta.setup_pace(run_setups(self, now), self.costs, AT_ONCE["hosted"]))
        costs = eta.paced(self.costs, self.pace)
        starting = [i for i in self.job_started if i not in self.jobs_ended and ready_at(self, i) is None]
        setting_up = sum(1 for i in starting for _ in self.jobs[i].scenarios) + sum(
            1 for p in self.progress.values() if p.phase == "setup")
        heavy = len(starting) + (1 if self.opts.checked and spark == "starting" else 0)
        running, queued, waits = [], [], turn_waits(self, now, costs)
        for i, job in enumerate(self.jobs):
            if i in self.jobs_ended:
                continue
            started = self.job_started.get(i)
            beside = eta.Now(setting_up=setting_up, starting=heavy - 1)
            lefts = [eta.scenario_left_s(p.phase, p.began, self.expected_s[s.name], started, now, costs, beside, len(job.scenarios))
                     + waits.get(s.name, 0.0) for s in job.scenarios for p in (self.progress[s.name],)]
            left = eta.job_left_s(lefts, job.shared, started is not None, costs)
            (queued if started is None else running).append(max(left, eta.MIN_LEFT_S))
        slots = 1 if self.opts.system.virtual else max(1, self.opts.max_systems)
        runs_s = eta.runs_left_s(running, queued, slots)
        if not self.opts.checked:
            return runs_s
        checking = eta.paced(self.costs, max(eta.check_pace(self.pace), eta.spark_pace(spark, spark_since(self), now, self.costs)))
        spark_left = eta.spark_left_s(spark, spark_since(self), now, checking)
        return runs_s + eta.check_left_s(runs_s, len(self.scenarios), spark_left, checking)

    def progress_line(self) -> str:
        now_ms = int(time.time() * 1000)
        done = sum(1 for p in self.progress.values() if p.phase in eta.DONE)
        waiting, by_phase = [], {}
        for p in self.progress.values():
            if p.phase in eta.DONE or p.phase == "queued":
                continue
            if p.phase != "draining":  # the scenarios of a shared broker share its phase: said once
                by_phase.setdefault(p.phase, []).append(p.scenario)
                continue
            part = f"{p.scenario}: {p.phase} {p.final}/{p.messages} final"
            if p.deadline_ms:
                part += f", window closes in {max(0, (p.deadline_ms - now_ms) // 1000)}s"
            waiting.append(part)
        waiting[:0] = [", ".join(names[:2]) + (f" +{len(names) - 2}" if len(names) > 2 else "") + f": {phase}"
                       for phase, names in by_phase.items()]
        finishing = len(self.jobs_ended) < len(self.jobs)
        if not waiting and done == len(self.progress) and (finishing or self.opts.checked):
            waiting.append("finishing: tearing down the systems" if finishing else f"finishing: checking {done} runs")
        if self.opts.checked and spark_state() == "starting":
            waiting.append("checker: starting Spark")
        return _line(self.clock() - self.started, done, len(self.progress), self.eta_s(),
                     finishing or self.opts.checked, waiting)


def print_fitted(out: TextIO, name: str, fitted: dict) -> None:
    """What ``harness.fit`` changed of scenario ``name`` to run it on this broker, in a line."""
    print(f"[hourglass] {name}: fitted to the broker: " + "; ".join(fitted["changes"])
          + (f"; left out {len(fitted['left_out'])} message(s): " + "; ".join(fitted["left_out"][:3])
             + (" …" if len(fitted["left_out"]) > 3 else "") if fitted["left_out"] else ""), file=out, flush=True)


def teardown_each(systems: list[System]) -> None:
    """Every system torn down, a failure of one said and the others' cleanup going on."""
    for s in systems:
        try:
            s.teardown()
        except Exception as e:  # noqa: BLE001 - cleanup goes on for the others
            print(f"[hourglass] teardown of {s.info.version} failed: {e}", file=sys.__stderr__)


def job_workdir(out_dir: Path, token: str, index: int, job: Job) -> Path:
    """Job ``index``'s system's folder (its store, conf and logs), its batch's own (``token``): a
    batch run again into the same output (the runs that did not pass) must not start its broker on
    the store of the attempt before (a scenario alone on its system keeps its names unprefixed: the
    earlier attempt's messages came again, 762 s "early")."""
    name = slug(job.scenarios[0].name) if not job.shared else "shared"
    return out_dir / "_systems" / token / f"job{index:02d}-{name}"


def read_broker_config(system: System) -> None:
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


def settled(batch: "Batch") -> bool:
    """Every job started so far is settled (:func:`job_settled`), at least one has started, and no
    job waits to start: nothing of the batch is starting now."""
    return bool(batch.job_started) and not batch._first_up.waiting and all(
        i in batch.jobs_ended or job_settled(batch, i) for i in batch.job_started)


def job_settled(batch: "Batch", i: int) -> bool:
    """Job ``i`` has started, its broker is up and its runs are past their setup (sending or later)."""
    return i in batch.job_started and all(
        p.phase in eta.DONE or "sending" in p.began for p in (batch.progress[s.name] for s in batch.jobs[i].scenarios))


def ready_at(batch: "Batch", i: int) -> float | None:
    """When job ``i``'s broker was up: its first run's setup."""
    setups = [b for s in batch.jobs[i].scenarios if (b := batch.progress[s.name].began.get("setup")) is not None]
    return min(setups) if setups else None


def turn_waits(batch: "Batch", now: float, costs: eta.Costs) -> dict[str, float]:
    """How long each run waiting for its setup turn (``harness.turns``) has yet to wait: in its lane
    the runs setting up and those ahead of it (longer own waits) go the lane's width at a time, each
    as long as the lane's setups took (their median; at least the longest under way; the estimate
    without any). Beside the load generator a lane of runs with JVMs of their own moved by one run
    every two minutes while the ETA counted a few seconds for each."""
    out: dict[str, float] = {}
    for i, job in enumerate(batch.jobs):
        if i not in batch.job_started or i in batch.jobs_ended or not job.shared:
            continue
        for name, width in AT_ONCE.items():
            runs = [(s, batch.progress[s.name]) for s in job.scenarios if lane(s) == name]
            done, active = setup_spans((p for _, p in runs), now)
            took = max([statistics.median(done) if done else costs.setup_for(width)] + active)
            waiting = sorted((s for s, p in runs if p.phase == WAITING), key=lambda s: -batch.expected_s[s.name])
            for k, s in enumerate(waiting):
                out[s.name] = took * -(-max(0, len(active) + k + 1 - width) // width)
    return out


def spark_since(batch: "Batch") -> float | None:
    """When the checker's Spark began to start: once the batch settled (``when_settled``), else with the batch."""
    return batch.spark_started_at if batch.opts.when_settled is not None else batch.started


def setup_spans(progress: Iterable[Progress], now: float) -> tuple[list[float], list[float]]:
    """How long each run's setup took (its topics and consumers: phase ``setup`` to ``sending``),
    and how long each one still under way has taken so far."""
    done, active = [], []
    for p in progress:
        began, ended = p.began.get("setup"), p.began.get("sending")
        if began is not None and ended is not None:
            done.append(ended - began)
        elif began is not None and p.phase == "setup":
            active.append(now - began)
    return done, active


def run_setups(batch: "Batch", now: float) -> list[float]:
    """The runs' setups (:func:`setup_spans`): the finished ones, and the ones under way for longer
    than the estimate for their turn."""
    done, active = setup_spans(batch.progress.values(), now)
    est = batch.costs.setup_for(AT_ONCE["hosted"])
    return done + [a for a in active if a > est]


def broker_starts(batch: "Batch", now: float, running: bool = True) -> list[tuple[float, int]]:
    """How long each job's broker took to start (to its first run's setup, less its adapter's
    slow steps: an image's first build is no sign of a busy machine), or has taken so far while
    it starts for longer than the estimate, with how many other heavy starts ran beside it (the
    other brokers starting then, the checker's Spark warming up): how busy the machine is."""
    out = []
    readies = {i: ready_at(batch, i) for i in batch.job_started}
    for i, started in batch.job_started.items():
        ready = readies[i]
        end = ready if ready is not None else now
        others = sum(1 for j, s in batch.job_started.items() if j != i and s < end and (readies[j] or now) > started)
        warm = batch.spark_warm_at if batch.spark_warm_at is not None else now
        spark_from = spark_since(batch)
        if batch.opts.checked and spark_from is not None and spark_from < end and warm > started:
            others += 1
        so_far = end - started - batch.steps_s.get(i, 0.0)
        if ready is not None:
            out.append((so_far, others))
        elif (running and i not in batch.jobs_ended and so_far > batch.costs.broker_with(others)
              and all(batch.progress[s.name].phase == "starting broker" for s in batch.jobs[i].scenarios)):
            out.append((so_far, others))
    return out


def _line(elapsed_s: float, done: int, total: int, eta_s: float, more: bool, parts: list[str]) -> str:
    """``[hourglass mm:ss] d/n scenarios done, ETA mm:ss | part | …``; while work remains (``more``)
    the ETA never reads 00:00."""
    elapsed = int(elapsed_s)
    left = max(1, int(eta_s + 0.5)) if more else int(eta_s + 0.5)
    head = (f"[hourglass {elapsed // 60:02d}:{elapsed % 60:02d}] {done}/{total} scenarios done"
            + (f", ETA {left // 60:02d}:{left % 60:02d}" if done < total or more else ""))
    return head + ("" if not parts else " | " + " | ".join(parts[:4]) + (" | …" if len(parts) > 4 else ""))


def _consumers_stopped(system: System, runs: list[ScenarioRun]) -> None:
    """The shared runs' consumers, which ran on after each run's end, stopped — at once: every run
    is over, its events written and its consume stats read — and each run takes the host's stalls
    until then (reference.stalls: an attempt is judged on its own wait's)."""
    try:
        if isinstance(system, Consuming):
            system.stop_consumers(graceful=False)
    finally:
        stopped = system.clock.now_ms()
        for run in runs:
            run.consumers_stopped(stopped)


def spark_state() -> str:
    """The checker's Spark session: ``warm``, ``starting`` or ``cold`` (``reports.spark``; cold
    when nothing imported it)."""
    spark = sys.modules.get("hourglass.reports.spark")
    return spark.spark_state() if spark is not None and hasattr(spark, "spark_state") else "cold"


class CheckProgress:
    """Progress lines while a batch's runs are checked (``harness.session.run_and_check``), on
    from the batch's: "finishing: checking N runs", with the Spark start while it is under way."""

    def __init__(self, opts: BatchOptions, runs: int, total: int, batch_started: float, spark_since: float):
        self.opts, self.runs, self.total = opts, runs, total
        self.batch_started, self.spark_since = batch_started, spark_since
        self.base = eta.VIRTUAL if opts.system.virtual else eta.COSTS
        self.pace = eta.check_pace(_paces.get(opts.out_dir, 1.0))
        self.costs = eta.paced(self.base, self.pace)
        self.started = time.monotonic()
        self.warm_at: float | None = None
        self.seen_starting = False  # the Spark start was under way here: its length paces the check
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._show, daemon=True, name="hg-check-progress")

    def __enter__(self) -> "CheckProgress":
        if self.runs and self.opts.progress and (self.opts.progress_virtual or not self.opts.system.virtual):
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def line(self) -> str:
        now = time.monotonic()
        state = spark_state()
        self.seen_starting = self.seen_starting or state == "starting"
        if self.seen_starting:  # the checker's JVM starts as slowly as it will check (beside the load generator: 9x)
            until = (self.warm_at or now) if state == "warm" else now
            self.costs = eta.paced(self.base, max(self.pace, eta.spark_pace("starting", self.spark_since, until, self.base)))
        spark = eta.spark_left_s(state, self.spark_since, now, self.costs)
        check = eta.check_left_s(spark, self.runs, 0.0, self.costs)  # the check proper
        if state != "warm":
            left = spark + check
        else:
            self.warm_at = self.warm_at or now
            left = max(eta.MIN_LEFT_S, check - (now - max(self.started, self.warm_at)))
        part = f"finishing: checking {self.runs} runs" + ("" if state == "warm" else " (starting Spark)")
        return _line(now - self.batch_started, self.total, self.total, left, True, [part])

    def _show(self) -> None:
        """A line every ``progress_interval_s`` (the batch's last line said the check began)."""
        while not self._stop.wait(self.opts.progress_interval_s):
            try:
                print(self.line(), file=self.opts.progress_out or sys.__stderr__, flush=True)
            except (OSError, ValueError):
                pass


def run_batch(scenarios: list[Scenario], opts: BatchOptions) -> tuple[list[RunResult], dict[str, str]]:
    b = Batch(scenarios, opts)
    try:
        results = b.run()
    finally:
        _paces[opts.out_dir] = b.pace
    return results, b.errors


#: out_dir -> the pace of its last batch (harness.eta.pace_of): its check's progress (CheckProgress) goes by it
_paces: dict[Path, float] = {}
