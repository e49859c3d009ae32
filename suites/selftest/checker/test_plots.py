"""The report's plots are SVG a browser draws: well-formed, each titled, one clip path id per plot of
a page (ids are page-wide), ticks at round values."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from reports import plots
from reports.svg import nice_ticks

T0 = 1_763_800_000_000
DATA = {"lateness": {0: {0: 5, 250: 7}, 2: {-250: 1, 0: 30, 3500: 2}},
        "gaps": [{"attempt": 1, "min": 10000, "median": 10100, "max": 10500, "expected_delay_ms": 10000, "n": 5},
                 {"attempt": 2, "min": 30000, "median": 30100, "max": 31500, "expected_delay_ms": 30000, "n": 3}],
        "timeline": [(T0 + i * 1000, o, i % 13) for i in range(120) for o in ("OK", "LATER")],
        "duplicates": {"scheduler allowed": 3, "consumer not allowed": 1}}
RUN = {"started_ms": T0, "ended_ms": T0 + 120_000, "profile": {"slack_ms": 3000}}
FAULTS = [{"type": "fault", "ts_ms": T0 + 30_000, "action": "kill", "target": "broker"},
          {"type": "fault", "ts_ms": T0 + 35_000, "action": "start", "target": "broker"},
          {"type": "fault", "ts_ms": T0 + 40_000, "action": "ready", "target": "broker"}]


def test_every_plot_is_well_formed_svg_with_its_title_and_its_own_clip_path():
    svgs = [plots.lateness_svg(DATA, 3000), plots.timeline_svg(DATA, FAULTS, RUN), plots.gaps_svg(DATA, 3000),
            plots.duplicates_svg(DATA)]
    ns = "{http://www.w3.org/2000/svg}"
    titles, clips = [], []
    for svg in svgs:
        root = ET.fromstring(svg)
        assert root.tag == ns + "svg"
        titles.append([t.text for t in root.iter(ns + "text") if t.get("font-size") == "13"][0])
        clips.extend(c.get("id") for c in root.iter(ns + "clipPath"))
    assert titles == ["Lateness per delay level", "Deliveries over time, faults as bands",
                      "Retry gaps against the expected schedule", "Duplicates by cause"]
    assert len(set(clips)) == len(clips) == 4
    assert "broker kill" in svgs[1]  # the outage is drawn as a band, and named in the legend


def test_ticks_are_round_and_cover_the_range():
    assert nice_ticks(0, 1) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(-0.3, 3.8) == [0, 1, 2, 3]
    assert nice_ticks(0, 130, 6) == [0, 50, 100]
