"""report.html shows a run's times as offsets from its start (ISO time on hover), not raw epoch
ms, and folds the raw verdict JSON away."""

from __future__ import annotations

import re

import pandas as pd

from hourglass.reference.contract import INVARIANTS
from hourglass.reports.html import report_html

T0 = 1_763_800_000_000


def _page() -> str:
    inv = {n: {"passed": True, "checked": 2, "violations": 0, "examples": []} for n in INVARIANTS}
    inv["NOT_EARLY"] = {"passed": False, "checked": 2, "violations": 1,
                        "examples": [{"explanation": f"hasty attempt 0: arrived early; observed at {T0 + 2_500}"}]}
    verdict = {"run_id": "early-sim-20260101T000000", "passed": False, "messages": 2, "attempts": 2, "recovered": 0, "invariants": inv}
    violations = pd.DataFrame([{"invariant": "NOT_EARLY", "key": "hasty", "attempt": 0, "earliest_ms": T0 + 2_800,
                                "latest_ms": T0 + 5_803, "observed_ms": T0 + 2_500, "anchor_ms": T0 + 1_803, "level": 1,
                                "requested_level": 1, "clamped": False, "detail": "arrived before its window opened",
                                "widened_by": None, "group": "cg"}])
    run = {"scenario": "early", "system": {"adapter": "simulated", "version": "sim"}, "started_ms": T0, "ended_ms": T0 + 9_000}
    return report_html(verdict, violations, None, run, [])


def _visible(page: str) -> str:
    """The page without attribute values and without the folded raw JSON."""
    page = re.sub(r"<details>.*?</details>", "", page, flags=re.S)
    return re.sub(r"""\w+='[^']*'|\w+="[^"]*\"""", "", page)


def test_violation_times_are_offsets_with_the_iso_time_on_hover():
    page = _page()
    assert not re.search(r"1\d{12}", _visible(page)), "an epoch-ms time is shown raw"
    assert "t+2.800 s" in page and "t+5.803 s" in page and "t+2.500 s" in page and "t+1.803 s" in page
    assert "title='2025-11-22T08:26:42.500Z (1763800002500)'" in page
    assert "Started 2025-11-22T08:26:40.000Z" in page


def test_the_first_example_in_the_invariant_table_is_offset_too():
    row = next(r for r in _page().split("<tr") if "<b>NOT_EARLY</b>" in r)
    assert "observed at <span class='t'" in row and "t+2.500 s" in row


def test_the_raw_verdict_json_is_folded_away():
    page = _page()
    folded = re.search(r"<details><summary>[^<]*.*?</summary><pre>(.*?)</pre></details>", page, flags=re.S)
    assert folded and "&quot;run_id&quot;" in folded.group(1)
    assert page.count("&quot;run_id&quot;") == 1  # nowhere else
