"""Plot data (partial aggregates from each judged bucket, merged per run) and the plots (inline SVG).

- lateness over time: how long after its due time each attempt arrived, at the time it arrived,
  with the outages as bands; an attempt whose window a broker outage widened (the model's
  ``widened_by``) is drawn apart, as is its legend entry ("window widened by outage (kill)");
- lateness per delay level: the same as histograms, the widened windows' attempts hatched;
- timeline: deliveries per time bin by outcome, broker/name-server/consumer outages as bands (the
  lines break where the broker was down), lost messages (NO_LOSS violations) marked at the time
  they were due;
- retry gaps: time from a LATER to the next attempt, per attempt, against the expected delay;
- duplicates by cause: the model's rulings (scheduler/consumer, allowed or not).

Legends sit below the axes, in as many columns as fit: eighteen delay levels never cover a plot.
"""

from __future__ import annotations

import io
import math
import re
from collections import Counter, defaultdict

from reference.windows import broker_outages
from reports.rows import LATENESS_BIN_MS, LATENESS_TIME_BIN_MS

TIMELINE_BINS = 300


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
        gap_expected.update({int(a): d for a, d in p["gap_expected"].items()})
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


def _svg(fig) -> str:
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    # fixed margins (set in _figure): "tight" bounding boxes would draw every figure twice
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    text = buf.getvalue()
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)
    return text[text.index("<svg"):]


def _figure(width=7.5, height=3.0, left_in=0.75):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "none"
    fig, ax = plt.subplots(figsize=(width, height))
    fig.subplots_adjust(left=left_in / width, right=1 - 0.15 / width, bottom=0.6 / height, top=1 - 0.35 / height)
    return fig, ax


#: the colour of each fault target's outage bands
_TARGET_COLOURS = {"broker": "tab:red", "namesrv": "tab:orange", "consumer": "tab:purple", "proxy": "tab:brown"}
_WIDENED_COLOUR = "tab:orange"


def widened_label(faults: list[dict]) -> str:
    """The legend entry of the attempts whose window a broker outage widened, naming the outages'
    kinds: ``window widened by outage (kill/stop)``."""
    actions = sorted({o.action for o in broker_outages(faults)})
    return "window widened by outage" + (f" ({'/'.join(actions)})" if actions else "")


def _fault_bands(ax, faults: list[dict], run: dict, t0: int) -> None:
    """Each target's outages as shaded bands (one legend entry per target and kind), kills as
    dotted lines; seconds since ``t0``."""
    end = _span(run) / 1000 or None
    for target, colour in _TARGET_COLOURS.items():
        named: set[str] = set()
        for o in broker_outages(faults, target):
            up = (o.up_ms - t0) / 1000 if o.up_ms is not None else (end or ax.get_xlim()[1])
            label = f"{target} {o.action}"
            ax.axvspan((o.down_ms - t0) / 1000, up, color=colour, alpha=0.2, lw=0, label=None if label in named else label)
            named.add(label)
    for f in faults:
        if f["action"] == "kill":
            ax.axvline((f["ts_ms"] - t0) / 1000, color=_TARGET_COLOURS.get(f["target"], "black"), lw=0.8, ls=":")


def _legend_below(fig, ax, fontsize: int = 7) -> None:
    """The axes' legend below them, outside: short entries (delay levels, outcomes) in as many
    columns as fit, long ones in rows of their own; the figure grows by what the legend needs."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    width_in, height_in = fig.get_size_inches()
    char_in, row_in = fontsize / 72 * 0.62, fontsize / 72 * 1.9
    groups = [[(hd, lb) for hd, lb in zip(handles, labels) if len(lb) <= 14],
              [(hd, lb) for hd, lb in zip(handles, labels) if len(lb) > 14]]
    layout = []
    for g in groups:
        if g:
            column_in = max(len(lb) for _, lb in g) * char_in + 0.5  # the handle and the gap
            ncol = max(1, min(len(g), int((width_in - 0.3) // column_in)))
            layout.append((g, ncol, math.ceil(len(g) / ncol)))
    extra_in = 0.1 + sum(rows for _, _, rows in layout) * row_in
    pars = fig.subplotpars
    bottom_in, top_in = pars.bottom * height_in, (1 - pars.top) * height_in
    total_in = height_in + extra_in
    fig.set_size_inches(width_in, total_in)
    fig.subplots_adjust(bottom=(bottom_in + extra_in) / total_in, top=1 - top_in / total_in)
    y_in = 0.05
    for g, ncol, rows in reversed(layout):
        fig.legend([hd for hd, _ in g], [lb for _, lb in g], loc="lower center", bbox_to_anchor=(0.5, y_in / total_in),
                   ncol=ncol, fontsize=fontsize, frameon=False, borderaxespad=0)
        y_in += rows * row_in


def lateness_time_svg(data: dict, faults: list[dict], run: dict, slack_ms: int) -> str | None:
    """Each attempt's lateness at the time it arrived; the outages as bands; the attempts whose
    window an outage widened apart (another marker and colour)."""
    points = data.get("lateness_time") or []
    if not points:
        return None
    fig, ax = _figure()
    t0 = int(run.get("started_ms") or min(t for t, *_ in points))
    half = (data.get("timeline_bin_ms") or timeline_bin_ms(run)) / 2
    styles = ((False, dict(marker="o", color="tab:blue", alpha=0.6, label="arrival (size: attempts)")),
              (True, dict(marker="^", color=_WIDENED_COLOUR, edgecolors="black", linewidths=0.5, label=widened_label(faults))))
    for widened, style in styles:
        chosen = [p for p in points if p[2] == widened]
        if chosen:
            ax.scatter([(t - t0 + half) / 1000 for t, _, _, _ in chosen], [late / 1000 for _, late, _, _ in chosen],
                       s=[8 + 6 * math.log2(n) for *_, n in chosen], zorder=3, **style)
    _fault_bands(ax, faults, run, t0)
    ax.axhline(0, color="black", lw=0.8)
    ax.axhline(slack_ms / 1000, color="red", lw=0.8, ls="--", label=f"due + slack ({slack_ms} ms)")
    ax.set_xlabel("time the attempt arrived, since the run started (s)")
    ax.set_ylabel(f"arrival − due time (s, {LATENESS_TIME_BIN_MS // 1000} s bins)")
    ax.set_title("Lateness over time, outages as bands")
    _legend_below(fig, ax)
    return _svg(fig)


def lateness_svg(data: dict, slack_ms: int, faults: list[dict] = ()) -> str | None:
    if not data["lateness"]:
        return None
    import matplotlib

    fig, ax = _figure()
    levels = sorted(data["lateness"])
    colours = matplotlib.colormaps["tab20" if len(levels) > 10 else "tab10"]  # eighteen levels, eighteen colours
    for i, level in enumerate(levels):
        bins = data["lateness"][level]
        first, last = min(bins), max(bins)
        edges = list(range(first, last + 2 * LATENESS_BIN_MS, LATENESS_BIN_MS))
        counts = [bins.get(b, 0) for b in edges[:-1]]
        ax.stairs(counts, [e / 1000 for e in edges], label=f"level {level}" if level else "not delayed", lw=1.5,
                  color=colours(i % colours.N))
    widened: dict[int, int] = defaultdict(int)
    for bins in (data.get("lateness_widened") or {}).values():
        for b, n in bins.items():
            widened[b] += n
    if widened:  # over every level: hatched, so it reads apart from the levels' lines
        edges = list(range(min(widened), max(widened) + 2 * LATENESS_BIN_MS, LATENESS_BIN_MS))
        ax.stairs([widened.get(b, 0) for b in edges[:-1]], [e / 1000 for e in edges], fill=True, hatch="////",
                  facecolor="none", edgecolor=_WIDENED_COLOUR, lw=1, label=widened_label(list(faults)))
    ax.set_ylim(bottom=0)
    ax.axvline(0, color="black", lw=0.8)
    ax.axvline(slack_ms / 1000, color="red", lw=0.8, ls="--", label=f"due + slack ({slack_ms} ms)")
    ax.set_xlabel("arrival − due time (s); clipped to [-30 s, 120 s]")
    ax.set_ylabel("attempts")
    ax.set_title("Lateness per delay level")
    _legend_below(fig, ax)
    return _svg(fig)


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
    grid = list(range(first, last + 1, width_ms))
    outages = broker_outages(faults)
    down = [_inside_outage(t, t + width_ms, outages) for t in grid]
    return {outcome: (grid, [points.get(t, math.nan if off else 0) for t, off in zip(grid, down)])
            for outcome, points in sorted(by_outcome.items())}


def timeline_svg(data: dict, faults: list[dict], run: dict) -> str | None:
    lost = data.get("lost") or []
    if not data["timeline"] and not lost:
        return None
    fig, ax = _figure()
    width = data.get("timeline_bin_ms") or timeline_bin_ms(run)
    t0 = int(run.get("started_ms") or min([t for t, _, _ in data["timeline"]] + [t for t, _ in lost]))
    for outcome, (grid, ys) in timeline_series(data, faults, width).items():
        ax.plot([(t - t0 + width / 2) / 1000 for t in grid], ys, lw=1, label=outcome, marker=".",
                markevery=[i for i, y in enumerate(ys) if y > 0])
    if lost:
        ax.scatter([(t - t0 + width / 2) / 1000 for t, _ in lost], [n for _, n in lost], marker="X", s=45, color="black",
                   zorder=4, label=f"lost: never delivered ({sum(n for _, n in lost)}), when due")
    _fault_bands(ax, faults, run, t0)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("time since the run started (s)")
    ax.set_ylabel("deliveries per bin")
    ax.set_title("Deliveries over time, faults as bands")
    _legend_below(fig, ax)
    return _svg(fig)


def gaps_svg(data: dict, slack_ms: int) -> str | None:
    if not data["gaps"]:
        return None
    fig, ax = _figure()
    g = sorted(data["gaps"], key=lambda r: r["attempt"])
    xs = [r["attempt"] for r in g]
    ax.vlines(xs, [r["min"] / 1000 for r in g], [r["max"] / 1000 for r in g], color="tab:blue", lw=3, alpha=0.5, label="observed min–max")
    ax.plot(xs, [r["median"] / 1000 for r in g], "o", color="tab:blue", label="observed median")
    ax.plot(xs, [r["expected_delay_ms"] / 1000 for r in g], "_", color="black", ms=18, mew=2, label="expected delay")
    ax.plot(xs, [(r["expected_delay_ms"] + slack_ms) / 1000 for r in g], "_", color="red", ms=18, mew=1, label="+ slack")
    ax.set_xlim(min(xs) - 0.6, max(xs) + 0.6)
    ax.set_xticks(xs if len(xs) <= 20 else xs[::max(1, len(xs) // 10)])
    top = max(max(r["max"] for r in g), max(r["expected_delay_ms"] for r in g) + slack_ms) / 1000
    ax.set_ylim(0, top * 1.1 or 1)
    ax.set_xlabel("attempt (reconsume_times)")
    ax.set_ylabel("LATER → next attempt (s)")
    ax.set_title("Retry gaps against the expected schedule")
    _legend_below(fig, ax)
    return _svg(fig)


def duplicates_svg(data: dict) -> str | None:
    if not data["duplicates"]:
        return None
    fig, ax = _figure(height=2.2, left_in=1.9)
    items = sorted(data["duplicates"].items())
    colours = ["tab:green" if "not" not in k else "tab:red" for k, _ in items]
    ax.barh([k for k, _ in items], [n for _, n in items], color=colours)
    ax.set_xlabel("second deliveries of the same attempt")
    ax.set_title("Duplicates by cause")
    return _svg(fig)
