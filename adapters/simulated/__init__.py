"""The reference model run as a broker in virtual time, behind the adapter protocol, with
injectable defects (:mod:`adapters.simulated.defects`).

    system = open_simulated(BrokerProfile(), defects=("early-delivery",), seed=7)
    system.setup()
    ...  # the harness runner drives it like any other system; system.clock is virtual

Modelled (module, RocketMQ counterpart): the commit log and consume queues (``store``); one
schedule queue per level, re-put when due with correctDeliverTimestamp, the offset advanced only
after a successful re-put, persisted 10 s after start and every flushDelayOffsetInterval and on
graceful shutdown, loaded and corrected on start (``schedule``: ScheduleMessageService); the 5.x
timer wheel with precision rounding and the maximum delay (``broker.put_timer``: HookUtils /
TimerMessageStore); send-back to ``%RETRY%group`` or the DLQ, and the client's re-send through
its producer (``broker.send_back``: SendMessageProcessor); broker lifecycle: start → ready after
1.5 s, graceful stop, kill -9, pause (tasks held, sends time out as UNKNOWN and may be stored at
resume); consumer offsets committed every 5 s and persisted by the broker every 5 s; push
consumers that share a group's queues, answer by plan, crash, and re-consume locally when a
send-back fails (``consumers``: ConsumeMessageConcurrentlyService).

Not modelled: several brokers or masters/slaves, message filtering, orderly consumers, batch
sends, the async deliver mode of the schedule service, disk-full or flush failures other than the
``put_failure_rate`` knob, changing the level table between restarts, timer-wheel duplicates
after a kill -9.
"""

from __future__ import annotations

from typing import Iterable

from hourglass.adapters.base import BrokerProfile
from hourglass.adapters.simulated.defects import Defect, DefectInfo, parse_defects
from hourglass.adapters.simulated.system import SimulatedSystem

#: A fixed virtual epoch (2025-11-22T08:26:40Z), so runs with the same seed are byte-identical.
DEFAULT_START_MS = 1_763_800_000_000

__all__ = ["open_simulated", "SimulatedSystem", "Defect", "DefectInfo", "parse_defects", "DEFAULT_START_MS"]


def open_simulated(profile: BrokerProfile, defects: Iterable = (), seed: int = 0,
                   start_ms: int = DEFAULT_START_MS, **options) -> SimulatedSystem:
    """A simulated broker system (not set up yet: call ``setup()``). ``defects``: names or
    :class:`Defect` members. ``options``: ``put_failure_rate`` (re-put writes that fail),
    ``send_back_failure_rate`` (consumer send-backs and client re-sends that fail),
    ``unknown_stored_rate`` (sends to a paused broker stored at resume), ``timers`` (5.x timer
    messages; False behaves as 4.x), ``version``, ``startup_ms`` (from start to ready)."""
    return SimulatedSystem(profile, parse_defects(defects), seed, start_ms, **options)
