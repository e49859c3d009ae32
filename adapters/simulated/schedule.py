"""The simulated schedule service: one schedule queue per delay level, re-put when due, with the
schedule offsets kept in memory and persisted as ``delayOffset.json`` would be.

Follows ScheduleMessageService (4.9.x): per level a task walks its queue from the level's offset,
re-puts every entry whose deliver time has come (corrected by ``correctDeliverTimestamp``), and
moves the offset past an entry only when its re-put succeeded (else retries 100 ms later). The
offsets are persisted 10 s after start and every ``flushDelayOffsetInterval`` after, and on
graceful shutdown; a start loads the persisted offsets (``correctDelayOffset``).

Asynchronous delivery (enableScheduleAsyncDeliver, 4.9.3+): the task hands each re-put to the store
without waiting, and HandlePutResultTask moves the offset past the completed puts in order, every
:data:`ASYNC_ACK_MS`; a failed put blocks its level and is resent with a growing pause
(PutResultProcess.doResend). A graceful shutdown stops the handle task before it persists, so the
puts completed since its last run are not covered by the persisted offset (reference.persistence).
"""

from __future__ import annotations

import random
from typing import Callable

from hourglass.adapters.simulated.defects import Defect
from hourglass.adapters.simulated.store import MessageStore, StoredMessage
from hourglass.reference.contract import SCHEDULE_TOPIC
from hourglass.reference.levels import LevelTable
from hourglass.reference.persistence import ASYNC_ACK_MS, corrected_delay_offset
from hourglass.reference.windows import corrected_deliver_ms

#: ScheduleMessageService.DELAY_FOR_A_WHILE: retry pause after a failed re-put.
RETRY_PUT_MS = 100
#: REORDER_WITHIN_LEVEL: how long an even-offset entry is held back.
REORDER_HOLD_MS = 400
#: PutResultProcess.doResend: the n-th resend of a failed asynchronous put waits n * this (5.x)
ASYNC_RESEND_STEP_MS = 100
#: ASYNC_SKIP_AFTER_RESENDS: PutResultProcess.need2Skip's count (scheduleAsyncDeliverMaxResendNum2Blocked * 2)
ASYNC_SKIP_RESENDS = 6


#: Defect.LATE_DELIVERY: how long after its due time a delayed message is re-put
LATE_DELIVERY_MS = 10_000


class ScheduleService:
    def __init__(self, table: LevelTable, store: MessageStore, defects: frozenset[Defect],
                 rng: random.Random, put_failure_rate: float, async_deliver: bool = False):
        self.table = table
        self.async_deliver = async_deliver
        #: asynchronous delivery: per level, (the offset after it, when it completed) of each completed
        #: put not yet taken by HandlePutResultTask (:meth:`settle`), in order
        self.completed: dict[int, list[tuple[int, int]]] = {}
        self.resends: dict[tuple[int, int], int] = {}  # (level, offset) -> failed asynchronous puts so far
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
        self.settle(now_ms)
        self.persisted = dict(self.offsets)
        self.persisted_ms = now_ms

    def settle(self, now_ms: int, last_run_ms: int | None = None) -> None:
        """HandlePutResultTask.run (asynchronous delivery): the offset of each level moves past the
        puts completed by its last run (every :data:`ASYNC_ACK_MS`; at the latest ``last_run_ms``)."""
        last_run = now_ms - now_ms % ASYNC_ACK_MS if last_run_ms is None else last_run_ms
        for level, puts in self.completed.items():
            taken = [offset for offset, done_ms in puts if done_ms <= last_run]
            if taken:
                self.offsets[level] = max(self.offsets.get(level, 0), *taken)
                puts[:] = [(o, d) for o, d in puts if d > last_run]

    def shutdown(self, graceful: bool, now_ms: int, persisted_already: bool = False) -> None:
        """ScheduleMessageService.shutdown persists (graceful); a kill -9 loses the in-memory table.
        With asynchronous delivery the handle task is stopped before the persist: what completed
        since its last run is not in the persisted offset."""
        if graceful and not persisted_already and Defect.DUPLICATE_AFTER_GRACEFUL_RESTART not in self.defects:
            self.settle(now_ms, last_run_ms=now_ms - ASYNC_ACK_MS)
            self.completed.clear()
            self.persist(now_ms)
        self.completed.clear()
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
                self._advance(level, offset, task_start, now_ms)
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
                    self._advance(level, offset, task_start, now_ms)
                    continue
                if not self.async_deliver:
                    return now_ms + RETRY_PUT_MS
                # PutResultProcess.doResend: the level waits for the resend, n * 100 ms after the n-th failure
                failures = self.resends[(level, offset)] = self.resends.get((level, offset), 0) + 1
                if failures > ASYNC_SKIP_RESENDS and Defect.ASYNC_SKIP_AFTER_RESENDS in self.defects:
                    offset += 1  # given up as unreadable: skipped, never stored
                    self._advance(level, offset, task_start, now_ms)
                    continue
                return now_ms + failures * ASYNC_RESEND_STEP_MS
            self.resends.pop((level, offset), None)
            reput(entry)
            self.reputs += 1
            offset += 1
            self._advance(level, offset, task_start, now_ms)
        return None

    def _advance(self, level: int, offset: int, task_start: int, now_ms: int) -> None:
        """DeliverDelayedMessageTimerTask.executeOnTimeup: after a PUT_OK the offset becomes the
        entry's offset + 1 (REPUT_OFFSET_FROM_TASK_START: the task run's start offset + 1, #3966);
        the task chain itself goes on from the entry after it either way. Asynchronous delivery:
        HandlePutResultTask moves it, in order, once the put completed (:meth:`settle`)."""
        self.cursor[level] = offset
        wrong = Defect.REPUT_OFFSET_FROM_TASK_START in self.defects
        if self.async_deliver and not wrong:
            self.settle(now_ms)
            self.completed.setdefault(level, []).append((offset, now_ms))
            return
        self.offsets[level] = task_start + 1 if wrong else offset
