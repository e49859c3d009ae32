"""The harness image (the top-level ``Dockerfile``, built by ``.ci/harness-image``) runs the main
job: ``docker run --network host --pid host ... <image> main --runtime process`` starts the brokers as JVMs
inside the container, checks the runs with its Spark and writes the report where the host sees it.

* the image is built from this checkout (its base built locally with debootstrap, without a
  registry; cached layers: a second build only reinstalls the package, ~3 min; cold ~8 min);
* ``--version`` in the image is the repository's, commit included: the image installs a wheel and
  records the commit it was built from (``HOURGLASS_REVISION``, and the label
  ``org.opencontainers.image.revision``), so two nights on two images can be told apart;
* the main job in it exits 0 and leaves ``index.html``, ``summary.md`` and ``junit-suite.xml`` in
  the run tree on the host (bind-mounted at the same path, as docs/ci.md says to), and the cache
  (``HOURGLASS_CACHE``, RocketMQ's jars) is the host's, mounted at the same path too.

Nightly (``slow``): the main job takes several minutes and CI's hour is full. Under ``CI`` (or
``HOURGLASS_REQUIRE_DOCKER=1``) a missing engine fails the test instead of skipping it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hourglass.adapters.base import AdapterError
from hourglass.adapters.rocketmq import image as img

pytestmark = [pytest.mark.container, pytest.mark.slow, pytest.mark.realbroker]

REPO = Path(__file__).resolve().parents[2]
BUILD_LIMIT_S = 3600
MAIN_LIMIT_S = 2400


def _unavailable(why: str):
    if os.environ.get("CI") or os.environ.get("HOURGLASS_REQUIRE_DOCKER") == "1":
        pytest.fail(f"{why} (under CI this test must run)")
    pytest.skip(why)


@pytest.fixture(scope="module")
def harness_image() -> dict:
    try:
        img.engine()
    except AdapterError as e:
        _unavailable(str(e))
    done = subprocess.run([sys.executable, str(REPO / ".ci" / "harness-image"), "--json"], capture_output=True,
                          text=True, timeout=BUILD_LIMIT_S)
    assert done.returncode == 0, f"the image did not build:\n{done.stderr[-4000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def docker_run(image: str, argv: list[str], mounts: list[Path], env: dict[str, str], log: Path, timeout: float) -> int:
    # --pid host: the JVMs' owner tags (adapters/rocketmq/process.py) must name a pid the host knows,
    # or another harness on this machine kills them as leftovers (it did: brokers exited 137)
    cmd = ["docker", "run", "--rm", "--network", "host", "--pid", "host", "-w", str(mounts[0])]
    for m in mounts:
        cmd += ["-v", f"{m}:{m}"]
    if os.getuid() != 0:  # the run tree stays the user's; HOME: a writable one
        cmd += ["--user", f"{os.getuid()}:{os.getgid()}", "-e", "HOME=/tmp"]
    for k, v in env.items():
        cmd += ["-e", f"{k}={v}"]
    with open(log, "w") as out:
        return subprocess.run([*cmd, image, *argv], stdout=out, stderr=subprocess.STDOUT, timeout=timeout).returncode


def test_the_image_says_the_repositorys_version_and_commit(harness_image, tmp_path):
    repo = subprocess.run([sys.executable, "-m", "hourglass", "--version"], cwd=REPO, capture_output=True, text=True,
                          check=True).stdout.strip()
    inside = subprocess.run(["docker", "run", "--rm", "--network", "none", harness_image["tag"], "--version"],
                            capture_output=True, text=True, timeout=120)
    assert inside.returncode == 0, inside.stderr
    assert inside.stdout.strip() == repo and "+g" in repo, f"image {inside.stdout.strip()!r}, repository {repo!r}"
    labels = img.engine().images.get(harness_image["tag"]).labels
    assert labels["org.opencontainers.image.revision"].split("-")[0] in subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True).stdout


def test_the_main_job_runs_in_the_image_on_the_process_runtime(harness_image, tmp_path, record_property):
    cache = Path(os.environ.get("HOURGLASS_CACHE") or Path.home() / ".cache" / "hourglass").resolve()
    cache.mkdir(parents=True, exist_ok=True)
    work, log = tmp_path.resolve(), tmp_path / "main.log"
    out = work / "runs" / "main"
    started = time.monotonic()
    code = docker_run(harness_image["tag"], ["main", "--runtime", "process", "--out", str(out)], [work, cache],
                      {"HOURGLASS_CACHE": str(cache)}, log, MAIN_LIMIT_S)
    wall_s = time.monotonic() - started
    record_property("image", harness_image["tag"])
    record_property("image_size_mb", harness_image["size_mb"])
    record_property("main_wall_s", round(wall_s, 1))
    tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-40:])
    assert code == 0, f"the main job in the image exited {code} after {wall_s:.0f} s:\n{tail}"
    indexes = sorted(out.glob("*/index.html"))
    assert indexes, f"no index.html under {out}:\n{tail}"
    for index in indexes:
        assert (index.parent / "summary.md").is_file() and (index.parent / "summary.json").is_file()
    assert "<testsuite" in (out / "junit-suite.xml").read_text()
    print(f"main job in {harness_image['tag']}: exit 0 in {wall_s:.0f} s; {indexes[0]}")
