"""A run judged event at a time in this process, without Spark: the checker's reference path
(:func:`reports.judge_events.judge_bucket`: every per-key invariant's unit, :mod:`reports.invariants`)
and LEVEL_ORDER (:func:`reports.level_order.judge_run`) on a run's events. For what drives a
system in process and wants the checker's findings at once, step by step (the simulator's
self-tests, a property-based state machine). OFFSET_PERSISTENCE (snapshots around restarts,
judged once per run by the driver) and the verdict itself (baselines, broken runs) are
:func:`reports.check.check_runs`'s; what a run's circumstances leave undecided is each invariant's
own rule, applied here as there (:func:`reports.invariants.undecided`).
"""

from __future__ import annotations

import json

from hourglass.reference.contract import INVARIANTS
from hourglass.reports.buckets import UNKEYED_TYPES
from hourglass.reports.invariants import undecided
from hourglass.reports.judge_events import judge_bucket
from hourglass.reports.level_order import judge_run as judge_level_order
from hourglass.reports.rows import rows_table

#: the timeline's bin (the plots are not read here)
_TIMELINE_BIN_MS = 60_000


def findings(run: dict, events: list[dict]) -> tuple[list[dict], list[dict]]:
    """(violations, undecided) the checker finds in ``events`` (contract event dicts) of ``run``
    (run.json as a dict; without ``ended_ms`` judged as interrupted: nothing on an absence), each
    invariant's undecided rule applied as the checker's driver applies it
    (:func:`reports.invariants.undecided`: the host's stalls, a lagging consumer, the client's re-sends)."""
    judged = judge_level_order(rows_table(judge_bucket(run, events, run.get("ended_ms") or None, _TIMELINE_BIN_MS)))
    found, pending = [], []
    for row in judged.to_pylist():
        if row["kind"] == "v":
            found.append(json.loads(row["payload"]))
        elif row["kind"] == "p":
            pending.append(json.loads(row["payload"]))
        elif row["kind"] == "lv":
            found.append({"invariant": "LEVEL_ORDER", "key": row["key"], "level": row["level"], **json.loads(row["payload"])})
    unkeyed = [e for e in events if e.get("type") in UNKEYED_TYPES]
    return undecided(found, pending, unkeyed, run)


def violations(run: dict, events: list[dict]) -> dict[str, list[dict]]:
    """The violations of :func:`findings`, by invariant, only those violated, in catalogue order."""
    found: dict[str, list[dict]] = {}
    for v in findings(run, events)[0]:
        found.setdefault(v["invariant"], []).append(v)
    return {name: found[name] for name in INVARIANTS if name in found}
