"""White-box readings of a RocketMQ system (:class:`~adapters.base.Snapshotting`,
:class:`~adapters.base.OffsetFlushWatching`): the schedule offsets each master persisted
(``delayOffset.json`` in its store) and holds in memory (admin ``brokerStatus``), and when the
broker last wrote them."""

from __future__ import annotations

import os
import time
from typing import Callable

from hourglass.adapters.base import AdapterError
from hourglass.adapters.rocketmq import config as cfg
from hourglass.adapters.rocketmq.topology import BrokerNode
from hourglass.reference.cluster import SINGLE
from hourglass.reference.contract import BROKER_TARGETS, MEMORY_SOURCE, PERSISTED_SOURCE
from hourglass.reference.timer import parse_timer_checkpoint


def schedule_offsets(table: dict[str, str]) -> tuple[dict[str, int], dict[str, int]]:
    """``scheduleMessageOffset_<level> = <offset>,<max>`` entries of ``brokerStatus``."""
    offsets, max_offsets = {}, {}
    prefix = "scheduleMessageOffset_"
    for key, value in table.items():
        if key.startswith(prefix):
            level = key[len(prefix):]
            off, _, mx = value.partition(",")
            offsets[level] = int(off)
            if mx:
                max_offsets[level] = int(mx)
    return dict(sorted(offsets.items(), key=lambda kv: int(kv[0]))), dict(sorted(max_offsets.items(), key=lambda kv: int(kv[0])))


def target_field(cluster: str, target: str) -> dict:
    """A snapshot's ``target``: written in a cluster only (a single broker's snapshots stay as they were)."""
    return {"target": target} if cluster != SINGLE else {}


def persisted_snapshots(masters: list[BrokerNode], cluster: str) -> list[dict]:
    """Each master's ``delayOffset.json``, once written."""
    out = []
    for node in masters:
        persisted = cfg.read_delay_offsets(node.layout)
        if persisted is not None:
            out.append({"source": PERSISTED_SOURCE, "offsets": {str(k): v for k, v in sorted(persisted.items())},
                        **target_field(cluster, node.target)})
    return out


def broker_status(request: Callable[..., dict], details: dict, timeout_s: float = 10.0,
                  addrs: list[str] | None = None) -> dict | None:
    """Admin ``brokerStatus`` of every broker (of ``addrs``). Right after a start the broker answers
    with an error until its runtime statistics have a first sample: retry until ``timeout_s``; then
    None, and the reason goes to ``details['snapshot_errors']``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return request("broker_status", timeout_s=15, **({"addrs": addrs} if addrs is not None else {}))["brokers"]
        except AdapterError as e:
            if time.monotonic() > deadline:
                details.setdefault("snapshot_errors", []).append(str(e)[:500])
                return None
        time.sleep(0.5)  # poll interval while the broker's statistics warm up


def memory_snapshots(status: dict | None, targets: dict[str, str], cluster: str) -> list[dict]:
    """The in-memory offsets of each broker in ``status``, with the ``target`` its address is
    (the first broker's where it is none of ``targets``)."""
    out = []
    for addr, table in (status or {}).items():
        offsets, max_offsets = schedule_offsets(table)
        out.append({"source": MEMORY_SOURCE, "broker": addr, "offsets": offsets, "max_offsets": max_offsets,
                    **target_field(cluster, targets.get(addr) or BROKER_TARGETS[0])})
    return out


def timer_checkpoint(layout: cfg.StoreLayout) -> dict[str, int] | None:
    """``<store>/config/timercheck`` (5.x TimerCheckpoint, BrokerPathConfigHelper.getTimerCheckPath):
    the broker maps it and writes the fields only in ``flush()``, so the file holds the last
    checkpoint flushed. None where there is none (4.9.x, or not written yet)."""
    try:
        data = (layout.store_dir / "config" / "timercheck").read_bytes()[:64]
    except (FileNotFoundError, IsADirectoryError):
        return None
    return parse_timer_checkpoint(data)


def last_offset_flush_ms(layout: cfg.StoreLayout) -> int | None:
    """The mtime of ``<store>/config/delayOffset.json``: the broker writes it (through a temp
    file renamed over it, MixAll.string2File) at each flush and at a graceful shutdown. None
    before the first write, and while the rename leaves no file."""
    try:
        return os.stat(cfg.delay_offset_path(layout)).st_mtime_ns // 1_000_000
    except FileNotFoundError:
        return None
