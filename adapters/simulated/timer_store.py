"""The simulated 5.x timer store's checkpoint (reference.timer): what TimerFlushService writes to
``timercheck`` and what TimerMessageStore.recover reads again from it after a restart."""

from __future__ import annotations

import heapq
from dataclasses import replace

from hourglass.adapters.simulated.store import StoredMessage
from hourglass.reference.timer import TIMER_TOPIC


class TimerCheckpoint:
    """The read time as last flushed, and the timer messages put so far (slot, entry): a restart
    reads the wheel again from the checkpoint's slot, so what was put from it on is put again."""

    def __init__(self) -> None:
        self.fields: dict[str, int] | None = None
        self.puts: list[tuple[int, object]] = []

    def write(self, wall_ms: int, precision_ms: int) -> None:
        """TimerMessageStore.prepareTimerCheckPoint + TimerCheckpoint.flush: the read time is the slot
        being read (one precision behind the wall clock: the wheel reads a slot once it is due)."""
        counter = (self.fields or {}).get("data_version_counter", 0) + 1
        self.fields = {"last_read_time_ms": wall_ms // precision_ms * precision_ms - precision_ms,
                       "last_timer_log_flush_pos": 0, "last_timer_queue_offset": 0, "master_timer_queue_offset": 0,
                       "state_version": 0, "data_version_timestamp": wall_ms, "data_version_counter": counter}

    def put(self, slot_ms: int, entry) -> None:
        self.puts.append((slot_ms, entry))

    def recover(self, heap: list, from_start: bool = False) -> None:
        """TimerMessageStore.recover: every timer put from the checkpoint's slot on goes back into the
        wheel (``heap``: (slot, commit offset, entry)); ``from_start``: the checkpoint ignored (a defect)."""
        if self.fields is None:
            return
        read = -2**63 if from_start else self.fields["last_read_time_ms"]
        again = [(slot, e) for slot, e in self.puts if slot >= read]
        self.puts = [(slot, e) for slot, e in self.puts if slot < read]
        for slot, entry in again:
            heapq.heappush(heap, (slot, entry.commit_log_offset, entry))


class TimerWheel:
    """The simulated broker's 5.x timer wheel (HookUtils.transformTimerMessage, TimerMessageStore):
    a mixin of :class:`adapters.simulated.broker.SimBroker`, whose store, clock and ``put`` it uses."""

    def put_timer(self, proto: StoredMessage, topic: str, queue_id: int, deliver_ms: int) -> StoredMessage:
        """HookUtils.transformTimerMessage (5.x): park in the timer topic until ``deliver_ms``."""
        entry = replace(proto, real_topic=topic, real_queue_id=queue_id, deliver_ms=deliver_ms)
        stored = self.store.append(entry, TIMER_TOPIC, 0, self.wall_ms())
        heapq.heappush(self.timer_heap, (deliver_ms, stored.commit_log_offset, stored))
        self._wake_timers(self._true_ms(deliver_ms))
        return stored

    def _wake_timers(self, ts_ms: int) -> None:
        if self.timer_wake is not None and self.timer_wake <= ts_ms:
            return
        self.timer_wake = ts_ms
        self.at(ts_ms, lambda: self._run_timers(ts_ms))

    def _run_timers(self, scheduled_ms: int) -> None:
        if self.timer_wake != scheduled_ms:
            return  # superseded by an earlier wake-up
        self.timer_wake = None
        now = self.wall_ms()
        while self.timer_heap and self.timer_heap[0][0] <= now:
            slot, _, entry = heapq.heappop(self.timer_heap)
            self.timer_ckpt.put(slot, entry)
            self.put(replace(entry, delay_level=0), entry.real_topic, entry.real_queue_id)
        if self.timer_heap:  # the wheel keeps turning
            self._wake_timers(max(self.clock.now_ms(), self._true_ms(self.timer_heap[0][0])))

