"""Benchmark of the RocketMQ adapter (prints figures; not a test).

``python -m hourglass.adapters.rocketmq.bench [--systems rocketmq:4.9.7,rocketmq:latest] [--runtimes process]
[--messages 20000] [--threads 16] [--body-bytes 128]``

For each system and runtime:

- **start-to-ready**: ``setup()`` (name server, client process, broker, round trip) and a broker
  restart after kill -9 until the round trip answers again;
- **send-and-record rate** (``--rounds`` rounds, the two sides alternating, averaged):
  ``send_batch`` of ``--messages`` messages (``--threads`` client
  threads, batches of 1,000) with every result written as a contract ``send`` event to a file,
  against RocketMQ's own benchmark producer (``org.apache.rocketmq.example.benchmark.Producer``,
  same thread count, body size and message count) on the same broker in the same run; the ratio
  harness / benchmark is the figure the design targets (>= 0.8). Only some versions have the
  example jar on Maven Central, so the benchmark producer comes from ``--bench-producer``
  (default ``rocketmq:latest``) whichever broker it is pointed at.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from hourglass.adapters.base import BrokerProfile, SendRequest
from hourglass.adapters.rocketmq import open_system
from hourglass.adapters.rocketmq.provision import resolve

BATCH = 1000


def harness_rate(system, topic: str, messages: int, threads: int, body_bytes: int, events_file: Path) -> dict:
    body = b"x" * body_bytes
    sent = ok = 0
    t0 = time.perf_counter()
    with open(events_file, "w", encoding="utf-8") as out:
        while sent < messages:
            n = min(BATCH, messages - sent)
            reqs = [SendRequest(topic, f"b-{sent + i}", body) for i in range(n)]
            for req, res in zip(reqs, system.send_batch(reqs, threads=threads)):
                out.write(json.dumps({"type": "send", "ts_ms": res.ts_ms, "key": req.key, "topic": topic,
                                      "status": res.status, "msg_id": res.msg_id, "born_ms": res.born_ms,
                                      "body_crc": res.body_crc}) + "\n")
                ok += res.status == "SEND_OK"
            out.flush()
            sent += n
    elapsed_s = time.perf_counter() - t0
    return {"messages": messages, "send_ok": ok, "elapsed_s": round(elapsed_s, 2), "rate_per_s": round(messages / elapsed_s)}


_TPS = re.compile(r"Send TPS: (\d+)")


def benchmark_producer_rate(producer_dist, namesrv_addr: str, topic: str, messages: int, threads: int,
                            body_bytes: int, log_file: Path) -> dict:
    classpath = producer_dist.example_classpath()
    if classpath is None:
        raise SystemExit(f"{producer_dist.system}: no rocketmq-example jar on Maven Central for this version; "
                         f"pass --bench-producer rocketmq:<a version that has it, e.g. 5.5.0>")
    cmd = ["java", *producer_dist.jvm_opts("client"), f"-Duser.home={log_file.parent}",
           f"-Drocketmq.client.logRoot={log_file.parent}", "-cp", ":".join(classpath),
           "org.apache.rocketmq.example.benchmark.Producer", "-n", namesrv_addr, "-t", topic, "-w", str(threads),
           "-s", str(body_bytes), "-q", str(messages), "-ri", "1000"]
    t0 = time.perf_counter()
    with open(log_file, "w") as log:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=log, text=True, timeout=1800)
    elapsed_s = time.perf_counter() - t0
    log_file.write_text(proc.stdout)
    complete = [line for line in proc.stdout.splitlines() if line.startswith("[Complete]")]
    tps = [int(m.group(1)) for m in _TPS.finditer(complete[-1] if complete else "")]
    failed = re.search(r"Send Failed: (\d+)", complete[-1]) if complete else None
    return {"messages": messages, "send_tps": tps[0] if tps else None, "wall_s_with_jvm_start": round(elapsed_s, 2),
            "send_failed": int(failed.group(1)) if failed else None, "exit": proc.returncode, "log": str(log_file)}


def run_one(system_name: str, runtime: str, args, workdir: Path) -> dict:
    profile = BrokerProfile(message_delay_level="1s 2s 3s 4s 5s")
    figures: dict = {"system": system_name, "runtime": runtime}
    t0 = time.perf_counter()
    system = open_system(system_name, runtime=runtime, workdir=workdir / "system", profile=profile)
    try:
        system.setup()
        figures["version"] = system.info.version
        figures["setup_to_ready_s"] = round(time.perf_counter() - t0, 2)
        system.kill("broker")
        t1 = time.perf_counter()
        system.start("broker")
        system.wait_ready("broker", 240)
        figures["broker_restart_to_ready_s"] = round(time.perf_counter() - t1, 2)
        for topic in ("HG_BENCH_H", "HG_BENCH_P"):
            system.create_topic(topic, queues=8)
        # warm-up: JIT and connections, not counted
        harness_rate(system, "HG_BENCH_H", min(2000, args.messages), args.threads, args.body_bytes, workdir / "warmup.jsonl")
        harness, producer = [], []
        for round_no in range(args.rounds):  # alternate, so load from elsewhere hits both sides alike
            harness.append(harness_rate(system, "HG_BENCH_H", args.messages, args.threads, args.body_bytes,
                                        workdir / f"events-send-{round_no}.jsonl"))
            producer.append(benchmark_producer_rate(
                resolve(args.bench_producer), system.namesrv_addr, "HG_BENCH_P", args.messages, args.threads,
                args.body_bytes, workdir / f"benchmark-producer-{round_no}.log"))
        figures["harness"], figures["benchmark_producer"] = harness, producer
        figures["harness_rate_per_s"] = round(sum(h["rate_per_s"] for h in harness) / len(harness))
        tps = [p["send_tps"] for p in producer if p["send_tps"]]
        figures["benchmark_tps"] = round(sum(tps) / len(tps)) if tps else None
        figures["ratio"] = round(figures["harness_rate_per_s"] / figures["benchmark_tps"], 2) if tps else None
    finally:
        system.teardown()
    return figures


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hourglass.adapters.rocketmq.bench")
    ap.add_argument("--systems", default="rocketmq:4.9.7,rocketmq:latest")
    ap.add_argument("--runtimes", default="process")
    ap.add_argument("--messages", type=int, default=20000)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--body-bytes", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--bench-producer", default="rocketmq:latest")
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args(argv)
    root = Path(args.workdir or tempfile.mkdtemp(prefix="hg-rmq-bench-"))
    rows = []
    for system_name in args.systems.split(","):
        for runtime in args.runtimes.split(","):
            wd = root / f"{system_name.replace(':', '-')}-{runtime}"
            wd.mkdir(parents=True, exist_ok=True)
            row = run_one(system_name, runtime, args, wd)
            rows.append(row)
            print(json.dumps(row), flush=True)
    print("\nsystem            runtime    setup->ready  restart->ready  harness/s  benchmark/s  ratio")
    for r in rows:
        print(f"{r['system']:<17} {r['runtime']:<10} {r['setup_to_ready_s']:>10.1f} s {r['broker_restart_to_ready_s']:>12.1f} s "
              f"{r['harness_rate_per_s']:>9} {r['benchmark_tps'] or 0:>11} {r['ratio']}")
    print(f"(messages {args.messages} per round, {args.rounds} rounds alternating, threads {args.threads}, "
          f"body {args.body_bytes} B; load average {os.getloadavg()[0]:.1f}; workdir {root})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
