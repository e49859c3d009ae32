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
SHIPPED = tuple(ALLOWED)  # what the wheel installs; ``suites`` is tests only


def names_suites_module(path: Path) -> list[str]:
    """String constants in ``path`` that name a module of ``suites`` (``"suites"``,
    ``"suites.chaos.scenarios"``): an ``importlib.import_module``, ``__import__`` or plugin name
    by string is an import too, and the installed package has no ``suites``."""
    return [f"line {node.lineno}: {node.value!r}" for node in ast.walk(ast.parse(path.read_text(), str(path)))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and (node.value == "suites" or node.value.startswith("suites."))]


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


@pytest.mark.parametrize("package", SHIPPED)
def test_no_shipped_module_names_suites(package):
    found = {str(p.relative_to(ROOT)): hits for p in sorted((ROOT / package).rglob("*.py")) if (hits := names_suites_module(p))}
    assert not found, f"{package} ships, suites does not: no module of suites by name either: {found}"


def test_the_string_check_sees_importlib(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text('import importlib\nimportlib.import_module("suites.chaos.generate")\n')
    assert names_suites_module(probe) == ["line 2: 'suites.chaos.generate'"]
