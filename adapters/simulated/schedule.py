"""The simulated schedule service: one schedule queue per delay level, re-put when due, with the
schedule offsets kept in memory and persisted as ``delayOffset.json`` would be.

Follows ScheduleMessageService (4.9.x): per level a task walks its queue from the level's offset,
re-puts every entry whose deliver time has come (corrected by ``correctDeliverTimestamp``), and
moves the offset past an entry only when its re-put succeeded (else retries 100 ms later). The
offsets are persisted 10 s after start and every ``flushDelayOffsetInterval`` after, and on
graceful shutdown; a start loads the persisted offsets (``correctDelayOffset``).
"""

from __future__ import annotations

import random
from typing import Callable

from adapters.simulated.defects import Defect
from adapters.simulated.store import MessageStore, StoredMessage
from reference.contract import SCHEDULE_TOPIC
from reference.levels import LevelTable
from reference.persistence import corrected_delay_offset
from reference.windows import corrected_deliver_ms

#: ScheduleMessageService.DELAY_FOR_A_WHILE: retry pause after a failed re-put.
RETRY_PUT_MS = 100
#: REORDER_WITHIN_LEVEL: how long an even-offset entry is held back.
REORDER_HOLD_MS = 400


#: Defect.LATE_DELIVERY: how long after its due time a delayed message is re-put
LATE_DELIVERY_MS = 10_000


class ScheduleService:
    def __init__(self, table: LevelTable, store: MessageStore, defects: frozenset[Defect],
                 rng: random.Random, put_failure_rate: float):
        self.table = table
        self.store = store
        self.defects = defects
        self.rng = rng
        self.put_failure_rate = put_failure_rate
        self.store_full = False  # disk_full: every re-put write fails (reference.disk)
        self.offsets: dict[int, int] = {}  # in memory
        self.cursor: dict[int, int] = {}  # where each level's task chain goes on (== offsets unless a defect)
        self.persisted: dict[int, int] = {}  # delayOffset.json
        self.persisted_ms: int | None = None  # when delayOffset.json was last written (virtual time)
        self.running = False
        self.reputs = 0
        self.failed_puts = 0
        self.reput_ahead: set[tuple[int, int]] = set()  # REORDER_WITHIN_LEVEL only

    def queue(self, level: int) -> list[StoredMessage]:
        return self.store.queue(SCHEDULE_TOPIC, level - 1)

    # --- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        """ScheduleMessageService.start/load/correctDelayOffset: offsets from the persisted table."""
        self.offsets = {}
        for level in range(1, self.table.max_level + 1):
            q = self.queue(level)
            if Defect.OFFSETS_REWOUND_ON_RESTART in self.defects:
                offset = 0
            elif Defect.LOST_ON_RESTART in self.defects:
                offset = len(q)
            else:
                offset = corrected_delay_offset(self.persisted.get(level, 0), 0, len(q))
            self.offsets[level] = offset
        self.cursor = dict(self.offsets)
        self.running = True

    def persist(self, now_ms: int) -> None:
        """ScheduleMessageService.persist: write the in-memory offsets to delayOffset.json."""
        self.persisted = dict(self.offsets)
        self.persisted_ms = now_ms

    def shutdown(self, graceful: bool, now_ms: int, persisted_already: bool = False) -> None:
        """ScheduleMessageService.shutdown persists (graceful); a kill -9 loses the in-memory table."""
        if graceful and not persisted_already and Defect.DUPLICATE_AFTER_GRACEFUL_RESTART not in self.defects:
            self.persist(now_ms)
        self.running = False

    def load_before_start(self, start_took_ms: int, constructor_flush_ms: int) -> None:
        """ScheduleMessageService constructor timer (5.0.0-5.1.1, #6881, EMPTY_OFFSETS_PERSISTED_BEFORE_LOAD):
        a start slower than the timer's first run writes the still empty table before load()."""
        if Defect.EMPTY_OFFSETS_PERSISTED_BEFORE_LOAD in self.defects and start_took_ms >= constructor_flush_ms:
            self.persisted = {}

    # --- the per-level task -----------------------------------------------------------------
    def due_ms(self, entry: StoredMessage, now_ms: int) -> int:
        delay = self.table.delay_ms(entry.delay_level)
        due = corrected_deliver_ms(now_ms, entry.deliver_ms, delay)
        if Defect.EARLY_DELIVERY in self.defects:
            due = min(due, entry.deliver_ms - delay // 2)
        if Defect.LATE_DELIVERY in self.defects:
            due = max(due, entry.deliver_ms + LATE_DELIVERY_MS)
        if Defect.REORDER_WITHIN_LEVEL in self.defects and entry.queue_offset % 2 == 0:
            due = max(due, entry.deliver_ms + REORDER_HOLD_MS)
        return due

    def run_level(self, level: int, now_ms: int, reput: Callable[[StoredMessage], StoredMessage | None]) -> int | None:
        """DeliverDelayedMessageTimerTask.executeOnTimeup: re-put what is due; return when to run
        again (``None``: the queue is drained, wait for a new entry)."""
        if not self.running:
            return None
        q = self.queue(level)
        offset = task_start = self.cursor.get(level, self.offsets.get(level, 0))
        reorder = Defect.REORDER_WITHIN_LEVEL in self.defects
        while offset < len(q):
            entry = q[offset]
            if (level, offset) in self.reput_ahead:  # REORDER_WITHIN_LEVEL: already re-put
                self.reput_ahead.discard((level, offset))
                offset += 1
                self._advance(level, offset, task_start)
                continue
            due = self.due_ms(entry, now_ms)
            if due > now_ms:
                if reorder and offset + 1 < len(q) and (level, offset + 1) not in self.reput_ahead:
                    successor_due = self.due_ms(q[offset + 1], now_ms)
                    if successor_due > now_ms:
                        return min(due, successor_due)
                    reput(q[offset + 1])  # the successor overtakes the held-back entry
                    self.reputs += 1
                    self.reput_ahead.add((level, offset + 1))
                return due
            if self.store_full or (self.put_failure_rate and self.rng.random() < self.put_failure_rate):
                self.failed_puts += 1
                if Defect.LOST_REPUT_ON_WRITE_FAILURE in self.defects:
                    offset += 1
                    self._advance(level, offset, task_start)
                    continue
                return now_ms + RETRY_PUT_MS
            reput(entry)
            self.reputs += 1
            offset += 1
            self._advance(level, offset, task_start)
        return None

    def _advance(self, level: int, offset: int, task_start: int) -> None:
        """DeliverDelayedMessageTimerTask.executeOnTimeup: after a PUT_OK the offset becomes the
        entry's offset + 1 (REPUT_OFFSET_FROM_TASK_START: the task run's start offset + 1, #3966);
        the task chain itself goes on from the entry after it either way."""
        self.cursor[level] = offset
        wrong = Defect.REPUT_OFFSET_FROM_TASK_START in self.defects
        self.offsets[level] = task_start + 1 if wrong else offset
