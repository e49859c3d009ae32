"""The checker on a real Spark cluster: a standalone master and two workers started from the
installed pyspark (``reports.standalone``), whose executors run a virtualenv that has numpy and
pyarrow but not the project, and no ``PYTHONPATH``. The checker ships its code to them; its
verdicts there are those of ``local[*]``, on both paths (runs judged whole from their files'
bytes through Spark's binaryFile source; runs cut into buckets of keys, shuffled as Arrow blobs). Without
the shipped code the executors cannot import the checker, and the command says so in one line
before it reads any run; so does an executors' Python of another version."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.sparkcluster

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from reports.standalone import StandaloneCluster, executor_python

    python = executor_python()
    with StandaloneCluster(workers=2, cores=1, memory="1g", workdir=tmp_path_factory.mktemp("spark-cluster")) as c:
        yield c, python
    assert all(_gone(pid) for pid in c.pids())


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _check_on(cluster, case_root: Path, out: Path, *options: str) -> subprocess.CompletedProcess:
    """``python -m reports check`` of ``case_root`` on the cluster (``options``: the test driver's
    switches and more ``--conf``)."""
    c, python = cluster
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SPARK_LOCAL_IP": "127.0.0.1"}
    switches = [o for o in options if o in ("--unshipped", "--bucketed")]
    more = [o for o in options if o not in switches]
    cmd = [sys.executable, "-m", "suites.selftest.checker.cluster_driver", *switches, "check", str(case_root),
           "--out", str(out), "--master", c.master, "--conf", f"spark.pyspark.python={python}",
           "--conf", "spark.executor.memory=512m", "--conf", "spark.driver.memory=1g", *more]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)


def _verdicts(out: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in out.glob("*/verdict.json")}


@pytest.mark.parametrize("path", ["whole", "bucketed"])
def test_verdicts_on_the_cluster_are_those_of_local(cluster, case_root, verdicts, tmp_path, path):
    done = _check_on(cluster, case_root, tmp_path, *(["--bucketed"] if path == "bucketed" else []))
    assert done.returncode == 1, done.stderr[-3000:]  # the hand-made runs hold violations
    on_cluster = _verdicts(tmp_path)
    local = {v["run_id"]: json.loads(json.dumps(v)) for v in verdicts.values()}
    assert set(on_cluster) == set(local)
    for run_id, v in local.items():
        assert on_cluster[run_id] == v, run_id
    apps = cluster[0].status()
    ran = [a for a in apps.get("completedapps", []) + apps.get("activeapps", []) if a["name"] == "hourglass-checker"]
    assert ran, "the checker's application never reached the cluster's master"


def test_executors_without_the_code_fail_with_the_missing_module(cluster, case_root, tmp_path):
    done = _check_on(cluster, case_root, tmp_path, "--unshipped")
    assert done.returncode == 3
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"hourglass check: the Spark executors ({cluster[0].master}): expected Python 3.")
    assert "No module named 'reports'" in last and str(cluster[1]) in last
    assert not list(tmp_path.glob("*/verdict.json"))  # nothing was judged


def test_executors_of_another_python_version_fail_naming_both(cluster, case_root, tmp_path):
    """An executors' Python that says it is 3.99 (a sitecustomize on their PYTHONPATH): PySpark's
    own check refuses it, and the command says so in one line, both versions named."""
    fake = tmp_path / "fake-version"
    fake.mkdir()
    (fake / "sitecustomize.py").write_text("import collections, sys\nsys.version_info = collections.namedtuple("
                                           "'version_info', 'major minor micro releaselevel serial')(3, 99, 0, 'final', 0)\n")
    done = _check_on(cluster, case_root, tmp_path / "out", "--conf", f"spark.executorEnv.PYTHONPATH={fake}")
    assert done.returncode == 3
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"hourglass check: the Spark executors ({cluster[0].master}): expected a Python 3.")
    assert "3.99" in last and "%d.%d" % sys.version_info[:2] in last
