"""Which Hourglass made a run (reports.version): the release from a wheel, + the commit from a git
checkout or from the harness image's HOURGLASS_REVISION; --version of both command lines says it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import hourglass.reports.version as version

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def fresh(monkeypatch):
    version.hourglass_version.cache_clear()
    yield monkeypatch
    version.hourglass_version.cache_clear()


def test_a_checkout_says_its_commit(fresh):
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert version.hourglass_version().split("+g")[1].removesuffix(".dirty") == sha


@pytest.mark.parametrize("revision, said", [("0123456789abcdef", "+g0123456"), ("0123456789abcdef-dirty", "+g0123456.dirty"),
                                            ("unknown", ""), ("", "")])
def test_an_installed_wheel_says_the_images_revision_or_its_release_alone(fresh, tmp_path, revision, said):
    fresh.setattr(version, "_SOURCE_ROOT", tmp_path)  # no .git: a wheel
    fresh.setenv("HOURGLASS_REVISION", revision)
    assert version.hourglass_version() == version._release() + said


@pytest.mark.parametrize("cli", ["harness", "reports"])
def test_both_command_lines_answer_version(cli):
    r = subprocess.run([sys.executable, "-m", cli, "--version"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("hourglass 0.") and "+g" in r.stdout, r.stdout + r.stderr
