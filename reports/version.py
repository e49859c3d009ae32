"""Which Hourglass made a run: the one owner of the version every ``run.json``, summary, report and
``--version`` carries, so that two nights can be told apart after an upgrade of the harness.

The version is the installed distribution's (``pyproject.toml``'s ``version``); run from a git
checkout it is followed by the commit (``0.1.0+g96a3b7b``, ``.dirty`` when the tree has changes),
which is what tells two nights of a CI that installs from the repository apart.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import subprocess
from pathlib import Path


DISTRIBUTION = "hourglass"
_SOURCE_ROOT = Path(__file__).resolve().parent.parent


def _release() -> str:
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:  # a source tree used without installing it
        return "0+unknown"


def _commit() -> str | None:
    """``g<short sha>[.dirty]`` when this source tree is a git checkout, or from
    ``HOURGLASS_REVISION`` (the harness image records the commit it was built from: the full sha,
    ``-dirty`` when the tree had changes); None otherwise (a wheel)."""
    if not (_SOURCE_ROOT / ".git").exists():
        built = os.environ.get("HOURGLASS_REVISION", "")
        if not built or built == "unknown":
            return None
        sha, _, dirty = built.partition("-")
        return f"g{sha[:7]}" + (".dirty" if dirty else "")
    try:
        sha = subprocess.run(["git", "-C", str(_SOURCE_ROOT), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(_SOURCE_ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"g{sha}" + (".dirty" if dirty else "") if sha else None


@functools.cache
def hourglass_version() -> str:
    """``0.1.0`` (an installed wheel) or ``0.1.0+g96a3b7b[.dirty]`` (a git checkout)."""
    commit = _commit()
    return _release() + (f"+{commit}" if commit else "")
