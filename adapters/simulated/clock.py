"""Virtual time: a clock whose ``sleep_until`` advances time and runs every task due by then.

Tasks run in (due time, order of scheduling) order, so a run is deterministic. Nothing here reads
the wall clock: a simulated run of hours of broker time takes milliseconds.
"""

from __future__ import annotations

import heapq
from typing import Callable


class VirtualClock:
    def __init__(self, start_ms: int):
        self._now = start_ms
        self._seq = 0
        self._heap: list[tuple[int, int, Callable[[], None]]] = []

    def now_ms(self) -> int:
        return self._now

    def call_at(self, ts_ms: int, task: Callable[[], None]) -> None:
        """Run ``task`` when virtual time reaches ``ts_ms`` (at once on the next advance if past)."""
        self._seq += 1
        heapq.heappush(self._heap, (max(ts_ms, self._now), self._seq, task))

    def sleep_until(self, ts_ms: int) -> None:
        """Advance to ``ts_ms`` (never backwards), running every task due by then, in order."""
        heap = self._heap
        while heap and heap[0][0] <= ts_ms:
            due, _, task = heapq.heappop(heap)
            if due > self._now:
                self._now = due
            task()
        if ts_ms > self._now:
            self._now = ts_ms

    def advance(self, duration_ms: int) -> None:
        self.sleep_until(self._now + duration_ms)

    def pending(self) -> int:
        return len(self._heap)
