"""The import arrows of DESIGN.md's layout table (docs/contract.md has the table as built): every
arrow runs downhill, and nothing that ships imports the test suites.

    reference  -> (nothing of the project)
    adapters   -> reference
    reports    -> reference
    harness    -> reference, adapters, reports (as a library: paths in, verdict dicts out)
    suites     -> everything
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("reference", "adapters", "reports", "harness", "suites")
ALLOWED = {
    "reference": {"reference"},
    "adapters": {"adapters", "reference"},
    "reports": {"reports", "reference"},
    "harness": {"harness", "reference", "adapters", "reports"},
}
#: The harness loads the suites' scenario catalogues by name for ``--suite`` (importlib, not an
#: import statement); that is the one known exception, tracked by issue 11 (ship the catalogues).


def project_imports(path: Path) -> set[str]:
    """The project packages ``path`` imports (top-level and function-local imports alike)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found |= {n.split(".")[0] for n in names if n.split(".")[0] in PACKAGES}
    return found


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_imports_run_downhill(package):
    wrong = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        bad = project_imports(path) - ALLOWED[package]
        if bad:
            wrong[str(path.relative_to(ROOT))] = sorted(bad)
    assert not wrong, f"{package} may import only {sorted(ALLOWED[package])}: {wrong}"
