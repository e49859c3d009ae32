"""The process runtime's CPU quota (``cpu_throttle``, ``adapters.rocketmq.cgroup``): a component
started under it runs from its exec at the quota's share of one CPU, a running one moved in slows
down at once, lifting it gives the CPU back, and closing the runtime leaves no group behind."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from hourglass.adapters.rocketmq import cgroup
from hourglass.adapters.rocketmq.process import ProcessRuntime
from hourglass.adapters.rocketmq.runtime import LaunchSpec

pytestmark = pytest.mark.skipif(cgroup.unavailable() is not None, reason=str(cgroup.unavailable()))

#: a busy loop: as much CPU as it gets
SPIN = ("python3", "-c", "while True: pass")
TICKS = os.sysconf("SC_CLK_TCK")


def _spec(tmp_path: Path) -> LaunchSpec:
    return LaunchSpec("broker", "", (), (), (), (), tmp_path / "broker.out", command=SPIN)


def _cpu_share(pid: int, seconds: float = 2.0) -> float:
    """The share of one CPU the process used over ``seconds``."""
    def used() -> int:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime + stime, in clock ticks

    before, t0 = used(), time.monotonic()
    time.sleep(seconds)
    return (used() - before) / TICKS / (time.monotonic() - t0)


def test_a_component_runs_at_its_quota_from_its_exec_and_after_a_restart(tmp_path):
    rt = ProcessRuntime()
    try:
        rt.throttle_cpu("broker", 100)  # before the launch: the command execs inside the group
        rt.launch(_spec(tmp_path))
        pid = rt.pid("broker")
        group = rt._cpu["broker"]
        deadline = time.monotonic() + 5
        while str(pid) not in group.procs_file.read_text().split():  # the prefix's shell writes it, then execs
            assert time.monotonic() < deadline, "the component never joined its group"
            time.sleep(0.01)
        assert _cpu_share(pid) < 0.2  # a tenth of one CPU (and the CFS period's slack)
        rt.kill("broker")
        rt.start("broker")  # a start under the quota still in force
        assert _cpu_share(rt.pid("broker")) < 0.2
        rt.throttle_cpu("broker", None)
        assert _cpu_share(rt.pid("broker")) > 0.4  # unlimited again (two cores; other tests may run)
    finally:
        rt.close()
    assert not rt._cpu["broker"].path.exists()


def test_a_running_component_moved_under_a_quota_slows_down_at_once(tmp_path):
    rt = ProcessRuntime()
    try:
        rt.launch(_spec(tmp_path))
        pid = rt.pid("broker")
        assert _cpu_share(pid, 1.0) > 0.4
        rt.throttle_cpu("broker", 50)
        assert _cpu_share(pid) < 0.12
    finally:
        rt.close()


def test_groups_of_gone_harnesses_are_removed_and_live_ones_kept(tmp_path):
    root = cgroup._v1_root() or cgroup.ROOT
    gone = root / "hourglass-999999_1-broker"  # no such owner
    mine = cgroup.CpuGroup("probe")
    try:
        gone.mkdir(exist_ok=True)
        mine.set(500)
        assert gone.name in cgroup.remove_leftovers()
        assert not gone.exists() and mine.path.exists()
    finally:
        mine.remove()
        if gone.exists():
            gone.rmdir()
    assert not mine.path.exists()
