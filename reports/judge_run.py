"""A run judged event at a time in this process, without Spark: the checker's reference path
(:func:`reports.judge_events.judge_bucket`: every per-key invariant's unit, :mod:`reports.invariants`)
and LEVEL_ORDER (:func:`reports.level_order.judge_run`) on a run's events. For what drives a
system in process and wants the checker's findings at once, step by step (the simulator's
self-tests, a property-based state machine). OFFSET_PERSISTENCE (snapshots around restarts,
judged once per run by the driver) and the verdict itself (stalls, baselines, broken runs) are
:func:`reports.check.check_runs`'s.
"""

from __future__ import annotations

import json

from hourglass.reference.contract import INVARIANTS
from hourglass.reports.judge_events import judge_bucket
from hourglass.reports.level_order import judge_run as judge_level_order
from hourglass.reports.rows import rows_table

#: the timeline's bin (the plots are not read here)
_TIMELINE_BIN_MS = 60_000


def violations(run: dict, events: list[dict]) -> dict[str, list[dict]]:
    """The violations the checker finds in ``events`` (contract event dicts) of ``run`` (run.json
    as a dict; without ``ended_ms`` judged as interrupted: nothing on an absence), by invariant,
    only those violated, in catalogue order."""
    judged = judge_level_order(rows_table(judge_bucket(run, events, run.get("ended_ms") or None, _TIMELINE_BIN_MS)))
    found: dict[str, list[dict]] = {}
    for row in judged.to_pylist():
        if row["kind"] == "v":
            v = json.loads(row["payload"])
            found.setdefault(v["invariant"], []).append(v)
        elif row["kind"] == "lv":
            found.setdefault("LEVEL_ORDER", []).append({"invariant": "LEVEL_ORDER", "key": row["key"], "level": row["level"],
                                                       **json.loads(row["payload"])})
    return {name: found[name] for name in INVARIANTS if name in found}
