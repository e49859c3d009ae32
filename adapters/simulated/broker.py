"""The simulated broker: store, schedule service, 5.x timer wheel, consumer retry and DLQ, consumer
offsets, and its lifecycle (start → ready, graceful stop, kill -9, pause/resume) in virtual time.

While the broker is not serving (down, starting, paused) it stores nothing and re-puts nothing;
its tasks wait (paused) or are dropped with the incarnation (stop/kill) and start over when it is
ready again, the schedule service's first pass ``FIRST_DELAY_TIME`` after that. A broker paused
while it starts (``slow_start``) completes its start that much later: nothing happens while paused.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Callable

from hourglass.adapters.simulated.clock import VirtualClock
from hourglass.adapters.simulated.defects import Defect
from hourglass.adapters.simulated.retry import ConsumerRetry
from hourglass.adapters.simulated.pop import PopService
from hourglass.adapters.simulated.schedule import ScheduleService
from hourglass.adapters.simulated.store import MessageStore, StoredMessage
from hourglass.reference.clock import BrokerClock, Step
from hourglass.reference.contract import MEMORY_SOURCE, PERSISTED_SOURCE, SCHEDULE_TOPIC
from hourglass.reference.profile import Profile
from hourglass.adapters.simulated.timer_store import TimerCheckpoint, TimerWheel

UP, DOWN, STARTING, PAUSED = "up", "down", "starting", "paused"  # STARTING may be paused: start_paused_at
#: Virtual time from ``start`` to ``ready``.
STARTUP_MS = 1500
#: BrokerConfig.flushConsumerOffsetInterval: consumerOffset.json persisted every 5 s.
CONSUMER_OFFSET_FLUSH_MS = 5000
#: The simulated broker's address in its ``brokerStatus`` snapshot.
BROKER_ADDR = "simulated:10911"
#: PERSIST_BEFORE_DELIVERY_STOPS: how long the delivery tasks go on after the shutdown persist.
SHUTDOWN_TAIL_MS = 300
#: from a graceful stop's signal to the process's exit (4.9.x's DefaultMessageStore.shutdown alone sleeps 1 s)
SHUTDOWN_MS = 1_000


class SimBroker(ConsumerRetry, TimerWheel, PopService):
    def __init__(self, clock: VirtualClock, profile: Profile, defects: frozenset[Defect], rng: random.Random,
                 put_failure_rate: float = 0.0, timers: bool = True, startup_ms: int = STARTUP_MS):
        self.clock = clock
        self.profile = profile
        self.defects = defects
        self.rng = rng
        self.timers = timers
        self.startup_ms = startup_ms
        self.store = MessageStore()
        self.group_retry_max_times: dict[str, int] = {}  # SubscriptionGroupConfig.retryMaxTimes set by the admin API
        self.schedule = ScheduleService(profile.level_table, self.store, defects, rng, put_failure_rate,
                                        profile.schedule_async_deliver)
        self.state = DOWN
        self.incarnation = 0
        self.ready_at_ms: int | None = None
        self.started_ms: int | None = None  # when the current incarnation was started
        self.stopping = False  # PERSIST_BEFORE_DELIVERY_STOPS: persisted, tasks still running
        self._start_ready_ms = 0  # when the start in progress completes if nothing pauses it
        self.cpu_permille = 0  # under a CPU quota (cpu_throttle): thousandths of one CPU; 0: none
        self.start_paused_at: int | None = None  # paused while starting (slow_start): since when
        self.deferred: list[Callable[[], None]] = []
        self.pending_while_paused: list[Callable[[], None]] = []  # sends held in the socket buffer
        self.partitioned = False  # cut off from every client and the name server (reference.network)
        self.latency_ms = 0  # added to everything the broker sends (reference.network)
        self.pending_while_partitioned: list[Callable[[], None]] = []  # sends TCP retransmits after the heal
        self.stalled_levels: set[int] = set()  # REPUT_PAUSED_WHILE_PARTITIONED: levels waiting for the heal
        # reference.clock: the broker's wall clock, a line of true (virtual) time (a step: rate 0,
        # a drift: its rate); store times and due tests read it, the scheduled tasks wait on the true time
        self.clock_line = Step(0, 0, 0)
        self.countdowns: dict[int, tuple[int, int]] = {}  # REPUT_BY_COUNTDOWN: level -> (wake, due it waits for)
        self.stalled_until_ms = 0  # STALLED_BY_CLOCK_BACK: the level tasks wait until then
        self.slave_schedule: ScheduleService | None = None  # SLAVE_REPUTS_WHILE_MASTER_DOWN: its slave's (adapters.simulated.slave)
        self.timer_heap: list[tuple[int, int, StoredMessage]] = []  # (deliver_ms, commit offset, entry)
        self.level_wake: dict[int, int] = {}  # level -> when its task runs next
        self.timer_wake: int | None = None  # when the timer wheel runs next
        self.timer_ckpt = TimerCheckpoint()  # what a restart reads the wheel again from (reference.timer)
        self.consumer_offsets: dict[tuple[str, str, int], int] = {}  # (group, topic, qid) -> offset
        self.consumer_offsets_persisted: dict[tuple[str, str, int], int] = {}
        self.on_message: Callable[[StoredMessage], None] = lambda m: None  # consumers' notification
        self.on_ready: Callable[[], None] = lambda: None
        self.pop_init()

    # --- tasks ------------------------------------------------------------------------------
    def at(self, ts_ms: int, task: Callable[[], None]) -> None:
        """A broker task: dropped if the broker restarted since, held while it is paused."""
        inc = self.incarnation

        def run() -> None:
            if self.incarnation != inc:
                return
            if self.state == PAUSED:
                self.deferred.append(run)
                return
            task()

        self.clock.call_at(ts_ms, run)

    @property
    def serving(self) -> bool:
        return self.state == UP

    @property
    def reachable(self) -> bool:
        """Serving, and not cut off from the clients (a partition, reference.network)."""
        return self.state == UP and not self.partitioned

    @property
    def writable(self) -> bool:
        """DefaultMessageStore.checkStoreStatus: serving, and the store not marked disk full."""
        return self.state == UP and not self.schedule.store_full

    # --- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        if self.state in (UP, PAUSED, STARTING):
            return
        self.incarnation += 1
        self.state = STARTING
        self.started_ms = self.clock.now_ms()  # a throttled start's work takes 1000/permille times as long
        took = self.startup_ms * 1000 // self.cpu_permille if self.cpu_permille else self.startup_ms
        self.ready_at_ms = self._start_ready_ms = self.clock.now_ms() + took
        self.at(self.ready_at_ms, self._ready)

    def _ready(self) -> None:
        now = self.clock.now_ms()
        self.state = UP
        self.slave_schedule = None  # the master is back: its slave is a slave again
        self.consumer_offsets = dict(self.consumer_offsets_persisted)
        self.schedule.load_before_start(now - (self.started_ms or now), self.profile.first_flush_delay_ms)
        self.schedule.start()
        self.level_wake = {}
        for level in range(1, self.profile.max_level + 1):
            self._wake_level(level, now + self.profile.first_delay_ms)
        self.at(now + self.profile.first_flush_delay_ms, self._flush_schedule)
        self.at(now + CONSUMER_OFFSET_FLUSH_MS, self._flush_consumer_offsets)
        self.timer_wake = None
        self.timer_ckpt.recover(self.timer_heap, from_start=Defect.TIMER_CHECKPOINT_IGNORED in self.defects)
        if self.timers:
            self._flush_timer_checkpoint()
        if self.timer_heap:
            self._wake_timers(max(now + self.profile.first_delay_ms, self._true_ms(self.timer_heap[0][0])))
        self.pop_after_restart()
        self.on_ready()

    def stop(self, graceful: bool) -> None:
        if self.state == DOWN:
            return
        if graceful and self.state == UP and Defect.PERSIST_BEFORE_DELIVERY_STOPS in self.defects:
            if not self.stopping:  # ScheduleMessageService.shutdown (4.9.0-4.9.2): persist, tasks go on
                self.schedule.persist(self.clock.now_ms())
                self.stopping = True
                self.at(self.clock.now_ms() + SHUTDOWN_TAIL_MS, lambda: self._stop(True, persisted_already=True))
            return
        self._stop(graceful)

    def _stop(self, graceful: bool, persisted_already: bool = False) -> None:
        self.stopping = False
        now = self.clock.now_ms()
        if graceful and self.state in (UP, PAUSED):
            if self.timers:  # TimerMessageStore.shutdown: prepareTimerCheckPoint first
                self.timer_ckpt.write(self.wall_ms(), self.profile.timer_precision_ms)
            self.schedule.shutdown(graceful=True, now_ms=now, persisted_already=persisted_already)
            self.consumer_offsets_persisted = dict(self.consumer_offsets)
        else:
            self.schedule.shutdown(graceful=False, now_ms=now)
            if Defect.TIMER_LOST_ON_KILL in self.defects:
                self.timer_heap.clear()
        self.state = DOWN
        self.start_paused_at = None
        self.incarnation += 1
        self.deferred.clear()
        self.pending_while_paused.clear()  # requests in the socket buffer die with the process
        self.pending_while_partitioned.clear()
        self.stalled_levels.clear()

    def pause(self) -> None:
        if self.state == UP:
            self.state = PAUSED
        elif self.state == STARTING and self.start_paused_at is None:
            # frozen in the middle of its start (slow_start): the rest of the start waits
            self.start_paused_at = self.clock.now_ms()
            self.ready_at_ms = None
            self.incarnation += 1  # drops the pending ready; resume schedules it again

    def resume(self) -> None:
        if self.state == STARTING and self.start_paused_at is not None:
            now = self.clock.now_ms()
            self.ready_at_ms = self._start_ready_ms + (now - self.start_paused_at)
            self._start_ready_ms = self.ready_at_ms
            self.started_ms += now - self.start_paused_at  # frozen from its exec: nothing of it ran yet
            self.start_paused_at = None
            self.at(self.ready_at_ms, self._ready)
            return
        if self.state != PAUSED:
            return
        self.state = UP
        held, self.deferred = self.deferred, []
        sends, self.pending_while_paused = self.pending_while_paused, []
        for send in sends:
            send()
        for task in held:
            task()

    # --- network faults ---------------------------------------------------------------------
    def heal_partition(self) -> None:
        """The partition ends: the requests TCP still retransmits arrive (UNKNOWN sends stored now);
        REPUT_PAUSED_WHILE_PARTITIONED: the stalled levels run again, a first delay after it."""
        self.partitioned = False
        if self.state == UP:
            sends, self.pending_while_partitioned = self.pending_while_partitioned, []
            for send in sends:
                send()
        stalled, self.stalled_levels = self.stalled_levels, set()
        for level in sorted(stalled):
            self._wake_level(level, self.clock.now_ms() + self.profile.first_delay_ms)

    # --- periodic persistence ---------------------------------------------------------------
    def _flush_schedule(self) -> None:
        self.schedule.persist(self.clock.now_ms())
        self.at(self.clock.now_ms() + self.profile.flush_delay_offset_interval_ms, self._flush_schedule)

    def _flush_timer_checkpoint(self) -> None:
        """TimerFlushService: at start, then every timerFlushIntervalMs."""
        self.timer_ckpt.write(self.wall_ms(), self.profile.timer_precision_ms)
        self.at(self.clock.now_ms() + self.profile.timer_flush_interval_ms, self._flush_timer_checkpoint)

    def _flush_consumer_offsets(self) -> None:
        self.consumer_offsets_persisted = dict(self.consumer_offsets)
        self.at(self.clock.now_ms() + CONSUMER_OFFSET_FLUSH_MS, self._flush_consumer_offsets)

    # --- the broker's wall clock (reference.clock) --------------------------------------------
    def wall_ms(self) -> int:
        now = self.clock.now_ms()
        return now + self.clock_line.offset_ms_at(now)

    def _true_ms(self, wall_ms: int) -> int:
        """When the wall clock reads ``wall_ms`` if it is not moved again (now if it already has)."""
        return BrokerClock((self.clock_line,)).reached_ms(self.clock.now_ms(), wall_ms)

    def set_clock_offset(self, offset_ms: int, rate_permille: int = 0) -> None:
        """Step the broker's wall clock, or make it drift from ``offset_ms`` at ``rate_permille``;
        every level and the timer wheel test their heads again now (a ScheduledExecutorService's
        100 ms tick), or, with STALLED_BY_CLOCK_BACK, after a step back only once the wall clock is
        where it was."""
        now = self.clock.now_ms()
        back = self.clock_line.offset_ms_at(now) - offset_ms
        self.clock_line = Step(now, now, offset_ms, rate_permille=rate_permille)
        if back > 0 and Defect.STALLED_BY_CLOCK_BACK in self.defects:
            self.stalled_until_ms = max(self.stalled_until_ms, now + back)
        for level in range(1, self.profile.max_level + 1):
            self.level_wake.pop(level, None)
            self._wake_level(level, now)
        if self.timer_heap:
            self.timer_wake = None
            self._wake_timers(now)
        self.pop_after_clock_change()

    # --- storing ----------------------------------------------------------------------------
    def put(self, proto: StoredMessage, topic: str, queue_id: int) -> StoredMessage:
        """CommitLog.asyncPutMessage: store; a delay level > 0 goes to its schedule queue
        (clamped to the table's maximum), else to ``(topic, queue_id)``. Store and due times
        are the broker's wall clock."""
        now = self.wall_ms()
        level = proto.delay_level
        if level > self.profile.max_level and Defect.NO_LEVEL_CLAMPING in self.defects:
            level = 0  # the broken broker stores it as not delayed
        level = self.profile.level_table.clamp(level)
        if level > 0:
            entry = replace(proto, delay_level=level, real_topic=topic, real_queue_id=queue_id,
                            deliver_ms=now + self.profile.level_table.delay_ms(level))
            stored = self.store.append(entry, SCHEDULE_TOPIC, level - 1, now)
            self._wake_level(level, self._true_ms(stored.deliver_ms))
            return stored
        stored = self.store.append(replace(proto, delay_level=0), topic, queue_id, now)
        self.on_message(stored)
        return stored

    def _wake_level(self, level: int, ts_ms: int) -> None:
        current = self.level_wake.get(level)
        if current is not None and current <= ts_ms:
            return
        self.level_wake[level] = ts_ms
        self.at(ts_ms, lambda: self._run_level(level, ts_ms))

    def _run_level(self, level: int, scheduled_ms: int) -> None:
        if self.level_wake.get(level) != scheduled_ms:
            return  # superseded by an earlier wake-up
        del self.level_wake[level]
        if self.partitioned and Defect.REPUT_PAUSED_WHILE_PARTITIONED in self.defects:
            self.stalled_levels.add(level)  # the broken broker waits for its name server
            return
        if self.clock.now_ms() < self.stalled_until_ms:  # STALLED_BY_CLOCK_BACK
            self._wake_level(level, self.stalled_until_ms)
            return
        now = self.wall_ms()
        wake, waited_for = self.countdowns.pop(level, (None, now))
        if wake == scheduled_ms:  # REPUT_BY_COUNTDOWN: the countdown ran out, taken as the wall clock reading it
            now = max(now, waited_for)
        nxt = self.schedule.run_level(level, now, self.reput)
        if nxt is None:
            return
        if Defect.REPUT_BY_COUNTDOWN in self.defects:  # sleeps due - now on the monotonic (true) clock
            wake = self.clock.now_ms() + max(0, nxt - now)
            self._wake_level(level, wake)
            if self.level_wake.get(level) == wake:
                self.countdowns[level] = (wake, nxt)
        else:
            self._wake_level(level, max(self.clock.now_ms(), self._true_ms(nxt)))

    def reput(self, entry: StoredMessage) -> StoredMessage:
        """ScheduleMessageService.messageTimeup: a new copy in the real topic and queue, the delay
        level cleared, reconsume times kept."""
        return self.put(replace(entry, delay_level=0, deliver_ms=0), entry.real_topic, entry.real_queue_id)

    # --- white-box --------------------------------------------------------------------------
    def snapshot(self) -> list[dict]:
        """As the RocketMQ adapter reads them: ``delayOffset.json`` (once written: the store survives
        a stop), and while the broker serves its ``brokerStatus`` (ScheduleMessageService.buildRunningStats:
        each level's in-memory offset and its schedule queue's max offset)."""
        out = []
        if self.schedule.persisted:  # no file before the first persist: nothing to read, as on a real store
            out.append({"source": PERSISTED_SOURCE,
                        "offsets": {str(k): v for k, v in sorted(self.schedule.persisted.items())}})
        if self.serving:
            self.schedule.settle(self.clock.now_ms())  # the handle task's last run (asynchronous delivery)
            levels = sorted(self.schedule.offsets)
            out.append({"source": MEMORY_SOURCE, "broker": BROKER_ADDR,
                        "offsets": {str(k): self.schedule.offsets[k] for k in levels},
                        "max_offsets": {str(k): len(self.schedule.queue(k)) for k in levels}})
        return out
