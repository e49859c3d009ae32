"""report.html tells the truth at a glance: the attempts whose window a broker outage widened are
drawn apart with their own legend entry, the timeline breaks at a broker outage instead of drawing
across it and marks the lost messages at their due time, and eighteen delay levels' legend sits
outside the plot. Judged without Spark (``reports.judge_columnar`` on hand-made runs); the marks are
found in the SVG by their class, and placed by reading the x axis' tick labels."""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET

from hourglass.reference.contract import INVARIANTS
from hourglass.reports import plots
from hourglass.reports.html import report_html
from hourglass.reports.judge_columnar import judge_table
from hourglass.reports.rows import table_from_events
from hourglass.reports.svg import marker_radius
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


SVG = "{http://www.w3.org/2000/svg}"


def _marks(svg: str, cls: str) -> list[ET.Element]:
    """The elements of ``svg`` whose class names ``cls`` (the SVG must be well-formed XML)."""
    return [e for e in ET.fromstring(svg).iter() if cls in (e.get("class") or "").split()]


def _legend(svg: str) -> list[str]:
    (legend,) = _marks(svg, "legend")
    return [t.text for t in legend.iter(SVG + "text")]


def _x_px(svg: str):
    """Seconds on the x axis to px, from two of its tick labels."""
    ticks = [(float(t.text), float(t.get("x"))) for t in _marks(svg, "xtick")]
    (v0, p0), (v1, p1) = ticks[0], ticks[-1]
    return lambda v: p0 + (v - v0) * (p1 - p0) / (v1 - v0)


def _band(svg: str, target: str) -> tuple[float, float]:
    """The px span of ``target``'s one outage band."""
    (band,) = [b for b in _marks(svg, "band") if target in b.get("class").split()]
    return float(band.get("x")), float(band.get("x")) + float(band.get("width"))


def _widened_run() -> RunBuilder:
    """``w`` (level 1, due at 1 s) waits through a broker kill (0.5 s until ready at 2 s): its
    window is widened to ready + 1 s + slack and it arrives at 2.5 s, inside it; ``n`` is sent
    after the outage and arrives in its plain window."""
    return (RunBuilder("widened").fault(500, "kill").fault(1000, "start").fault(2000, "ready")
            .send("w", 0, level=1).deliver("w", 2500)
            .send("n", 10_000, level=1).deliver("n", 11_100))


def test_an_attempt_whose_window_a_broker_kill_widened_is_drawn_apart_with_its_legend_entry():
    run, data, violations, faults = _judged(_widened_run())
    assert not violations
    assert data["lateness_widened"] == {1: {1500: 1}}  # w: due at 1000 (born at 0 + 1 s), stored at 2500
    assert sorted((w, n) for _, _, w, n in data["lateness_time"]) == [(False, 1), (True, 1)]
    over_time = plots.lateness_time_svg(data, faults, run, 3000)
    x = _x_px(over_time)
    down, up = _band(over_time, "broker")  # the broker's outage, from the kill (0.5 s) to ready (2 s)
    assert abs(down - x(0.5)) < 1 and abs(up - x(2.0)) < 1
    (kill,) = _marks(over_time, "kill")
    assert abs(float(kill.get("x1")) - x(0.5)) < 1
    (widened,) = _marks(over_time, "widened")  # w, alone, as a triangle, after the outage
    (triangle,) = widened
    assert triangle.tag == SVG + "polygon" and float(triangle.get("points").split(",")[0]) > up
    (plain,) = _marks(over_time, "arrival")  # n, a circle
    assert [c.tag for c in plain] == [SVG + "circle"]
    # short entries first, in columns; the long ones after, in the order drawn
    assert _legend(over_time) == ["broker kill", "arrival (size: attempts)", "window widened by outage (kill)",
                                  "due + slack (3000 ms)", "early zone (< due)", "ON_TIME window (due … due + 3000 ms slack)"]
    per_level = plots.lateness_svg(data, 3000, faults)
    (hatched,) = _marks(per_level, "widened")  # the widened attempts' histogram, filled with the hatch pattern
    pattern = re.fullmatch(r"url\(#(.+)\)", hatched.get("fill")).group(1)
    assert [p.get("id") for p in ET.fromstring(per_level).iter(SVG + "pattern")] == [pattern]
    assert "window widened by outage (kill)" in _legend(per_level)
    page = _page(_widened_run())
    assert "window widened by outage (kill)" in page
    assert "broker kill" in page  # the outage's band


def test_without_an_outage_no_window_is_marked_widened():
    clean = RunBuilder("plain").send("a", 0, level=1).deliver("a", 1100).send("b", 100, level=2).deliver("b", 5200)
    run, data, _, faults = _judged(clean)
    assert data["lateness_widened"] == {} and not any(w for _, _, w, _ in data["lateness_time"])
    for svg in (plots.lateness_time_svg(data, faults, run, 3000), plots.lateness_svg(data, 3000, faults),
                plots.timeline_svg(data, faults, run)):
        assert not _marks(svg, "widened") and not _marks(svg, "band") and "<pattern" not in svg
    assert "window widened" not in _page(clean)


def test_lost_messages_are_in_the_timeline_data_at_their_due_time_and_marked_on_the_plot():
    run, data, violations, faults = _judged(cases.lost())  # "gone": level 1, born at 0, never delivered
    assert [v["key"] for v in violations if v["invariant"] == "NO_LOSS"] == ["gone"]
    assert data["lost"] == [(T0 + 1000, 1)]  # the 1 s bin it was due in
    svg = plots.timeline_svg(data, faults, run)
    (lost,) = _marks(svg, "lost")
    (cross,) = lost  # one marker, in the middle of the bin it was due in (1 s to 2 s)
    assert cross.tag == SVG + "path" and cross.get("stroke") == "#000000"
    left = float(re.match(r"M([\d.]+),", cross.get("d")).group(1))  # the cross's left end: its centre - radius
    assert abs(left + marker_radius(45) - _x_px(svg)(1.5)) < 1
    assert "lost: never delivered (1), when due" in _legend(svg)


def test_a_run_that_lost_everything_still_gets_a_timeline():
    run, data, _, faults = _judged(RunBuilder("all-lost").send("a", 0, level=1).send("b", 10, level=2))
    assert data["timeline"] == [] and sum(n for _, n in data["lost"]) == 2
    svg = plots.timeline_svg(data, faults, run)
    assert not _marks(svg, "outcome") and len(_marks(svg, "lost")[0]) == 2  # a at 1 s, b at 5 s: two bins


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
    svg = plots.timeline_svg(data, faults, run)
    (line,) = _marks(svg, "outcome")
    assert len(line.findall(SVG + "polyline")) == 2  # broken at the outage
    x = _x_px(svg)
    down, up = _band(svg, "broker")
    assert abs(down - x(3)) < 1 and abs(up - x(9)) < 1
    assert _legend(svg) == ["OK", "broker kill"]


def test_eighteen_levels_legend_sits_below_the_axes():
    data = {"lateness": {lv: {0: 1, 250: lv} for lv in range(1, 19)}, "lateness_widened": {3: {250: 1}}}
    svg = plots.lateness_svg(data, 3000, [{"ts_ms": 1, "action": "kill", "target": "broker"}])
    labels = _legend(svg)
    assert labels[:18] == [f"level {lv}" for lv in range(1, 19)]
    assert labels[18:] == ["window widened by outage (kill)", "due + slack (3000 ms)", "early zone (< due)",
                           "ON_TIME window (due … due + 3000 ms slack)"]
    levels = [s for s in _marks(svg, "stairs") if "widened" not in s.get("class")]
    assert len(levels) == len({s.get("stroke") for s in levels}) == 18  # eighteen levels, eighteen colours
    (axes,) = _marks(svg, "axes")
    (xlabel,) = _marks(svg, "xlabel")
    height = float(ET.fromstring(svg).get("height"))
    ys = [float(t.get("y")) for t in _marks(svg, "legend")[0].iter(SVG + "text")]
    assert min(ys) - 8 > float(xlabel.get("y")) > float(axes.get("y")) + float(axes.get("height")), "a legend overlaps the axes"
    assert max(ys) + 3 <= height, "a legend leaves the figure"
    assert len(set(ys)) == 5  # 8 short entries a row (three rows), the four long ones two a row
