"""The batch's ETA (harness.eta): replayed along a real batch's recorded timeline (the conformance
suite on an idle 2-core machine), it is within 20 % of the time that was actually left once the
first broker is up. Against a simulated batch in virtual time (the conformance suite on two broker
slots, its jobs as harness.batch plans them, every step a little longer or shorter than the ETA's
estimates, the first brokers and consumers sharing the cores) it is within 20 % too, also on a busy
machine, and never reads 00:00 while work remains. An adapter's slow step is the progress line's
phase."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import hourglass.harness.batch as batch_mod
from hourglass.harness import bench
from hourglass.adapters import phase as adapter_phase
from hourglass.harness.batch import Batch, BatchOptions, CheckProgress
from hourglass.harness.catalogue.conformance import CONFORMANCE
from hourglass.harness.systems import SystemSpec


#: what each step "really" takes in the simulation (the ETA assumes harness.eta.COSTS; the setup as
#: measured with the consumer host: 4.2-6.2 s for each of 22 runs starting together)
IDLE = dict(broker=10.5, setup=3.6, setup_per_run=0.1, end=2.5, teardown=4.5, spark=20.0, check_base=3.0, check_per_run=0.2)
#: a busy machine: every start and stop 2.5 times as long (the brokers' starts show it), the check
#: 1.6 times (one JVM already up: measured 1.25-1.7x at load averages 10-35), the waits not
LOADED = {k: v * (1.6 if k in ("spark", "check_base", "check_per_run") else 2.5) for k, v in IDLE.items()}
#: a run's sending to its end over its own wait: the drain ends when every message is final, the
#: busy first seconds make some late (harness.bench suite on rocketmq:latest: dlq-default 91.1 s of
#: wait in 95.4 s, the median run 1.13x with its end)
WAIT_FACTOR = 1.0


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def timeline(batch: Batch, m: dict) -> tuple[dict, dict, float]:
    """Per job (start, end) and per scenario its phases' times, on ``max_systems`` slots in order;
    and when the verdicts are in (the check after the runs, Spark warmed from the batch's start)."""
    slots = [0.0] * batch.opts.max_systems
    jobs, phases = {}, {}
    # the first jobs start together: their brokers, and Spark warming, share the cores, and then
    # their runs' consumers
    first_wave = range(min(len(batch.jobs), batch.opts.max_systems))
    for i, job in enumerate(batch.jobs):
        k = min(range(len(slots)), key=slots.__getitem__)
        start = slots[k]
        together = len(first_wave) if i in first_wave else 1
        ready = start + m["broker"] * (together + (1 if start < m["spark"] else 0))
        runs_together = sum(len(batch.jobs[j].scenarios) for j in first_wave) if i in first_wave else len(job.scenarios)
        ends = []
        for s in job.scenarios:
            setup = ready
            send = setup + m["setup"] + m["setup_per_run"] * runs_together
            run_end = send + batch.expected_s[s.name] * WAIT_FACTOR + m["end"]
            phases[s.name] = {"starting broker": start, "setup": setup, "sending": send, "draining": send + 1, "done": run_end}
            ends.append(run_end)
        slots[k] = max(ends) + m["teardown"]
        jobs[i] = (start, slots[k])
    runs_end = max(slots)
    return jobs, phases, max(runs_end, m["spark"]) + m["check_base"] + m["check_per_run"] * len(batch.scenarios)


def replay_until(batch: Batch, clock: FakeClock, jobs: dict, phases: dict, t: float) -> None:
    """The batch's state at virtual time ``t``, as its jobs and runs would have set it."""
    clock.now = t
    for i, (start, end) in jobs.items():
        if start <= t and i not in batch.job_started:
            batch.job_started[i] = start
        if end <= t:
            batch.jobs_ended.add(i)
    for name, times in phases.items():
        p = batch.progress[name]
        for phase, at in sorted(times.items(), key=lambda kv: kv[1]):
            if at <= t and phase not in p.began:
                p.phase = phase
                p.began[phase] = at


def simulate(monkeypatch, machine: dict):
    clock = FakeClock()
    opts = BatchOptions(SystemSpec("rocketmq:latest", "process"), None, max_systems=2, checked=True)
    batch = Batch(list(CONFORMANCE), opts, clock=clock)
    jobs, phases, verdicts_at = timeline(batch, machine)
    monkeypatch.setattr(batch_mod, "spark_state", lambda: "starting" if clock.now < machine["spark"] else "warm")
    return batch, clock, jobs, phases, verdicts_at


@pytest.fixture
def simulated(monkeypatch):
    return simulate(monkeypatch, IDLE)


@pytest.mark.parametrize("machine", ["idle", "loaded"])
def test_the_eta_is_within_20_percent_of_the_time_left(monkeypatch, machine):
    batch, clock, jobs, phases, verdicts_at = simulate(monkeypatch, IDLE if machine == "idle" else LOADED)
    runs_end = max(end for _, end in jobs.values())
    assert len(batch.jobs) > batch.opts.max_systems  # jobs wait for a slot: the schedule matters
    # a busy machine shows once its first broker has started; before that the ETA cannot know
    first = [0.0, 5.0] if machine == "idle" else [min(times["setup"] for times in phases.values()) + 1]
    points = first + [20.0] + [verdicts_at * f for f in (0.25, 0.4, 0.5, 0.6, 0.75, 0.85)]
    for t in sorted(p for p in points if first[0] <= p < runs_end):
        replay_until(batch, clock, jobs, phases, t)
        left, actual = batch.eta_s(), verdicts_at - t
        assert abs(left - actual) <= 0.2 * actual, f"at {t:.0f}s: ETA {left:.0f}s, actually {actual:.0f}s left"


def test_the_eta_never_reads_zero_while_work_remains(simulated):
    batch, clock, jobs, phases, verdicts_at = simulated
    last_done = max(times["done"] for times in phases.values())
    replay_until(batch, clock, jobs, phases, last_done + 0.1)  # every run done, the last system not torn down
    line = batch.progress_line()
    assert "finishing: tearing down the systems" in line and "ETA 00:00" not in line, line
    check = CheckProgress(batch.opts, len(batch.scenarios), len(batch.scenarios), 0.0, 0.0)
    line = check.line()
    assert f"finishing: checking {len(batch.scenarios)} runs" in line and "ETA 00:00" not in line, line


def test_a_slow_step_of_an_adapter_is_the_phase(simulated):
    batch, clock, jobs, phases, _ = simulated
    replay_until(batch, clock, jobs, phases, 1.0)
    index, job = next((i, j) for i, j in enumerate(batch.jobs) if len(j.scenarios) == 1 and i in batch.job_started)
    name = job.scenarios[0].name
    tag = "hourglass/rocketmq:5.5.0-0123456789abcdef"
    with adapter_phase.reporting(batch._phase_sink(index, job)):
        with adapter_phase.step(f"building image {tag} (first use)"):
            assert f"{name}: building image {tag} (first use)" in batch.progress_line()
            with adapter_phase.step("downloading RocketMQ 5.5.0 jars"):
                assert f"{name}: downloading RocketMQ 5.5.0 jars" in batch.progress_line()
            assert batch.progress[name].phase == f"building image {tag} (first use)"
            clock.now += 60  # a minute's build
    assert batch.progress[name].phase == "starting broker"
    clock.now += 9
    batch.progress[name].phase = "setup"
    start = jobs[index][0]  # the broker took 10 s once its image was built: no sign of a busy machine
    (took, _), = batch_mod.broker_starts(batch, clock.now, running=False)  # the one start that ended
    assert took == pytest.approx(clock.now - start - 60)
    with adapter_phase.step("nobody listens"):  # outside a batch: nothing happens
        pass


#: a real batch's timeline (the conformance suite on rocketmq:latest, process runtime, an idle
#: 2-core machine): ``harness.bench.eta_timeline`` of a ``python -m hourglass.harness.bench suite`` run
REAL_IDLE = Path(__file__).parent / "data" / "eta-timeline-idle.json"


def replay_real(monkeypatch, path: Path):
    """A Batch of the timeline's scenarios with its jobs' and runs' real times (jobs end their
    teardown after their last run), and the ETA it would have shown at a time."""
    real = json.loads(path.read_text())
    clock = FakeClock()
    by_name = {s.name: s for s in CONFORMANCE}
    opts = BatchOptions(SystemSpec("rocketmq:latest", "process"), None, max_systems=2, checked=True)
    batch = Batch([by_name[n] for n in real["runs"]], opts, clock=clock)
    recorded = {frozenset(j["scenarios"]): j["broker"] for j in real["jobs"]}
    jobs, phases = {}, {}
    for i, job in enumerate(batch.jobs):
        names = frozenset(s.name for s in job.scenarios)
        assert names in recorded, f"the catalogue's jobs changed since the timeline was recorded: {sorted(names)}"
        start, _ready = recorded[names]
        jobs[i] = (start, max(real["runs"][n]["done"] for n in names) + bench.TIMELINE_TEARDOWN_S)
        for n in names:
            r = real["runs"][n]
            phases[n] = {"starting broker": start, "setup": r["setup"], "sending": r["sending"], "draining": r["sending"] + 1,
                         "done": r["done"]}
    monkeypatch.setattr(batch_mod, "spark_state", lambda: "starting" if clock.now < real["spark_warm_s"] else "warm")
    return batch, clock, jobs, phases, real


def test_the_eta_of_a_real_idle_batch_is_within_20_percent_once_its_first_broker_is_up(monkeypatch):
    batch, clock, jobs, phases, real = replay_real(monkeypatch, REAL_IDLE)
    first_ready = min(j["broker"][1] for j in real["jobs"])
    runs_end = max(end for _, end in jobs.values())
    wrong = []
    t = first_ready + 1
    while t < runs_end:
        replay_until(batch, clock, jobs, phases, t)
        left, actual = batch.eta_s(), real["verdicts_s"] - t
        if abs(left - actual) > 0.2 * actual:
            wrong.append(f"at {t:.0f}s: ETA {left:.0f}s, actually {actual:.0f}s left")
        t += 10
    assert not wrong, "\n".join(wrong)


def test_the_checkers_spark_starts_once_the_first_brokers_and_runs_are_up(simulated):
    """The checker's Spark starts when the batch is settled (harness.batch.settled: every job
    started so far has its runs sending), not beside the first brokers' and consumers' starts,
    which it slowed down (the shared job's broker: 28.5 s with Spark starting beside it, 22.4 s
    without, on rocketmq:latest)."""
    batch, clock, jobs, phases, _ = simulated
    first_sending = max(phases[s.name]["sending"] for i in batch.job_started or range(batch.opts.max_systems)
                        for s in batch.jobs[i].scenarios)
    for t in (0.0, 5.0, first_sending - 0.5):
        replay_until(batch, clock, jobs, phases, t)
        assert not batch_mod.settled(batch), f"settled at {t} s"
    replay_until(batch, clock, jobs, phases, first_sending + 0.5)
    assert batch_mod.settled(batch)
    calls = []
    batch.opts = BatchOptions(batch.opts.system, None, max_systems=2, checked=True, when_settled=lambda: calls.append(clock.now))
    batch._settle()
    batch._settle()
    assert calls == [clock.now] and batch.spark_started_at == clock.now  # once


def test_runs_that_set_up_for_minutes_show_a_busy_machine_and_a_warm_idle_spread_does_not():
    """Beside the load generator's CPU hogs a niced harness process starts 10-30x slower than
    alone (a gRPC group's start took 4 min, the checker's Spark 268 s): the runs' setups and the
    Spark start so far pace the ETA, not only the brokers' starts. On an idle machine the setups
    spread over 0.5-2 estimates (hosted groups, a group's own JVM): no pace from that."""
    from hourglass.harness import eta

    at_once = batch_mod.AT_ONCE["hosted"]
    est = eta.COSTS.setup_for(at_once)
    assert eta.setup_pace([0.6 * est, est, 1.4 * est, 3.0 * est], eta.COSTS, at_once) == 1.0
    assert eta.setup_pace([20 * est, 15 * est, 30 * est], eta.COSTS, at_once) == pytest.approx(19.0)
    assert eta.paced(eta.COSTS, 19.0).broker_s == pytest.approx(eta.COSTS.broker_s * eta.MAX_PACE)
    assert eta.spark_pace("starting", 10.0, 10.0 + 5 * eta.COSTS.spark_start_s, eta.COSTS) == pytest.approx(5.0)
    assert eta.spark_pace("warm", 10.0, 1000.0, eta.COSTS) == 1.0


def test_a_run_in_setup_for_a_minute_lengthens_the_eta(simulated):
    batch, clock, jobs, phases, _ = simulated
    first_setup = min(times["setup"] for times in phases.values())
    replay_until(batch, clock, jobs, phases, first_setup + 1)
    for p in batch.progress.values():  # every run still setting up: none has reached its sending
        p.began.pop("sending", None), p.began.pop("draining", None), p.began.pop("done", None)
        if "setup" in p.began:
            p.phase = "setup"
    before = batch.eta_s()
    clock.now += 60
    after = batch.eta_s()
    assert batch.pace > 5 and after > before + 60, (before, after, batch.pace)


def test_a_slow_spark_start_paces_the_check_after_it(monkeypatch):
    """Beside the load generator the checker's Spark (nice 19) took 200 s to start instead of 22,
    then the check took minutes while the line read "ETA 00:01": the check goes as slowly as the
    JVM started. A Spark already warm before the check says nothing of the host."""
    from hourglass.harness import eta

    now, state = [1000.0], ["starting"]
    monkeypatch.setattr(batch_mod.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(batch_mod, "spark_state", lambda: state[0])
    opts = BatchOptions(SystemSpec("rocketmq:latest", "process"), None, max_systems=2, checked=True)
    idle = eta.check_left_s(0.0, 29, 0.0, eta.COSTS)
    check = CheckProgress(opts, 29, 29, 0.0, spark_since=1000.0)
    check.line()
    now[0] += 9 * eta.COSTS.spark_start_s  # a start nine times as long as the estimate
    state[0] = "warm"
    assert "ETA 0" in check.line() and check.costs.check_base_s == pytest.approx(9 * eta.COSTS.check_base_s)
    left = eta.check_left_s(0.0, 29, 0.0, check.costs)
    assert left == pytest.approx(9 * idle)
    warm = CheckProgress(opts, 29, 29, 0.0, spark_since=0.0)  # warm before the check began
    warm.line()
    assert warm.costs.check_base_s == pytest.approx(eta.COSTS.check_base_s)


def test_runs_waiting_in_a_slow_lane_wait_for_the_runs_ahead_of_them(simulated):
    """Beside the load generator the lane of runs with JVMs of their own moved by one run every two
    minutes while the ETA counted seconds: each waiting run waits as long as the runs ahead of it
    in its lane take, the lane's width at a time (harness.batch.turn_waits)."""
    from hourglass.harness.turns import AT_ONCE, WAITING, lane

    batch, clock, jobs, phases, _ = simulated
    i, job = next((i, j) for i, j in enumerate(batch.jobs) if j.shared and len(j.scenarios) > 4)
    jvm = sorted((s for s in job.scenarios if lane(s) == "jvm"), key=lambda s: -batch.expected_s[s.name])
    assert len(jvm) >= AT_ONCE["jvm"] + 2, [s.name for s in jvm]
    clock.now = 200.0
    batch.job_started[i] = 0.0
    for s in jvm[:AT_ONCE["jvm"]]:  # setting up for two minutes
        p = batch.progress[s.name]
        p.phase, p.began["setup"] = "setup", 80.0
    for s in jvm[AT_ONCE["jvm"]:]:
        batch.progress[s.name].phase = WAITING
    waits = batch_mod.turn_waits(batch, clock.now, batch.costs)
    ahead = jvm[AT_ONCE["jvm"]:]
    assert [waits[s.name] for s in ahead[:AT_ONCE["jvm"]]] == [120.0] * AT_ONCE["jvm"], waits
    assert all(waits.get(s.name, 0.0) == 0.0 for s in job.scenarios if lane(s) == "hosted")
    before = batch.eta_s()
    for s in ahead:
        batch.progress[s.name].phase = "queued"
    assert before > batch.eta_s()  # the lane's queue counts
