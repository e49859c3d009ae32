"""The process runtime treats a component as its process group: a launcher script whose server is a
grandchild (as Apache's ``bin/mqbroker`` -> ``runbroker.sh`` -> java) is stopped, killed, paused
and cleaned up as a whole, and a stop returns only when the server has run its shutdown hook."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hourglass.adapters.base import AdapterError
from hourglass.adapters.rocketmq.process import OWNER_ENV, ProcessRuntime, group_members, owner_tag, remove_leftover_processes
from hourglass.adapters.rocketmq.runtime import LaunchSpec


LAUNCHER = r'''
# a launcher as Apache's scripts are: a shell that runs the server as its child, without exec
sh -c 'trap "sleep 1; echo persisted >> {out}; exit 0" TERM; echo up >> {out}; while :; do sleep 0.1; done'
'''


def _launcher_spec(tmp_path: Path) -> LaunchSpec:
    out = tmp_path / "server.txt"
    return LaunchSpec("broker", "", (), (), (), (), tmp_path / "broker.out",
                      command=("/bin/sh", "-c", LAUNCHER.format(out=out)))


def _wait_for(predicate, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)


def test_stop_waits_for_the_whole_group_not_the_launcher(tmp_path):
    rt = ProcessRuntime()
    out = tmp_path / "server.txt"
    try:
        rt.launch(_launcher_spec(tmp_path))
        _wait_for(lambda: out.exists())
        assert len(rt.processes("broker")) >= 2  # the launcher and its server
        rt.pause("broker")
        rt.resume("broker")
        started = time.monotonic()
        rt.stop("broker", timeout_s=20)
        # the launcher dies on SIGTERM at once; its server's "shutdown hook" takes a second
        assert time.monotonic() - started >= 0.9
        assert out.read_text().splitlines() == ["up", "persisted"]
        assert not rt.running("broker") and rt.processes("broker") == []
        assert rt.exit_code("broker") == 128 + 15
        rt.start("broker")
        _wait_for(lambda: out.read_text().count("up") == 2)
        pgid = rt.pid("broker")
        rt.kill("broker")
        assert group_members(pgid) == [] and rt.exit_code("broker") == 137
        assert "persisted" not in out.read_text().split("up")[-1]  # kill -9: no hook ran
        assert "starting broker: /bin/sh -c" in rt.log_tail("broker")
    finally:
        rt.close()


def test_a_launcher_that_exits_leaving_its_server_in_the_group_is_still_running(tmp_path):
    rt = ProcessRuntime()
    spec = LaunchSpec("broker", "", (), (), (), (), tmp_path / "broker.out",
                      command=("/bin/sh", "-c", "sleep 60 & exit 0"))
    try:
        rt.launch(spec)
        _wait_for(lambda: rt._procs["broker"].poll() is not None)
        assert rt.running("broker") and rt.exit_code("broker") is None
        rt.close()
        assert not rt.running("broker")
    finally:
        rt.close()


def test_a_missing_command_is_an_adapter_error(tmp_path):
    rt = ProcessRuntime()
    try:
        with pytest.raises(AdapterError, match=r"could not start broker: /nonexistent/bin/mqbroker: No such file"):
            rt.launch(LaunchSpec("broker", "", (), (), (), (), tmp_path / "b.out", command=("/nonexistent/bin/mqbroker",)))
    finally:
        rt.close()


def test_leftovers_of_a_gone_harness_die_with_their_whole_group(tmp_path):
    """A launcher's server is not its group's leader, and the leader may be gone already."""
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    gone = owner_tag(done.pid)
    done.wait()
    pid_file = tmp_path / "server.pid"
    leader = subprocess.Popen(["/bin/sh", "-c", f"sleep 120 & echo $! > {pid_file}; exit 0"],
                              env=dict(os.environ, **{OWNER_ENV: gone}), start_new_session=True)
    leader.wait()
    _wait_for(lambda: pid_file.exists() and pid_file.read_text().strip())
    server = int(pid_file.read_text())
    try:
        assert group_members(leader.pid) == [server]
        remove_leftover_processes()
        _wait_for(lambda: group_members(leader.pid) == [])
    finally:
        try:
            os.kill(server, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_a_start_after_the_close_is_refused_and_starts_nothing(tmp_path):
    """A fault step's restart racing a teardown (Ctrl-C, SIGTERM) must not leave a process behind:
    seen once, three broker JVMs outlived a SIGTERMed run whose outage restarted its broker."""
    rt = ProcessRuntime()
    spec = LaunchSpec("broker", "", (), (), (), (), tmp_path / "broker.out", command=("/bin/sh", "-c", "sleep 60"))
    try:
        rt.launch(spec)
        rt.kill("broker")
        rt.close()
        with pytest.raises(AdapterError, match=r"process runtime: closed \(not starting broker\)"):
            rt.start("broker")
        assert not rt.running("broker")
    finally:
        rt.close()
