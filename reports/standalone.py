"""A Spark standalone cluster on this machine, from the installed pyspark's own launcher, and a
bare Python for its executors: what the cluster test and ``python -m hourglass.reports.bench --cluster`` run
the checker on, as it would run on a real cluster (executors that have never seen the project).

    with StandaloneCluster(workers=2, cores=1, memory="1g") as cluster:
        check_runs(..., master=cluster.master, spark_conf={"spark.pyspark.python": str(executor_python())})

The master and each worker are ``bin/spark-class`` JVMs in their own process group: leaving the
``with`` kills the groups (the executors and their Python workers with them), also on an error.
Their environment has no ``PYTHONPATH`` (an executor would import the driver's checkout through
it) and no ``PYSPARK_*``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from hourglass.reference.contract import ContractError

#: Where the executors' virtualenv is kept (reused across runs: creating it takes ~10 s).
CACHE = Path(os.environ.get("HOURGLASS_CACHE", Path.home() / ".cache" / "hourglass"))


def spark_home() -> Path:
    """The installed pyspark's Spark distribution (``bin/spark-class``, ``jars/``, ``python/lib``)."""
    import pyspark

    return Path(pyspark.__file__).parent


def executor_python(cache: Path | None = None) -> Path:
    """A virtualenv of the driver's Python version holding only what the checker's tasks import
    besides pyspark (:data:`reports.shipping.TASK_REQUIREMENTS`, at the driver's versions): not the
    project, which the checker ships. Created once under ``cache`` (pip's cache or PyPI)."""
    from importlib.metadata import version

    from hourglass.reports.shipping import TASK_REQUIREMENTS

    pins = [f"{name}=={version(name)}" for name in TASK_REQUIREMENTS]
    tag = hashlib.sha256(" ".join([sys.version, *pins]).encode()).hexdigest()[:10]
    venv = (cache or CACHE) / f"spark-executor-py{sys.version_info[0]}.{sys.version_info[1]}-{tag}"
    python = venv / "bin" / "python"
    if (venv / ".complete").exists():
        return python
    partial = venv.with_name(venv.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    base = getattr(sys, "_base_executable", sys.executable)
    for cmd in ([base, "-m", "venv", str(partial)],
                [str(partial / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", *pins]):
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            raise ContractError("the executors' virtualenv", None, f"{' '.join(cmd)} to succeed",
                                (done.stderr.strip().splitlines() or ["exit %d" % done.returncode])[-1])
    (partial / ".complete").write_text(" ".join(pins) + "\n")
    shutil.rmtree(venv, ignore_errors=True)
    partial.rename(venv)
    # a venv's scripts name the directory it was made in; the interpreter itself does not care
    return python


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StandaloneCluster:
    """A master and ``workers`` workers on 127.0.0.1, each worker with ``cores`` cores and
    ``memory`` for executors; logs and the workers' directories in ``workdir`` (a temporary one by
    default)."""

    def __init__(self, workers: int = 2, cores: int = 1, memory: str = "1g", workdir: str | Path | None = None,
                 start_timeout_s: float = 90.0):
        self.workers, self.cores, self.memory = workers, cores, memory
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="hourglass-spark-cluster-"))
        self.start_timeout_s = start_timeout_s
        self.port, self.webui_port = _free_port(), _free_port()
        self.master = f"spark://127.0.0.1:{self.port}"
        self._procs: list[subprocess.Popen] = []

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("PYSPARK_")}
        env.update(SPARK_HOME=str(spark_home()), SPARK_LOCAL_IP="127.0.0.1", SPARK_WORKER_DIR=str(self.workdir / "work"),
                   SPARK_NO_DAEMONIZE="1")
        return env

    def _launch(self, name: str, *args: str) -> None:
        log = open(self.workdir / f"{name}.log", "wb")
        self._procs.append(subprocess.Popen([str(spark_home() / "bin" / "spark-class"), *args], env=self._env(),
                                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True))
        log.close()

    def __enter__(self) -> "StandaloneCluster":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._launch("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(self.port),
                     "--webui-port", str(self.webui_port))
        for i in range(self.workers):
            self._launch(f"worker-{i}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                         "--cores", str(self.cores), "--memory", self.memory, "--webui-port", str(_free_port()),
                         "--work-dir", str(self.workdir / "work" / f"worker-{i}"), self.master)
        deadline = time.monotonic() + self.start_timeout_s
        alive = 0
        while time.monotonic() < deadline:
            dead = [p for p in self._procs if p.poll() is not None]
            if dead:
                raise ContractError("the standalone Spark cluster", None, "a master and workers that keep running",
                                    f"exit {dead[0].returncode}; logs in {self.workdir}")
            alive = self.alive_workers()
            if alive >= self.workers:
                return
            time.sleep(0.5)
        raise ContractError("the standalone Spark cluster", None, f"{self.workers} workers registered within "
                            f"{self.start_timeout_s:.0f} s", f"{alive}; logs in {self.workdir}")

    def status(self) -> dict:
        """The master's JSON status page (workers, applications)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.webui_port}/json/", timeout=2) as r:
            return json.loads(r.read())

    def alive_workers(self) -> int:
        try:
            return sum(1 for w in self.status().get("workers", []) if w.get("state") == "ALIVE")
        except OSError:
            return 0

    def pids(self) -> list[int]:
        """The master's and workers' process ids."""
        return [p.pid for p in self._procs]

    def stop(self) -> None:
        """Kill every process group started (master, workers, their executors), then wait for them."""
        for p in self._procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 15
        for p in self._procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for p in self._procs:  # what is left of each group (executors outlive a worker's SIGTERM)
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        self._procs.clear()
