"""The broker under test gets the machine first (reference.stalls.CLIENT_NICE, CHECKER_NICE): the
harness's own client and consumer processes and the checker's Spark run niced, every thread of them
and, where the kernel groups the CPU by session (autogroup), their session's group too, so that on a
busy host they wait for a CPU and the broker's threads on a message's path do not."""

from __future__ import annotations

import os

import pytest

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


def test_the_client_process_and_the_consumer_host_sessions_compete_as_the_brokers(monkeypatch, tmp_path):
    """The harness's instruments: the client process (the runs' producer, every admin call; niced as
    a session beside the load generator's hogs its JVM did not start within 60 s and six runs broke)
    and the consumer host. Their sessions at HOST_SESSION_NICE, their threads at CLIENT_NICE."""
    from hourglass.adapters.rocketmq import clientlink

    seen = {}

    class Started(Exception):
        pass

    def init(self, argv, log_file, what, start_timeout_s, session_nice=None):
        seen[what.split(" (")[0]] = session_nice
        raise Started

    monkeypatch.setattr(clientlink._RequestProcess, "__init__", init)
    with pytest.raises(Started):
        clientlink.ClientProcess(tmp_path, "127.0.0.1:9876", tmp_path, "i")
    with pytest.raises(Started):
        clientlink.ConsumerHost(tmp_path, tmp_path, pop=False)
    assert seen == {"client process": HOST_SESSION_NICE, "consumer host": HOST_SESSION_NICE}
