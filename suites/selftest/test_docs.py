"""Every ``HOURGLASS_*`` environment variable the code, tox or CI reads is documented in
``docs/environment.md`` (issue 11: ~20 existed and none was documented)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAME = re.compile(r"\bHOURGLASS_[A-Z0-9_]*[A-Z0-9]\b")
SKIP_PARTS = {".git", ".tox", "build", "runs", "__pycache__"}


def names_in_code() -> dict[str, str]:
    """Variable name -> the first file that names it (Python, tox.ini, pyproject, .ci scripts)."""
    found: dict[str, str] = {}
    files = [p for p in ROOT.rglob("*") if p.is_file() and not SKIP_PARTS & set(p.relative_to(ROOT).parts)
             and (p.suffix in (".py", ".ini", ".toml") or p.parent.name == ".ci")]
    for path in sorted(files):
        for name in NAME.findall(path.read_text(errors="replace")):
            found.setdefault(name, str(path.relative_to(ROOT)))
    return found


def test_every_environment_variable_is_documented():
    documented = set(NAME.findall((ROOT / "docs" / "environment.md").read_text()))
    missing = {n: where for n, where in names_in_code().items() if n not in documented}
    assert not missing, f"document these in docs/environment.md (name, what it does, default, who reads it): {missing}"


def test_the_scan_finds_the_known_ones():
    names = names_in_code()
    assert {"HOURGLASS_SYSTEM", "HOURGLASS_CACHE", "HOURGLASS_REQUIRE_DOCKER", "HOURGLASS_SPARK_DRIVER_MEMORY"} <= set(names)
