"""The built wheel, installed into a fresh virtualenv and used outside the checkout: ``python -m
hourglass run --suite conformance`` and ``pytest --hg-system simulated`` with the plugin found by its
entry point (issue 11, item 4).

The fresh venv borrows the heavy dependencies (pyspark, JPype, pandas...) from the interpreter's
own environment through a ``.pth`` line *after* its own site-packages: the wheel wins, and the
checkout's editable install (a finder run by a ``.pth`` file there) is not activated, because
``.pth`` files in a directory added by a ``.pth`` line are not processed. The test asserts that
``hourglass.harness`` comes from the venv, and that the wheel puts nothing at the top of the
environment but ``hourglass`` (issue 22: a user's own ``reports`` package stays theirs).
"""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

# not ``slow``: ~30-45 s here (two checker jobs and a wheel build, no network: no build isolation)

TINY_TEST = '''
import pytest
from hourglass.harness.catalogue.conformance import CONFORMANCE
from hourglass.harness.verdicts import assert_conforms

LEVEL_ZERO = [s for s in CONFORMANCE if s.name == "level-zero"]


@pytest.mark.parametrize("scenario", LEVEL_ZERO, ids=lambda s: s.name)
def test_level_zero(scenario, hg_verdict):
    assert_conforms(hg_verdict)
'''


def _run(cmd, cwd, env, timeout=600):
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return r


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    # built from a copy: setuptools leaves build/ and *.egg-info in the tree it builds (an
    # egg-info on PYTHONPATH would pose as an installed hourglass with the entry point)
    source = tmp / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", ".tox", "build", "runs", "*.egg-info", "__pycache__", ".hypothesis"))
    r = _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", tmp / "dist", source], tmp, _clean_env())
    assert r.returncode == 0, r.stderr
    wheel = next((tmp / "dist").glob("hourglass-*.whl"))
    venv = tmp / "venv"
    r = _run([sys.executable, "-m", "venv", "--system-site-packages", venv], tmp, _clean_env())
    assert r.returncode == 0, r.stderr
    py = venv / "bin" / "python"
    r = _run([py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel], tmp, _clean_env())
    assert r.returncode == 0, r.stderr
    # the dependencies, borrowed (after the venv's own site-packages); written after the install so
    # pip never sees the editable hourglass there
    purelib = Path(_run([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp, _clean_env()).stdout.strip())
    borrowed = [p for p in site.getsitepackages() + [sysconfig.get_paths()["purelib"]] if Path(p).is_dir()]
    (purelib / "zz-hourglass-test-deps.pth").write_text("\n".join(dict.fromkeys(borrowed)) + "\n")
    return py


def _clean_env() -> dict:
    # PYSPARK_PYTHON too: the checker in this process set it to its own interpreter, whose editable
    # install would have the venv's Spark workers judge with the checkout's code, not the wheel's
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_ADDOPTS", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")
           and not k.startswith("HOURGLASS_")}
    return env


def test_the_installed_package_is_the_wheel(venv, tmp_path):
    r = _run([venv, "-c", "import json, hourglass.harness as h, hourglass.harness.catalogue.conformance as c, importlib.metadata as m; "
              "print(json.dumps([h.__file__, [e.value for e in m.entry_points(group='pytest11') if e.name == 'hourglass'],"
              " __import__('importlib.resources').resources.files('hourglass.harness').joinpath('scenario.schema.json').is_file()"
              " and __import__('hourglass.adapters.rocketmq.helpers', fromlist=['x']).java_sources() != [],"
              " sorted({f.parts[0] for f in m.distribution('hourglass').files if not f.parts[0].startswith('..')})]))"],
             tmp_path, _clean_env())
    assert r.returncode == 0, r.stderr
    where, plugins, schema, top = json.loads(r.stdout)
    assert Path(where).resolve().is_relative_to(venv.parent.parent.resolve()), where
    assert not Path(where).resolve().is_relative_to(ROOT), where
    assert plugins == ["hourglass.harness.pytest_plugin"] and schema
    assert top == ["hourglass", "hourglass-0.1.0.dist-info"], f"the wheel installs at the top: {top}"


def test_cli_runs_the_conformance_suite_outside_the_checkout(venv, tmp_path):
    r = _run([venv, "-m", "hourglass", "run", "--suite", "conformance", "--system", "simulated", "--out", tmp_path / "out"],
             tmp_path, _clean_env())
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert (tmp_path / "out" / "index.html").is_file()


def test_pytest_finds_the_plugin_by_its_entry_point(venv, tmp_path):
    # a user's repository with packages of the layers' names: the plugin does not shadow them
    for name in ("reports", "harness"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("OWNER = 'the user'\n")
    (tmp_path / "test_tiny.py").write_text(TINY_TEST + "\n\ndef test_the_users_packages_are_theirs():\n"
                                           "    import harness, reports\n    assert harness.OWNER == reports.OWNER == 'the user'\n")
    r = _run([venv, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--hg-system", "simulated", f"--hg-out={tmp_path / 'runs'}",
              "test_tiny.py"], tmp_path, _clean_env())
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "2 passed" in r.stdout
