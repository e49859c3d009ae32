"""Plot data (small Spark aggregates, one job each for all runs) and the plots themselves (inline SVG).

- lateness per delay level: how long after its due time each attempt arrived (histogram);
- timeline: deliveries per time bin by outcome, broker/name-server/consumer outages as bands;
- retry gaps: time from a LATER to the next attempt, per attempt, against the expected delay;
- duplicates by cause: the model's rulings (scheduler/consumer, allowed or not).
"""

from __future__ import annotations

import io
from collections import defaultdict

from pyspark.sql import functions as F

from reference.windows import broker_outages

LATENESS_BIN_MS = 250
LATENESS_RANGE_MS = (-30_000, 120_000)
TIMELINE_BINS = 300


def collect(j, runs: dict[str, dict], rulings: dict[str, list[dict]]) -> dict[str, dict]:
    """run_id -> plot data, from a :class:`reports.invariants.Judgement`."""
    spark = j.timing.sparkSession
    out: dict[str, dict] = defaultdict(lambda: {"lateness": defaultdict(dict), "gaps": [], "timeline": [], "duplicates": {}})
    lo, hi = LATENESS_RANGE_MS
    late = F.least(F.greatest(F.col("observed_ms") - F.col("lo_ms"), F.lit(lo)), F.lit(hi))
    rows = (j.timing.filter(F.col("lo_ms").isNotNull() & F.col("level").isNotNull())
            .groupBy("run_id", "level", F.floor(late / LATENESS_BIN_MS).alias("bin")).count().collect())
    for r in rows:
        out[r.run_id]["lateness"][int(r.level)][int(r.bin) * LATENESS_BIN_MS] = r["count"]
    gap = F.col("observed_ms") - F.col("anchor_ms")
    rows = (j.timing.filter((F.col("attempt") >= 1) & F.col("anchor_ms").isNotNull())
            .groupBy("run_id", "attempt").agg(F.min(gap).alias("min"), F.percentile_approx(gap, 0.5).alias("median"),
                                              F.max(gap).alias("max"), F.first("delay_ms").alias("expected_delay_ms"),
                                              F.count(F.lit(1)).alias("n")).collect())
    for r in rows:
        out[r.run_id]["gaps"].append(r.asDict())
    spans = spark.createDataFrame(
        [(rid, int(run.get("started_ms") or 0), max(1000, _span(run) // TIMELINE_BINS)) for rid, run in runs.items()],
        "run_id string, started_ms bigint, bin_ms bigint")
    d = j.deliveries.join(F.broadcast(spans), "run_id")
    rows = (d.groupBy("run_id", F.floor((F.col("ts_ms") - F.col("started_ms")) / F.col("bin_ms")).alias("bin"), "outcome")
            .agg(F.count(F.lit(1)).alias("n"), F.first("bin_ms").alias("bin_ms"), F.first("started_ms").alias("started_ms")).collect())
    for r in rows:
        out[r.run_id]["timeline"].append((r.started_ms + int(r.bin) * r.bin_ms, r.outcome, r.n))
    for rid, rs in rulings.items():
        counts: dict[str, int] = defaultdict(int)
        for x in rs:
            counts[f"{x['cause']} {'allowed' if x['allowed'] else 'not allowed'}"] += 1
        out[rid]["duplicates"] = dict(counts)
    return {k: v for k, v in out.items()}


def _span(run: dict) -> int:
    return max(0, int(run.get("ended_ms") or 0) - int(run.get("started_ms") or 0))


def _svg(fig) -> str:
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _figure(width=7.5, height=3.0):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "none"
    return plt.subplots(figsize=(width, height))


def lateness_svg(data: dict, slack_ms: int) -> str | None:
    if not data["lateness"]:
        return None
    fig, ax = _figure()
    for level in sorted(data["lateness"]):
        bins = sorted(data["lateness"][level].items())
        xs = [b / 1000 for b, _ in bins]
        ys = [n for _, n in bins]
        ax.step(xs, ys, where="post", label=f"level {level}" if level else "not delayed")
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
    ax.set_yscale("symlog")
    ax.set_xlabel("attempt (reconsume_times)")
    ax.set_ylabel("LATER → next attempt (s)")
    ax.set_title("Retry gaps against the expected schedule")
    ax.legend(fontsize=7)
    return _svg(fig)


def duplicates_svg(data: dict) -> str | None:
    if not data["duplicates"]:
        return None
    fig, ax = _figure(height=2.2)
    items = sorted(data["duplicates"].items())
    colours = ["tab:green" if "not" not in k else "tab:red" for k, _ in items]
    ax.barh([k for k, _ in items], [n for _, n in items], color=colours)
    ax.set_xlabel("second deliveries of the same attempt")
    ax.set_title("Duplicates by cause")
    return _svg(fig)
