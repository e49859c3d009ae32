"""Plot data (partial aggregates from each judged bucket, merged per run) and the plots (inline SVG).

- lateness per delay level: how long after its due time each attempt arrived (histogram);
- timeline: deliveries per time bin by outcome, broker/name-server/consumer outages as bands;
- retry gaps: time from a LATER to the next attempt, per attempt, against the expected delay;
- duplicates by cause: the model's rulings (scheduler/consumer, allowed or not).
"""

from __future__ import annotations

import io
import re
from collections import defaultdict

from reference.windows import broker_outages
from reports.rows import LATENESS_BIN_MS

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


def lateness_svg(data: dict, slack_ms: int) -> str | None:
    if not data["lateness"]:
        return None
    fig, ax = _figure()
    for level in sorted(data["lateness"]):
        bins = data["lateness"][level]
        first, last = min(bins), max(bins)
        edges = list(range(first, last + 2 * LATENESS_BIN_MS, LATENESS_BIN_MS))
        counts = [bins.get(b, 0) for b in edges[:-1]]
        ax.stairs(counts, [e / 1000 for e in edges], label=f"level {level}" if level else "not delayed", lw=1.5)
    ax.set_ylim(bottom=0)
    ax.axvline(0, color="black", lw=0.8)
    ax.axvline(slack_ms / 1000, color="red", lw=0.8, ls="--", label=f"due + slack ({slack_ms} ms)")
    ax.set_xlabel("arrival − due time (s); clipped to [-30 s, 120 s]")
    ax.set_ylabel("attempts")
    ax.set_title("Lateness per delay level")
    ax.legend(fontsize=7)
    return _svg(fig)


def timeline_svg(data: dict, faults: list[dict], run: dict) -> str | None:
    if not data["timeline"]:
        return None
    fig, ax = _figure()
    t0 = int(run.get("started_ms") or min(t for t, _, _ in data["timeline"]))
    by_outcome: dict[str, dict[int, int]] = defaultdict(dict)
    for t, outcome, n in data["timeline"]:
        by_outcome[outcome][t] = n
    for outcome, points in sorted(by_outcome.items()):
        pts = sorted(points.items())
        ax.plot([(t - t0) / 1000 for t, _ in pts], [n for _, n in pts], marker=".", lw=1, label=outcome)
    colours = {"broker": "tab:red", "namesrv": "tab:orange", "consumer": "tab:purple", "proxy": "tab:brown"}
    end = _span(run) / 1000 or None
    for target, colour in colours.items():
        for i, o in enumerate(broker_outages(faults, target)):
            up = (o.up_ms - t0) / 1000 if o.up_ms is not None else (end or ax.get_xlim()[1])
            ax.axvspan((o.down_ms - t0) / 1000, up, color=colour, alpha=0.2, label=f"{target} {o.action}" if i == 0 else None)
    for f in faults:
        if f["action"] == "kill":
            ax.axvline((f["ts_ms"] - t0) / 1000, color=colours.get(f["target"], "black"), lw=0.8, ls=":")
    ax.set_xlabel("time since the run started (s)")
    ax.set_ylabel("deliveries per bin")
    ax.set_title("Deliveries over time, faults as bands")
    ax.legend(fontsize=7)
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
    ax.legend(fontsize=7)
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
