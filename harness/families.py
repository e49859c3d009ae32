"""Broker families: who parses a system spec, opens the system and says what it can do.

A family is one object declared inside its own package, so a new family touches no file of the
harness, the CLI or the plugin. The harness finds families two ways, both read once per process:

- the entry point group ``hourglass.families`` of any installed distribution (a third party's
  package: ``[project.entry-points."hourglass.families"] pulsar = "hg_pulsar.family:FAMILY"``);
- every ``adapters.<package>.family`` module of this project with a ``FAMILY`` (the families
  shipped here, found in a source checkout without a reinstall as in an installed wheel).

A family answers the questions of :class:`Family`; the harness knows no family by name. (The
family modules are duck-typed: ``adapters`` may not import ``harness``, so they need not
subclass anything.)
"""

from __future__ import annotations

import importlib
import importlib.metadata
import pkgutil
from functools import cache
from pathlib import Path
from typing import Protocol, runtime_checkable

from hourglass.adapters.base import AdapterError, BrokerProfile, System, SystemInfo
from hourglass.reference.contract import OptionError

#: the entry point group a distribution declares its families in
ENTRY_POINT_GROUP = "hourglass.families"
#: the module of an in-repo family package that holds its ``FAMILY`` (``adapters.<package>.family``)
IN_REPO_MODULE = "family"


@runtime_checkable
class Family(Protocol):
    """What the harness asks a broker family. ``spec`` arguments are
    :class:`harness.systems.SystemSpec` values (``spec``, ``runtime``, ``image``, ``namesrv``,
    ``faults_file``); ``spec_text`` arguments are the spec strings alone."""

    name: str  # unique among families
    adapter: str  # the ``SystemInfo.adapter`` (run.json ``system.adapter``) its systems report
    spec_help: str  # the specs it parses, for messages and help: "rocketmq:<version>, dist:/path"
    default_spec: str | None  # the CLI's and the plugin's default system, if this family gives it
    runtimes: tuple[str, ...]  # the --runtime values its systems run under ("auto" first)
    virtual: bool  # its systems run in this process, in virtual time (one at a time)
    test_marks: tuple[str, ...]  # pytest marks of a scenario test on its systems (e.g. "realbroker")

    def claims(self, spec_text: str) -> bool: ...
    def normalize(self, spec_text: str) -> str: ...
    def check(self, spec, option: str) -> None: ...
    def ignored_options(self, spec) -> tuple[tuple[str, str], ...]: ...
    def ignored_why(self) -> str: ...
    def open(self, spec, profile: BrokerProfile, workdir: Path, seed: int) -> System: ...
    def capabilities(self, info: SystemInfo) -> set[str]: ...
    def defects(self, spec_text: str) -> tuple[str, ...]: ...
    def replay_spec(self, system: dict) -> str: ...
    def across_store(self, spec_text: str) -> str | None: ...
    def chain(self, first: str, then: str) -> str: ...


#: what every family has (:class:`Family`)
MEMBERS = ("name", "adapter", "spec_help", "default_spec", "runtimes", "virtual", "test_marks", "claims", "normalize",
           "check", "ignored_options", "ignored_why", "open", "capabilities", "defects", "replay_spec", "across_store",
           "chain")


def _entry_point_families() -> list:
    found = []
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            found.append(ep.load())
        except (ImportError, AttributeError) as e:
            raise AdapterError(f"broker family {ep.name} ({ep.value}, entry point group {ENTRY_POINT_GROUP}): "
                               f"{type(e).__name__}: {e}") from None
    return found


def _in_repo_families() -> list:
    from hourglass import adapters

    found = []
    for mod in sorted(pkgutil.iter_modules(adapters.__path__), key=lambda m: m.name):
        if not mod.ispkg:
            continue
        try:
            module = importlib.import_module(f"hourglass.adapters.{mod.name}.{IN_REPO_MODULE}")
        except ModuleNotFoundError as e:
            if e.name != f"hourglass.adapters.{mod.name}.{IN_REPO_MODULE}":
                raise
            continue
        if hasattr(module, "FAMILY"):
            found.append(module.FAMILY)
    return found


@cache
def families() -> tuple[Family, ...]:
    """Every family, by name (an installed entry point first: the same name found again in the
    checkout is the same family)."""
    by_name: dict[str, Family] = {}
    for family in _entry_point_families() + _in_repo_families():
        missing = [m for m in MEMBERS if not hasattr(family, m)]
        if missing:
            raise AdapterError(f"broker family {family!r}: missing {', '.join(missing)} (harness.families.Family)")
        by_name.setdefault(family.name, family)
    return tuple(by_name[n] for n in sorted(by_name))


def family_of(spec_text: str) -> Family | None:
    return next((f for f in families() if f.claims(spec_text)), None)


def family_for_adapter(adapter: str | None) -> Family | None:
    return next((f for f in families() if f.adapter == adapter), None)


def spec_help() -> str:
    return ", ".join(f.spec_help for f in families())


def unknown_system(option: str, spec_text: str) -> OptionError:
    return OptionError(option, None, spec_help(), spec_text)


def default_system() -> str | None:
    return next((f.default_spec for f in families() if f.default_spec), None)


def runtimes() -> tuple[str, ...]:
    """The ``--runtime`` values of every family, ``auto`` first."""
    out = ["auto"]
    for f in families():
        out += [r for r in f.runtimes if r not in out]
    return tuple(out)


def capabilities(info: SystemInfo) -> set[str] | None:
    """What the family of a system with ``info`` says it can do; None: no family claims it."""
    family = family_for_adapter(info.adapter)
    return None if family is None else set(family.capabilities(info))
