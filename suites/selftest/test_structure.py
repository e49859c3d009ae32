"""The shipped code keeps its seams small enough to read: no class over :data:`MAX_CLASS_LINES`
lines, no function over :data:`MAX_FUNCTION_LINES` (from its ``def`` line to its last line, nested
functions counted in their parent too). A change that grows one past these splits it by reason to
change instead. ``python -m suites.selftest.test_structure`` prints the largest of each."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ("reference", "adapters", "harness", "reports")
MAX_CLASS_LINES, MAX_FUNCTION_LINES = 300, 60


def sizes() -> list[tuple[int, str, str]]:
    """(lines, kind, where) of every class and function the wheel ships, largest first."""
    out = []
    for package in SHIPPED:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    kind = "class" if isinstance(node, ast.ClassDef) else "function"
                    out.append((node.end_lineno - node.lineno + 1, kind,
                                f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"))
    return sorted(out, reverse=True)


@pytest.mark.parametrize("kind, limit", [("class", MAX_CLASS_LINES), ("function", MAX_FUNCTION_LINES)])
def test_no_shipped_class_or_function_outgrows_its_limit(kind, limit):
    over = [f"{where} ({n} lines)" for n, k, where in sizes() if k == kind and n > limit]
    assert not over, f"{kind}s over {limit} lines (a class: {MAX_CLASS_LINES}): {over}"


def test_the_measure_counts_a_function_from_def_to_its_last_line(tmp_path, monkeypatch):
    probe = tmp_path / "reference" / "probe.py"
    probe.parent.mkdir()
    probe.write_text("def f():\n    x = 1\n\n    return x\n")
    monkeypatch.setattr(__import__(__name__, fromlist=["ROOT"]), "ROOT", tmp_path)
    assert (4, "function", "reference/probe.py:1 f") in sizes()


if __name__ == "__main__":
    found = sizes()
    for kind in ("class", "function"):
        print(f"largest {kind}{'es' if kind == 'class' else 's'}:")
        for n, _, where in [s for s in found if s[1] == kind][:5]:
            print(f"  {n:4d}  {where}")
