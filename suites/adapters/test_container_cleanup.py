"""No container outlives its harness: close() removes them, Ctrl-C does, and a new runtime removes
the leftovers of harnesses that died without either."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hourglass.adapters.base import AdapterError
from hourglass.adapters.rocketmq import image as img
from hourglass.adapters.rocketmq.container import (LABEL, LABEL_HOST, LABEL_PID, LABEL_PID_START, LABEL_RUNTIME,
                                         ContainerRuntime, process_start_time)
from suites.adapters.test_container_runtime import SYSTEM, Pair, engine_or_skip

pytestmark = [pytest.mark.container]
REPO = Path(__file__).resolve().parents[2]


def of_runtime(client, runtime_id: str) -> list:
    return client.containers.list(all=True, filters={"label": f"{LABEL_RUNTIME}={runtime_id}"})


def test_leftovers_of_a_gone_harness_are_removed_and_a_live_ones_kept(tmp_path):
    client = engine_or_skip()
    base, _ = img.ensure_base_image(client)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # its pid now names no process (pid reuse is caught by the start-time label)
    host = __import__("socket").gethostname()
    labels = {LABEL: "1", LABEL_HOST: host, LABEL_RUNTIME: "leftover-test"}
    dead = client.containers.create(base, ["sleep", "600"], network_mode="none",
                                    labels={**labels, LABEL_PID: str(gone.pid), LABEL_PID_START: "1"})
    alive = client.containers.create(base, ["sleep", "600"], network_mode="none",
                                     labels={**labels, LABEL_PID: str(os.getpid()),
                                             LABEL_PID_START: process_start_time(os.getpid())})
    try:
        rt = ContainerRuntime(tmp_path, tmp_path, say=lambda line: None)
        rt.close()
        remaining = {c.id for c in of_runtime(client, "leftover-test")}
        assert dead.id not in remaining
        assert alive.id in remaining
    finally:
        for container in (dead, alive):
            try:
                container.remove(force=True)
            except Exception:  # noqa: BLE001 - already removed
                pass


@pytest.mark.realbroker
def test_close_removes_every_container_and_is_idempotent(tmp_path):
    from hourglass.adapters.rocketmq.provision import resolve

    client = engine_or_skip()
    pair = Pair(resolve(SYSTEM), tmp_path, base_hint=30076)
    rt = ContainerRuntime(pair.dist, pair.layout.root)
    rt.launch(pair.spec("namesrv"))
    assert len(of_runtime(client, rt.runtime_id)) == 1
    rt.close()
    assert of_runtime(client, rt.runtime_id) == []
    rt.close()
    with pytest.raises(AdapterError, match="closed"):
        rt.launch(pair.spec("namesrv"))


CTRL_C_CHILD = textwrap.dedent("""
    import signal, sys
    from pathlib import Path
    from hourglass.adapters.rocketmq.container import ContainerRuntime
    from hourglass.adapters.rocketmq.provision import resolve
    from suites.adapters.test_container_runtime import Pair
    pair = Pair(resolve(sys.argv[1]), Path(sys.argv[2]), base_hint=30176)
    rt = ContainerRuntime(pair.dist, pair.layout.root)
    rt.launch(pair.spec("namesrv"))
    print(rt.runtime_id, flush=True)
    signal.pause()
""")


@pytest.mark.realbroker
def test_ctrl_c_removes_the_containers(tmp_path):
    client = engine_or_skip()
    child = subprocess.Popen([sys.executable, "-c", CTRL_C_CHILD, SYSTEM, str(tmp_path)], cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(REPO)})
    runtime_id = ""
    try:
        runtime_id = child.stdout.readline().strip()  # printed once its container runs
        assert runtime_id, child.stderr.read()
        assert len(of_runtime(client, runtime_id)) == 1
        child.send_signal(signal.SIGINT)
        child.wait(timeout=120)
        assert of_runtime(client, runtime_id) == [], child.stderr.read()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        for container in of_runtime(client, runtime_id) if runtime_id else ():
            container.remove(force=True)
