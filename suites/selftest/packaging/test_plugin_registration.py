"""The plugin is found by the ``pytest11`` entry point of the installed package *and* by this repo's
root ``conftest.py``; with both present it must register once (pytest refuses a module registered
under two names). A fake dist-info on ``PYTHONPATH`` stands in for the installed entry point."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
TINY = '''
def test_options_and_plugin(pytestconfig):
    assert pytestconfig.getoption("--hg-system") == "simulated"
    assert pytestconfig.pluginmanager.hasplugin("hourglass") or pytestconfig.pluginmanager.hasplugin("hourglass.harness.pytest_plugin")
'''


def _project(tmp_path: Path, conftest: str, entry_point: bool) -> dict:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "conftest.py").write_text(conftest)
    (tmp_path / "proj" / "test_tiny.py").write_text(TINY)
    paths = [str(ROOT)]
    if entry_point:
        info = tmp_path / "site" / "hourglass_ep-0.0.dist-info"
        info.mkdir(parents=True)
        info.joinpath("METADATA").write_text("Metadata-Version: 2.1\nName: hourglass-ep\nVersion: 0.0\n")
        info.joinpath("entry_points.txt").write_text("[pytest11]\nhourglass = harness.pytest_plugin\n")
        paths.append(str(tmp_path / "site"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_ADDOPTS")}
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def _pytest(tmp_path: Path, env: dict, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--hg-system", "simulated", *extra,
                           "test_tiny.py"], cwd=tmp_path / "proj", env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("entry_point", [True, False], ids=["entry-point-and-conftest", "conftest-only"])
def test_root_conftest_loads_the_plugin_once(tmp_path, entry_point):
    env = _project(tmp_path, (ROOT / "conftest.py").read_text(), entry_point)
    r = _pytest(tmp_path, env)
    assert r.returncode == 0, r.stdout + r.stderr


def test_entry_point_alone_gives_the_options(tmp_path):
    env = _project(tmp_path, "", entry_point=True)
    r = _pytest(tmp_path, env)
    assert r.returncode == 0, r.stdout + r.stderr


def test_control_a_plain_pytest_plugins_line_registers_twice(tmp_path):
    """Why the conftest checks first: the naive line fails when the entry point is installed."""
    env = _project(tmp_path, 'pytest_plugins = ["hourglass.harness.pytest_plugin"]\n', entry_point=True)
    r = _pytest(tmp_path, env)
    assert r.returncode != 0 and "already registered" in (r.stdout + r.stderr)


def test_pyproject_declares_the_entry_point():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pytest11"] == {"hourglass": "hourglass.harness.pytest_plugin"}
