"""The ETA of a batch (``harness.batch``): the time left until its verdicts, from the model.

Each scenario waits its own wait (the model's expected table, ``harness.summary.scenario_wait_ms``,
counted from its first send), after its broker's start (:data:`COSTS`' ``broker_s``, about
``READY_ESTIMATE_MS``) and its consumers' start, and before its run's end (heal, DLQ read,
consumers' stop). A job (``harness.batch.plan_jobs``) is done when its slowest scenario is (a
shared broker runs its scenarios side by side) and its system is torn down; jobs take the batch's
``max_systems`` slots in order. Then the check: what is left of the Spark session's start (it
warms up while the runs go on: ``reports.spark.warm_spark``) and a cost per run.

What a scenario is doing (``harness.runner.Progress.phase``, and when each phase began) re-anchors
its estimate: a scenario that is sending or draining has its wait less the time since its first
send left. Work left never reads as nothing: every unfinished part counts at least
:data:`MIN_LEFT_S`.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from hourglass.harness.summary import READY_ESTIMATE_MS

#: what a run has not finished while in any of these
DONE = ("done", "error", "interrupted")
#: the least an unfinished part of the batch is counted for
MIN_LEFT_S = 1.0


@dataclass(frozen=True)
class Costs:
    """Seconds of each step the model's waits do not cover (measured with ``python -m hourglass.harness.bench
    suite`` on the 2-core machine: its ``breakdown``, ``check_and_report_s``)."""

    broker_s: float = READY_ESTIMATE_MS / 1000  # a broker's start to ready, alone (9-10 s measured)
    setup_s: float = 3.5  # a run's topics and the fixed part of its consumers' start
    #: each run whose consumers start at the same time adds this to every one's setup: most groups
    #: of a shared system start in its one consumer host (adapters.rocketmq.consumer_host), so the
    #: cost hardly grows (conformance on rocketmq:latest, idle: 4.2-6.2 s for every run, 22 runs
    #: together; before the host, with a JVM per group: 4 together 8.9 s, 16 together 17-40 s)
    setup_per_run_s: float = 0.08
    #: a broker's start takes (1 + this x k) times ``broker_s`` while k other heavy starts run
    #: (another broker's, the checker's Spark): 24.6 and 34.3 s for two brokers and Spark at once
    contention: float = 1.0
    end_s: float = 2.0  # a run's heal, DLQ read, consume stats and consumers' stop (median 1.6 s after its wait)
    teardown_s: float = 4.0  # a system's teardown (its consumers' and broker's stop)
    spark_start_s: float = 22.0  # the checker's local Spark session (JVM, first job), beside the first brokers
    check_base_s: float = 3.0  # the check's fixed part with Spark warm: reading, the report of the batch
    check_per_run_s: float = 0.2  # (21 runs: 5.7 s; 25: 6.3-7.5 s; the main job's 29: 8-10 s)

    def setup_for(self, runs: int) -> float:
        """A run's setup while ``runs`` runs (itself included) start their consumers together."""
        return self.setup_s + self.setup_per_run_s * max(1, runs)

    def broker_with(self, others: int) -> float:
        """A broker's start while ``others`` other heavy starts run beside it."""
        return self.broker_s * (1 + self.contention * max(0, others))


COSTS = Costs()
#: a virtual-time system: only the model's waits take (virtual) time
VIRTUAL = Costs(*(0.0 for _ in Costs.__dataclass_fields__))


#: the most a busy machine is taken to slow the steps down (:func:`paced`): beside the load
#: generator's CPU hogs (suites/adapters/loadgen.py) the harness's own, niced processes went 10-30x
#: slower than alone (a gRPC group's start 4 min, the checker's Spark 268 s instead of 22 s)
MAX_PACE = 12.0


def paced(c: Costs, pace: float) -> Costs:
    """``c`` on a machine ``pace`` times slower than the estimates (a busy one: its other work
    slows every start and stop, not the model's waits)."""
    pace = min(MAX_PACE, max(1.0, pace))
    return Costs(*(getattr(c, f) * (1 if f == "contention" else pace) for f in c.__dataclass_fields__))


def check_pace(pace: float) -> float:
    """The pace of the check on a machine ``pace`` times slower at starting brokers: its square
    root (the check is one JVM already up, working; measured 1.25-1.7x its idle time while the
    brokers started 3-5x slower, load average 10-35 on 2 cores)."""
    return max(1.0, pace) ** 0.5


def pace_of(broker_starts: list[tuple[float, int]], c: Costs) -> float:
    """How much slower than :class:`Costs` says the brokers of this batch start (each a start's
    duration, or at least that for one still under way, with the number of other heavy starts
    beside it: the batch's own first brokers and Spark share the cores, which is no sign of a busy
    machine): their mean over the estimate, less a quarter of slack (a start varies by that on an
    idle machine); 1 without any."""
    if not broker_starts or c.broker_s <= 0:
        return 1.0
    return max(1.0, sum(took / c.broker_with(others) for took, others in broker_starts) / len(broker_starts) - 0.25)


def setup_pace(setups: list[float], c: Costs, at_once: int) -> float:
    """How much slower than :class:`Costs` says the runs set up (each a finished setup's duration,
    or at least that for one still under way for longer than the estimate): their median over
    ``c.setup_for(at_once)``, less one estimate of slack (on an idle machine a run's setup takes
    0.5-2 times it: hosted groups, groups with a JVM of their own, turns); 1 without any. The
    median, not the mean: a gRPC group's own JVM starts in three times a hosted group's time."""
    if not setups or c.setup_s <= 0:
        return 1.0
    return max(1.0, statistics.median(setups) / c.setup_for(at_once) - 1.0)


def spark_pace(state: str, warming_since: float | None, now: float, c: Costs) -> float:
    """At least how much slower than :class:`Costs` says the checker's Spark starts: its start so
    far over the estimate, once it is longer; 1 otherwise."""
    if state != "starting" or warming_since is None or c.spark_start_s <= 0:
        return 1.0
    return max(1.0, (now - warming_since) / c.spark_start_s)


@dataclass(frozen=True)
class Now:
    """What the batch is doing beside a scenario: how many runs are starting their consumers (or
    will once their broker is up: they start together), and how many heavy starts run beside a
    broker's (other brokers', the checker's Spark)."""
    setting_up: int = 1
    starting: int = 0


def scenario_left_s(phase: str, began: dict, wait_s: float, job_started: float | None, now: float, c: Costs,
                    beside: Now = Now(), job_runs: int = 1) -> float:
    """What one scenario has left until its run ended (``began``: when each of its phases began;
    ``job_runs``: the runs of its job, which set up together once its broker is up)."""
    if phase in DONE:
        return 0.0
    if job_started is None:  # its job has not started: alone on the machine, as later jobs are
        return c.broker_s + c.setup_for(job_runs) + wait_s + c.end_s
    sent = began.get("sending")
    if sent is not None:
        return max(MIN_LEFT_S, wait_s - (now - sent) + c.end_s)
    if "setup" in began:
        return max(MIN_LEFT_S, c.setup_for(beside.setting_up) - (now - began["setup"])) + wait_s + c.end_s
    return (max(MIN_LEFT_S, c.broker_with(beside.starting) - (now - job_started)) + c.setup_for(beside.setting_up)
            + wait_s + c.end_s)


def job_left_s(lefts: list[float], shared: bool, started: bool, c: Costs) -> float:
    """A job's time left: its scenarios side by side (shared) or one after the other, then the
    teardown of its system."""
    if not lefts:
        return 0.0
    runs = max(lefts) if shared else sum(lefts)
    return runs + (c.teardown_s if runs > 0 or not started else 0.0)


def runs_left_s(running: list[float], queued: list[float], slots: int) -> float:
    """When the last job ends: the running ones hold their slots for what they have left, the
    queued ones take the first slot free, in order."""
    ends = sorted(running) + [0.0] * max(0, slots - len(running))
    for q in queued:
        i = min(range(len(ends)), key=ends.__getitem__)
        ends[i] += q
    return max(ends, default=0.0)


def check_left_s(runs_s: float, runs: int, spark_left_s: float, c: Costs) -> float:
    """The check after the runs: the Spark start not yet done when they end, then the check proper."""
    if runs <= 0:
        return 0.0
    return max(0.0, spark_left_s - runs_s) + c.check_base_s + c.check_per_run_s * runs


def spark_left_s(state: str, warming_since: float | None, now: float, c: Costs) -> float:
    """What is left of the Spark session's start: none once warm, the rest of its start while it
    warms up, all of it when it has not begun."""
    if state == "warm":
        return 0.0
    if state == "starting" and warming_since is not None:
        return max(MIN_LEFT_S, c.spark_start_s - (now - warming_since))
    return c.spark_start_s
