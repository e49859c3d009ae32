"""Hand-made run directories for the checker's tests: a few lines per case.

Times are offsets in ms from ``T0``; the profile is a short level table so windows are easy to
compute by hand: level 1 = 1 s, 2 = 5 s, 3 = 10 s, slack 3 s.
"""

from __future__ import annotations

import json
from pathlib import Path

T0 = 1_763_800_000_000
TABLE = "1s 5s 10s"
DELAY_MS = {0: 0, 1: 1000, 2: 5000, 3: 10000}
SLACK_MS = 3000
GROUP = "g"
TOPIC = "T"


class RunBuilder:
    """Collects events of one run; times are ms after T0."""

    def __init__(self, run_id: str, max_reconsume_times: int = 16, ended: int = 120_000, **profile):
        self.run_id = run_id
        self.profile = profile  # more run.json profile fields (orderly_groups...)
        self.max_reconsume_times = max_reconsume_times
        self.ended = ended
        self.events: list[dict] = []
        self._offset = 1000

    def fault(self, at: int, action: str, target: str = "broker", **extra) -> "RunBuilder":
        self.events.append({"type": "fault", "ts_ms": T0 + at, "action": action, "target": target, **extra})
        return self

    def send(self, key: str, at: int, level: int = 0, plan=None, status: str = "SEND_OK", **extra) -> "RunBuilder":
        e = {"type": "send", "ts_ms": T0 + at + 5, "key": key, "topic": TOPIC, "delay_level": level, "status": status,
             "msg_id": "S-" + key, "born_ms": T0 + at}
        if plan:
            e["plan"] = plan
        e.update(extra)
        self.events.append(e)
        return self

    def deliver(self, key: str, store: int, attempt: int = 0, outcome: str = "OK", at: int | None = None,
                copy: int | None = None, born: int = 0, **extra) -> "RunBuilder":
        """A delivery whose stored copy was stored at ``store``; ``copy`` names the commit-log offset
        (a new one by default)."""
        if copy is None:
            self._offset += 100
            copy = self._offset
        e = {"type": "deliver", "ts_ms": T0 + (at if at is not None else store + 10), "key": key, "group": GROUP,
             "topic": TOPIC, "queue_id": 0, "queue_offset": copy, "msg_id": f"M-{copy}", "reconsume_times": attempt,
             "born_ms": T0 + born, "store_ms": T0 + store, "outcome": outcome, "commit_log_offset": copy}
        if attempt > 0:
            e["queue_topic"] = "%RETRY%" + GROUP
        e.update(extra)
        self.events.append(e)
        return self

    def dlq(self, key: str, at: int, attempt: int) -> "RunBuilder":
        self.events.append({"type": "dlq", "ts_ms": T0 + at, "key": key, "group": GROUP, "msg_id": "D-" + key,
                            "reconsume_times": attempt, "store_ms": T0 + at - 5})
        return self

    def run_json(self) -> dict:
        return {"run_id": self.run_id, "scenario": f"selftest: {self.run_id}",
                "system": {"adapter": "handmade", "version": "1.0", "runtime": "none"},
                "profile": {"message_delay_level": TABLE, "max_reconsume_times": self.max_reconsume_times,
                            "flush_delay_offset_interval_ms": 10000, "slack_ms": SLACK_MS, **self.profile},
                "started_ms": T0, "ended_ms": T0 + self.ended}

    def write(self, root: Path, lines: list[str] | None = None, **run_fields) -> Path:
        """The run directory below ``root``; ``run_fields`` change run.json (None: the field is left out)."""
        d = root / self.run_id
        d.mkdir(parents=True, exist_ok=True)
        run = {**self.run_json(), **run_fields}
        (d / "run.json").write_text(json.dumps({k: v for k, v in run.items() if v is not None}))
        text = "".join(json.dumps(e) + "\n" for e in sorted(self.events, key=lambda e: e["ts_ms"]))
        (d / "events.jsonl").write_text(text + "".join(lines or []))
        return d

    def write_layout(self, root: Path, consumer: str = GROUP + "-0", **run_fields) -> Path:
        """The run directory as the harness lays it out (``reference.rundir``): the start of one
        consumer ``consumer`` of the group, sends, faults and DLQ entries in ``events/harness.jsonl``;
        the deliveries in ``events/consumer-<consumer>.jsonl``."""
        from hourglass.reference.contract import CONSUMER_STARTED_BY_SCENARIO, consumer_fault
        from hourglass.reference.rundir import EVENTS_DIR, HARNESS_EVENTS, consumer_events

        d = self.write(root, **run_fields)
        (d / "events.jsonl").unlink()
        (d / EVENTS_DIR).mkdir()
        start = consumer_fault("start", T0, consumer, GROUP, CONSUMER_STARTED_BY_SCENARIO)
        events = sorted(self.events, key=lambda e: e["ts_ms"])
        for name, mine in ((HARNESS_EVENTS, [start] + [e for e in events if e["type"] != "deliver"]),
                           (consumer_events(consumer), [e for e in events if e["type"] == "deliver"])):
            (d / EVENTS_DIR / name).write_text("".join(json.dumps(e) + "\n" for e in mine))
        return d


def thread_stall(from_ms: int, stalled_ms: int, thread: str, path: str | None, pressure: bool = True) -> list[dict]:
    """A broker thread's run-queue wait of ``stalled_ms`` from ``from_ms`` (ms after T0), recorded
    for ``path`` (reference.stalls), and the host's CPU pressure that saw it (``pressure``: else the
    host's figures do not corroborate it)."""
    wait = {"type": "stall", "ts_ms": T0 + from_ms + stalled_ms, "source": "run-queue", "subject": "broker",
            "from_ms": T0 + from_ms, "stalled_ms": stalled_ms, "detail": f"thread {thread}"}
    if path:
        wait["path"] = path
    psi = {"type": "stall", "ts_ms": T0 + from_ms + stalled_ms, "source": "psi-cpu", "subject": "host",
           "from_ms": T0 + from_ms, "stalled_ms": stalled_ms, "full_ms": 0}
    return [wait, psi] if pressure else [wait]


def check_on_path(path: str, roots: list[Path], out: Path) -> dict[str, dict]:
    """run_id -> verdict of the runs below ``roots``, all judged on one path: ``whole`` (the common
    case) or ``bucketed`` (the path of runs above WHOLE_RUN_MAX_EVENTS, cut into buckets of 2 events)."""
    import pytest

    from hourglass.reports import check, spark_jobs

    mp = pytest.MonkeyPatch()
    if path == "bucketed":
        mp.setattr(spark_jobs, "EVENTS_PER_BUCKET", 2)
        mp.setattr(check, "WHOLE_RUN_MAX_EVENTS", -1)
    try:
        return {v["run_id"]: v for v in check.check_runs(roots, out_dir=out)}
    finally:
        mp.undo()
