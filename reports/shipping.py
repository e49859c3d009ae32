"""What a Spark cluster's executors need of the project, shipped to them, and proved importable.

The checker's tasks run functions of ``reports`` (and through them the model, ``reference``) on
the executors. A local session's executors are the driver's own Python, but a cluster's run
whatever Python the cluster gives them (``spark.pyspark.python``), without the project installed.
So on a cluster the driver zips the project's packages the tasks import — found by walking the
import graph from ``reports`` — and adds the zip with ``SparkContext.addPyFile``; then a tiny job
imports the tasks' modules on the executors and fails with one line naming what is missing (a
module, a matching Python) before any run is read.

Third-party packages are not shipped (numpy and pyarrow are compiled): the executors' Python must
have them (``python -m hourglass.reports.shipping`` prints what to install).
"""

from __future__ import annotations

import ast
import importlib.util
import io
import os
import pkgutil
import re
import sys
import tempfile
import zipfile
from pathlib import Path

from hourglass.reference.contract import ContractError

#: The modules whose functions the checker's tasks run (imported by the tasks on the executors).
TASK_MODULES = ("hourglass.reports.spark_jobs", "hourglass.reports.run_files", "hourglass.reports.judge_columnar", "hourglass.reports.level_order")
#: Third-party packages the tasks import (besides pyspark, which the cluster's Spark provides).
TASK_REQUIREMENTS = ("numpy", "pyarrow")
#: Seconds the probe job may wait for executors before it says none came.
PROBE_TIMEOUT_S = float(os.environ.get("HOURGLASS_SPARK_PROBE_TIMEOUT_S", "180"))


#: The package every layer of the project is inside (``hourglass.reports``, ...).
TOP = "hourglass"


def _project_packages() -> set[str]:
    """The layers of the project (``reference``, ``reports``, ...): the subpackages of
    :data:`TOP`, wherever it is (installed, or a checkout's folders)."""
    import hourglass

    return {m.name for m in pkgutil.iter_modules(hourglass.__path__) if m.ispkg}


def _package_dir(name: str) -> Path:
    """The folder of the layer ``name`` (``reports``: ``hourglass.reports``)."""
    spec = importlib.util.find_spec(f"{TOP}.{name}")
    if spec is None or not spec.submodule_search_locations:
        raise ContractError("the checker's code", None, f"an importable package {name!r}", None)
    return Path(list(spec.submodule_search_locations)[0])


def imported_packages(package_dir: Path) -> set[str]:
    """The layers every module of ``package_dir`` imports (``hourglass.<layer>``, anywhere in
    it: module level or inside a function; relative imports stay in the package)."""
    found: set[str] = set()
    for path in sorted(package_dir.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [f"{node.module}.{a.name}" for a in node.names] if node.module == TOP else [node.module]
            else:
                continue
            found.update(n.split(".")[1] for n in names if n.startswith(TOP + ".") and n.count(".") >= 1)
    return found


def shipped_packages() -> list[str]:
    """The project's packages the tasks can reach: ``reports`` and what it imports of the project,
    transitively (``reference``)."""
    project = _project_packages()
    todo, seen = ["reports"], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(sorted(imported_packages(_package_dir(name)) & project - seen))
    return sorted(seen)


def code_zip(directory: str | None = None) -> Path:
    """A zip of :func:`shipped_packages` (their ``.py`` files, as imported by this process), laid
    out as installed: ``hourglass/__init__.py``, ``hourglass/reports/...``."""
    import hourglass

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.write(hourglass.__file__, f"{TOP}/__init__.py")
        for name in shipped_packages():
            root = _package_dir(name)
            for path in sorted(root.rglob("*.py")):
                if "__pycache__" not in path.parts:
                    z.write(path, f"{TOP}/{name}/{path.relative_to(root).as_posix()}")
    target = Path(tempfile.mkdtemp(prefix="hourglass-code-", dir=directory)) / "hourglass-checker.zip"
    target.write_bytes(buf.getvalue())
    return target


def ship(spark) -> Path:
    """Add the project's code to the session (every executor puts the zip on its ``sys.path``)."""
    path = code_zip()
    spark.sparkContext.addPyFile(str(path))
    return path


def probe(spark, timeout_s: float | None = None) -> list[dict]:
    """Run one tiny task per executor core that imports :data:`TASK_MODULES`; raise ContractError
    naming the missing module, the executors' Python and host, or a Python version unlike the
    driver's. Returns what each task found (host, python, version)."""
    import threading

    sc = spark.sparkContext
    modules = TASK_MODULES
    driver = "%d.%d" % sys.version_info[:2]

    def import_all(_):
        import importlib
        import platform
        import sys as s

        found = {"host": platform.node(), "python": s.executable, "version": "%d.%d.%d" % s.version_info[:3]}
        for m in modules:
            try:
                importlib.import_module(m)
            except Exception as e:  # noqa: BLE001 - reported to the driver as text
                found["error"] = f"{m}: {type(e).__name__}: {e}"
                break
        yield found

    tasks = max(1, sc.defaultParallelism)
    group = "hourglass-probe"
    timer = threading.Timer(timeout_s or PROBE_TIMEOUT_S, sc.cancelJobGroup, (group,))
    sc.setJobGroup(group, "hourglass: can the executors import the checker?")
    timer.start()
    where = f"the Spark executors ({sc.master})"
    try:
        found = sc.parallelize(range(tasks), tasks).mapPartitions(import_all).collect()
    except Exception as e:  # noqa: BLE001 - Py4JJavaError: its text says why
        if not timer.is_alive():
            raise ContractError(where, None, f"executors that run a task within {timeout_s or PROBE_TIMEOUT_S:.0f} s "
                                "(free cores and memory on the cluster's workers)", "none") from None
        raise ContractError(where, None, f"a Python {driver} that runs the checker's tasks", _why(str(e))) from None
    finally:
        timer.cancel()
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
    for f in found:
        if f.get("error"):
            missing = f["error"]
            raise ContractError(where, None, f"Python {driver} with the checker's code and {', '.join(TASK_REQUIREMENTS)}",
                                f"{missing} (python {f['python']} {f['version']} on {f['host']})")
        if not f["version"].startswith(driver + "."):
            raise ContractError(where, None, f"Python {driver}, as the driver's", f"{f['version']} ({f['python']} on {f['host']})")
    return found


def _why(text: str) -> str:
    """The line of a failed job that says why: PySpark's own error of a Python worker (a version
    mismatch, a Python that cannot start), else the first Python exception the worker reported
    (not the JVM's wrappers of it, nor their stack frames), else the last line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for marker in ("PYTHON_VERSION_MISMATCH", "Cannot run program", "No module named"):
        for ln in lines:
            if marker in ln:
                return ln[:400]
    python_errors = [ln for ln in lines if re.match(r"([A-Za-z_][\w.]*)?(Error|Exception)\b.*: ", ln)
                     and not ln.startswith(("org.", "java.", "scala.", "py4j.", "Caused by"))]
    return (python_errors[0] if python_errors else lines[-1] if lines else text)[:400]


def main() -> int:
    """``python -m hourglass.reports.shipping``: what the executors need (packages shipped, packages to install)."""
    print("shipped to the executors (zip, SparkContext.addPyFile):", ", ".join(shipped_packages()))
    print("to install in the executors' Python (spark.pyspark.python):", " ".join(TASK_REQUIREMENTS),
          f"(Python {sys.version_info[0]}.{sys.version_info[1]}, as the driver)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
