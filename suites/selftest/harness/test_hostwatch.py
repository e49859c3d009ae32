"""harness.hostwatch: what the host watch reads from /proc, what it records, and (where the machine
allows: root, cgroup v1) that a process starved of CPU by a quota is recorded as stalled."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from hourglass.harness import hostwatch
from hourglass.reference import stalls as rule
from hourglass.reference.contract import validate_event


class FakeProc:
    """A /proc of our own: pressure files and the threads of some processes."""

    def __init__(self, root: Path):
        self.root = root
        (root / "pressure").mkdir(parents=True)
        self.psi(0, 0)

    def psi(self, some_us: int, full_us: int, resource: str = "io") -> None:
        for r in ("cpu", "io", "memory"):
            s, f = (some_us, full_us) if r == resource else (0, 0)
            (self.root / "pressure" / r).write_text(f"some avg10=0.00 avg60=0.00 avg300=0.00 total={s}\n"
                                                    f"full avg10=0.00 avg60=0.00 avg300=0.00 total={f}\n")

    def thread(self, pid: int, tid: int, run_delay_ns: int, comm: str = "java", ppid: int = 1) -> None:
        d = self.root / str(pid)
        (d / "task" / str(tid)).mkdir(parents=True, exist_ok=True)
        stat = f"{pid} ({comm}) S {ppid} " + " ".join(["0"] * 48)
        (d / "stat").write_text(stat)
        (d / "task" / str(tid) / "schedstat").write_text(f"1000 {run_delay_ns} 5\n")
        (d / "task" / str(tid) / "stat").write_text(f"{tid} ({comm}) S {ppid} " + " ".join(["0"] * 48))
        (d / "task" / str(tid) / "comm").write_text(comm + "\n")


def watch_on(proc: Path, roots: dict, clock: list[int]) -> hostwatch.HostWatch:
    return hostwatch.HostWatch(lambda: roots, proc=proc, now_ms=lambda: clock[0])


def test_a_threads_run_queue_wait_and_the_hosts_full_pressure_are_recorded_as_stalls(tmp_path):
    proc = FakeProc(tmp_path)
    proc.thread(100, 100, 0)
    proc.thread(100, 101, 0, comm="ScheduleMessageTimerThread")
    proc.thread(200, 200, 0, comm="java", ppid=100)  # a child of the broker's root: its tree
    clock = [1_000_000]
    w = watch_on(tmp_path, {"broker": 100}, clock)
    w.sample()  # the first sample only learns where the counters stand
    clock[0] += 500
    proc.thread(100, 101, 3_000_000_000, comm="ScheduleMessageTimerThread")  # waited 3 s (ended by now)
    proc.thread(200, 200, 20_000_000)  # 20 ms: below the floor
    proc.psi(400_000, 300_000)
    w.sample(late_ms=120)
    clock[0] += 500
    w.sample()  # nothing more: the periods close
    found = {(e["source"], e["subject"]): e for e in w.stalls}
    rq = found[(rule.RUN_QUEUE, "broker")]
    assert rq["stalled_ms"] == 3000 and rq["from_ms"] == 1_000_500 - 3000 and rq["ts_ms"] == 1_000_500
    assert rq["detail"] == "thread ScheduleMessageTimerThread"
    io = found[("psi-io", rule.HOST)]
    assert (io["stalled_ms"], io["full_ms"]) == (400, 300)
    assert found[(rule.HEARTBEAT, rule.HARNESS)]["stalled_ms"] == 120
    for e in w.stalls:
        validate_event(e)  # what the runner writes is contract events
    assert w.stalls_between(1_000_400, 1_000_450) and not w.stalls_between(2_000_000, 3_000_000)


def test_the_worst_wait_on_a_messages_path_is_recorded_not_a_busier_threads_off_it(tmp_path):
    proc = FakeProc(tmp_path)
    for tid, comm in ((101, "C2 CompilerThre"), (102, "ReputMessageSer"), (103, "Sweeper thread")):
        proc.thread(100, tid, 0, comm=comm)
    proc.thread(300, 300, 0, comm="java")  # the name server: no path list, any thread
    clock = [1_000_000]
    w = watch_on(tmp_path, {"broker": 100, "namesrv": 300}, clock)
    w.sample()
    clock[0] += 500
    proc.thread(100, 101, 8_000_000_000, comm="C2 CompilerThre")
    proc.thread(100, 102, 700_000_000, comm="ReputMessageSer")
    proc.thread(100, 103, 41_900_000_000, comm="Sweeper thread")
    proc.thread(300, 300, 900_000_000, comm="java")
    w.sample()
    w.stop()
    found = {(e["source"], e["subject"]): e for e in w.stalls if e.get("path") != rule.JVM}
    assert found[(rule.RUN_QUEUE, "broker")]["stalled_ms"] == 700
    assert found[(rule.RUN_QUEUE, "broker")]["detail"] == "thread ReputMessageSer"
    assert found[(rule.RUN_QUEUE, "namesrv")]["stalled_ms"] == 900
    # the JVM's worst thread is recorded apart: only a measure of a JVM-wide pause, on no message's path;
    # the compilers and the sweeper run through a safepoint: their waits measure no pause
    (jvm,) = [e for e in w.stalls if e.get("path") == rule.JVM]
    assert (jvm["stalled_ms"], jvm["detail"]) == (700, "thread ReputMessageSer")
    assert not rule.on_path(jvm, local=False) and not rule.on_path(jvm, local=False, path=rule.SCHEDULE)
    assert hostwatch.observation(type("S", (), {"host_not_observed": lambda self: None})(), w)[rule.HOST_CPUS] >= 1


def test_consecutive_stalled_samples_merge_and_a_period_never_holds_more_stall_than_it_lasts(tmp_path):
    proc = FakeProc(tmp_path)
    clock = [0]
    w = watch_on(tmp_path, {}, clock)
    some = 0
    for _ in range(4):
        clock[0] += 500
        some += 600_000  # more than the sample's 500 ms: clamped to the period
        proc.psi(some, 0)
        w.sample()
    w.stop()
    (e,) = [e for e in w.stalls if e["source"] == "psi-io"]
    assert (e["from_ms"], e["ts_ms"]) == (0, 2000) and e["stalled_ms"] == 2000


def test_a_broker_log_stall_report_inside_the_run_is_read_with_the_line(tmp_path):
    log = tmp_path / "store.log"  # RocketMQ's own pattern: GMT+8, seconds
    log.write_text("2026-11-25 21:01:02 WARN RocketmqStore - [NOTIFYME]putMessage in lock cost time(ms)=6419, x\n"
                   "2020-01-01 00:00:00 WARN RocketmqStore - [NOTIFYME]putMessage in lock cost time(ms)=9000, x\n"
                   "2026-11-25 21:01:03 INFO RocketmqStore - nothing to see\n")
    end = 1795611662000  # 13:01:02 UTC
    (e,) = hostwatch.log_stalls([log], "broker", end - 60_000, end + 60_000, {log: end + 1000 + 2_500})
    assert (e["from_ms"], e["ts_ms"], e["stalled_ms"]) == (end - 6419, end, 6419)
    assert e["source"] == rule.BROKER_LOG and "store.log" in e["detail"] and "6419" in e["detail"]
    validate_event(e)


def test_the_brokers_jvm_wide_pauses_are_read_from_its_safepoint_log_at_their_own_zone(tmp_path):
    # JDK 17's -Xlog:safepoint with the time decoration (a line as the JVM wrote it here); a pause under
    # MIN_STALL_MS records nothing, nor does one outside the run
    log = tmp_path / rule.SAFEPOINT_LOG
    log.write_text(
        '[2026-11-30T09:27:40.168+0800][1.285s] Safepoint "G1CollectForAllocation", Time since last: 425098967 ns, '
        'Reaching safepoint: 6190 ns, Cleanup: 37125 ns, At safepoint: 1722146114 ns, Total: 1722189429 ns\n'
        '[2026-11-30T01:27:41.000+0000][2.101s] Safepoint "Cleanup", Time since last: 1 ns, Reaching safepoint: 5 ns, '
        'Cleanup: 7 ns, At safepoint: 9 ns, Total: 49000000 ns\n'
        '[2020-01-01T00:00:00.000+0000][0.1s] Safepoint "G1CollectFull", Total: 9000000000 ns\n')
    end = 1796002060168  # 2026-11-30 01:27:40.168 UTC
    (e,) = hostwatch.log_stalls([log], "broker", end - 60_000, end + 60_000)
    assert (e["from_ms"], e["ts_ms"], e["stalled_ms"]) == (end - 1722, end, 1722)
    assert e["source"] == rule.BROKER_LOG and "JVM-wide pause (safepoint G1CollectForAllocation) 1722 ms" in e["detail"]
    validate_event(e)


def test_a_simulated_system_records_virtual_time_and_an_external_one_that_its_host_was_not_observed():
    from hourglass.adapters.simulated import open_simulated
    from hourglass.adapters.base import BrokerProfile

    sim = open_simulated(BrokerProfile(message_delay_level="1s 5s", flush_delay_offset_interval_ms=1000))
    assert hostwatch.acquire(sim) is None
    assert rule.HOST_VIRTUAL in hostwatch.observation(sim, None)

    class External:
        def watched_processes(self):
            return {}

        def host_not_observed(self):
            return "an external cluster: other hosts"

    assert hostwatch.acquire(External()) is None
    assert hostwatch.observation(External(), None) == {rule.HOST_NOT_OBSERVED: "an external cluster: other hosts"}


def test_one_watch_serves_every_run_on_a_system_and_stops_after_the_last():
    class Local:
        def watched_processes(self):
            return {}

        def host_not_observed(self):
            return None

    system = Local()
    first = hostwatch.acquire(system)
    second = hostwatch.acquire(system)
    try:
        assert first is second and first._thread.is_alive()
    finally:
        hostwatch.release(system)
        assert first._thread.is_alive()
        hostwatch.release(system)
    assert not first._thread.is_alive()


def test_a_process_starved_by_a_cpu_quota_is_recorded_as_waiting_for_a_cpu(tmp_path):
    from suites.adapters import loadgen

    cgroup = loadgen.CPU_CGROUP
    if not (cgroup / "cpu.cfs_quota_us").exists() or not (cgroup / "cgroup.procs").stat().st_uid == 0:
        pytest.skip(f"no cgroup-v1 cpu controller at {cgroup}")
    # named as the schedule service's thread: the watch records the waits of threads on a message's path
    busy = subprocess.Popen([sys.executable, "-c", "open('/proc/self/comm', 'w').write('ScheduleMessage')\nwhile True: pass"])
    group = cgroup / f"hourglass-test-{busy.pid}"
    try:
        group.mkdir()
        (group / "cgroup.procs").write_text(str(busy.pid))
        w = hostwatch.HostWatch(lambda: {"broker": busy.pid})
        w.start()
        time.sleep(1.0)
        (group / "cpu.cfs_quota_us").write_text(str(loadgen.STARVED_QUOTA_US))
        time.sleep(2.0)
        (group / "cpu.cfs_quota_us").write_text("-1")
        time.sleep(1.0)
        w.stop()
    finally:
        busy.kill()
        busy.wait()
        if group.exists():
            group.rmdir()
    waited = sum(e["stalled_ms"] for e in w.stalls if e["source"] == rule.RUN_QUEUE and e["subject"] == "broker")
    assert waited >= 1500, list(w.stalls)  # starved for 2 s at 1 % of a CPU


def test_repeats_count_a_run_undecided_by_the_hosts_stalls_apart_never_as_a_failure():
    from hourglass.harness.cli import repeat_summary

    def verdict(passed, by_host=0):
        entry = {"passed": passed, "violations": 0, "checked": 3}
        if by_host:
            entry.update(undecided=by_host, undecided_by_host=by_host)
        return {"run_id": "r", "scenario": "s", "passed": passed, "invariants": {"ON_TIME": entry}}

    summary = repeat_summary([[verdict(True)], [verdict(None, by_host=2)], [verdict(True)]])
    s = summary["scenarios"]["s"]
    assert (s["runs"], s["passed"], s["host_stalled"], s["failed_invariants"]) == (3, 2, 1, {})


def test_a_shared_runs_stalls_are_recorded_until_its_consumers_stopped(tmp_path):
    """On a shared system the run's consumers deliver after its end, until the batch stops them: the
    run takes the stalls of that time too, and run.json says how long the host was watched."""
    import json

    from hourglass.adapters.rundir import read_run_json, write_run_json
    from hourglass.harness.runner import RunLogs
    from suites.selftest.checker.runs import T0, RunBuilder

    def stall(from_ms, to_ms):
        return {"type": "stall", "ts_ms": T0 + to_ms, "source": rule.RUN_QUEUE, "subject": "broker",
                "from_ms": T0 + from_ms, "stalled_ms": to_ms - from_ms, "detail": "thread ScheduleMessage"}

    class Watch:
        sources, error = ["psi-cpu", rule.RUN_QUEUE], None
        recorded = [stall(100, 600), stall(900, 1500), stall(2000, 2600), stall(9000, 9500)]

        def stalls_between(self, from_ms, to_ms):
            return [dict(e) for e in self.recorded if e["ts_ms"] >= from_ms and e["from_ms"] <= to_ms]

    run_dir = tmp_path / "run"
    (run_dir / "events").mkdir(parents=True)
    run = dict(RunBuilder("r", ended=1000).run_json(), logs={})
    logs = RunLogs(object(), run_dir)
    logs.record_stalls(run, Watch(), held=True)  # at the run's end (1 s)
    write_run_json(run_dir, run)
    assert run["host"][rule.HOST_WATCHED_UNTIL] == T0 + 1000
    logs.record_stalls_until(T0 + 3000)  # the batch stopped the consumers at 3 s
    written = [json.loads(line) for line in (run_dir / "events" / "stalls.jsonl").read_text().splitlines()]
    # the two of the run's own period, then the one begun after its end and before the consumers stopped
    assert [(e["from_ms"] - T0, e["ts_ms"] - T0) for e in written] == [(100, 600), (900, 1500), (2000, 2600)]
    assert read_run_json(run_dir)["host"][rule.HOST_WATCHED_UNTIL] == T0 + 3000
    logs.record_stalls_until(T0 + 10_000)  # once only: the watch was released
    assert len((run_dir / "events" / "stalls.jsonl").read_text().splitlines()) == 3


def test_the_worst_wait_of_each_message_path_is_recorded_apart(tmp_path):
    """The timer store's busier thread must not hide, in the same sample, the schedule service's wait
    that delayed a delay-level message (reference.stalls.thread_paths)."""
    proc = FakeProc(tmp_path)
    for tid, comm in ((101, "TimerEnqueueGet"), (102, "ScheduleMessage")):
        proc.thread(100, tid, 0, comm=comm)
    clock = [1_000_000]
    w = watch_on(tmp_path, {"broker": 100}, clock)
    w.sample()
    clock[0] += 500
    proc.thread(100, 101, 900_000_000, comm="TimerEnqueueGet")
    proc.thread(100, 102, 300_000_000, comm="ScheduleMessage")
    w.sample()
    w.stop()
    by_path = {e.get("path"): (e["stalled_ms"], e["detail"]) for e in w.stalls if e["source"] == rule.RUN_QUEUE}
    assert by_path == {rule.SCHEDULE: (300, "thread ScheduleMessage"), rule.TIMER: (900, "thread TimerEnqueueGet"),
                       rule.POP: (900, "thread TimerEnqueueGet"), rule.JVM: (900, "thread TimerEnqueueGet")}
    for e in w.stalls:
        validate_event(e)
    # a delay level's lateness is explained by its own path's record only
    psi = [{"type": "stall", "ts_ms": 1_000_500, "source": "psi-cpu", "subject": rule.HOST, "from_ms": 999_000,
            "stalled_ms": 1500, "full_ms": 0}]
    assert rule.explain(list(w.stalls) + psi, 999_000, 1_000_500, cpus=2, path=rule.SCHEDULE).explained_ms == 300
    assert rule.explain(list(w.stalls) + psi, 999_000, 1_000_500, cpus=2, path=rule.TIMER).explained_ms == 900
