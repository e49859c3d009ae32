"""Checked runs below directories: the one loader of (``run.json``, ``verdict.json``) pairs the
cross-run pages share (the version matrix, :mod:`reports.matrix`; the history, :mod:`reports.history`).

A checked run is a directory holding ``verdict.json`` (the checker's) and ``run.json`` beside it
(the checker copies it next to the verdict when it writes into ``--out``). Each real directory is
walked once (:func:`reference.rundir.find_dirs`); below a directory, real subdirectories come
before symlinked ones, so a link to a tree seen by another name (``runs/latest``) adds nothing and
every run is found where it lies. What cannot be read is returned, not raised: the caller says
whether it is fatal (the matrix) or a run left out with its reason (the history).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from hourglass.reference.contract import ContractError
from hourglass.reference.rundir import RUN_JSON, VERDICT_JSON, find_dirs


@dataclass(frozen=True)
class Checked:
    """One checked run: its directory (as found below the path given), its run.json and verdict.json."""

    dir: Path
    run: dict
    verdict: dict


def subdirs(d: Path) -> list[Path]:
    """The directories in ``d`` by name, real ones before symlinked ones (none when ``d`` cannot be read)."""
    try:
        found = sorted(c for c in d.iterdir() if c.is_dir()) if d.is_dir() else []
    except OSError:
        return []
    return [c for c in found if not c.is_symlink()] + [c for c in found if c.is_symlink()]


def json_object(path: Path, what: str) -> dict:
    """The JSON object in ``path``; ContractError naming the file (missing, unreadable, not an object)."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ContractError(str(path.parent), path.name, f"{path.name} next to {VERDICT_JSON} ({what})", "missing") from None
    except (OSError, ValueError) as e:
        raise ContractError(str(path), None, f"a JSON object ({what})", f"unreadable: {e}") from None
    if not isinstance(data, dict):
        raise ContractError(str(path), None, f"a JSON object ({what})", type(data).__name__)
    return data


def scan_checked(paths: Iterable[str]) -> tuple[list[Checked], list[ContractError]]:
    """Every checked run at or below ``paths`` (a path may name a ``verdict.json`` itself), in the
    order of ``paths`` and of the walk, and what could not be read, each a ContractError naming the
    directory or file: a path with no ``verdict.json`` in it or below it, a run whose ``run.json``
    or ``verdict.json`` is missing or unreadable."""
    found: list[Checked] = []
    problems: list[ContractError] = []
    for p in paths:
        root = Path(p)
        root = root.parent if root.name == VERDICT_JSON and root.is_file() else root
        dirs = find_dirs(root, lambda d: (d / VERDICT_JSON).is_file(), subdirs, Path.resolve)
        if not dirs:
            problems.append(ContractError(str(root), None, f"{VERDICT_JSON} in it or below it",
                                          "none" if root.exists() else "no such file or directory"))
        for d in dirs:
            try:
                run = json_object(d / RUN_JSON, "scenario and system")
                found.append(Checked(d, run, json_object(d / VERDICT_JSON, "the checker's verdict")))
            except ContractError as e:
                problems.append(e)
    return found, problems
