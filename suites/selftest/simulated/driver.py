"""A small driver for the simulated broker: run a timeline of sends and faults in virtual time and
return the run as ``run.json`` + contract events (what the runner would write), without the runner.

Tests drive the simulator directly with it, so they depend on the model and the simulator only.
"""

from __future__ import annotations

import json
import random
import zlib
from dataclasses import dataclass
from pathlib import Path

from hourglass.adapters.base import BrokerProfile, ConsumerSpec, SendRequest
from hourglass.adapters.simulated import open_simulated
from hourglass.reference.modes import BROADCASTING, CONCURRENTLY, ORDERLY
from hourglass.reference.orderly import DEFAULT_SUSPEND_MS
from hourglass.reference.pop import POP, V1_NOTIFY_AGAIN
from hourglass.reference.clock import waiting_levels
from hourglass.reference.levels import parse_level_table
from hourglass.reference.contract import validate_event

DRAIN_STEP_MS = 250


@dataclass(frozen=True)
class Send:
    at_ms: int
    key: str
    topic: str = "T"
    delay_level: int = 0
    plan: tuple[str, ...] = ()
    deliver_after_ms: int | None = None


@dataclass(frozen=True)
class Fault:
    at_ms: int
    action: str  # kill / stop / start / pause / resume / partition / partition_end / clock
    target: str = "broker"
    offset_ms: int = 0  # clock: the broker's clock offset from then on
    rate_permille: int | None = None  # clock: a drift's rate from then on (ClockFaults.set_clock_rate)


@dataclass
class Run:
    run: dict
    events: list[dict]
    system: object = None
    run_dir: Path | None = None  # RUN/run.json + RUN/events/*.jsonl, as the runner writes them

    def of_type(self, t: str) -> list[dict]:
        return [e for e in self.events if e["type"] == t]


def run_scenario(tmp: Path, sends: list[Send], faults: list[Fault] = (), *, levels: str = "1s 2s 3s 4s 5s",
                 max_reconsume_times: int = 16, flush_ms: int = 10_000, slack_ms: int = 3000, seed: int = 0,
                 defects=(), groups: tuple[str, ...] = ("g",), consumers_per_group: int = 1,
                 drain_ms: int = 120_000, run_id: str | None = None, cluster: str = "single", batch_size: int = 1,
                 schedule_async_deliver: bool = False, group_retry_max_times: int | None = None,
                 orderly_suspend_ms: int | None = None, broadcasting: bool = False,
                 consume_timeout_min: int | None = None, pop_invisible_ms: int | None = None, **options) -> Run:
    """Execute the timeline (offsets after setup) and drain ``drain_ms`` of virtual time after the
    last step, restarting crashed consumers every 250 ms as the runner does. ``tmp`` becomes a run
    directory of the contract (run.json, events/harness.jsonl, events/consumer-*.jsonl).
    ``orderly_suspend_ms``: the groups consume orderly (reference.orderly), suspending this long;
    ``broadcasting``: they broadcast (reference.broadcast), each consumer a unit of its own;
    ``consume_timeout_min``: the groups' consumeTimeout (reference.timeout: a SLOW's clean-up);
    ``pop_invisible_ms``: the groups consume by POP with this invisible time (reference.pop)."""
    events_dir = tmp / "events"
    events_dir.mkdir(parents=True, exist_ok=True)
    system = open_simulated(BrokerProfile(levels, flush_ms, cluster=cluster, schedule_async_deliver=schedule_async_deliver),
                            defects=defects, seed=seed, **options)
    events: list[dict] = []
    clock = system.clock

    def fault_event(action: str, target: str) -> None:
        events.append({"type": "fault", "ts_ms": clock.now_ms(), "action": action, "target": target})

    fault_event("start", "broker")
    system.setup()
    fault_event("ready", "broker")
    started = clock.now_ms()
    topics = sorted({s.topic for s in sends} | {"T"})
    for t in topics:
        system.create_topic(t)
    for g in groups:
        for i in range(consumers_per_group):
            mode = ((ORDERLY, orderly_suspend_ms) if orderly_suspend_ms is not None
                    else (POP, DEFAULT_SUSPEND_MS) if pop_invisible_ms is not None
                    else (BROADCASTING if broadcasting else CONCURRENTLY, DEFAULT_SUSPEND_MS))
            system.start_consumer(ConsumerSpec(f"{g}-{i}", g, tuple(topics), max_reconsume_times, events_dir, batch_size,
                                               group_retry_max_times, *mode, i, consume_timeout_min, pop_invisible_ms))
    timeline = sorted([(f.at_ms, 0, i, f) for i, f in enumerate(faults)] + [(s.at_ms, 1, i, s) for i, s in enumerate(sends)])
    rng = random.Random(seed)
    for at, kind, _, item in timeline:
        _advance(system, started + at)
        if kind == 0:
            if item.action in ("kill", "stop"):
                fault_event(item.action, item.target)
                getattr(system, item.action)(item.target)
            elif item.action == "start":
                fault_event("start", item.target)
                system.start(item.target)
                system.wait_ready(item.target)
                fault_event("ready", item.target)
            elif item.action == "clock":  # ClockFaults.set_clock
                table = parse_level_table(levels)
                seen = events + [json.loads(line) for path in sorted(events_dir.glob("consumer-*.jsonl"))
                                 for line in path.read_text().splitlines()]
                events.append({"type": "fault", "ts_ms": clock.now_ms(), "action": "clock", "target": item.target,
                               "offset_ms": item.offset_ms, "settled_ms": clock.now_ms(),
                               "waiting_levels": waiting_levels(seen, table.max_level, table.clamp)}
                              | ({} if item.rate_permille is None else {"rate_permille": item.rate_permille}))
                if item.rate_permille is None:
                    system.set_clock(item.target, item.offset_ms)
                else:
                    system.set_clock_rate(item.target, item.offset_ms, item.rate_permille)
            elif item.action in ("pause", "resume"):
                fault_event(item.action, item.target)
                getattr(system, item.action)(item.target)
            else:  # a fault family's primitive (reference.faults): partition, partition_end...
                fault_event(item.action, item.target)
                system.perform(item.action, item.target)
        else:
            body = f"{item.key}|{rng.getrandbits(32)}".encode()
            deliver_at = None if item.deliver_after_ms is None else clock.now_ms() + item.deliver_after_ms
            res = system.send(SendRequest(item.topic, item.key, body, item.delay_level, deliver_at, item.plan))
            ev = {"type": "send", "ts_ms": res.ts_ms, "key": item.key, "topic": item.topic,
                  "delay_level": item.delay_level, "status": res.status, "born_ms": res.born_ms,
                  "body_crc": zlib.crc32(body), "msg_id": res.msg_id}
            if item.plan:
                ev["plan"] = list(item.plan)
            if deliver_at is not None:
                ev["deliver_at_ms"] = deliver_at
            events.append(ev)
    _advance(system, clock.now_ms() + drain_ms)
    system.stop_consumers()
    now = clock.now_ms()
    for g in groups:
        for rec in system.read_dlq(g):
            events.append({"type": "dlq", "ts_ms": now, **rec})
    for snap in system.snapshot():
        events.append({"type": "snapshot", "ts_ms": now, **snap})
    system.teardown()
    with open(events_dir / "harness.jsonl", "w", encoding="utf-8") as out:
        out.writelines(json.dumps(e) + "\n" for e in events)
    for path in sorted(events_dir.glob("consumer-*.jsonl")):
        events.extend(json.loads(line) for line in path.read_text().splitlines())
    for i, e in enumerate(events):
        validate_event(e, f"simulated run event #{i}")
    run = {"run_id": run_id or f"sim-{seed}", "scenario": "selftest", "system": {"adapter": "simulated", "version": system.info.version, "runtime": "virtual"},
           "profile": {"message_delay_level": levels, "max_reconsume_times": max_reconsume_times,
                       "flush_delay_offset_interval_ms": flush_ms, "slack_ms": slack_ms, "cluster": cluster,
                       "schedule_async_deliver": schedule_async_deliver,
                       **({"orderly_groups": {g: orderly_suspend_ms for g in groups}} if orderly_suspend_ms is not None else {}),
                       **({"broadcasting_groups": {g: consumers_per_group for g in groups}} if broadcasting else {}),
                       **({"consume_timeouts": {g: consume_timeout_min for g in groups}} if consume_timeout_min else {}),
                       **({"pop_groups": {g: {"invisible_ms": pop_invisible_ms, "release": list(V1_NOTIFY_AGAIN)} for g in groups}}
                          if pop_invisible_ms is not None else {})},
           "started_ms": started, "ended_ms": now}
    (tmp / "run.json").write_text(json.dumps(run, indent=1))
    return Run(run, events, system, tmp)


def _advance(system, ts_ms: int) -> None:
    clock = system.clock
    while clock.now_ms() < ts_ms:
        clock.sleep_until(min(ts_ms, clock.now_ms() + DRAIN_STEP_MS))
        system.poll_consumers()
