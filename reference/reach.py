"""The states a scenario exists to reach (``Scenario.reach``), each proved from the run's own events.

A scenario built to put the broker in a state — a message falling due while it shuts down, a load
that outlasts the schedule service's first periodic persist — passes only if that state was
reached. Whether it was depends on the host as much as on the scenario (a start that was quick
after all, a shutdown over before anything fell due), so each state here is a rule over the
``fault`` and ``send`` events; a run that did not reach one of its states is broken, with the
rule's reason, never a pass (and a violation it observed still stands). Pure: functions of events.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from hourglass.reference.faults.cpu import THROTTLE, UNTHROTTLE
from hourglass.reference.faults.process import READY, START, STOP, STOPPED
from hourglass.reference.levels import LevelTable
from hourglass.reference.persistence import broker_faults
from hourglass.reference.profile import FIRST_FLUSH_DELAY_MS

SLOW_LOAD = "slow_load"
DUE_DURING_STOP = "due_during_stop"


def _broker_faults(events: Iterable[Mapping]) -> list[tuple[int, str]]:
    """The broker's faults since the run began (the harness's own setup start proves nothing)."""
    return broker_faults(e for e in events if e.get("type") == "fault" and e.get("cause") != "setup")


def _next(faults: list[tuple[int, str]], i: int, action: str) -> int | None:
    """When the first ``action`` after ``faults[i]`` came, or None."""
    return next((t for t, a in faults[i + 1:] if a == action), None)


def slow_load(events: list[Mapping], table: LevelTable) -> str | None:
    """Every start of the broker under a CPU quota (``reference.faults.cpu``) took at least the
    first periodic persist's delay (``FIRST_FLUSH_DELAY_MS``, ScheduleMessageService: 10 s) to its
    ready. A shorter start cannot have let the persist come during the load (5.0.0–5.1.1 time it
    from the constructor, before ``DefaultMessageStore.load``; later releases from ``start``), so
    the run is broken: necessary, not sufficient — where the broker's load lies inside the start
    is its own (measured on 5.1.1: a quota stretches the whole start, and even a 150 s start kept
    its first persist after the load; a large store to load is what would put it inside)."""
    throttled, starts = False, []
    faults = _broker_faults(events)
    for i, (ts, action) in enumerate(faults):
        if action in (THROTTLE, UNTHROTTLE):
            throttled = action == THROTTLE
        elif action == START and throttled:
            starts.append((ts, _next(faults, i, READY)))
    if not starts:
        return "not reached: no start of the broker under a CPU quota"
    for ts, ready in starts:
        if ready is not None and ready - ts < FIRST_FLUSH_DELAY_MS:
            return (f"not reached: the start under a CPU quota at {ts} was ready {ready - ts} ms later, before the "
                    f"schedule service's first periodic persist ({FIRST_FLUSH_DELAY_MS} ms) could come during the load")
    return None


def due_during_stop(events: list[Mapping], table: LevelTable) -> str | None:
    """A delayed message fell due while the broker shut down gracefully: between a ``stop`` and
    its ``stopped`` (the shutdown hooks ran; ScheduleMessageService.shutdown stops the deliver
    executors, then persists) lies the whole of some message's due range (sent between
    ``born_ms`` and the acknowledgement, plus its level's delay)."""
    faults = _broker_faults(events)
    windows = [(ts, end) for i, (ts, a) in enumerate(faults) if a == STOP and (end := _next(faults, i, STOPPED)) is not None]
    if not windows:
        return "not reached: no graceful stop of the broker ran to its end"
    dues = [(int(e.get("born_ms", e["ts_ms"])) + delay, int(e["ts_ms"]) + delay)
            for e in events if e.get("type") == "send" and e.get("status") == "SEND_OK" and (e.get("delay_level") or 0) > 0
            for delay in (table.delay_ms(table.clamp(e["delay_level"])),)]
    if any(lo >= a and hi <= b for a, b in windows for lo, hi in dues):
        return None
    spans = ", ".join(f"{b - a} ms from {a}" for a, b in windows)
    return f"not reached: no delayed message fell due within a graceful stop of the broker ({spans})"


@dataclass(frozen=True)
class Reach:
    name: str
    description: str  # the schema's words
    check: Callable[[list[Mapping], LevelTable], str | None]


REACHES: tuple[Reach, ...] = (
    Reach(SLOW_LOAD, f"slow_load = every start under a CPU quota took {FIRST_FLUSH_DELAY_MS} ms or more to its "
                     "ready (the schedule service's first persist could come during the load)", slow_load),
    Reach(DUE_DURING_STOP, "due_during_stop = a delayed message fell due between a graceful stop of the broker and "
                           "its exit", due_during_stop),
)
NAMES: tuple[str, ...] = tuple(r.name for r in REACHES)


def unreached(names: Iterable[str], events: list[Mapping], table: LevelTable) -> str | None:
    """The first of the states ``names`` the run's events do not prove reached, as a sentence; None
    when every one was."""
    by_name = {r.name: r for r in REACHES}
    for name in names:
        why = by_name[name].check(events, table)
        if why:
            return f"{name}: {why}"
    return None
