"""Scenarios as data: the workload, each message's consumer plan, and the fault schedule.

A scenario is a plain value: it is saved as ``RUN/scenario.json`` so a run can be replayed
(``python -m harness replay RUN``), and it is what hypothesis generates for nightly chaos runs.
Offsets (``at_ms``) are milliseconds after the scenario's start.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from reference.contract import FAULT_TARGETS, PLAN_WORDS, ContractError

DEFAULT_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
#: 18 levels like the default table (so retry levels 3..18 exist) with waits of seconds.
COMPRESSED_LEVELS = "1s 2s 3s 4s 5s 6s 7s 8s 9s 10s 1s 2s 3s 4s 5s 6s 7s 8s"

FAULT_ACTIONS_SCHEDULABLE = ("kill", "stop", "start", "pause", "resume", "restart", "kill_restart", "outage")


@dataclass(frozen=True)
class Profile:
    """Broker and consumer settings of a scenario; lands in ``run.json``'s profile."""

    message_delay_level: str = COMPRESSED_LEVELS
    max_reconsume_times: int = 16
    flush_delay_offset_interval_ms: int = 10_000
    slack_ms: int = 3_000

    def to_run_profile(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Message:
    key: str
    topic: str
    at_ms: int = 0  # when to send, after the scenario start
    delay_level: int = 0
    deliver_after_ms: int | None = None  # 5.x timer message: deliver at send time + this
    body_size: int = 64
    plan: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConsumerGroup:
    group: str
    topics: tuple[str, ...]
    instances: int = 1
    max_reconsume_times: int | None = None  # None: the profile's


@dataclass(frozen=True)
class FaultStep:
    """One fault at ``at_ms``. ``restart`` = graceful stop then start; ``kill_restart`` = kill -9
    then start; ``outage`` = kill -9, stay down ``duration_ms``, start. ``pause`` with a
    ``duration_ms`` resumes by itself."""

    at_ms: int
    action: str
    target: str = "broker"
    duration_ms: int = 0


@dataclass(frozen=True)
class Scenario:
    name: str
    messages: tuple[Message, ...]
    consumers: tuple[ConsumerGroup, ...]
    faults: tuple[FaultStep, ...] = ()
    profile: Profile = field(default_factory=Profile)
    seed: int = 0
    description: str = ""
    drain_margin_ms: int = 3_000  # waited after the model says all is final (late duplicates)
    requires: tuple[str, ...] = ()  # e.g. ("timer",): capabilities the system must have

    def with_prefix(self, prefix: str) -> "Scenario":
        """Rename topics and groups so scenarios can share one broker without meeting."""
        msgs = tuple(replace(m, topic=prefix + m.topic, key=m.key) for m in self.messages)
        cons = tuple(replace(c, group=prefix + c.group, topics=tuple(prefix + t for t in c.topics)) for c in self.consumers)
        return replace(self, messages=msgs, consumers=cons)

    # --- persistence -------------------------------------------------------------------
    def to_json(self) -> dict:
        return asdict(self)

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_json(), indent=1))

    @staticmethod
    def load(path: Path) -> "Scenario":
        try:
            raw = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise ContractError(str(path), None, "a readable scenario JSON file", str(e)) from None
        return scenario_from_json(raw, str(path))


def _need(obj: dict, name: str, kind: type | tuple, where: str) -> Any:
    if name not in obj:
        raise ContractError(where, name, f"a {getattr(kind, '__name__', kind)} (required)", "missing")
    v = obj[name]
    if not isinstance(v, kind) or (kind is int and isinstance(v, bool)):
        raise ContractError(where, name, f"a {getattr(kind, '__name__', kind)}", v)
    return v


def scenario_from_json(raw: dict, where: str = "scenario") -> Scenario:
    if not isinstance(raw, dict):
        raise ContractError(where, None, "a JSON object", raw)
    name = _need(raw, "name", str, where)
    prof = raw.get("profile", {})
    profile = Profile(**{k: prof[k] for k in Profile.__dataclass_fields__ if k in prof})
    msgs = []
    for i, m in enumerate(_need(raw, "messages", list, where)):
        w = f"{where} messages[{i}]"
        plan = tuple(m.get("plan") or ())
        for word in plan:
            if word not in PLAN_WORDS:
                raise ContractError(w, "plan", "one of " + "/".join(PLAN_WORDS), word)
        msgs.append(
            Message(
                key=_need(m, "key", str, w),
                topic=_need(m, "topic", str, w),
                at_ms=int(m.get("at_ms", 0)),
                delay_level=int(m.get("delay_level", 0)),
                deliver_after_ms=m.get("deliver_after_ms"),
                body_size=int(m.get("body_size", 64)),
                plan=plan,
            )
        )
    cons = []
    for i, c in enumerate(_need(raw, "consumers", list, where)):
        w = f"{where} consumers[{i}]"
        cons.append(
            ConsumerGroup(
                group=_need(c, "group", str, w),
                topics=tuple(_need(c, "topics", list, w)),
                instances=int(c.get("instances", 1)),
                max_reconsume_times=c.get("max_reconsume_times"),
            )
        )
    faults = []
    for i, f in enumerate(raw.get("faults", [])):
        w = f"{where} faults[{i}]"
        action = _need(f, "action", str, w)
        if action not in FAULT_ACTIONS_SCHEDULABLE:
            raise ContractError(w, "action", "one of " + "/".join(FAULT_ACTIONS_SCHEDULABLE), action)
        target = f.get("target", "broker")
        if target not in FAULT_TARGETS:
            raise ContractError(w, "target", "one of " + "/".join(FAULT_TARGETS), target)
        faults.append(FaultStep(at_ms=_need(f, "at_ms", int, w), action=action, target=target, duration_ms=int(f.get("duration_ms", 0))))
    keys = [m.key for m in msgs]
    if len(set(keys)) != len(keys):
        dup = next(k for k in keys if keys.count(k) > 1)
        raise ContractError(where, "messages", "unique keys", dup)
    return Scenario(
        name=name,
        messages=tuple(msgs),
        consumers=tuple(cons),
        faults=tuple(faults),
        profile=profile,
        seed=int(raw.get("seed", 0)),
        description=raw.get("description", ""),
        drain_margin_ms=int(raw.get("drain_margin_ms", 3000)),
        requires=tuple(raw.get("requires", ())),
    )
