"""Plot data (partial aggregates from each judged bucket, merged per run) and the plots (inline SVG).

- lateness over time: how long after its due time each attempt arrived, at the time it arrived,
  with the outages as bands and the host's and the broker's recorded stalls as grey bands
  (``reference.stalls``); an attempt whose window a broker outage widened (the model's
  ``widened_by``) is drawn apart, as is its legend entry ("window widened by outage (kill)");
- lateness per delay level: the same as histograms, the widened windows' attempts hatched;
- timeline: deliveries per time bin by outcome, broker/name-server/consumer outages and stalls as bands (the
  lines break where the broker was down), lost messages (NO_LOSS violations) marked at the time
  they were due;
- retry gaps: time from a LATER to the next attempt, per attempt, against the expected delay;
- duplicates by cause: the model's rulings (scheduler/consumer, allowed or not).

Legends sit below the axes, in as many columns as fit: eighteen delay levels never cover a plot.
Drawn by :mod:`reports.svg` (plain SVG text, no plotting library).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

from reference.windows import broker_outages, cluster_outages
from reports.rows import LATENESS_BIN_MS, LATENESS_TIME_BIN_MS
from reports.svg import Chart, marker_radius, palette

TIMELINE_BINS = 300
#: Bins the timeline fills with zeros at most (beyond: only the bins holding deliveries).
TIMELINE_MAX_BINS = 100 * TIMELINE_BINS


def timeline_bin_ms(run: dict) -> int:
    """The width of one timeline bin of ``run``: about :data:`TIMELINE_BINS` bins, at least 1 s."""
    return max(1000, _span(run) // TIMELINE_BINS)


def lost_due_ms(violations: list[dict]) -> list[int]:
    """When each lost message was due (the ``earliest_ms`` of a NO_LOSS violation's missing
    attempt): the timeline marks them there."""
    return [v["earliest_ms"] for v in violations if v.get("invariant") == "NO_LOSS" and v.get("earliest_ms") is not None]


def merge(partials: list[dict], run: dict, lost_due: list[int] = ()) -> dict:
    """Plot data of one run from the partial aggregates of its buckets (``reports.rows.Judgements``)
    and the times its lost messages were due (:func:`lost_due_ms`)."""
    lateness: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    widened: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    over_time: dict[tuple, int] = defaultdict(int)
    gaps: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    gap_expected: dict[int, int] = {}
    timeline: dict[tuple, int] = defaultdict(int)
    duplicates: dict[str, int] = defaultdict(int)
    for p in partials:
        for level, bins in p["lateness"].items():
            for b, n in bins.items():
                lateness[int(level)][int(b)] += n
        for level, bins in p["lateness_widened"].items():
            for b, n in bins.items():
                widened[int(level)][int(b)] += n
        for b, late, w, n in p["lateness_time"]:
            over_time[(b, late, w)] += n
        for attempt, bins in p["gaps"].items():
            for b, n in bins.items():
                gaps[int(attempt)][int(b)] += n
        for a, d in p["gap_expected"].items():  # the longest delay of the attempt (reports.invariants.retry_schedule)
            gap_expected[int(a)] = max(d, gap_expected.get(int(a), d))
        for b, outcome, n in p["timeline"]:
            timeline[(b, outcome)] += n
        for cause, n in p["duplicates"].items():
            duplicates[cause] += n
    started, width = int(run.get("started_ms") or 0), timeline_bin_ms(run)
    lost = Counter((due - started) // width for due in lost_due)
    return {
        "lateness": {lv: dict(bins) for lv, bins in lateness.items()},
        "lateness_widened": {lv: dict(bins) for lv, bins in widened.items()},
        # (start of the time bin, lateness bin, window widened by an outage, attempts)
        "lateness_time": [(started + b * width, late, bool(w), n) for (b, late, w), n in sorted(over_time.items())],
        "gaps": [_gap_summary(a, bins, gap_expected.get(a)) for a, bins in sorted(gaps.items())],
        "timeline": [(started + b * width, o, n) for (b, o), n in sorted(timeline.items())],
        "timeline_bin_ms": width,
        # (start of the time bin they were due in, messages never delivered)
        "lost": [(started + b * width, n) for b, n in sorted(lost.items())],
        "duplicates": dict(duplicates),
    }


def _gap_summary(attempt: int, bins: dict[int, int], expected_delay_ms: int | None) -> dict:
    """min / median / max of one attempt's gaps from its histogram of offsets from the expected
    delay (bin resolution)."""
    ordered = sorted(bins.items())
    total = sum(n for _, n in ordered)
    seen, median = 0, ordered[0][0]
    for b, n in ordered:
        seen += n
        if seen * 2 >= total:
            median = b
            break
    base = expected_delay_ms or 0
    return {"attempt": attempt, "min": base + ordered[0][0], "median": base + median, "max": base + ordered[-1][0],
            "expected_delay_ms": base, "n": total}


def _span(run: dict) -> int:
    return max(0, int(run.get("ended_ms") or 0) - int(run.get("started_ms") or 0))


#: the colour of each fault target's outage bands
_TARGET_COLOURS = {"broker": "tab:red", "broker-2": "tab:pink", "namesrv": "tab:orange", "consumer": "tab:purple", "proxy": "tab:brown"}
_WIDENED_COLOUR = "tab:orange"


def widened_label(faults: list[dict]) -> str:
    """The legend entry of the attempts whose window a broker outage widened, naming the outages'
    kinds: ``window widened by outage (kill/stop)``."""
    actions = sorted({o.action for o in cluster_outages(faults)})
    return "window widened by outage" + (f" ({'/'.join(actions)})" if actions else "")


#: the colour of the bands of the host's and the broker's stalls (reference.stalls)
_STALL_COLOUR = "tab:gray"
#: a stall shorter than this is not drawn (a slack covers it; the report would be all bands)
STALL_BAND_MIN_MS = 500


def stall_bands(stalls: list[dict]) -> list[tuple[int, int, str]]:
    """(from_ms, to_ms, label) of the recorded stalls that can excuse a late attempt
    (``reference.stalls.counted_ms``) and last long enough to matter: the report's grey bands."""
    from reference.stalls import counted_ms

    return [(int(s["from_ms"]), int(s["ts_ms"]), f"stall: {s['source']} {s.get('subject') or ''}".strip())
            for s in stalls if max(counted_ms(s, False), counted_ms(s, True)) >= STALL_BAND_MIN_MS]


def _fault_bands(chart: Chart, faults: list[dict], run: dict, t0: int, stalls: list = ()) -> None:
    """Each target's outages as shaded bands (one legend entry per target and kind), kills as
    dotted lines, the host's and the broker's stalls as grey bands (:func:`stall_bands`); seconds
    since ``t0``. An outage not over by the run's end reaches its end (the axes' right edge for a
    run without one)."""
    end = _span(run) / 1000 or None
    named_stalls: set[str] = set()
    for start, stop, label in stalls:
        chart.band((start - t0) / 1000, (stop - t0) / 1000, _STALL_COLOUR, label=None if label in named_stalls else label,
                   cls="band stall")
        named_stalls.add(label)
    for target, colour in _TARGET_COLOURS.items():
        named: set[str] = set()
        for o in broker_outages(faults, target):
            up = (o.up_ms - t0) / 1000 if o.up_ms is not None else end
            label = f"{target} {o.action}"
            chart.band((o.down_ms - t0) / 1000, up, colour, label=None if label in named else label, cls=f"band {target}")
            named.add(label)
    for f in faults:
        if f["action"] == "kill":
            chart.vline((f["ts_ms"] - t0) / 1000, _TARGET_COLOURS.get(f["target"], "black"), dash="1,2", width=1, cls="kill")


def lateness_time_svg(data: dict, faults: list[dict], run: dict, slack_ms: int) -> str | None:
    """Each attempt's lateness at the time it arrived; the outages as bands; the attempts whose
    window an outage widened apart (another marker and colour)."""
    points = data.get("lateness_time") or []
    if not points:
        return None
    chart = Chart("Lateness over time, outages as bands", "time the attempt arrived, since the run started (s)",
                  f"arrival − due time (s, {LATENESS_TIME_BIN_MS // 1000} s bins)")
    t0 = int(run.get("started_ms") or min(t for t, *_ in points))
    half = (data.get("timeline_bin_ms") or timeline_bin_ms(run)) / 2
    styles = ((False, dict(shape="o", colour="tab:blue", opacity=0.6, label="arrival (size: attempts)", cls="points arrival")),
              (True, dict(shape="^", colour=_WIDENED_COLOUR, edge="black", edge_width=0.7, label=widened_label(faults),
                          cls="points widened")))
    for widened, style in styles:
        chosen = [p for p in points if p[2] == widened]
        if chosen:  # matplotlib's scatter sizes (pt²), as before
            chart.points([(t - t0 + half) / 1000 for t, _, _, _ in chosen], [late / 1000 for _, late, _, _ in chosen],
                         radii=[marker_radius(8 + 6 * math.log2(n)) for *_, n in chosen], **style)
    _fault_bands(chart, faults, run, t0, data.get("stalls") or ())
    chart.hline(0, "black")
    chart.hline(slack_ms / 1000, "red", dash="5,3", label=f"due + slack ({slack_ms} ms)", cls="slack")
    return chart.render()


def lateness_svg(data: dict, slack_ms: int, faults: list[dict] = ()) -> str | None:
    if not data["lateness"]:
        return None
    chart = Chart("Lateness per delay level", "arrival − due time (s); clipped to [-30 s, 120 s]", "attempts")
    levels = sorted(data["lateness"])
    for level, colour in zip(levels, palette(len(levels))):  # eighteen levels, eighteen colours
        bins = data["lateness"][level]
        first, last = min(bins), max(bins)
        edges = list(range(first, last + 2 * LATENESS_BIN_MS, LATENESS_BIN_MS))
        counts = [bins.get(b, 0) for b in edges[:-1]]
        chart.stairs(counts, [e / 1000 for e in edges], colour, label=f"level {level}" if level else "not delayed")
    widened: dict[int, int] = defaultdict(int)
    for bins in (data.get("lateness_widened") or {}).values():
        for b, n in bins.items():
            widened[b] += n
    if widened:  # over every level: hatched, so it reads apart from the levels' lines
        edges = list(range(min(widened), max(widened) + 2 * LATENESS_BIN_MS, LATENESS_BIN_MS))
        chart.stairs([widened.get(b, 0) for b in edges[:-1]], [e / 1000 for e in edges], _WIDENED_COLOUR, hatch=True,
                     width=1.3, label=widened_label(list(faults)), cls="stairs widened")
    chart.ylim[0] = 0
    chart.vline(0, "black")
    chart.vline(slack_ms / 1000, "red", dash="5,3", label=f"due + slack ({slack_ms} ms)", cls="slack")
    return chart.render()


def _inside_outage(start_ms: int, end_ms: int, outages) -> bool:
    return any(o.down_ms <= start_ms and (o.up_ms is None or end_ms <= o.up_ms) for o in outages)


def timeline_series(data: dict, faults: list[dict], width_ms: int) -> dict[str, tuple[list[int], list[float]]]:
    """Deliveries per bin of each outcome as (bin starts, counts), every bin from the first
    delivery to the last: a bin without one is 0, except a bin the broker was down for all of,
    which is NaN, so the line breaks at the outage instead of crossing it."""
    by_outcome: dict[str, dict[int, int]] = defaultdict(dict)
    for t, outcome, n in data["timeline"]:
        by_outcome[outcome][t] = n
    if not by_outcome:
        return {}
    first, last = min(t for t, _, _ in data["timeline"]), max(t for t, _, _ in data["timeline"])
    grid = (list(range(first, last + 1, width_ms)) if (last - first) // width_ms < TIMELINE_MAX_BINS
            else sorted({t for t, _, _ in data["timeline"]}))  # a delivery stamped far away: no empty bins between
    outages = cluster_outages(faults)
    down = [_inside_outage(t, t + width_ms, outages) for t in grid]
    return {outcome: (grid, [points.get(t, math.nan if off else 0) for t, off in zip(grid, down)])
            for outcome, points in sorted(by_outcome.items())}


def timeline_svg(data: dict, faults: list[dict], run: dict) -> str | None:
    lost = data.get("lost") or []
    if not data["timeline"] and not lost:
        return None
    chart = Chart("Deliveries over time, faults as bands", "time since the run started (s)", "deliveries per bin")
    width = data.get("timeline_bin_ms") or timeline_bin_ms(run)
    t0 = int(run.get("started_ms") or min([t for t, _, _ in data["timeline"]] + [t for t, _ in lost]))
    series = timeline_series(data, faults, width)
    for (outcome, (grid, ys)), colour in zip(series.items(), palette(len(series))):
        chart.line([(t - t0 + width / 2) / 1000 for t in grid], ys, colour, label=outcome, cls="line outcome")
    if lost:
        chart.points([(t - t0 + width / 2) / 1000 for t, _ in lost], [n for _, n in lost], "black", shape="X",
                     radius=marker_radius(45), label=f"lost: never delivered ({sum(n for _, n in lost)}), when due", cls="lost")
    _fault_bands(chart, faults, run, t0, data.get("stalls") or ())
    chart.ylim[0] = 0
    return chart.render()


def gaps_svg(data: dict, slack_ms: int) -> str | None:
    if not data["gaps"]:
        return None
    chart = Chart("Retry gaps against the expected schedule", "attempt (reconsume_times)", "LATER → next attempt (s)")
    g = sorted(data["gaps"], key=lambda r: r["attempt"])
    xs = [r["attempt"] for r in g]
    chart.segments(xs, [r["min"] / 1000 for r in g], [r["max"] / 1000 for r in g], "tab:blue", label="observed min–max")
    chart.points(xs, [r["median"] / 1000 for r in g], "tab:blue", label="observed median", cls="points median")
    chart.points(xs, [r["expected_delay_ms"] / 1000 for r in g], "black", shape="_", radius=12, edge_width=2.7,
                 label="expected delay", cls="points expected")
    chart.points(xs, [(r["expected_delay_ms"] + slack_ms) / 1000 for r in g], "red", shape="_", radius=12, edge_width=1.3,
                 label="+ slack", cls="points slack")
    chart.xlim[:] = [min(xs) - 0.6, max(xs) + 0.6]
    chart.xticks = xs if len(xs) <= 20 else xs[::max(1, len(xs) // 10)]
    top = max(max(r["max"] for r in g), max(r["expected_delay_ms"] for r in g) + slack_ms) / 1000
    chart.ylim[:] = [0, top * 1.1 or 1]
    return chart.render()


def duplicates_svg(data: dict) -> str | None:
    if not data["duplicates"]:
        return None
    items = sorted(data["duplicates"].items())
    chart = Chart("Duplicates by cause", "second deliveries of the same attempt", height=211, left=182)
    chart.hbars([k for k, _ in items], [n for _, n in items], ["tab:green" if "not" not in k else "tab:red" for k, _ in items])
    chart.xlim[0] = 0
    return chart.render()
