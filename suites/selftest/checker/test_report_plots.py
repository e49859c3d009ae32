"""report.html tells the truth at a glance: the attempts whose window a broker outage widened are
drawn apart with their own legend entry, the timeline breaks at a broker outage instead of drawing
across it and marks the lost messages at their due time, and eighteen delay levels' legend sits
outside the plot. Judged without Spark (``reports.judge_columnar`` on hand-made runs)."""

from __future__ import annotations

import json
import math

from reference.contract import INVARIANTS
from reports import plots
from reports.html import report_html
from reports.judge_columnar import judge_table
from reports.rows import table_from_events
from suites.selftest.checker import cases
from suites.selftest.checker.runs import T0, RunBuilder


def _judged(builder: RunBuilder) -> tuple[dict, dict, list[dict], list[dict]]:
    """run.json, the merged plot data, the violations and the faults of a hand-made run."""
    run = builder.run_json()
    rows = judge_table(run, 0, table_from_events(builder.events), run["ended_ms"], plots.timeline_bin_ms(run)).to_pylist()
    violations = [json.loads(r["payload"]) for r in rows if r["kind"] == "v"]
    data = plots.merge([json.loads(r["payload"]) for r in rows if r["kind"] == "plot"], run, plots.lost_due_ms(violations))
    return run, data, violations, [e for e in builder.events if e["type"] == "fault"]


def _page(builder: RunBuilder) -> str:
    run, data, _, faults = _judged(builder)
    verdict = {"run_id": builder.run_id, "passed": True, "messages": 2, "attempts": 2, "recovered": 0,
               "invariants": {n: {"passed": True, "checked": 2, "violations": 0, "examples": []} for n in INVARIANTS}}
    return report_html(verdict, None, data, run, faults)


def _widened_run() -> RunBuilder:
    """``w`` (level 1, due at 1 s) waits through a broker kill (0.5 s until ready at 2 s): its
    window is widened to ready + 1 s + slack and it arrives at 2.5 s, inside it; ``n`` is sent
    after the outage and arrives in its plain window."""
    return (RunBuilder("widened").fault(500, "kill").fault(1000, "start").fault(2000, "ready")
            .send("w", 0, level=1).deliver("w", 2500)
            .send("n", 10_000, level=1).deliver("n", 11_100))


def test_an_attempt_whose_window_a_broker_kill_widened_is_drawn_apart_with_its_legend_entry():
    _, data, violations, _ = _judged(_widened_run())
    assert not violations
    assert data["lateness_widened"] == {1: {1500: 1}}  # w: due at 1000 (born at 0 + 1 s), stored at 2500
    assert sorted((w, n) for _, _, w, n in data["lateness_time"]) == [(False, 1), (True, 1)]
    page = _page(_widened_run())
    assert "window widened by outage (kill)" in page
    assert "broker kill" in page  # the outage's band


def test_without_an_outage_no_window_is_marked_widened():
    clean = RunBuilder("plain").send("a", 0, level=1).deliver("a", 1100).send("b", 100, level=2).deliver("b", 5200)
    _, data, _, _ = _judged(clean)
    assert data["lateness_widened"] == {} and not any(w for _, _, w, _ in data["lateness_time"])
    assert "window widened" not in _page(clean)


def test_lost_messages_are_in_the_timeline_data_at_their_due_time_and_marked_on_the_plot():
    run, data, violations, faults = _judged(cases.lost())  # "gone": level 1, born at 0, never delivered
    assert [v["key"] for v in violations if v["invariant"] == "NO_LOSS"] == ["gone"]
    assert data["lost"] == [(T0 + 1000, 1)]  # the 1 s bin it was due in
    assert "lost: never delivered (1)" in plots.timeline_svg(data, faults, run)


def test_a_run_that_lost_everything_still_gets_a_timeline():
    run, data, _, faults = _judged(RunBuilder("all-lost").send("a", 0, level=1).send("b", 10, level=2))
    assert data["timeline"] == [] and sum(n for _, n in data["lost"]) == 2
    assert plots.timeline_svg(data, faults, run) is not None


def test_the_timeline_breaks_at_a_broker_outage_and_is_zero_where_nothing_came():
    b = (RunBuilder("gap").fault(3000, "kill").fault(4000, "start").fault(9000, "ready")
         .send("a", 0).deliver("a", 500).send("c", 9_400).deliver("c", 9_500))
    run, data, _, faults = _judged(b)
    width = data["timeline_bin_ms"]
    assert width == 1000
    ((grid, counts),) = plots.timeline_series(data, faults, width).values()
    by_bin = {(t - T0) // width: n for t, n in zip(grid, counts)}
    assert by_bin[0] == 1 and by_bin[9] == 1
    assert by_bin[1] == 0 and by_bin[2] == 0  # the broker served, nothing came
    assert all(math.isnan(by_bin[i]) for i in range(3, 9))  # the broker was down the whole bin: no line
    assert by_bin[9] == 1  # the bin the outage ends in is drawn


def test_eighteen_levels_legend_sits_below_the_axes(monkeypatch):
    figures = []
    monkeypatch.setattr(plots, "_svg", lambda fig: figures.append(fig) or "<svg/>")
    data = {"lateness": {lv: {0: 1, 250: lv} for lv in range(1, 19)}, "lateness_widened": {3: {250: 1}}}
    plots.lateness_svg(data, 3000, [{"ts_ms": 1, "action": "kill", "target": "broker"}])
    (fig,) = figures
    fig.canvas.draw()
    axes = fig.axes[0].get_window_extent()
    labels = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert "level 18" in labels and "window widened by outage (kill)" in labels
    assert fig.axes[0].get_legend() is None
    for legend in fig.legends:
        box = legend.get_window_extent()
        assert box.y1 <= axes.y0 and box.y0 >= 0, "a legend overlaps the axes or leaves the figure"
