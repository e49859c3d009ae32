"""The report's plots do not mislead: each consumer outage is a band of its own, from the death to
that consumer's restart; early attempts are drawn apart and the early zone and the ON_TIME window
are shaded; lateness keeps the precision its data has; a one-bin histogram stands on the axis;
count axes tick at whole numbers; timer messages are named as such; the time axes reach the
run's end. The marks are found in the SVG by their class and placed by the axes' tick labels."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from hourglass.reports import plots
from suites.selftest.checker.runs import T0

SVG = "{http://www.w3.org/2000/svg}"
RUN = {"started_ms": T0, "ended_ms": T0 + 60_000, "profile": {"slack_ms": 3000}}


def _marks(svg: str, cls: str) -> list[ET.Element]:
    return [e for e in ET.fromstring(svg).iter() if cls in (e.get("class") or "").split()]


def _ticks(svg: str, axis: str) -> list[tuple[str, float]]:
    """(label, px) of the ``axis`` ("x" or "y") tick labels."""
    return [(t.text, float(t.get(axis))) for t in _marks(svg, f"{axis}tick")]


def _scale(svg: str, axis: str):
    """A value on ``axis`` to px, from its first and last tick labels (``y``: a tick label sits 4 px
    below its value)."""
    ticks = _ticks(svg, axis)
    (v0, p0), (v1, p1) = [(float(t), p - (4 if axis == "y" else 0)) for t, p in (ticks[0], ticks[-1])]
    return lambda v: p0 + (v - v0) * (p1 - p0) / (v1 - v0)


def _triangle_y(svg: str, cls: str) -> float:
    """The centre (px) of the one triangle pointing down among the marks of class ``cls``: its lower
    tip is r below the centre, its upper edge r / 2 above."""
    (group,) = _marks(svg, cls)
    (triangle,) = group
    tip, top = (float(p.split(",")[1]) for p in triangle.get("points").split()[:2])
    return tip - (tip - top) / 1.5


def _legend(svg: str) -> list[str]:
    (legend,) = _marks(svg, "legend")
    return [t.text for t in legend.iter(SVG + "text")]


def _data(points, **extra) -> dict:
    return {"lateness": {1: {0: 3}}, "lateness_widened": {}, "lateness_time": points, "gaps": [], "timeline": [],
            "timeline_bin_ms": 1000, "lost": [], "duplicates": {}, **extra}


def _consumer(ts: int, action: str, name: str | None = None, cause: str | None = None) -> dict:
    f = {"type": "fault", "ts_ms": T0 + ts, "action": action, "target": "consumer"}
    return f | ({"name": name, "group": "g"} if name else {}) | ({"cause": cause} if cause else {})


def test_each_consumer_outage_is_a_band_from_its_death_to_its_restart():
    faults = [_consumer(1_000, "start", "c-0", "scenario"), _consumer(1_000, "start", "c-1", "scenario"),
              _consumer(10_000, "kill", "c-0", "died"), _consumer(12_000, "kill", "c-1", "died"),  # c-1 dies while c-0 is down
              _consumer(11_000, "start", "c-0", "died"), _consumer(20_000, "start", "c-1", "died"),
              _consumer(30_000, "kill", "c-0", "exited"), _consumer(31_000, "start", "c-0", "exited"),
              _consumer(40_000, "pause"), _consumer(42_000, "resume")]
    data = _data([(T0 + 5_000, 0, False, 1)], timeline=[(T0 + i * 1000, "OK", 1) for i in range(50)])
    for svg in (plots.timeline_svg(data, faults, RUN), plots.lateness_time_svg(data, faults, RUN, 3000)):
        x = _scale(svg, "x")
        spans = sorted((float(b.get("x")), float(b.get("x")) + float(b.get("width"))) for b in _marks(svg, "consumer"))
        expected = [(10, 11), (12, 20), (30, 31), (40, 42)]  # each death to its own restart; the pause to its resume
        assert len(spans) == len(expected)
        for (a, b), (s0, s1) in zip(spans, expected):
            assert abs(a - x(s0)) < 1 and abs(b - x(s1)) < 1, "a consumer outage band does not span its own outage"
        assert "consumer kill" in _legend(svg) and "consumer pause" in _legend(svg)


def test_a_scenario_start_or_stop_is_no_outage_and_a_consumer_never_restarted_reaches_the_run_end():
    faults = [_consumer(1_000, "start", "c-0", "scenario"), _consumer(5_000, "stop", "c-1", "scenario"),
              _consumer(50_000, "kill", "c-0", "died")]
    svg = plots.timeline_svg(_data([], timeline=[(T0 + 2_000, "OK", 1)]), faults, RUN)
    x = _scale(svg, "x")
    (band,) = _marks(svg, "consumer")
    assert abs(float(band.get("x")) - x(50)) < 1 and abs(float(band.get("x")) + float(band.get("width")) - x(60)) < 1


def test_early_attempts_are_drawn_apart_over_a_shaded_early_zone_and_the_on_time_window():
    data = _data([(T0 + 5_000, -1000, False, 1), (T0 + 9_000, 0, False, 2), (T0 + 12_000, 4000, True, 1)])
    svg = plots.lateness_time_svg(data, [], RUN, 3000)
    (early,) = _marks(svg, "early")
    assert early.tag == SVG + "g" and [m.tag for m in early] == [SVG + "polygon"]  # one point, a triangle pointing down
    assert early[0].get("fill") == "#d62728" and len(_marks(svg, "arrival")[0]) == 1 and len(_marks(svg, "widened")[0]) == 1
    assert plots.EARLY_LABEL in _legend(svg)
    y = _scale(svg, "y")
    (zone,) = _marks(svg, "zone-early")
    (axes,) = _marks(svg, "axes")
    bottom = float(axes.get("y")) + float(axes.get("height"))
    assert abs(float(zone.get("y")) - y(0)) < 1 and abs(float(zone.get("y")) + float(zone.get("height")) - bottom) < 1
    (window,) = _marks(svg, "on-time")  # the model's window: from due (0) to due + the run's slack
    assert abs(float(window.get("y")) - y(3)) < 1 and abs(float(window.get("y")) + float(window.get("height")) - y(0)) < 1
    assert "ON_TIME window (due … due + 3000 ms slack)" in _legend(svg)


def test_the_per_level_histogram_shades_the_zones_and_draws_the_early_attempts_apart():
    svg = plots.lateness_svg({"lateness": {1: {-250: 2, 0: 5}, 2: {-500: 1}}, "lateness_widened": {}}, 3000)
    x = _scale(svg, "x")
    (early,) = _marks(svg, "early")  # the early attempts of every level: 3, red
    assert early.get("stroke") == "#d62728" and f"{plots.EARLY_LABEL}: 3" in _legend(svg)
    (zone,) = _marks(svg, "zone-early")
    assert abs(float(zone.get("x")) + float(zone.get("width")) - x(0)) < 1
    (window,) = _marks(svg, "on-time")
    assert abs(float(window.get("x")) - x(0)) < 1 and abs(float(window.get("x")) + float(window.get("width")) - x(3)) < 1


def test_lateness_over_time_keeps_the_precision_of_its_data():
    # bins of 1 ms: 92 ms early is drawn at -0.092 s, not at -1 s
    svg = plots.lateness_time_svg(_data([(T0 + 5_000, -92, False, 1), (T0 + 6_000, 40, False, 1)], lateness_time_bin_ms=1),
                                  [], RUN, 3000)
    assert abs(_triangle_y(svg, "early") - _scale(svg, "y")(-0.092)) < 1
    assert all(re.fullmatch(r"-?\d+(\.\d+)?", t) for t, _ in _ticks(svg, "y")) and not _marks(svg, "bins")
    # bins of 1 s (what the judges give today): a bar over the bin, the marker in its middle, never at its edge
    svg = plots.lateness_time_svg(_data([(T0 + 5_000, -1000, False, 1)], lateness_time_bin_ms=1000), [], RUN, 3000)
    y = _scale(svg, "y")
    (bar,) = _marks(svg, "bins")[0]
    assert abs(float(bar.get("y1")) - y(-1)) < 1 and abs(float(bar.get("y2")) - y(0)) < 1
    assert abs(_triangle_y(svg, "early") - y(-0.5)) < 1
    assert "1000 ms bins" in _marks(svg, "ylabel")[0].text


def test_a_lateness_axis_under_two_seconds_is_in_ms():
    assert plots.lateness_unit(-92, 500) == (1, "ms") and plots.lateness_unit(-92, 3000) == (1000, "s")
    svg = plots.lateness_time_svg(_data([(T0 + 5_000, -92, False, 1)], lateness_time_bin_ms=1), [], RUN, 1000)
    assert _marks(svg, "ylabel")[0].text.startswith("arrival − due (ms")
    assert abs(_triangle_y(svg, "early") - _scale(svg, "y")(-92)) < 1


def test_a_single_bin_histogram_stands_on_the_axis_one_bin_wide():
    svg = plots.lateness_svg({"lateness": {1: {500: 1}}, "lateness_widened": {}}, 3000)
    x, y = _scale(svg, "x"), _scale(svg, "y")
    (stairs,) = [s for s in _marks(svg, "stairs") if s.get("class") == "stairs"]
    pts = [tuple(map(float, p.split(","))) for p in stairs.get("points").split()]
    assert abs(pts[0][1] - y(0)) < 1 and abs(pts[-1][1] - y(0)) < 1, "the bin floats above the axis"
    assert abs(pts[0][0] - x(0.5)) < 1 and abs(pts[-1][0] - x(0.75)) < 1  # one bin, 250 ms wide
    assert [t for t, _ in _ticks(svg, "y")] == ["0", "1"]
    assert {"0", "1", "2", "3"} <= {t for t, _ in _ticks(svg, "x")}  # the axis shows due and due + slack around it


def test_count_axes_tick_at_whole_numbers():
    timeline = _data([], timeline=[(T0 + 1_000, "OK", 1), (T0 + 2_000, "OK", 2), (T0 + 3_000, "LATER", 1)])
    for svg, axis in ((plots.lateness_svg({"lateness": {1: {0: 1, 250: 2}}, "lateness_widened": {}}, 3000), "y"),
                      (plots.timeline_svg(timeline, [], RUN), "y"),
                      (plots.duplicates_svg({"duplicates": {"consumer allowed": 1, "scheduler allowed": 2}}), "x")):
        labels = [t for t, _ in _ticks(svg, axis)]
        assert labels and all(re.fullmatch(r"\d+", t) for t in labels), f"fractional count ticks: {labels}"


def test_timer_messages_are_named_by_their_delay_not_called_not_delayed():
    mixed = {"lateness": {0: {0: 4}}, "lateness_widened": {}}
    assert "level 0: not delayed or timer" in _legend(plots.lateness_svg(mixed, 3000))  # the judges did not split them
    split = dict(mixed, lateness_timer={3000: {0: 2, 250: 1}, 4500: {500: 1}})
    labels = _legend(plots.lateness_svg(split, 3000))
    assert labels[:3] == ["not delayed", "timer message (delay 3 s)", "timer message (delay 4.5 s)"]
    many = dict(mixed, lateness_timer={d: {0: 1} for d in (1000, 2000, 3000, 4000, 20_000)})
    assert "timer messages (delay 1–20 s)" in _legend(plots.lateness_svg(many, 3000))
    partials = [{"lateness": {}, "lateness_widened": {}, "lateness_time": [], "gaps": {}, "gap_expected": {}, "timeline": [],
                 "duplicates": {}, "lateness_timer": {"3000": {"0": 1}}}] * 2
    assert plots.merge(partials, RUN)["lateness_timer"] == {3000: {0: 2}}


def test_the_time_axes_reach_the_run_end_not_the_last_delivery():
    data = _data([(T0 + 5_000, 0, False, 1)], timeline=[(T0 + 1_000, "OK", 1), (T0 + 5_000, "OK", 1)])
    for svg in (plots.timeline_svg(data, [], RUN), plots.lateness_time_svg(data, [], RUN, 3000)):
        x = _scale(svg, "x")
        (axes,) = _marks(svg, "axes")
        assert float(axes.get("x")) + float(axes.get("width")) >= x(60) - 0.5, "the axis stops before the run's end"
        assert max(float(t) for t, _ in _ticks(svg, "x")) >= 50
    interrupted = dict(RUN, ended_ms=0)  # no end: the axis fits the deliveries
    assert max(float(t) for t, _ in _ticks(plots.timeline_svg(data, [], interrupted), "x")) < 10


def test_the_judges_put_timer_messages_in_their_own_series(tmp_path):
    """A 5.x timer message's first attempt (parked in the wheel) counts by its delay, not in level
    0 with the plain messages: both judging paths, on the conformance suite's timer scenario."""
    import json
    from pathlib import Path

    from hourglass.harness.batch import BatchOptions, run_batch
    from hourglass.harness.catalogue.conformance import CONFORMANCE
    from hourglass.harness.systems import SystemSpec
    from hourglass.reference.expected import EXPECTED_COLUMNS, build_expected_rows
    from hourglass.reports.judge_events import judge_bucket

    scenario = next(s for s in CONFORMANCE if s.name == "timer-messages")
    results, errors = run_batch([scenario], BatchOptions(SystemSpec("simulated"), tmp_path, progress=False))
    assert not errors, errors
    run_dir = Path(results[0].run_dir)
    run = json.loads((run_dir / "run.json").read_text())
    events = [json.loads(ln) for f in sorted((run_dir / "events").glob("*.jsonl")) for ln in f.read_text().splitlines() if ln.strip()]
    col = {n: i for i, n in enumerate(EXPECTED_COLUMNS)}
    parked = {r[col["delay_ms"]] for r in build_expected_rows(run, events) if r[col["timer_slot_ms"]] is not None}
    assert parked, "the scenario sends timer messages"
    plot = next(json.loads(r[-1]) for r in judge_bucket(run, events, run.get("ended_ms"), plots.timeline_bin_ms(run)) if r[2] == "plot")
    assert {int(d) for d in plot["lateness_timer"]} == parked
    timer_attempts = sum(n for bins in plot["lateness_timer"].values() for n in bins.values())
    plain = sum(1 for r in build_expected_rows(run, events) if r[col["level"]] == 0 and r[col["timer_slot_ms"]] is None
                and r[col["final_state"]] != "NEVER_SENT")
    assert sum(plot["lateness"].get("0", {}).values()) <= plain and timer_attempts >= len(parked)
