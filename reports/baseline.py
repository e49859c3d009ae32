"""Baselines: violations a team accepts for a range of system versions, so CI gates on regressions.

A baseline file is JSON or TOML with a list ``accept`` of entries::

    [[accept]]
    invariant = "NO_DUPLICATE"       # required: an id of the catalogue
    versions = ">=4.9.0,<5.0"        # optional: comparators joined by commas; absent or "*" = any
    adapter = "rocketmq"             # optional: run.json system.adapter must equal it
    key = "order-*"                  # optional: fnmatch pattern on the violation's key
    reason = "scheduler duplicates after kill -9 are known on 4.9.x"   # required

Matching violations are marked ``accepted`` (the report still lists them with the reason); the exit
code gates only on the others. The file is checked strictly, since it turns red green: any other
field, a range no version lies in, or an adapter no package of ``adapters/`` names
(:data:`reference.contract.ADAPTERS`) is an error naming the file, the entry and the field.
"""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from hourglass.reference.contract import ADAPTERS, INVARIANTS, ContractError



def version_number(version: str) -> Version | None:
    """A system's version as ``packaging`` compares it; a suffix it does not know (``5.3.3-sim``,
    a fork's ``4.9.7-acme.2``) is dropped, keeping the release numbers."""
    try:
        return Version(version)
    except InvalidVersion:
        m = re.match(r"\d+(\.\d+)*", version.strip())
        return Version(m.group()) if m else None


def _specifiers(spec: str) -> SpecifierSet:
    """``>=4.9.0,<5.0``, ``4.9.3`` or ``=4.9.3`` (both mean ``==4.9.3``) as a ``SpecifierSet``."""
    parts = []
    for part in spec.split(","):
        part = part.strip()
        if re.match(r"^=[^=]", part):
            part = "=" + part
        elif re.match(r"^\d", part):
            part = "==" + part
        parts.append(part)
    try:
        return SpecifierSet(",".join(parts))
    except InvalidSpecifier as e:
        raise ValueError(f"bad version range {spec!r}: {e}") from None


def admits_a_version(spec: str) -> bool:
    """Whether some version lies in ``spec``. A conjunction of comparisons is an interval with
    holes, so if it holds any version it holds one of: a version it names, one just above it
    (``V.0.0.0.1``), or 0."""
    specs = _specifiers(spec)
    candidates = [Version("0")]
    for s in specs:
        try:
            v = Version(s.version.removesuffix(".*"))
        except InvalidVersion:  # ``===`` takes any string: it admits what it names
            return True
        candidates += [v, Version(f"{v.base_version}.0.0.0.1")]
    return any(specs.contains(c, prereleases=True) for c in candidates)


def in_range(version: str, spec: str | None) -> bool:
    """Whether ``version`` is in ``spec`` (``packaging`` specifiers, pre-releases included)."""
    if not spec or spec.strip() in ("*", ""):
        return True
    v = version_number(version)
    return v is not None and _specifiers(spec).contains(v, prereleases=True)


@dataclass(frozen=True)
class Acceptance:
    invariant: str
    reason: str
    versions: str | None = None
    adapter: str | None = None
    key: str | None = None

    def matches(self, invariant: str, key: str | None, system: dict) -> bool:
        if invariant != self.invariant:
            return False
        if self.adapter and system.get("adapter") != self.adapter:
            return False
        # an across-store chain (``versions``): the entry holds if it holds for one of its versions
        versions = system.get("versions") or [str(system.get("version", ""))]
        if self.versions and not any(in_range(str(v), self.versions) for v in versions):
            return False
        return not self.key or (key is not None and fnmatch.fnmatchcase(key, self.key))


@dataclass(frozen=True)
class Baseline:
    entries: tuple[Acceptance, ...]

    def acceptance(self, invariant: str, key: str | None, system: dict) -> Acceptance | None:
        return next((a for a in self.entries if a.matches(invariant, key, system)), None)

    def mark(self, violations, run: dict):
        """``violations`` (pandas, VIOLATION_COLUMNS) with ``accepted`` and ``accepted_reason``."""
        v = violations.copy()
        system = run.get("system") or {}
        found = [self.acceptance(i, k, system) for i, k in zip(v["invariant"], v["key"])] if len(v) else []
        v["accepted"] = [a is not None for a in found]
        v["accepted_reason"] = [a.reason if a else None for a in found]
        return v


def load(path) -> Baseline:
    """Read a baseline file (``.toml`` as TOML, anything else as JSON); errors name file and field."""
    p = Path(path)
    where = str(p)
    try:
        text = p.read_text()
        data = tomllib.loads(text) if p.suffix == ".toml" else json.loads(text)
    except OSError as e:
        raise ContractError(where, None, "a readable baseline file", str(e)) from None
    except (ValueError, tomllib.TOMLDecodeError) as e:
        raise ContractError(where, None, "JSON or TOML", str(e)) from None
    entries = data.get("accept") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ContractError(where, "accept", "a list of accepted violations", entries)
    out = []
    allowed = [f.name for f in fields(Acceptance)]
    for i, e in enumerate(entries):
        at = f"{where}: accept[{i}]"
        if not isinstance(e, dict):
            raise ContractError(at, None, "a table/object", e)
        # the one file that turns red green is the strictest: a misspelt condition would accept
        # the invariant for every key, version or system
        for name, value in e.items():
            if name not in allowed:
                raise ContractError(at, name, f"no such field (allowed: {', '.join(allowed)})", value)
            if name != "invariant" and not isinstance(value, str):
                raise ContractError(at, name, "a string", value)
        if e.get("invariant") not in INVARIANTS:
            raise ContractError(at, "invariant", "one of " + "/".join(INVARIANTS), e.get("invariant"))
        if not isinstance(e.get("reason"), str) or not e["reason"].strip():
            raise ContractError(at, "reason", "a non-empty string", e.get("reason"))
        versions = e.get("versions")
        if versions is not None:
            try:
                empty = versions.strip() not in ("", "*") and not admits_a_version(versions)
            except ValueError as err:
                raise ContractError(at, "versions", "comparators like '>=4.9.0,<5.0'", versions) from err
            if empty:
                raise ContractError(at, "versions", "a range some version lies in, like '>=4.9.0,<5.0'", versions)
        if e.get("adapter") is not None and e["adapter"] not in ADAPTERS:
            raise ContractError(at, "adapter", f"one of {', '.join(ADAPTERS)} (run.json system.adapter)", e["adapter"])
        out.append(Acceptance(e["invariant"], e["reason"], versions, e.get("adapter"), e.get("key")))
    return Baseline(tuple(out))
