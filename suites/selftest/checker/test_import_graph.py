"""The checker's modules import downhill: no cycle inside ``reports/`` (module-level or inside a
function), and nothing in ``reports`` imports the harness, the adapters or the suites."""

from __future__ import annotations

import ast
from pathlib import Path

REPORTS = Path(__file__).resolve().parents[3] / "reports"


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, anywhere in it (top level or inside a function)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)  # ``from reports import plots``
    return found


def _module(p: Path) -> str:
    """``reports/invariants/base.py`` -> ``reports.invariants.base``; a package's ``__init__`` is the package."""
    parts = p.relative_to(REPORTS.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    paths = [p for p in REPORTS.rglob("*.py") if p != REPORTS / "__init__.py"]
    return {_module(p): _imports(p) for p in paths} | {"\0modules": {_module(p) for p in paths}}


def test_no_import_cycle_inside_reports():
    graph = _graph()
    modules = graph.pop("\0modules")
    edges = {m: sorted(i for i in graph[m] if i in modules and i != m) for m in modules}
    state: dict[str, int] = {}  # 1 on the current path, 2 done

    def visit(path: list[str]) -> None:
        m = path[-1]
        state[m] = 1
        for n in edges[m]:
            if state.get(n) == 1:
                raise AssertionError("import cycle: " + " -> ".join(path[path.index(n):] + [n]))
            if n not in state:
                visit(path + [n])
        state[m] = 2

    for m in sorted(modules):
        if m not in state:
            visit([m])


def test_reports_imports_no_harness_adapters_or_suites():
    graph = _graph()
    graph.pop("\0modules")
    bad = {m: sorted(i for i in imps if i.split(".")[0] in ("harness", "adapters", "suites")) for m, imps in graph.items()}
    assert not {m: b for m, b in bad.items() if b}
