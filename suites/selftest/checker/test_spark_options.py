"""What the checker's Spark session is told: ``--conf key=value`` reaches it, a malformed one is a
usage error, ``--out`` is the driver's; and the code a cluster's executors get is the project's
packages the tasks import, importable from the zip alone (the cluster itself: ``test_cluster.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

from hourglass.harness.cli import main as harness_main
from hourglass.reports.cli import main as reports_main
from hourglass.reports.verdict import EXIT_USAGE

ROOT = Path(__file__).resolve().parents[3]


def test_conf_without_equals_is_a_usage_error_of_both_clis(tmp_path, capsys):
    assert reports_main(["check", str(tmp_path), "--conf", "spark.executor.memory"]) == EXIT_USAGE
    assert "argument --conf: expected key=value (a Spark property), found 'spark.executor.memory'" in capsys.readouterr().err
    assert harness_main(["run", "--suite", "conformance", "--system", "simulated", "--conf", "=4g"]) == EXIT_USAGE
    assert "argument --conf: expected key=value" in capsys.readouterr().err


def test_out_that_the_driver_cannot_write_is_refused_before_spark_starts(tmp_path, capsys):
    assert reports_main(["check", str(tmp_path), "--out", "s3a://bucket/verdicts"]) == 3
    assert capsys.readouterr().err.strip() == ("hourglass check: --out: expected a directory the driver writes "
                                               "(a path or a file: URI), found 's3a://bucket/verdicts'")


def test_conf_reaches_the_session_and_wins_over_the_defaults():
    code = ("from reports.spark import get_spark; s = get_spark('local[1]', {'spark.sql.shuffle.partitions': '3', "
            "'spark.hourglass.probe': 'x=y'}); print(s.conf.get('spark.sql.shuffle.partitions'), s.conf.get('spark.hourglass.probe'))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["3", "x=y"], done.stderr[-2000:]


def test_the_shipped_zip_holds_what_the_tasks_import_and_nothing_else(tmp_path):
    from hourglass.reports import shipping

    assert shipping.shipped_packages() == ["reference", "reports"]
    path = shipping.code_zip(str(tmp_path))
    names = zipfile.ZipFile(path).namelist()
    assert {n.split("/")[0] for n in names} == {"hourglass"}
    assert {n.split("/")[1] for n in names if n.count("/") > 1} == {"reference", "reports"}
    assert "hourglass/reports/run_files.py" in names and "hourglass/reference/expected.py" in names
    # a Python that imports the task modules from the zip, first on its path
    code = (f"import sys; sys.path.insert(0, {str(path)!r}); import importlib; "
            f"mods = [importlib.import_module(m) for m in {shipping.TASK_MODULES!r}]; "
            "import hourglass.reference as r; print(all(m.__file__.startswith(sys.path[0]) for m in mods + [r]))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
                          capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "True", done.stderr[-2000:]
