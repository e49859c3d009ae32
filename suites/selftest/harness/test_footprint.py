"""harness.footprint: the harness's own JVMs and CPU-seconds beside the system's, as the bench and
the main job print them."""

from __future__ import annotations

import os
import subprocess
import sys

from hourglass.harness.footprint import Footprint

#: a child that spends 0.6 CPU-seconds of its own (whatever the machine's load), says so, and waits
SPIN = "import sys, time\nwhile time.process_time() < 0.6: pass\nprint('done', flush=True)\nsys.stdin.read()"


def _jvms_already() -> tuple[int, int]:
    """The JVMs under this process before a test starts its own (the checker's Spark session of an
    earlier test lives on in the same pytest process)."""
    fp = Footprint()
    fp.sample()
    return fp.peak_harness_jvms, fp.peak_system_jvms


def test_the_harness_s_own_processes_and_the_system_s_are_counted_apart():
    already = _jvms_already()
    with Footprint() as fp:
        mine = subprocess.Popen([sys.executable, "-c", SPIN], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        # a process whose command line names a server's main class is the system's
        broker = subprocess.Popen([sys.executable, "-c", SPIN, "org.apache.rocketmq.broker.BrokerStartup"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        for p in (mine, broker):
            assert p.stdout.readline() == b"done\n"
        fp.sample()
        own_s = sum(os.times()[:2])  # this process's own CPU time by now: the harness's too
        for p in (mine, broker):
            p.kill()
            p.wait()
    f = fp.figures()
    assert f["peak_processes"] >= 3
    assert f["harness_cpu_s"] >= own_s + 0.6 - 0.05 and f["system_cpu_s"] >= 0.6 - 0.02, (f, own_s)  # ticks of 10 ms
    assert f["system_cpu_s"] < 0.6 + 0.5, f  # the harness's own spin is not the system's
    assert (f["peak_harness_jvms"], f["peak_system_jvms"]) == already  # no JVM of its own (HotSpot's VM thread: none)


def test_a_jvm_of_the_harness_is_counted(tmp_path):
    import shutil

    java = shutil.which("java")
    assert java, "a JDK is part of the set-up (.ci/bootstrap)"
    src = tmp_path / "Up.java"
    src.write_text("public class Up { public static void main(String[] a) throws Exception {"
                   " System.out.println(\"up\"); System.out.flush(); Thread.sleep(60000); } }")
    already = _jvms_already()
    with Footprint() as fp:
        jvm = subprocess.Popen([java, "-XX:+UseSerialGC", str(src)], stdout=subprocess.PIPE)
        try:
            assert jvm.stdout.readline() == b"up\n"
            fp.sample()
        finally:
            jvm.kill()
            jvm.wait()
    assert (fp.figures()["peak_harness_jvms"], fp.figures()["peak_system_jvms"]) == (already[0] + 1, already[1])
