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
import re
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
    for name in imported_names(path):
        parts = name.split(".")
        layer = parts[1] if parts[0] == "hourglass" and len(parts) > 1 else parts[0]
        if layer in PACKAGES:
            found.add(layer)
    return found


def imported_names(path: Path) -> list[str]:
    """Every absolute module name ``path`` imports (``from hourglass import adapters`` names
    ``hourglass.adapters``)."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names += [f"{node.module}.{a.name}" for a in node.names] if node.module == "hourglass" else [node.module]
    return names


def bare_layer_names(path: Path) -> list[str]:
    """Imports of a shipped layer by its bare name (``import harness``, ``from reports.x import``)
    and strings naming one of its modules (``"adapters.rocketmq.family"``, ``"reference.disk:f"``).
    The wheel installs the layers only as ``hourglass.<layer>``; in a checkout the bare names
    would also import, as a second copy of every module with its own state."""
    hits = [f"import {n}" for n in imported_names(path) if n.split(".")[0] in SHIPPED]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"[\w.]+(:\w+)?", node.value):
            head = node.value.split(":")[0].split(".")
            if len(head) > 1 and head[0] in SHIPPED and _is_module(head):
                hits.append(f"line {node.lineno}: {node.value!r}")
    return hits


def _is_module(parts: list[str]) -> bool:
    return any((ROOT.joinpath(*parts[:n]).with_suffix(".py")).is_file() or (ROOT.joinpath(*parts[:n]) / "__init__.py").is_file()
               for n in range(2, len(parts) + 1))


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


def test_every_module_names_the_layers_under_hourglass():
    files = sorted(ROOT.glob("*.py")) + sorted(p for d in PACKAGES + ("hourglass", ".ci") for p in (ROOT / d).rglob("*.py"))
    files += [p for p in sorted((ROOT / ".ci").iterdir()) if p.is_file() and p.suffix == "" and "python" in p.read_text().partition("\n")[0]]
    found = {str(p.relative_to(ROOT)): hits for p in files if (hits := bare_layer_names(p))}
    assert not found, f"the layers are hourglass.<layer>: {found}"


def test_the_bare_name_check_sees_imports_and_module_strings(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text('import harness.cli\nfrom reports import verdict\nfrom hourglass import reports\n'
                     'EFFECT = "reference.windows:cluster_outages"\nLOG = "harness.jsonl"\n')
    assert bare_layer_names(probe) == ["import harness.cli", "import reports", "line 4: 'reference.windows:cluster_outages'"]


def test_the_string_check_sees_importlib(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text('import importlib\nimportlib.import_module("suites.chaos.generate")\n')
    assert names_suites_module(probe) == ["line 2: 'suites.chaos.generate'"]
