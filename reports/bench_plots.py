"""``python -m hourglass.reports.bench_plots``: the time to draw one report's plots (``reports.plots``).

One generated run (:mod:`reports.gen`: a broker restart and a pause, LATER retries, CRASH
redeliveries), with every ``--lose``-th message's deliveries left out so that the timeline has
lost messages to mark, is judged without Spark (``reports.judge_columnar``); then the report's five
figures are drawn ``--repeat`` times. Printed: the events, the plot data's size, the first report
(imports included) and the median of the others, per figure and in all.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from hourglass.reports import gen, plots
from hourglass.reports.judge_columnar import judge_table
from hourglass.reports.rows import table_from_events


def plot_data(n_events: int, lose_every: int) -> tuple[dict, dict, list[dict], int]:
    """run.json, the merged plot data, the faults and the events of one generated run."""
    with tempfile.TemporaryDirectory() as tmp:
        gen.write_run(Path(tmp), "plots", n_events, seed=7)
        run = json.loads((Path(tmp) / "run.json").read_text())
        events = [json.loads(line) for line in (Path(tmp) / "events.jsonl").read_text().splitlines()]
    keys = sorted({e["key"] for e in events if e["type"] == "send"})
    lost = set(keys[::lose_every]) if lose_every else set()
    events = [e for e in events if not (e["type"] == "deliver" and e["key"] in lost)]
    rows = judge_table(run, 0, table_from_events(events), run["ended_ms"], plots.timeline_bin_ms(run)).to_pylist()
    violations = [json.loads(r["payload"]) for r in rows if r["kind"] == "v"]
    data = plots.merge([json.loads(r["payload"]) for r in rows if r["kind"] == "plot"], run, plots.lost_due_ms(violations))
    return run, data, [e for e in events if e["type"] == "fault"], len(events)


def figures(data: dict, faults: list[dict], run: dict) -> dict[str, object]:
    """The report's figures as ``reports.html`` draws them: name -> a call drawing it."""
    slack = int((run.get("profile") or {}).get("slack_ms") or 0)
    return {"lateness over time": lambda: plots.lateness_time_svg(data, faults, run, slack),
            "lateness per level": lambda: plots.lateness_svg(data, slack, faults),
            "timeline": lambda: plots.timeline_svg(data, faults, run),
            "retry gaps": lambda: plots.gaps_svg(data, slack),
            "duplicates": lambda: plots.duplicates_svg(data)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hourglass.reports.bench_plots", description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=5000, help="events of the generated run")
    parser.add_argument("--lose", type=int, default=200, help="leave out the deliveries of every N-th message (0: none)")
    parser.add_argument("--repeat", type=int, default=10, help="reports drawn (the first includes imports)")
    args = parser.parse_args(argv)
    run, data, faults, n = plot_data(args.events, args.lose)
    draws = figures(data, faults, run)
    times: dict[str, list[float]] = {name: [] for name in draws}
    size = 0
    for _ in range(max(2, args.repeat)):
        size = 0
        for name, draw in draws.items():
            t = time.perf_counter()
            svg = draw()
            times[name].append(time.perf_counter() - t)
            size += len(svg or "")
    print(f"{n} events; plot data: {len(data['lateness_time'])} lateness points, {len(data['timeline'])} timeline bins, "
          f"{sum(k for _, k in data['lost'])} lost; SVG {size / 1024:.0f} KiB a report")
    for name, ts in times.items():
        print(f"  {name:<20} first {ts[0] * 1000:8.1f} ms   then median {statistics.median(ts[1:]) * 1000:7.1f} ms")
    first = sum(ts[0] for ts in times.values())
    then = statistics.median([sum(ts[i] for ts in times.values()) for i in range(1, len(next(iter(times.values()))))])
    print(f"  {'one report (5 figures)':<20} first {first * 1000:8.1f} ms   then median {then * 1000:7.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
