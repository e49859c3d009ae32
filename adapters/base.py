"""The adapter protocol: what the harness asks of a system under test.

One small protocol per capability (as Jepsen's ``db.clj``): a backend implements what it supports
and the harness asks with ``isinstance`` on these ``runtime_checkable`` protocols; whether a fault
can be done on a target now, a system answers itself (:class:`Faultable`). A new broker
family is one new sub-package of ``adapters/`` whose :class:`System` satisfies them.

Observations cross into the run directory as contract events (``reference.contract``):
the harness writes ``send``/``fault``/``snapshot``/``dlq`` events from the values these methods
return; consumers (their own OS processes for real brokers) append ``deliver`` events themselves to
``RUN/events/consumer-<name>.jsonl``, flushed line by line, and their own deaths and restarts
(``fault`` of target ``consumer``, see :meth:`Consuming.start_consumer`).

Targets of faults are the names of :data:`reference.contract.FAULT_TARGETS`: ``broker``,
``namesrv``, ``proxy`` (5.x, where started), and ``consumer`` (all consumers of the system).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Collection, Protocol, runtime_checkable

from hourglass.reference.modes import CONCURRENTLY
from hourglass.reference.orderly import DEFAULT_SUSPEND_MS
from hourglass.reference.faults.clock import DRIFTING_CLOCK, OWN_CLOCK
from hourglass.reference.faults.disk import FILLABLE_STORE
from hourglass.reference.faults.network import OWN_NETWORK
from hourglass.reference.levels import DEFAULT_MESSAGE_DELAY_LEVEL
from hourglass.reference.pop import PROXY_CLUSTER, PROXY_NEEDED
from hourglass.reference.timer import TimerRequest
from hourglass.reference.profile import DEFAULT_FLUSH_DELAY_OFFSET_INTERVAL_MS, DEFAULT_MAX_RECONSUME_TIMES


class AdapterError(RuntimeError):
    """The system could not do what was asked; the message says what and shows the evidence
    (e.g. the tail of a broker log)."""


class NotReady(AdapterError):
    """A component did not answer an application round trip within its timeout."""


class ConsumersNotRestarted(AdapterError):
    """``poll_consumers`` could not start the replacement of some dead consumers (``failed``: name
    -> why); it restarted ``restarted``, and tries the others again at its next call. On a system
    the runs share, the failure is the run's whose consumer it is (``harness.runner.ConsumerWatch``)."""

    def __init__(self, failed: dict[str, str], restarted: list[str]):
        self.failed, self.restarted = dict(failed), list(restarted)
        super().__init__("; ".join(f"consumer {name!r} could not be restarted: {why}" for name, why in sorted(self.failed.items())))


@dataclass(frozen=True)
class BrokerProfile:
    """Broker settings the harness chooses per system (they land in the broker's config and in
    ``run.json``'s profile)."""

    message_delay_level: str = DEFAULT_MESSAGE_DELAY_LEVEL
    flush_delay_offset_interval_ms: int = DEFAULT_FLUSH_DELAY_OFFSET_INTERVAL_MS
    extra: tuple[tuple[str, str], ...] = ()  # further broker.conf key=value pairs
    cluster: str = "single"  # reference.cluster: the brokers the system runs
    schedule_async_deliver: bool = False  # MessageStoreConfig.enableScheduleAsyncDeliver (reference.profile)
    disk_warning_percent: int | None = None  # rocketmq.broker.diskSpaceWarningLevelRatio (reference.disk)
    proxy_mode: str = PROXY_CLUSTER  # how 5.x's proxy runs, when ``needs`` asks for it (reference.pop.PROXY_MODES)
    #: what the system must be set up for before its broker starts, for the fault steps its
    #: scenarios take (``reference.faults``: each step kind's ``setup``, e.g. ``fillable_store``)
    needs: frozenset[str] = frozenset()

    @property
    def fillable_store(self) -> bool:  # the store on a size-limited filesystem (disk_full)
        return FILLABLE_STORE in self.needs

    @property
    def own_network(self) -> bool:  # the broker in its own network namespace (partition, latency, loss)
        return OWN_NETWORK in self.needs

    @property
    def proxy(self) -> bool:  # 5.x's proxy in front of the brokers (a gRPC group: reference.pop)
        return PROXY_NEEDED in self.needs

    @property
    def own_clock(self) -> bool:  # the broker's wall clock under the harness's control (clock steps)
        return OWN_CLOCK in self.needs

    @property
    def drifting_clock(self) -> bool:  # ... and able to run fast or slow (clock_drift)
        return DRIFTING_CLOCK in self.needs


@dataclass(frozen=True)
class SendRequest:
    topic: str
    key: str
    body: bytes = b""
    delay_level: int = 0  # 0 = not delayed
    deliver_at_ms: int | None = None  # 5.x timer message (TIMER_DELIVER_MS)
    plan: tuple[str, ...] = ()  # consumer answers, one per delivery; empty = ("OK",)
    delay_time_sec: int | None = None  # 5.x timer message by a delay (TIMER_DELAY_SEC)
    delay_time_ms: int | None = None  # ... (TIMER_DELAY_MS)

    def timer(self) -> TimerRequest:
        return TimerRequest(self.deliver_at_ms, self.delay_time_sec, self.delay_time_ms)


@dataclass(frozen=True)
class SendResult:
    """What the producer's send returned. ``status``: SEND_OK, FAILED (certainly not stored) or
    UNKNOWN (timed out: may or may not be stored)."""

    status: str
    ts_ms: int  # when the send returned (harness clock)
    born_ms: int
    msg_id: str | None = None
    body_crc: int | None = None
    error: str | None = None
    broker: str | None = None  # the broker name it was stored on (a cluster: reference.cluster)
    queue_id: int | None = None  # the queue it was stored in (the consumer that owns it: reports.stalls)
    response_code: int | None = None  # a FAILED send: the code the broker (or the client's own check) answered


@dataclass(frozen=True)
class ConsumerSpec:
    name: str  # unique per run; its events go to RUN/events/consumer-<name>.jsonl
    group: str
    topics: tuple[str, ...]
    max_reconsume_times: int = DEFAULT_MAX_RECONSUME_TIMES
    events_dir: Path = Path(".")
    batch_size: int = 1  # consumeMessageBatchMaxSize: > 1 answers each batch with an ack index (reference.plans)
    #: the broker's SubscriptionGroupConfig.retryMaxTimes for the group (None: the broker's default, 16),
    #: set before the consumer starts; a 3.4.9+ client's maxReconsumeTimes in the send-back header wins over it
    group_retry_max_times: int | None = None
    mode: str = CONCURRENTLY  # reference.orderly.MODES: how the listener consumes
    suspend_ms: int = DEFAULT_SUSPEND_MS  # orderly: suspendCurrentQueueTimeMillis (effective)
    instance: int = 0  # its index in the group (broadcasting: its judging unit, reference.modes.unit_group)
    consume_timeout_min: int | None = None  # consumeTimeout, minutes (None: the client's 15; reference.timeout)
    #: mode ``reference.pop.POP``: the consumer pops (5.x: setClientRebalance(false) and the broker's
    #: request mode POP for the group and each topic) with this invisible time (None: the client's
    #: 60 s; reference.pop.pop_invisible_ms)
    pop_invisible_ms: int | None = None
    #: may share a JVM with the system's other hosted consumers (adapters.rocketmq.consumer_host): the
    #: runner sets it for a group no plan CRASHes (a consumer's death alone takes a process of its
    #: own) of a scenario no fault of which acts on its consumers (harness.runner.hosted); an adapter
    #: may run it alone anyway
    hosted: bool = False


@dataclass
class SystemInfo:
    adapter: str  # "rocketmq" | "simulated" | ...
    version: str
    runtime: str  # "container" | "process" | "external" | "virtual"
    details: dict = field(default_factory=dict)


@runtime_checkable
class Clock(Protocol):
    """Time as the system sees it: wall time for real brokers, virtual time for the simulator.
    The runner never calls ``time.sleep`` itself, so a simulated run takes milliseconds."""

    def now_ms(self) -> int: ...

    def sleep_until(self, ts_ms: int) -> None: ...


@runtime_checkable
class Lifecycle(Protocol):
    """Start/stop the whole system, and the graceful and hard faults of one part of it."""

    info: SystemInfo
    clock: Clock

    def setup(self) -> None:
        """Provision and start every part, wait until ready. Idempotent."""

    def teardown(self) -> None:
        """Stop and remove everything this system started (also after a failure). Idempotent."""

    def start(self, target: str) -> None: ...

    def stop(self, target: str) -> None:
        """Graceful stop (SIGTERM: shutdown hooks run, ``delayOffset.json`` is written)."""

    def kill(self, target: str) -> None:
        """SIGKILL: nothing is flushed."""

    def wait_ready(self, target: str, timeout_s: float = 120.0) -> None:
        """Block until ``target`` answers an application round trip; raise :class:`NotReady`
        with the component's log tail otherwise."""


@runtime_checkable
class Pausable(Protocol):
    def pause(self, target: str) -> None:
        """SIGSTOP / docker pause."""

    def resume(self, target: str) -> None: ...


@runtime_checkable
class Producing(Protocol):
    def create_topic(self, topic: str, queues: int = 4) -> None: ...

    def send(self, req: SendRequest) -> SendResult: ...


@runtime_checkable
class Consuming(Protocol):
    def start_consumer(self, spec: ConsumerSpec) -> None:
        """Start a push consumer (concurrently) that follows each message's plan (user property
        ``HG_PLAN``). A ``CRASH`` answer kills the consumer mid-consume; :meth:`poll_consumers`
        restarts it. Plan position survives the restart (deliveries already answered count).
        Deaths record themselves when they happen, in the consumer's events file: the consumer
        that answers ``CRASH`` writes its ``fault`` ``kill`` (``cause: died``); a consumer that
        ends otherwise, unasked, is recorded by the system's exit watch (``cause: exited``)."""

    def poll_consumers(self) -> list[str]:
        """Restart consumers that died (not those the harness stopped or killed), each after its
        death is recorded, writing the replacement's ``fault`` ``start`` (with the death's
        ``cause``) into its events file; return the names restarted."""

    def stop_consumers(self, graceful: bool = True) -> None:
        """Stop every consumer: gracefully (each commits its offsets and leaves its group: what a
        run's consume stats read), or, ``graceful`` False, at once (SIGKILL) — for a system whose
        runs are over (their events are written line by line as they happen), which it tears down."""

    def stop_consumer(self, name: str) -> None:
        """Stop one consumer gracefully: it leaves its group (its offsets persisted, an orderly
        one's queue locks released: the group rebalances) and stays down (not restarted)."""


@runtime_checkable
class ConsumerHosting(Protocol):
    def warm_consumer_hosts(self, modes: Collection[str]) -> None:
        """Start now, beside the system's own start, what will host consumers of these modes whose
        spec says ``hosted`` (a JVM shared by many), so that the first one's start finds it up."""


@runtime_checkable
class DlqReading(Protocol):
    def read_dlq(self, group: str) -> list[dict]:
        """Every message in ``%DLQ%group`` as ``dlq`` event fields (without ``type``/``ts_ms``):
        key, group, msg_id, reconsume_times, store_ms."""


@runtime_checkable
class Snapshotting(Protocol):
    def snapshot(self) -> list[dict]:
        """White-box reading of persisted/in-memory schedule state, as ``snapshot`` event fields
        (``source``, ``offsets`` level -> offset), e.g. one for ``delayOffset.json`` and one for
        the broker's in-memory offsets. Empty when the system cannot tell."""


@runtime_checkable
class ClockFaults(Protocol):
    """Systems that can step the broker's wall clock (``clock`` faults, :mod:`reference.clock`) and
    make it drift (``clock_drift``); ``cannot('clock', target)`` / ``cannot('clock_drift',
    target)`` say whether this one can now."""

    def set_clock(self, target: str, offset_ms: int) -> None:
        """From now on the target's wall clock reads ``offset_ms`` ahead of the true time (0: true)."""

    def set_clock_rate(self, target: str, offset_ms: int, rate_permille: int) -> None:
        """From now on the target's wall clock reads ``offset_ms`` ahead of the true time and runs
        ``rate_permille`` per mille faster (negative: slower; 0: at the true rate again), continuous
        with what it read until now."""

    def clock_settle_ms(self, target: str) -> int:
        """How long after :meth:`set_clock` returns the target's process may still read the old
        clock (the ``settled_ms`` of the ``clock`` event)."""


@runtime_checkable
class ConsumeStatsReading(Protocol):
    def consume_stats(self, group: str, topics: list[str]) -> dict:
        """After the group's consumers stopped: per queue of ``topics`` (keys
        :func:`reference.contract.queue_key`), the group's committed offset (``offsets``) and the
        broker's max offset (``max_offsets``), as ``snapshot`` event fields of source
        ``consumeStats`` (``reports.stalls`` tells a stalled consumer from a lost message)."""


@runtime_checkable
class ConfigReading(Protocol):
    def broker_config(self) -> dict[str, str]:
        """The running broker's configuration as it reports it (admin ``getBrokerConfig``: keys as
        the broker names them, e.g. ``messageDelayLevel``, ``flushDelayOffsetInterval``), so the
        harness judges against what the broker runs, not what it asked for."""


@runtime_checkable
class Faultable(Protocol):
    """Faults, asked one way (every system answers; :mod:`adapters.parts` is the shared shape)."""

    def cannot(self, action: str, target: str) -> str | None:
        """None when the system can perform the primitive fault ``action`` (one of
        :func:`reference.faults.asked_actions`) on ``target`` now, else why not, in words."""

    def perform(self, action: str, target: str, *args) -> None:
        """Perform a fault family's primitive ``action`` on ``target`` (``reference.faults``:
        ``disk_full`` fills the store to the brim, ``partition`` cuts the broker off, ``latency``
        with its ``delay_ms``...); the process faults and the clock have verbs of their own."""


@runtime_checkable
class TimerCheckpointWatching(Protocol):
    def timer_checkpoint(self) -> dict[str, int] | None:
        """The broker's 5.x timer checkpoint as last flushed (``reference.timer.parse_timer_checkpoint``
        of ``<store>/config/timercheck``), None before it was first written."""


@runtime_checkable
class OffsetFlushWatching(Protocol):
    def persisted_offsets(self) -> list[dict]:
        """What each master's ``delayOffset.json`` holds now (``snapshot`` fields, source
        ``delayOffset.json``); empty before the first write."""

    def last_offset_flush_ms(self) -> int | None:
        """When the broker last persisted its schedule offsets (``delayOffset.json`` written:
        the periodic flush every ``flushDelayOffsetInterval``, or a graceful shutdown), on the
        system's clock; None before the first. Cheap: the harness polls it while it waits."""


@runtime_checkable
class HostWatching(Protocol):
    """What the harness may watch of the system's processes on this host while a run lasts, for
    the stalls that excuse a late attempt (``reference.stalls``, ``harness.hostwatch``)."""

    def watched_processes(self) -> dict[str, int]:
        """The host pid of the root of each process tree of the system that runs now, by subject
        (``broker``, ``broker-2``, ``namesrv``, ``consumer <name>``): its descendants are watched too
        (a launcher's JVM, a container's init's child)."""

    def host_not_observed(self) -> str | None:
        """Why the host its broker runs on cannot be observed from here (an external cluster), or
        None; a system in virtual time says that the host's stalls do not reach it."""


@runtime_checkable
class LogFiles(Protocol):
    """Jepsen's ``LogFiles``: the system's logs, which the runner copies into each run's
    ``RUN/logs/`` at the run's end (``harness.logcopy``). The runner knows no layout: the system
    names its files."""

    def log_files(self) -> dict[str, Path]:
        """Its log files on this host (those that exist now), each by the name of its copy in
        ``RUN/logs/`` (a relative path, ``/``-separated). The broker's own log and its console
        output take the names in :data:`reference.rundir.BROKER_LOGS`, so a failed run's report
        can show their tail."""

    def logs_not_collected(self) -> str | None:
        """What :meth:`log_files` cannot give and why (e.g. an external cluster's broker logs stay
        on its hosts), shown in the report; None when it gives everything."""


@runtime_checkable
class System(Lifecycle, Producing, Consuming, Protocol):
    """What every adapter offers. Pausable, DlqReading, Snapshotting, OffsetFlushWatching and
    LogFiles are optional."""
