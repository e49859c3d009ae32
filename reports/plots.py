"""Plot data (partial aggregates from each judged bucket, merged per run) and the plots (inline SVG).

- lateness per delay level: how long after its due time each attempt arrived (histogram);
- timeline: deliveries per time bin by outcome, broker/name-server/consumer outages as bands;
- retry gaps: time from a LATER to the next attempt, per attempt, against the expected delay;
- duplicates by cause: the model's rulings (scheduler/consumer, allowed or not).

Drawn by :mod:`reports.svg` (plain SVG text, no plotting library).
"""

from __future__ import annotations

from collections import defaultdict

from reference.windows import broker_outages
from reports.rows import LATENESS_BIN_MS
from reports.svg import Chart

TIMELINE_BINS = 300


def timeline_bin_ms(run: dict) -> int:
    """The width of one timeline bin of ``run``: about :data:`TIMELINE_BINS` bins, at least 1 s."""
    return max(1000, _span(run) // TIMELINE_BINS)


def merge(partials: list[dict], run: dict) -> dict:
    """Plot data of one run from the partial aggregates of its buckets (``reports.rows.Judgements``)."""
    lateness: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    gaps: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    gap_expected: dict[int, int] = {}
    timeline: dict[tuple, int] = defaultdict(int)
    duplicates: dict[str, int] = defaultdict(int)
    for p in partials:
        for level, bins in p["lateness"].items():
            for b, n in bins.items():
                lateness[int(level)][int(b)] += n
        for attempt, bins in p["gaps"].items():
            for b, n in bins.items():
                gaps[int(attempt)][int(b)] += n
        gap_expected.update({int(a): d for a, d in p["gap_expected"].items()})
        for b, outcome, n in p["timeline"]:
            timeline[(b, outcome)] += n
        for cause, n in p["duplicates"].items():
            duplicates[cause] += n
    started, width = int(run.get("started_ms") or 0), timeline_bin_ms(run)
    return {
        "lateness": {lv: dict(bins) for lv, bins in lateness.items()},
        "gaps": [_gap_summary(a, bins, gap_expected.get(a)) for a, bins in sorted(gaps.items())],
        "timeline": [(started + b * width, o, n) for (b, o), n in sorted(timeline.items())],
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


def lateness_svg(data: dict, slack_ms: int) -> str | None:
    if not data["lateness"]:
        return None
    chart = Chart("Lateness per delay level", "arrival − due time (s); clipped to [-30 s, 120 s]", "attempts")
    for level in sorted(data["lateness"]):
        bins = data["lateness"][level]
        first, last = min(bins), max(bins)
        edges = list(range(first, last + 2 * LATENESS_BIN_MS, LATENESS_BIN_MS))
        counts = [bins.get(b, 0) for b in edges[:-1]]
        chart.stairs(counts, [e / 1000 for e in edges], label=f"level {level}" if level else "not delayed")
    chart.ylim[0] = 0
    chart.vline(0)
    chart.vline(slack_ms / 1000, label=f"due + slack ({slack_ms} ms)", colour="red", dash="4,3")
    return chart.render()


def timeline_svg(data: dict, faults: list[dict], run: dict) -> str | None:
    if not data["timeline"]:
        return None
    chart = Chart("Deliveries over time, faults as bands", "time since the run started (s)", "deliveries per bin")
    t0 = int(run.get("started_ms") or min(t for t, _, _ in data["timeline"]))
    by_outcome: dict[str, dict[int, int]] = defaultdict(dict)
    for t, outcome, n in data["timeline"]:
        by_outcome[outcome][t] = n
    for outcome, points in sorted(by_outcome.items()):
        pts = sorted(points.items())
        chart.line([(t - t0) / 1000 for t, _ in pts], [n for _, n in pts], label=outcome)
    colours = {"broker": "tab:red", "namesrv": "tab:orange", "consumer": "tab:purple", "proxy": "tab:brown"}
    end = _span(run) / 1000 or max((t - t0) / 1000 for t, _, _ in data["timeline"])
    for target, colour in colours.items():
        for i, o in enumerate(broker_outages(faults, target)):
            up = (o.up_ms - t0) / 1000 if o.up_ms is not None else end
            chart.band((o.down_ms - t0) / 1000, up, colour=colour, label=f"{target} {o.action}" if i == 0 else None)
    for f in faults:
        if f["action"] == "kill":
            chart.vline((f["ts_ms"] - t0) / 1000, colour=colours.get(f["target"], "black"), dash="2,2")
    return chart.render()


def gaps_svg(data: dict, slack_ms: int) -> str | None:
    if not data["gaps"]:
        return None
    chart = Chart("Retry gaps against the expected schedule", "attempt (reconsume_times)", "LATER → next attempt (s)")
    g = sorted(data["gaps"], key=lambda r: r["attempt"])
    xs = [r["attempt"] for r in g]
    chart.segments(xs, [r["min"] / 1000 for r in g], [r["max"] / 1000 for r in g], colour="tab:blue", label="observed min–max")
    chart.points(xs, [r["median"] / 1000 for r in g], colour="tab:blue", label="observed median")
    chart.points(xs, [r["expected_delay_ms"] / 1000 for r in g], colour="black", shape="_", label="expected delay")
    chart.points(xs, [(r["expected_delay_ms"] + slack_ms) / 1000 for r in g], colour="red", shape="_", label="+ slack")
    chart.xlim[:] = [min(xs) - 0.6, max(xs) + 0.6]
    chart.integer_xticks = True
    top = max(max(r["max"] for r in g), max(r["expected_delay_ms"] for r in g) + slack_ms) / 1000
    chart.ylim[:] = [0, top * 1.1 or 1]
    return chart.render()


def duplicates_svg(data: dict) -> str | None:
    if not data["duplicates"]:
        return None
    items = sorted(data["duplicates"].items())
    chart = Chart("Duplicates by cause", "second deliveries of the same attempt", height=210, left=180)
    chart.hbars([k for k, _ in items], [n for _, n in items], ["tab:green" if "not" not in k else "tab:red" for k, _ in items])
    chart.xlim[0] = 0
    return chart.render()
