"""Fault kinds as data: one module of this package per fault family (process, disk, network, clock,
io...), each exporting one :class:`Family` named ``FAMILY``. Everything else that speaks of faults
derives from this registry: the scenario schema and its cross-checks (``harness.scenario``), the
expansion of a step into primitive actions and the heal (``harness.faults``), what a system must be
set up for (``harness.batch``), the ``fault`` event's actions and fields (``reference.contract``),
the checker's fault columns (``reports.judge_columnar``) and the outages each family adds to the
windows (``reference.expected``).

As Jepsen's ``nemesis/combined.clj`` packages a fault family as a generator, a nemesis and a final
generator, a :class:`Family` holds its schedulable steps (:class:`StepKind`: parameters, duration
rule, expansion into primitives), its primitives (:class:`Primitive`: the system verb each calls
and the primitive that heals it), the event fields it records and its window effects. A new family
is a new module here; a system that can perform it says so by answering ``cannot(action, target)``
with None.

Family modules import nothing of the project at module level but this package's siblings, so
``reference.contract`` can derive its vocabulary from them; their window effects name the model
function (``"hourglass.reference.disk:write_outages"``) and are imported when first used.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Iterable, Mapping

#: a step's duration rule: none (must be 0), optional (0: until the heal) or required (> 0)
NONE, OPTIONAL, REQUIRED = "none", "optional", "required"


@dataclass(frozen=True)
class Param:
    """A numeric field of a fault step beyond ``duration_ms`` (``delay_ms``, ``loss_percent``...):
    0 unless its step takes it, then non-zero within ``[low, high]``."""

    name: str
    low: int
    high: int
    noun: str  # "a delay": said in "0 or no such field (only latency takes a delay)"
    needed: str  # what a step that takes it must give, when it gives 0
    description: str  # the schema's text


@dataclass(frozen=True)
class StepKind:
    """A schedulable fault step (``FaultStep.action``) and how it fires.

    ``expand(step)`` gives its primitives as ``(offset_ms, primitive, fields)`` from when it fires;
    ``check_duration(duration_ms)``, when set, gives what was expected of a duration it refuses
    (beyond the :data:`duration` rule); ``broker_only`` steps act on the broker (``what`` says
    how); ``delays_deliveries``: deliveries may come seconds late after it (a process down, a
    network cut); ``setup``: what the system must be set up for before its broker starts."""

    action: str
    expand: Callable[[object], list[tuple[int, str, dict]]]
    duration: str = NONE
    params: tuple[str, ...] = ()
    broker_only: bool = False
    what: str = ""
    delays_deliveries: bool = False
    setup: frozenset[str] = frozenset()
    check_duration: Callable[[object, Mapping], str | None] | None = None
    asks: tuple[str, ...] = ()  # what the system is asked it can do, beyond its primitives and heals
    description: str = ""  # the schema's sentence for it


@dataclass(frozen=True)
class Primitive:
    """A primitive action on a target, recorded as a ``fault`` event with this ``action``.
    ``verb``: the system method it calls, ``verb(target, *args)`` with ``args`` read from the
    event's fields (None: the fault driver's own handling, process and clock); ``heals``: the
    primitive that undoes it, done by the heal if the run ends before it."""

    action: str
    verb: str | None = None
    args: tuple[str, ...] = ()
    heals: str | None = None
    recorded: bool = True  # False: recorded as other actions' events (a start_paused: start, pause)


@dataclass(frozen=True)
class Family:
    """One fault family: its steps, primitives, the optional ``fault`` event fields it records,
    its window effects (channel -> ``"module:function"`` of fault events -> outages), where its
    heal comes among the families' (lower first) and a cross-check over a scenario's raw steps."""

    name: str
    rank: int  # order in the schema's enums and in the heal
    steps: tuple[StepKind, ...]
    primitives: tuple[Primitive, ...]
    params: tuple[Param, ...] = ()
    event_fields: tuple[tuple[str, str, str], ...] = ()  # (name, kind, meaning) of the fault event
    effects: Mapping[str, str] = field(default_factory=dict)
    skip_words: str = ""  # "fill the store of": why a scenario was skipped ("cannot ... broker")
    check: Callable[[list, int, Callable], None] | None = None  # (raw faults, index, fail)
    event_only: tuple[str, ...] = ()  # event actions no step performs (``ready``)


@lru_cache(maxsize=None)
def families() -> tuple[Family, ...]:
    """Every family of this package, in rank order."""
    found = []
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        if isinstance(getattr(module, "FAMILY", None), Family):
            found.append(module.FAMILY)
    return tuple(sorted(found, key=lambda f: (f.rank, f.name)))


def steps() -> tuple[StepKind, ...]:
    return tuple(s for f in families() for s in f.steps)


def step_kind(action: str) -> StepKind:
    for s in steps():
        if s.action == action:
            return s
    raise ValueError(f"unknown fault step action {action!r}")


def family_of(action: str) -> Family:
    """The family of a step or primitive action."""
    for f in families():
        if action in {s.action for s in f.steps} | {p.action for p in f.primitives}:
            return f
    raise ValueError(f"unknown fault action {action!r}")


def primitive(action: str) -> Primitive:
    for f in families():
        for p in f.primitives:
            if p.action == action:
                return p
    raise ValueError(f"unknown primitive fault {action!r}")


def schedulable() -> tuple[str, ...]:
    return tuple(s.action for s in steps())


def with_duration() -> tuple[str, ...]:
    return tuple(s.action for s in steps() if s.duration != NONE)


def params() -> tuple[Param, ...]:
    return tuple(p for f in families() for p in f.params)


def primitive_actions() -> tuple[str, ...]:
    return tuple(p.action for f in families() for p in f.primitives)


def family_actions(family: Family) -> tuple[str, ...]:
    """The actions a system is asked it can do for ``family``: its primitives and its steps' asks."""
    return (*(p.action for p in family.primitives), *(a for s in family.steps for a in s.asks))


def asked_actions() -> tuple[str, ...]:
    """Every action a system may be asked ``cannot(action, target)`` of."""
    return tuple(a for f in families() for a in family_actions(f))


def heal_actions() -> frozenset[str]:
    """The primitives that undo another (``disk_free``, ``partition_end``...)."""
    return frozenset(p.heals for f in families() for p in f.primitives if p.heals and p.heals != p.action)


def event_actions() -> tuple[str, ...]:
    """Every ``action`` a harness-written ``fault`` event may have."""
    out: list[str] = []
    for f in families():
        for a in (*(p.action for p in f.primitives if p.recorded), *f.event_only):
            if a not in out:
                out.append(a)
    return tuple(out)


def event_fields() -> tuple[tuple[str, str, str], ...]:
    return tuple(e for f in families() for e in f.event_fields)


def expansion(action: str) -> tuple[str, ...]:
    """The primitives a step performs when it fires (its heals left out), in order."""
    return tuple(prim for _, prim, _ in step_kind(action).expand(_Probe(action)))


def step_primitives(action: str) -> tuple[str, ...]:
    """Every primitive a step may perform, its heals included."""
    out: list[str] = list(step_kind(action).asks)
    for _, prim, _ in step_kind(action).expand(_Probe(action)):
        for a in (prim, primitive(prim).heals):
            if a and a not in out:
                out.append(a)
    return tuple(out)


def primitives_needed(fault_steps: Iterable) -> set[tuple[str, str]]:
    """Every (primitive action, target) a scenario's fault steps may perform, healing included."""
    return {(p, s.target) for s in fault_steps for p in step_primitives(s.action)}


def setup_needed(fault_steps: Iterable) -> frozenset[str]:
    """What a system must be set up for before its broker starts, for these steps."""
    return frozenset(n for s in fault_steps for n in step_kind(s.action).setup)


def effect(channel: str, faults: Iterable[Mapping], **kw) -> list:
    """The outages every family adds to a window channel from a run's fault events, unmerged:
    ``store`` (the brokers ``targets`` serve no write or re-put), ``unknown_send`` (a send that
    timed out may still be stored until then), ``consumer`` (a consumer re-consumes late), ``proxy``
    (5.x's proxy serves its gRPC clients nothing)."""
    faults = list(faults)
    out: list = []
    for f in families():
        if channel in f.effects:
            out += _resolve(f.effects[channel])(faults, **kw)
    return out


@lru_cache(maxsize=None)
def _resolve(path: str) -> Callable:
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


class _Probe:
    """A step of ``action`` with every duration and parameter set (to 1), to list what it may do."""

    def __init__(self, action: str):
        self.action = action

    def __getattr__(self, name: str) -> int:
        return 1
