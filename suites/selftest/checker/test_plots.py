"""The report's plots are SVG a browser draws: well-formed, each titled, one id per clip path and
hatch pattern on a page (ids are page-wide), ticks at round values, the same text every time."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from hourglass.reports import plots
from hourglass.reports.svg import nice_ticks

T0 = 1_763_800_000_000
DATA = {"lateness": {0: {0: 5, 250: 7}, 2: {-250: 1, 0: 30, 3500: 2}}, "lateness_widened": {2: {3500: 2}},
        "lateness_time": [(T0 + 10_000, 0, False, 5), (T0 + 41_000, 3500, True, 2)],
        "gaps": [{"attempt": 1, "min": 10000, "median": 10100, "max": 10500, "expected_delay_ms": 10000, "n": 5},
                 {"attempt": 2, "min": 30000, "median": 30100, "max": 31500, "expected_delay_ms": 30000, "n": 3}],
        "timeline": [(T0 + i * 1000, o, i % 13) for i in range(120) for o in ("OK", "LATER")],
        "timeline_bin_ms": 1000, "lost": [(T0 + 50_000, 2)],
        "duplicates": {"scheduler allowed": 3, "consumer not allowed": 1}}
RUN = {"started_ms": T0, "ended_ms": T0 + 120_000, "profile": {"slack_ms": 3000}}
FAULTS = [{"type": "fault", "ts_ms": T0 + 30_000, "action": "kill", "target": "broker"},
          {"type": "fault", "ts_ms": T0 + 35_000, "action": "start", "target": "broker"},
          {"type": "fault", "ts_ms": T0 + 40_000, "action": "ready", "target": "broker"},
          {"type": "fault", "ts_ms": T0 + 100_000, "action": "stop", "target": "consumer"}]  # never back
NS = "{http://www.w3.org/2000/svg}"


def _all(data=DATA, faults=FAULTS, run=RUN) -> list[str]:
    return [plots.lateness_time_svg(data, faults, run, 3000), plots.lateness_svg(data, 3000, faults),
            plots.timeline_svg(data, faults, run), plots.gaps_svg(data, 3000), plots.duplicates_svg(data)]


def test_every_plot_is_well_formed_svg_with_its_title_and_its_own_ids():
    svgs = _all()
    titles, ids = [], []
    for svg in svgs:
        root = ET.fromstring(svg)
        assert root.tag == NS + "svg"
        titles.append([t.text for t in root.iter(NS + "text") if t.get("class") == "title"][0])
        ids.extend(e.get("id") for e in root.iter() if e.get("id"))
        referenced = {v[5:-1] for e in root.iter() for v in e.attrib.values() if v.startswith("url(#")}
        assert referenced <= set(ids), "a mark refers to an id its SVG does not define"
    assert titles == ["Lateness over time, outages as bands", "Lateness per delay level", "Deliveries over time, faults as bands",
                      "Retry gaps against the expected schedule", "Duplicates by cause"]
    assert len(set(ids)) == len(ids) == 5 + 1  # a clip path each, the hatch pattern of the widened attempts
    assert "broker kill" in svgs[2] and "consumer stop" in svgs[2]  # the outages are drawn as bands, named in the legend


def test_the_same_data_draws_the_same_text():
    assert _all() == _all()
    assert "Date" not in "".join(_all()) and "<metadata" not in "".join(_all())


def test_an_outage_not_over_by_the_end_reaches_the_end_of_the_run():
    svg = plots.timeline_svg(DATA, FAULTS, RUN)
    root = ET.fromstring(svg)
    (band,) = [e for e in root.iter(NS + "rect") if "consumer" in (e.get("class") or "")]
    ticks = {float(t.text): float(t.get("x")) for t in root.iter(NS + "text") if t.get("class") == "xtick"}
    per_s = (ticks[100] - ticks[0]) / 100
    assert abs(float(band.get("x")) - ticks[100]) < 1
    assert abs(float(band.get("x")) + float(band.get("width")) - (ticks[100] + 20 * per_s)) < 1  # to 120 s


def test_labels_are_escaped():
    svg = plots.duplicates_svg({"duplicates": {"<consumer> & 'not' allowed": 1}})
    assert [t.text for t in ET.fromstring(svg).iter(NS + "text") if t.get("class") == "ytick"] == ["<consumer> & 'not' allowed"]


def test_gaps_ticks_are_the_attempts():
    root = ET.fromstring(plots.gaps_svg(DATA, 3000))
    assert [t.text for t in root.iter(NS + "text") if t.get("class") == "xtick"] == ["1", "2"]


def test_ticks_are_round_and_cover_the_range():
    assert nice_ticks(0, 1) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(-0.3, 3.8) == [0, 1, 2, 3]
    assert nice_ticks(0, 130, 6) == [0, 50, 100]


def test_the_plot_benchmark_draws_every_mark_of_a_generated_run(capsys):
    from hourglass.reports import bench_plots

    run, data, faults, _ = bench_plots.plot_data(2000, 50)
    assert sum(n for _, n in data["lost"]) > 0 and faults
    svgs = {name: draw() for name, draw in bench_plots.figures(data, faults, run).items()}
    assert all(ET.fromstring(svg).tag == NS + "svg" for svg in svgs.values())
    assert "broker pause" in svgs["timeline"] and "lost: never delivered" in svgs["timeline"]
    assert bench_plots.main(["--events", "500", "--repeat", "2"]) == 0
    assert "one report (5 figures)" in capsys.readouterr().out
