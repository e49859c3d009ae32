"""Benchmark of the expected table: ``python -m hourglass.harness.bench_model [--messages N] [--seed S]``.

Builds a synthetic run of N messages (default 1 million) with delay levels, retries (LATER),
consumer crashes, messages that exhaust their retries into the DLQ, and broker faults (kill -9,
graceful restarts, pauses) every few thousand messages, then times ``build_expected_rows`` (what
the checker calls) and ``build_expected`` (frozen dataclasses) and prints messages/s, events/s
and peak memory. (The one module of ``reference`` that reads a clock: it measures, it is not a rule.)
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import time
import tracemalloc

from hourglass.reference.expected import build_expected, build_expected_rows
from hourglass.reference.levels import DEFAULT_MESSAGE_DELAY_LEVEL

T0 = 1_763_800_000_000
LEVELS = DEFAULT_MESSAGE_DELAY_LEVEL
DELAYS_MS = [0, 1000, 5000, 10_000, 30_000, 60_000]
PLANS = [((), 70), (("LATER", "OK"), 18), (("LATER", "LATER", "LATER", "OK"), 5), (("CRASH", "OK"), 4),
         (("LATER",) * 17, 1), (("LATER", "CRASH", "OK"), 2)]


def synthetic_run(messages: int, seed: int = 0) -> tuple[dict, list[dict]]:
    rng = random.Random(seed)
    words, weights = zip(*PLANS)
    run = {"run_id": "bench", "profile": {"message_delay_level": LEVELS, "max_reconsume_times": 16,
                                          "flush_delay_offset_interval_ms": 10_000, "slack_ms": 3000}}
    events: list[dict] = []
    for n in range(0, messages, 200_000):  # a fault every 200 000 messages (20 s of sending)
        t = T0 + n * 100 // 1000 + 2000
        action = ("kill", "stop", "pause")[(n // 200_000) % 3]
        events.append({"type": "fault", "ts_ms": t, "action": action, "target": "broker"})
        if action == "pause":
            events.append({"type": "fault", "ts_ms": t + 3000, "action": "resume", "target": "broker"})
        else:
            events.append({"type": "fault", "ts_ms": t + 2000, "action": "start", "target": "broker"})
            events.append({"type": "fault", "ts_ms": t + 4000, "action": "ready", "target": "broker"})
    plans = rng.choices(words, weights, k=messages)
    levels = [rng.randrange(len(DELAYS_MS)) for _ in range(messages)]
    for i in range(messages):
        key, born, plan, level = f"k{i:08d}", T0 + i // 10, plans[i], levels[i]
        ev = {"type": "send", "ts_ms": born + 2, "key": key, "topic": "Bench", "delay_level": level,
              "status": "SEND_OK", "born_ms": born, "msg_id": f"{i:032X}"}
        if plan:
            ev["plan"] = list(plan)
        events.append(ev)
        t, rt = born + DELAYS_MS[level] + 5, 0
        for word in plan or ("OK",):
            events.append({"type": "deliver", "ts_ms": t, "key": key, "group": "bench", "topic": "Bench",
                           "queue_id": i % 4, "queue_offset": i, "msg_id": ev["msg_id"], "reconsume_times": rt,
                           "born_ms": born, "store_ms": t - 3, "outcome": word})
            if word == "LATER":
                rt, t = rt + 1, t + 10_000 * min(rt + 1, 5)
            else:
                t += 5000
    return run, events


def _timed(fn, *args):
    """(result, wall seconds, CPU seconds): on a shared machine the CPU time is the fairer figure."""
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn(*args)
    return out, time.perf_counter() - t0, time.process_time() - c0


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-memory", action="store_true", help="skip the tracemalloc pass (it is slow)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    run, events = synthetic_run(args.messages, args.seed)
    gen_s = time.perf_counter() - t0
    n_events = len(events)
    print(f"synthetic run: {args.messages:,} messages, {n_events:,} events (generated in {gen_s:.1f} s)")
    for name, fn in (("build_expected_rows", build_expected_rows), ("build_expected", build_expected)):
        out, wall_s, cpu_s = _timed(fn, run, events)
        print(f"{name + ':':21s}{len(out):,} attempts in {wall_s:.2f} s wall ({cpu_s:.2f} s CPU) = "
              f"{args.messages / wall_s:,.0f} messages/s, {n_events / wall_s:,.0f} events/s wall; "
              f"{args.messages / cpu_s:,.0f} messages/s, {n_events / cpu_s:,.0f} events/s CPU")
        del out
    if not args.no_memory:
        gc.collect()
        tracemalloc.start()
        rows = build_expected_rows(run, events)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"peak memory of build_expected_rows (tracemalloc, beyond the input events): {peak / 2**20:,.0f} MiB "
              f"for {len(rows):,} attempts")
        del rows
    print(f"process peak RSS (input events included): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB")


if __name__ == "__main__":
    main()
