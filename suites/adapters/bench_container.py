"""Benchmark of the container runtime against the process runtime (prints figures; not a test).

``python -m suites.adapters.bench_container [SYSTEM] [RUNS]`` (default ``rocketmq:4.9.7``, 3 runs):
for each run and runtime, a name server + broker pair is launched and timed until both answer a
remoting round trip (start-to-ready), then the broker is killed with SIGKILL and started again
(restart-to-ready); for containers also the disk the two containers took under the engine's vfs
directory (every container copies its image twice: the init layer and its own). Image build
times: ``python -m hourglass.adapters.rocketmq.image SYSTEM`` (cold: remove the images first).
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hourglass.adapters.rocketmq.container import ContainerRuntime
from hourglass.adapters.rocketmq.process import ProcessRuntime
from hourglass.adapters.rocketmq.provision import resolve
from suites.adapters.test_container_runtime import Pair

VFS_DIR = Path("/var/lib/docker/vfs/dir")


def vfs_bytes() -> int | None:
    if not VFS_DIR.is_dir():
        return None
    out = subprocess.run(["du", "-sb", str(VFS_DIR)], capture_output=True, text=True).stdout.split()
    return int(out[0]) if out else None


def one_run(dist, runtime_name: str, workdir: Path, base_hint: int) -> dict:
    pair = Pair(dist, workdir, base_hint=base_hint)
    rt = ProcessRuntime() if runtime_name == "process" else ContainerRuntime(dist, workdir, say=lambda line: None)
    try:
        if runtime_name == "container":
            rt.ensure_image()
        disk_before = vfs_bytes() if runtime_name == "container" else None
        started = time.monotonic()
        rt.launch(pair.spec("namesrv"))
        rt.launch(pair.spec("broker"))
        launched_s = time.monotonic() - started
        pair.wait_broker(rt)
        pair.wait_namesrv(rt)
        ready_s = time.monotonic() - started
        disk_after = vfs_bytes() if runtime_name == "container" else None
        rt.kill("broker")
        restarted = time.monotonic()
        rt.start("broker")
        pair.wait_broker(rt)
        row = {"launch_s": launched_s, "ready_s": ready_s, "restart_s": time.monotonic() - restarted}
        if disk_before is not None and disk_after is not None:
            row["disk_mb_per_container"] = (disk_after - disk_before) / 2e6
        return row
    finally:
        rt.close()


def main(argv: list[str]) -> int:
    system = argv[0] if argv else "rocketmq:4.9.7"
    runs = int(argv[1]) if len(argv) > 1 else 3
    dist = resolve(system)
    rows: dict[str, list[dict]] = {"process": [], "container": []}
    root = Path(tempfile.mkdtemp(prefix="hourglass-bench-container-"))
    try:
        for i in range(runs):
            for offset, name in enumerate(rows):
                row = one_run(dist, name, root / f"{name}-{i}", base_hint=29876 + 100 * i + 50 * offset)
                rows[name].append(row)
                print(f"{system} {name} run {i}: " + ", ".join(f"{k} {v:.2f}" for k, v in row.items()), flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for name, runs_of in rows.items():
        medians = {k: statistics.median(r[k] for r in runs_of) for k in runs_of[0]}
        print(f"{system} {name} median of {len(runs_of)}: " + ", ".join(f"{k} {v:.2f}" for k, v in medians.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
