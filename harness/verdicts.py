"""Verdicts as the suites see them: what to assert, and how a failure reads.

A verdict is ``verdict.json`` of ``DESIGN.md`` as a dict. A conformance test passes when every
invariant the run exercised holds (accepted baseline violations aside) and nothing is undecided; a
self-test of an injected defect passes when the invariant that names the defect fails.
"""

from __future__ import annotations

import json

from hourglass.reference.contract import INVARIANTS
from hourglass.reports.timetext import start_words, with_offsets
from hourglass.reports.verdict import PASSED, status


class VerdictFailure(AssertionError):
    pass


def _examples(inv: dict, t0_ms: int | None, limit: int = 3) -> str:
    lines = []
    for ex in inv.get("examples", [])[:limit]:
        lines.append("      - " + with_offsets(ex.get("explanation") or ex.get("message") or json.dumps(ex, sort_keys=True), t0_ms))
    return "\n".join(lines)


def describe(verdict: dict) -> str:
    out = [f"run {verdict.get('run_id')}: {status(verdict)} messages={verdict.get('messages')} "
           f"attempts={verdict.get('attempts')} recovered={verdict.get('recovered')}"]
    if verdict.get("run_dir"):
        out.append(f"  run directory: {verdict['run_dir']}")
    if verdict.get("report"):
        out.append(f"  report: {verdict['report']}")
    t0 = verdict.get("started_ms")
    if t0 and any(inv.get("passed") is False for inv in verdict.get("invariants", {}).values()):
        out.append(f"  {start_words(t0)}")
    if verdict.get("broken"):
        out.append(f"  broken: {verdict['broken'][:2000]}")
    if verdict.get("interrupted"):
        out.append(f"  interrupted: {verdict['interrupted']}")
    if verdict.get("undecided"):
        out.append(f"  undecided: {verdict['undecided']}")
    for n, e in enumerate(verdict.get("earlier") or (), 1):  # harness.session: the attempts CI's retry rule ran before
        out.append(f"  attempt {n} of {len(verdict['earlier']) + 1}: {e.get('status')} ({str(e.get('why'))[:500]}) {e.get('run_dir')}")
    for name in INVARIANTS:
        inv = verdict.get("invariants", {}).get(name, {})
        if inv.get("passed") is False:
            acc = f" ({inv.get('accepted')} accepted by baseline)" if inv.get("accepted") else ""
            out.append(f"  {name}: {inv.get('violations')} of {inv.get('checked')} violated{acc}")
            out.append(_examples(inv, t0))
    return "\n".join(x for x in out if x)


def unaccepted(inv: dict) -> int:
    return int(inv.get("violations") or 0) - int(inv.get("accepted") or 0)


def assert_conforms(verdict: dict) -> None:
    """The run passed (``reports.verdict.status``): every exercised invariant holds (or its
    violations are all accepted), nothing undecided, nothing broken."""
    state = status(verdict)
    if state != PASSED:
        bad = [n for n in INVARIANTS if verdict.get("invariants", {}).get(n, {}).get("passed") is False
               and unaccepted(verdict["invariants"][n]) > 0]
        raise VerdictFailure(f"broker broke {', '.join(bad)}\n" + describe(verdict) if bad
                             else f"the run is {state}: no verdict on the broker\n" + describe(verdict))


def assert_caught(verdict: dict, invariant: str) -> None:
    """The named invariant fails: the harness caught the defect."""
    inv = verdict["invariants"][invariant]
    if inv.get("passed") is not False:
        raise VerdictFailure(f"{invariant} did not catch the defect (passed={inv.get('passed')}, checked={inv.get('checked')})\n" + describe(verdict))
