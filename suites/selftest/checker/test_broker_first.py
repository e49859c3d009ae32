"""The broker under test gets the machine first (reference.stalls.CLIENT_NICE, CHECKER_NICE): the
harness's own client and consumer processes and the checker's Spark run niced, every thread of them
and, where the kernel groups the CPU by session (autogroup), their session's group too, so that on a
busy host they wait for a CPU and the broker's threads on a message's path do not."""

from __future__ import annotations

import os

from hourglass.adapters.rocketmq.clientlink import _LineProcess
from hourglass.reference.stalls import CHECKER_NICE, CLIENT_NICE, HOST_SESSION_NICE


def _nice_of_threads(pid: int) -> set[int]:
    out = set()
    for tid in os.listdir(f"/proc/{pid}/task"):
        stat = open(f"/proc/{pid}/task/{tid}/stat").read()
        out.add(int(stat[stat.rfind(")") + 2:].split()[16]))  # field 19: nice
    return out


def _autogroup_nice(pid: int) -> int | None:
    """The nice value of ``pid``'s session group, None where the kernel does not group it by session:
    autogroup off, or the task in a cgroup's CPU group (a container's, a systemd slice's), where the
    kernel leaves ``/proc/<pid>/autogroup`` empty (sched/autogroup.c, proc_sched_autogroup_show_task)."""
    try:
        if open("/proc/sys/kernel/sched_autogroup_enabled").read().strip() != "1":
            return None
        line = open(f"/proc/{pid}/autogroup").read()
    except OSError:
        return None
    return int(line.split(" nice ")[1]) if " nice " in line else None


def test_a_client_process_runs_niced(tmp_path):
    probe = _LineProcess(["-c", "import json, os, threading; t = threading.Thread(target=lambda: None); t.start();"
                          "print(json.dumps({'nice': os.nice(0)}), flush=True); import sys; sys.stdin.read()"],
                         tmp_path / "probe.log", "probe")
    try:
        assert probe.next_line(60) == {"nice": CLIENT_NICE}
        assert _nice_of_threads(probe.proc.pid) == {CLIENT_NICE}
        assert _autogroup_nice(probe.proc.pid) in (None, CLIENT_NICE)
        assert _autogroup_nice(os.getpid()) in (None, 0)  # the harness's own session is left as it was
    finally:
        probe.kill()


def test_the_consumer_hosts_session_competes_as_the_brokers_its_threads_niced(tmp_path):
    # the host's session holds every hosted consumer (reference.stalls.HOST_SESSION_NICE)
    probe = _LineProcess(["-c", "import json, os; print(json.dumps({'nice': os.nice(0)}), flush=True); import sys; sys.stdin.read()"],
                         tmp_path / "probe.log", "probe", session_nice=HOST_SESSION_NICE)
    try:
        assert probe.next_line(60) == {"nice": CLIENT_NICE}
        assert _autogroup_nice(probe.proc.pid) in (None, HOST_SESSION_NICE)
    finally:
        probe.kill()


def test_the_checkers_spark_runs_niced(spark):
    from hourglass.reports import spark as plumbing

    live = [p for p in plumbing._jvms if p.poll() is None]
    assert live, "the session's gateway JVM is not recorded"
    for jvm in live:
        assert _nice_of_threads(jvm.pid) == {CHECKER_NICE}
        assert _autogroup_nice(jvm.pid) in (None, CHECKER_NICE)
