"""A fast generator of large, contract-valid run histories for the checker's benchmark.

Not the simulator: events are written straight from arithmetic that follows a correct broker
(level delays, retry at level 3 + k - 1, slack well inside the window), with a graceful broker
restart in each run and a sprinkling of consumer CRASH redeliveries, so that a correct checker
finds nothing (or next to nothing) and has to join everything.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from hourglass.reference.rundir import RUN_JSON

LEVELS = "1s 5s 10s 30s 1m 2m"
LEVEL_MS = [1000, 5000, 10000, 30000, 60000, 120000]
GROUP = "hg-bench"
TOPIC = "BenchTopic"


def _deliver(key, attempt, ts, store, outcome, qid, qoff, clo, born, retry):
    qt = f',"queue_topic":"%RETRY%{GROUP}"' if retry else ""
    return (f'{{"type":"deliver","ts_ms":{ts},"key":"{key}","group":"{GROUP}","topic":"{TOPIC}","queue_id":{qid},'
            f'"queue_offset":{qoff},"commit_log_offset":{clo},"msg_id":"M{clo:016X}","reconsume_times":{attempt},'
            f'"born_ms":{born},"store_ms":{store},"outcome":"{outcome}"{qt}}}\n')


def write_run(run_dir: Path, run_id: str, n_events: int, seed: int, start_ms: int = 1_763_800_000_000) -> int:
    """Write one run of about ``n_events`` events; returns how many were written."""
    rng = random.Random(seed)
    run_dir.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []
    t = start_ms + 1000
    clo = 0
    out = []
    restart_at = None
    lines.append(f'{{"type":"fault","ts_ms":{start_ms + 100},"action":"start","target":"broker"}}\n')
    lines.append(f'{{"type":"fault","ts_ms":{start_ms + 900},"action":"ready","target":"broker"}}\n')
    i = 0
    while len(lines) + len(out) < n_events:
        key = f"k-{i:09d}"
        i += 1
        t += rng.randint(0, 3)
        born, sent = t, t + 2
        level = rng.choice((0, 1, 2, 3, 4))
        later = rng.random() < 0.1
        crash = not later and rng.random() < 0.01
        plan = ["LATER", "OK"] if later else (["CRASH", "OK"] if crash else None)
        p = f',"plan":{json.dumps(plan)}' if plan else ""
        lines.append(f'{{"type":"send","ts_ms":{sent},"key":"{key}","topic":"{TOPIC}","delay_level":{level},'
                     f'"status":"SEND_OK","msg_id":"S{i:016X}","born_ms":{born}{p}}}\n')
        store = born + (LEVEL_MS[level - 1] if level else 0) + 5
        clo += 1
        qid, qoff = i % 4, i // 4
        first = "LATER" if later else ("CRASH" if crash else "OK")
        out.append((store + 10, _deliver(key, 0, store + 10, store, first, qid, qoff, clo, born, False)))
        if crash:
            out.append((store + 40, _deliver(key, 0, store + 40, store, "OK", qid, qoff, clo, born, False)))
        if later:
            clo += 1
            r_store = store + 10 + LEVEL_MS[2] + 5
            out.append((r_store + 10, _deliver(key, 1, r_store + 10, r_store, "OK", i % 4, i // 4, clo, born, True)))
        if restart_at is None and len(lines) > n_events // 3:
            restart_at = t + 1
    if restart_at is not None:  # a short broker pause: it only widens windows
        lines.append(f'{{"type":"fault","ts_ms":{restart_at},"action":"pause","target":"broker"}}\n')
        lines.append(f'{{"type":"fault","ts_ms":{restart_at + 500},"action":"resume","target":"broker"}}\n')
    out.sort(key=lambda x: x[0])
    with open(run_dir / "events.jsonl", "w") as f:
        f.writelines(lines)
        f.writelines(x[1] for x in out)
    end = max(out[-1][0] if out else t, t) + 10_000
    run = {"run_id": run_id, "scenario": "bench: generated history", "system": {"adapter": "generated", "version": "0", "runtime": "none"},
           "profile": {"message_delay_level": LEVELS, "max_reconsume_times": 16, "flush_delay_offset_interval_ms": 10000, "slack_ms": 3000},
           "started_ms": start_ms, "ended_ms": end}
    (run_dir / RUN_JSON).write_text(json.dumps(run))
    return len(lines) + len(out)


def write_history(root: Path, total_events: int, events_per_run: int = 250_000, seed: int = 7) -> int:
    """A tree of runs holding about ``total_events`` events."""
    n = 0
    r = 0
    while n < total_events:
        n += write_run(root / f"run-{r:04d}", f"bench-{r:04d}", min(events_per_run, total_events - n), seed + r)
        r += 1
    return n
