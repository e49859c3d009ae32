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

from hourglass.reference.contract import CONSUMER_TARGET
from hourglass.reference.windows import Outage, broker_outages, cluster_outages, consumer_outages
from hourglass.reports.rows import LATENESS_BIN_MS, LATENESS_TIME_BIN_MS
from hourglass.reports.svg import Chart, marker_radius, palette

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
    timer: dict[int, dict[int, int]] | None = None  # delay (ms) -> lateness bin -> attempts, when the judges split them out
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
        if "lateness_timer" in p:
            timer = timer if timer is not None else defaultdict(lambda: defaultdict(int))
            for delay, bins in p["lateness_timer"].items():
                for b, n in bins.items():
                    timer[int(delay)][int(b)] += n
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
    out = {
        "lateness": {lv: dict(bins) for lv, bins in lateness.items()},
        "lateness_widened": {lv: dict(bins) for lv, bins in widened.items()},
        # (start of the time bin, lateness bin, window widened by an outage, attempts)
        "lateness_time": [(started + b * width, late, bool(w), n) for (b, late, w), n in sorted(over_time.items())],
        "lateness_time_bin_ms": LATENESS_TIME_BIN_MS,
        "gaps": [_gap_summary(a, bins, gap_expected.get(a)) for a, bins in sorted(gaps.items())],
        "timeline": [(started + b * width, o, n) for (b, o), n in sorted(timeline.items())],
        "timeline_bin_ms": width,
        # (start of the time bin they were due in, messages never delivered)
        "lost": [(started + b * width, n) for b, n in sorted(lost.items())],
        "duplicates": dict(duplicates),
    }
    if timer is not None:
        out["lateness_timer"] = {d: dict(bins) for d, bins in timer.items()}
    return out


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
    """(from_ms, to_ms, label) of the recorded stalls that can excuse a late attempt (on a message's
    path, ``reference.stalls.on_path``) and last long enough to matter: the report's grey bands."""
    from hourglass.reference.stalls import held_ms, on_path

    return [(int(s["from_ms"]), int(s["ts_ms"]), f"stall: {s['source']} {s.get('subject') or ''}".strip())
            for s in stalls if (on_path(s, False) or on_path(s, True))
            and held_ms(s) >= STALL_BAND_MIN_MS]


def run_end_s(run: dict, t0: int) -> float | None:
    """The run's end (run.json's ``ended_ms``) in seconds since ``t0``; None for a run without one
    (interrupted: ``reference.rundir.interruption``)."""
    ended = run.get("ended_ms") or 0
    return (int(ended) - t0) / 1000 if isinstance(ended, int) and ended > 0 else None


def _to_run_end(chart: Chart, run: dict, t0: int, xs: list[float]) -> None:
    """The time axis from the run's start to its end (not to the last delivery: a quiet end of the
    run is part of it), wider only for marks outside the run."""
    end = run_end_s(run, t0)
    if end is None:
        return
    lo, hi = min([0.0, *xs]), max([end, *xs])
    pad = (hi - lo) * 0.01 or 0.5
    chart.xlim[:] = [lo - pad, hi + pad]


def outages_of(faults: list[dict], target: str) -> list[Outage]:
    """``target``'s outages as the bands draw them. A consumer's, instance by instance
    (``reference.windows.consumer_outages`` of each consumer's ``name``): from its death (the
    ``kill`` it or the exit watch wrote) or a pause to its replacement's ``start`` (a consumer
    reports no ``ready``) or the resume; one instance's restart ends its own outage, not another's."""
    if target != "consumer":
        return broker_outages(faults, target)
    own = [f for f in faults if f.get("target") == CONSUMER_TARGET]
    names = sorted({f.get("name") or "" for f in own})
    return sorted((o for name in names for o in consumer_outages([f for f in own if (f.get("name") or "") == name])),
                  key=lambda o: o.down_ms)


def _fault_bands(chart: Chart, faults: list[dict], run: dict, t0: int, stalls: list = ()) -> None:
    """Each target's outages as shaded bands (one legend entry per target and kind), kills as
    dotted lines, the host's and the broker's stalls as grey bands (:func:`stall_bands`); seconds
    since ``t0``. An outage not over by the run's end reaches its end (the axes' right edge for a
    run without one)."""
    end = run_end_s(run, t0)
    named_stalls: set[str] = set()
    for start, stop, label in stalls:
        chart.band((start - t0) / 1000, (stop - t0) / 1000, _STALL_COLOUR, label=None if label in named_stalls else label,
                   cls="band stall")
        named_stalls.add(label)
    for target, colour in _TARGET_COLOURS.items():
        named: set[str] = set()
        for o in outages_of(faults, target):
            up = (o.up_ms - t0) / 1000 if o.up_ms is not None else end
            label = f"{target} {o.action}"
            chart.band((o.down_ms - t0) / 1000, up, colour, label=None if label in named else label, cls=f"band {target}")
            named.add(label)
    for f in faults:
        if f["action"] == "kill":
            chart.vline((f["ts_ms"] - t0) / 1000, _TARGET_COLOURS.get(f["target"], "black"), dash="1,2", width=1, cls="kill")


#: early attempts (before their window opened: NOT_EARLY) and the zone below 0 lateness
_EARLY_COLOUR = "tab:red"
#: the ON_TIME window of an attempt no outage widened: from its due time to due + slack
_ON_TIME_COLOUR = "tab:green"
EARLY_LABEL = "early: before its window opened (NOT_EARLY)"


def lateness_unit(lo_ms: float, hi_ms: float) -> tuple[float, str]:
    """(ms per unit, unit) of a lateness axis spanning [lo_ms, hi_ms]: ms under 2 s, else s (with
    decimals: 92 ms early is −0.092 s)."""
    return (1, "ms") if hi_ms - lo_ms < 2000 else (1000, "s")


def window_zones(chart: Chart, slack_ms: int, scale: float, horizontal: bool) -> None:
    """The zones of the model's window on a lateness axis (lateness is measured from the window's
    opening, ``earliest_ms``: reports.invariants.not_early): below 0 early (NOT_EARLY), from 0 to
    the run's slack the ON_TIME window of an attempt no outage widened (``latest_ms`` = due +
    slack: reports.invariants.on_time, reference.windows.window)."""
    band = chart.hband if horizontal else chart.band
    band(None, 0, _EARLY_COLOUR, label="early zone (< due)", cls="zone zone-early", opacity=0.08)
    band(0, slack_ms / scale, _ON_TIME_COLOUR, label=f"ON_TIME window (due … due + {slack_ms} ms slack)", cls="zone on-time",
         opacity=0.08)


def _lateness_styles(faults: list[dict]) -> tuple:
    """(class of points, style) of the lateness-over-time plot: early first (whatever their window),
    then the plain and the widened ones."""
    return (("early", dict(shape="v", colour=_EARLY_COLOUR, edge="black", edge_width=0.7, label=EARLY_LABEL,
                           cls="points early")),
            ("plain", dict(shape="o", colour="tab:blue", opacity=0.6, label="arrival (size: attempts)", cls="points arrival")),
            ("widened", dict(shape="^", colour=_WIDENED_COLOUR, edge="black", edge_width=0.7, label=widened_label(faults),
                             cls="points widened")))


def lateness_time_svg(data: dict, faults: list[dict], run: dict, slack_ms: int) -> str | None:
    """Each attempt's lateness at the time it arrived; the early zone and the ON_TIME window shaded,
    early attempts apart (red, pointing down); the outages as bands; the attempts whose window an
    outage widened apart (another marker and colour). A lateness bin wider than 1 ms is drawn as a
    bar over the bin with the marker at its middle: a bin never reads as a time."""
    points = data.get("lateness_time") or []
    if not points:
        return None
    bin_ms = int(data.get("lateness_time_bin_ms") or LATENESS_TIME_BIN_MS)
    lates = [late for _, late, _, _ in points]
    scale, unit = lateness_unit(min([0, *lates]), max([slack_ms, *(b + bin_ms for b in lates)]))
    precision = "" if bin_ms <= 1 else f", bars: {bin_ms} ms bins"
    chart = Chart("Lateness over time, outages as bands", "time the attempt arrived, since the run started (s)",
                  f"arrival − due ({unit}{precision})")
    t0 = int(run.get("started_ms") or min(t for t, *_ in points))
    half = (data.get("timeline_bin_ms") or timeline_bin_ms(run)) / 2
    xs_all: list[float] = []
    for kind, style in _lateness_styles(faults):
        chosen = [p for p in points if ("early" if p[1] < 0 else "widened" if p[2] else "plain") == kind]
        if not chosen:
            continue
        xs = [(t - t0 + half) / 1000 for t, *_ in chosen]
        xs_all.extend(xs)
        if bin_ms > 1:
            chart.segments(xs, [late / scale for _, late, _, _ in chosen], [(late + bin_ms) / scale for _, late, _, _ in chosen],
                           style["colour"], width=2, opacity=0.35, cls=f"bins bins-{kind}")
        chart.points(xs, [(late + (bin_ms / 2 if bin_ms > 1 else 0)) / scale for _, late, _, _ in chosen],
                     radii=[marker_radius(8 + 6 * math.log2(n)) for *_, n in chosen], **style)  # matplotlib's sizes (pt²)
    _fault_bands(chart, faults, run, t0, data.get("stalls") or ())
    chart.hline(0, "black")
    chart.hline(slack_ms / scale, "red", dash="5,3", label=f"due + slack ({slack_ms} ms)", cls="slack")
    window_zones(chart, slack_ms, scale, horizontal=True)  # drawn under every mark, listed last
    _to_run_end(chart, run, t0, xs_all)
    return chart.render()


def level_label(level: int, timer_split: bool) -> str:
    """A delay level's legend entry. Level 0 holds the attempts of no delay level: plain messages,
    and the 5.x timer messages unless the judges split those out (``lateness_timer``)."""
    if level:
        return f"level {level}"
    return "not delayed" if timer_split else "level 0: not delayed or timer"


def timer_series(timer: dict[int, dict[int, int]]) -> list[tuple[str, dict[int, int]]]:
    """(legend entry, lateness bins) of the timer messages by the delay their timer property asked
    for (``reference.timer``; the model's ``delay_ms``: deliver time − born): one series a delay,
    or, beyond four delays, one for them all."""
    if len(timer) <= 4:
        return [(f"timer message (delay {d / 1000:g} s)", bins) for d, bins in sorted(timer.items())]
    merged: dict[int, int] = defaultdict(int)
    for bins in timer.values():
        for b, n in bins.items():
            merged[b] += n
    return [(f"timer messages (delay {min(timer) / 1000:g}–{max(timer) / 1000:g} s)", dict(merged))]


def _histogram(chart: Chart, bins: dict[int, int], colour: str, label: str, **style) -> None:
    edges = list(range(min(bins), max(bins) + 2 * LATENESS_BIN_MS, LATENESS_BIN_MS))
    chart.stairs([bins.get(b, 0) for b in edges[:-1]], [e / 1000 for e in edges], colour, label=label, **style)


def _summed(per_key: dict) -> dict[int, int]:
    out: dict[int, int] = defaultdict(int)
    for bins in per_key.values():
        for b, n in bins.items():
            out[b] += n
    return dict(out)


def lateness_svg(data: dict, slack_ms: int, faults: list[dict] = ()) -> str | None:
    timer = data.get("lateness_timer")
    if not data["lateness"] and not timer:
        return None
    chart = Chart("Lateness per delay level", "arrival − due time (s); clipped to [-30 s, 120 s]", "attempts")
    series = [(level_label(lv, timer is not None), data["lateness"][lv]) for lv in sorted(data["lateness"])]
    series += timer_series(timer or {})
    for (label, bins), colour in zip(series, palette(len(series))):  # eighteen levels, eighteen colours
        _histogram(chart, bins, colour, label)
    widened = _summed(data.get("lateness_widened") or {})
    if widened:  # over every level: hatched, so it reads apart from the levels' lines
        _histogram(chart, widened, _WIDENED_COLOUR, widened_label(list(faults)), hatch=True, width=1.3, cls="stairs widened")
    early = {b: n for b, n in _summed({**data["lateness"], **{-1 - d: v for d, v in (timer or {}).items()}}).items() if b < 0}
    if early:  # over every level, in the early zone
        _histogram(chart, early, _EARLY_COLOUR, f"{EARLY_LABEL}: {sum(early.values())}", width=2.5, cls="stairs early")
    chart.ylim[0] = 0
    chart.yinteger = True
    chart.vline(0, "black")
    chart.vline(slack_ms / 1000, "red", dash="5,3", label=f"due + slack ({slack_ms} ms)", cls="slack")
    window_zones(chart, slack_ms, 1000, horizontal=False)  # drawn under every mark, listed last
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
    chart.yinteger = True
    _to_run_end(chart, run, t0, [(t - t0 + width / 2) / 1000 for t, _, _ in data["timeline"]] +
                [(t - t0 + width / 2) / 1000 for t, _ in lost])
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
    chart.xinteger = True
    return chart.render()
