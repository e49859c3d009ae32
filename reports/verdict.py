"""verdict.json of one run: every invariant of the catalogue, with examples that explain themselves.

An example names the key, the attempt, the expected window, the observed time and the faults that
overlap the wait, and says in one sentence what went wrong.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping

from hourglass.reference.contract import INVARIANTS, SENT_BACK
from hourglass.reports.stalls import HOST_STALL_CAUSE

EXAMPLES_PER_INVARIANT = 5
#: an invariant's count of undecided messages the host's recorded stalls explain (reports.stalls)
UNDECIDED_BY_HOST = "undecided_by_host"
PENDING_EXAMPLES = 5


def _int(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return int(v)


def _str(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    return str(v)


def overlapping_faults(faults: Iterable[Mapping], start_ms: int | None, end_ms: int | None) -> list[dict]:
    """The fault events between ``start_ms`` and ``end_ms`` (inclusive), in time order."""
    if start_ms is None or end_ms is None:
        return []
    lo, hi = min(start_ms, end_ms), max(start_ms, end_ms)
    return sorted((dict(f) for f in faults if lo <= f["ts_ms"] <= hi), key=lambda f: f["ts_ms"])


def describe_faults(faults: list[dict], anchor_ms: int | None) -> str | None:
    if not faults:
        return None
    def rel(ts):
        return f" (+{ts - anchor_ms} ms)" if anchor_ms is not None else ""
    return ", ".join(f"{f['target']} {f['action']} at {f['ts_ms']}{rel(f['ts_ms'])}" for f in faults)


def explain(v: Mapping, faults: list[Mapping]) -> dict:
    """One violation row (``reports.invariants.VIOLATION_COLUMNS``) as a self-explaining example."""
    inv = v["invariant"]
    key, attempt = _str(v.get("key")), _int(v.get("attempt"))
    earliest, latest, observed, anchor = (_int(v.get(n)) for n in ("earliest_ms", "latest_ms", "observed_ms", "anchor_ms"))
    level, requested = _int(v.get("level")), _int(v.get("requested_level"))
    start = anchor if anchor is not None else earliest
    end = max(x for x in (observed, latest, earliest, start) if x is not None) if any(
        x is not None for x in (observed, latest, earliest, start)) else None
    # a send-back the client reported is context of its own message only (contract.SENT_BACK)
    faults = [f for f in faults if f.get("action") != SENT_BACK or (f.get("key") == key and f.get("group") == _str(v.get("group")))]
    overlap = describe_faults(overlapping_faults(faults, start, end), anchor)
    widened = _str(v.get("widened_by"))
    fault_text = "; ".join(x for x in (overlap, f"window widened by {widened}" if widened else None) if x) or None
    who = f"{key} attempt {attempt}" if attempt is not None else f"{key}"
    if _str(v.get("group")):
        who += f" (group {v['group']})"
    parts = [f"{who}: {v['detail']}" if key is not None else str(v["detail"])]  # no key: the run's (offsets)
    if level is not None and inv in ("NOT_EARLY", "ON_TIME", "LEVEL_ORDER"):
        lv = f"delay level {level}"
        if bool(v.get("clamped")) and requested is not None:
            lv += f" (requested {requested}, clamped to the table's maximum {level})"
        parts.append(lv)
    if earliest is not None or latest is not None:
        parts.append(f"expected window [{earliest if earliest is not None else '-'}, {latest if latest is not None else 'no deadline'}]"
                     + (f" anchored at {anchor}" if anchor is not None else ""))
    if observed is not None:
        what = "run ended at" if inv == "NO_LOSS" else "observed at"
        extra = ""
        if inv == "NOT_EARLY" and earliest is not None:
            extra = f", {earliest - observed} ms early"
        elif inv == "ON_TIME" and latest is not None:
            extra = f", {observed - latest} ms late"
        parts.append(f"{what} {observed}{extra}")
    parts.append(f"faults: {fault_text}" if fault_text else "no fault overlaps")
    example = {
        "key": key,
        "attempt": attempt,
        "expected_window": {"earliest_ms": earliest, "latest_ms": latest} if (earliest is not None or latest is not None) else None,
        "observed_ms": observed,
        "fault": fault_text,
        "explanation": "; ".join(parts),
    }
    for name in ("group", "other_key", "cause"):
        if _str(v.get(name)):
            example[name] = _str(v.get(name))
    if level is not None:
        example["level"] = level
        if bool(v.get("clamped")):
            example["clamped_from"] = requested
    if v.get("accepted"):
        example["accepted"] = _str(v.get("accepted_reason")) or True
    return example


def build_verdict(run_id: str, stats: Mapping, checked: Mapping[str, int], violations: list[Mapping],
                  pending: list[Mapping], faults: list[Mapping], torn: list[dict], interrupted: str | None = None) -> dict:
    """The verdict of one run. ``violations`` rows may carry ``accepted`` (baseline). ``interrupted``:
    why the run did not finish (:mod:`reports.completeness`): it is undecided unless a violation
    was observed."""
    by_inv: dict[str, list[Mapping]] = {i: [] for i in INVARIANTS}
    for v in violations:
        by_inv[v["invariant"]].append(v)
    pending_by_inv: dict[str, list[Mapping]] = {i: [] for i in INVARIANTS}
    for p in pending:
        pending_by_inv[p["invariant"]].append(p)
    invariants = {}
    gating = 0
    accepted_total = 0
    for inv in INVARIANTS:
        rows = sorted(by_inv[inv], key=lambda r: (bool(r.get("accepted")), str(r.get("key")), _int(r.get("attempt")) or 0))
        n_checked = int(checked.get(inv, 0))
        accepted = sum(1 for r in rows if r.get("accepted"))
        entry = {
            "checked": n_checked,
            "violations": len(rows),
            "examples": [explain(r, faults) for r in rows[:EXAMPLES_PER_INVARIANT]],
            "passed": False if rows else (None if n_checked == 0 or pending_by_inv[inv] else True),
        }
        if accepted:
            entry["accepted"] = accepted
        if pending_by_inv[inv]:
            entry["undecided"] = len(pending_by_inv[inv])
            by_host = sum(1 for p in pending_by_inv[inv] if p.get("cause") == HOST_STALL_CAUSE)
            if by_host:  # reference.stalls: the machine, not the broker, may explain them
                entry[UNDECIDED_BY_HOST] = by_host
        invariants[inv] = entry
        gating += len(rows) - accepted
        accepted_total += accepted
    undecided = [
        {"invariant": p["invariant"], "key": p["key"], "attempt": _int(p.get("attempt")), "reason": p["detail"]}
        for inv in INVARIANTS for p in sorted(pending_by_inv[inv], key=lambda p: str(p["key"]))[:PENDING_EXAMPLES]
    ]
    verdict = {
        "run_id": run_id,
        "passed": False if gating else (None if undecided or interrupted else True),
        "messages": int(stats.get("messages") or 0),
        "attempts": int(stats.get("attempts") or 0),
        "recovered": int(stats.get("recovered") or 0),
        "invariants": invariants,
    }
    if interrupted:
        verdict["interrupted"] = interrupted
    if undecided:
        verdict["undecided"] = {"messages": len(pending), "examples": undecided}
    if accepted_total:
        verdict["accepted"] = accepted_total
    if torn:
        verdict["torn_lines"] = torn
    return verdict


def broken_verdict(run_id: str, message: str) -> dict:
    """The verdict of a run that could not be read (exit 3): every invariant unjudged."""
    return {
        "run_id": run_id,
        "passed": None,
        "broken": message,
        "messages": 0,
        "attempts": 0,
        "recovered": 0,
        "invariants": {i: {"checked": 0, "violations": 0, "examples": [], "passed": None} for i in INVARIANTS},
    }


# --- the verdict vocabulary and the exit rule: the one owner (CLIs, plugin, summary import it) ---

PASSED, VIOLATED, UNDECIDED, BROKEN = "passed", "violated", "undecided", "broken"
#: A run's status -> the exit code it asks for. Jepsen's: CI retries 3 and never retries 1.
EXIT_CODES = {PASSED: 0, VIOLATED: 1, UNDECIDED: 2, BROKEN: 3}
#: The command line itself is wrong (unknown option, missing argument, bad choice): nothing ran.
EXIT_USAGE = 64
#: Ranking when several runs are summed up: a violation wins over everything (it must never be
#: retried away), then a broken run, then an undecided one.
_RANK = (VIOLATED, BROKEN, UNDECIDED, PASSED)
#: What CI runs once more (docs/ci.md, the action's ``retry``, the plugin's ``--hg-retries``): what
#: the harness, its host or its infrastructure left without a verdict. Never a violation.
RETRIED = frozenset({UNDECIDED, BROKEN})


def retried(verdict: Mapping) -> bool:
    """Whether a run with ``verdict`` is run once more under CI's retry rule (:data:`RETRIED`); a
    scenario the system cannot run (``skipped``: no verdict asked of it) never is."""
    return not verdict.get("skipped") and status(verdict) in RETRIED


#: A run that passed only when CI's retry rule ran its scenario once more (its verdict's ``earlier``:
#: the attempts before, each undecided or broken): never plain green — every summary, JUnit and the
#: history say it apart, and ``--hg-flaky fail`` (HOURGLASS_FLAKY) fails it (docs/ci.md).
FLAKY = "flaky"


def flaky(verdict: Mapping) -> bool:
    """Whether ``verdict`` passed only on a retry (:data:`FLAKY`)."""
    return bool(verdict.get("earlier")) and status(verdict) == PASSED


def shown_status(verdict: Mapping) -> str:
    """The status a summary shows: :func:`status`, with a pass on a retry shown as :data:`FLAKY`
    (its exit code stays a pass's: :data:`EXIT_CODES` has no flaky)."""
    return FLAKY if flaky(verdict) else status(verdict)


def gating_violations(verdict: Mapping) -> int:
    """Violations that gate: all of them minus those a baseline accepts."""
    return sum(int(e.get("violations") or 0) - int(e.get("accepted") or 0)
               for e in (verdict.get("invariants") or {}).values() if e.get("passed") is False)


def status(verdict: Mapping) -> str:
    """One run's status. A violation the broker was seen to commit stands even in a broken or
    interrupted run; what the harness could not observe is broken or undecided, never a pass."""
    if verdict.get("passed") is False or gating_violations(verdict) > 0:
        return VIOLATED
    if verdict.get("broken"):
        return BROKEN
    if verdict.get("passed") is True:
        return PASSED
    return UNDECIDED


def mark_broken(verdict: Mapping, reason: str) -> dict:
    """``verdict`` of a run the harness could not carry out (a consumer that would not start, a
    system that never became ready): broken, with the reason; an observed violation still stands."""
    out = dict(verdict)
    out["broken"] = reason
    if out.get("passed") is not False:
        out["passed"] = None
    return out


def exit_code(verdicts: Iterable[Mapping]) -> int:
    """The exit code of a set of runs: the code of the highest-ranked status among them, 0 for none."""
    found = {status(v) for v in verdicts}
    return next((EXIT_CODES[s] for s in _RANK if s in found), 0)
