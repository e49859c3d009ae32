"""Generated chaos: hypothesis strategies for workloads, consumer plans and fault schedules.

Against the simulated broker the strategies drive property tests with shrinking. Real brokers are
not deterministic, so there the same strategies only *generate* (no shrinking): ``sample(seed,
count)`` gives the same scenarios for the same seed, which the nightly job runs and checks
afterwards (``python -m hourglass run --suite generated --seed 7 --count 10``).
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hyp_seed
from hypothesis import strategies as st

from hourglass.harness.scenario import ConsumerGroup, FaultAnchor, FaultStep, Message, Profile, Scenario
from hourglass.reference.cluster import SINGLE
from hourglass.reference.contract import ASYNC_DELIVER, TIMER
from hourglass.reference.levels import parse_level_table
from hourglass.reference.limits import body_refusal
from hourglass.reference.modes import BROADCASTING, CONCURRENTLY, ORDERLY
from hourglass.reference.orderly import dlq_wait_ms
from hourglass.reference.plans import LATER, is_later, later_word

#: a small table keeps generated runs short on real brokers; retry levels clamp to its maximum
GENERATED_LEVELS = "1s 2s 3s 4s 5s 6s"
TOPIC = "Gen"

#: a LATER, also one that asks for its retry's level (LATER:n; -1: the DLQ at once)
laters = st.one_of(st.just("LATER"), st.integers(-1, 8).map(later_word))
plans = st.one_of(
    st.just(()),
    st.lists(st.one_of(laters, st.just("CRASH")), max_size=3).map(lambda xs: tuple(xs) + ("OK",)),
    st.integers(3, 4).map(lambda n: ("LATER",) * n),  # to the DLQ with max_reconsume_times 2/3
)


#: the generated profile's timerMaxDelaySec and maxMessageSize: their edges are seconds and kilobytes away
GENERATED_MAX_DELAY_SEC = 12
GENERATED_MAX_SIZE = 8 * 1024
#: delay levels, at the table's and a Java int's edges too (reference.limits)
_LEVELS = (0, 1, 2, 3, 4, 5, 6, 7, 9, -1, 2**31 - 1)
#: a timer message through each client API (reference.timer), near now, in the past, at and beyond
#: timerMaxDelaySec, at a Java long's edge
_TIMERS = st.one_of(
    st.integers(-2_000, 9_000).map(lambda v: {"deliver_after_ms": v}),
    st.sampled_from((0, 1, 3, GENERATED_MAX_DELAY_SEC, GENERATED_MAX_DELAY_SEC + 1, 2**63 - 1)).map(lambda v: {"delay_time_sec": v}),
    st.sampled_from((500, 2_500, GENERATED_MAX_DELAY_SEC * 1000, GENERATED_MAX_DELAY_SEC * 1000 + 1, -(2**63))).map(
        lambda v: {"delay_time_ms": v}),
)
#: bodies, at the edges of the client's and the generated broker's limits now and then
_BODIES = st.one_of(st.integers(1, 512), st.sampled_from((0, 1, GENERATED_MAX_SIZE, GENERATED_MAX_SIZE + 1)))


@st.composite
def messages(draw, max_messages: int = 25, span_ms: int = 6_000, timers: bool = False):
    """A workload; with ``timers``, some of it 5.x timer messages, among them now and then a
    backlog falling due in one slot."""
    n = draw(st.integers(1, max_messages))
    out = []
    for i in range(n):
        timer = draw(st.one_of(st.none(), st.none(), _TIMERS)) if timers else None
        out.append(
            Message(
                key=f"g{i:03d}",
                topic=TOPIC,
                at_ms=draw(st.integers(0, span_ms)),
                delay_level=0 if timer else draw(st.sampled_from(_LEVELS)),
                body_size=draw(_BODIES),
                plan=draw(plans),
                **(timer or {}),
            )
        )
    if draw(st.integers(0, 3)) == 0:  # low rates on several levels: each level's task waits for its next head
        every = draw(st.integers(400, 1_500))
        for n, level in enumerate(draw(st.lists(st.sampled_from((1, 2, 3, 4)), min_size=2, max_size=3, unique=True))):
            out += [Message(f"r{level}-{i:02d}", TOPIC, at_ms=t + n * every // 3, delay_level=level)
                    for i, t in enumerate(range(0, span_ms, every))]
    if timers and draw(st.booleans()):  # a backlog in one slot: sent together, due together
        at, after = draw(st.integers(0, span_ms)), draw(st.integers(2_000, 8_000))
        out += [Message(f"s{i:03d}", TOPIC, at_ms=at, deliver_after_ms=after) for i in range(draw(st.integers(5, 30)))]
    return tuple(sorted(out, key=lambda m: m.at_ms))


#: steps after which the broker answers again through a start (a ``ready`` to time the next from)
_RESTARTS_BROKER = ("kill_restart", "restart", "outage", "throttled_start")
#: a start short of CPU (reference.faults.cpu): the quotas drawn, thousandths of one CPU
_THROTTLES = (100, 250, 500)


#: the process faults a cluster's second broker takes (reference.cluster)
_SECOND_BROKER_FAULTS = (("kill_restart", "broker-2"), ("outage", "broker-2"), ("pause", "broker-2"))
#: what a single broker's machine does to it beside its process faults (reference.disk, reference.network)
_MACHINE_FAULTS = (("disk_full", "broker"), ("partition", "broker"), ("loss", "broker"))


@st.composite
def fault_schedules(draw, span_ms: int = 12_000, max_faults: int = 3, levels: tuple[int, ...] = (), cluster: str = SINGLE,
                    timers: bool = False):
    """Fault steps timed from the start of the run, or — as a persistence bug needs — from what the
    broker did: the first step from the n-th re-put of a level the workload sends (``levels``: the
    clamped delay levels of the messages, one entry per message), later steps from the broker's
    ``ready`` after a restart, from an offset flush, or from the previous step. A single broker's
    store may fill up, its network be cut or lose packets, its clock step; in a ``cluster``
    (reference.cluster) the second broker is killed, taken down or frozen instead. With ``timers``,
    a later step may be timed from the timer checkpoint's flush (``timer_flush``)."""
    steps = []
    t = draw(st.integers(500, 3_000))
    for i in range(draw(st.integers(0, max_faults))):
        action, target = draw(st.sampled_from((
            ("kill_restart", "broker"), ("restart", "broker"), ("outage", "broker"), ("pause", "broker"),
            ("outage", "namesrv"), ("outage", "consumer"), ("throttled_start", "broker"),
        ) + ((("clock", "broker"),) + _MACHINE_FAULTS if cluster == SINGLE else _SECOND_BROKER_FAULTS)))
        duration = 0 if action == "kill_restart" else draw(st.integers(500, 8_000))
        # reference.clock: a step of the broker's clock ahead or back, undone after the duration; the
        # only fault of its scenario (harness.scenario refuses a step back beside delayed deliveries)
        if action == "clock" and i > 0:
            action, target = "outage", "namesrv"
        offset = draw(st.integers(1_000, 20_000)) * draw(st.sampled_from((1, -1))) if action == "clock" else 0
        gap = draw(st.integers(3_000, 8_000))  # the broker is ready again before the next fault
        after, at_ms = None, t
        anchoring = draw(st.sampled_from(("start", "broker")))
        if anchoring == "broker" and i == 0 and levels:
            level = draw(st.sampled_from(sorted(set(levels))))
            count = draw(st.integers(1, min(3, levels.count(level))))
            after, at_ms = FaultAnchor("reput", level=level, count=count), draw(st.integers(0, 1_500))
        elif anchoring == "broker" and i > 0:
            prev = steps[-1]
            if prev.action in _RESTARTS_BROKER and prev.target == "broker":
                after, at_ms = FaultAnchor("ready"), draw(st.integers(0, 2_000))
            elif draw(st.booleans()):
                event = draw(st.sampled_from(("flush", "timer_flush"))) if timers else "flush"
                after, at_ms = FaultAnchor(event), draw(st.integers(0, 1_000))
            else:
                after, at_ms = FaultAnchor("previous"), prev.duration_ms + gap
        loss = draw(st.integers(10, 60)) if action == "loss" else 0
        if action == "throttled_start":  # a stop (graceful or kill -9), then the start short of CPU
            steps.append(FaultStep(at_ms=at_ms, action=draw(st.sampled_from(("stop", "kill"))), target=target, after=after))
            after, at_ms, duration = FaultAnchor("previous"), draw(st.integers(200, 2_000)), 1
        steps.append(FaultStep(at_ms=at_ms, action=action, target=target, duration_ms=duration, after=after,
                               offset_ms=offset, loss_percent=loss,
                               cpu_permille=draw(st.sampled_from(_THROTTLES)) if action == "throttled_start" else 0))
        t += duration + gap
        if t > span_ms or action == "clock":
            break
    return tuple(steps)


def _clamped(level: int) -> int:
    return min(level, len(GENERATED_LEVELS.split()))


@st.composite
def chaos_scenarios(draw, name: str = "generated", clusters: tuple[str, ...] = (SINGLE,)):
    """A generated scenario on one of ``clusters`` (the simulator runs a single broker; real
    brokers any topology: :func:`sample`)."""
    mrt = draw(st.sampled_from((2, 3)))
    timers = draw(st.sampled_from((False, False, True)))  # 5.x timer messages (a 4.9.x system skips the scenario)
    msgs = draw(messages(timers=timers))
    cluster = draw(st.sampled_from(clusters))
    async_deliver = draw(st.booleans())  # the schedule service's asynchronous delivery
    mode = draw(st.sampled_from((CONCURRENTLY, CONCURRENTLY, ORDERLY, BROADCASTING)))  # reference.modes
    orderly = mode == ORDERLY
    if mode != CONCURRENTLY:  # an orderly or broadcasting listener asks for no level
        msgs = tuple(replace(m, plan=tuple(LATER if is_later(w) else w for w in m.plan)) for m in msgs)
    instances = draw(st.integers(1, 2))
    # a rebalance: the group's second instance joins late, leaves, or leaves and joins again
    moves = draw(st.sampled_from(("none", "none", "join", "leave", "leave-join"))) if instances == 2 and mode != BROADCASTING else "none"
    first = draw(st.integers(0, 6_000)) if moves != "none" else None
    second = first + draw(st.integers(500, 6_000)) if moves == "leave-join" else None
    group = ConsumerGroup("cg-gen", (TOPIC,), instances=instances, max_reconsume_times=mrt,
                          batch_size=1 if mode != CONCURRENTLY else draw(st.sampled_from((1, 1, 4))),  # ack index
                          retry_max_times=draw(st.sampled_from((None, 1, 5))),  # the broker's, which the client's beats
                          mode=mode, suspend_ms=draw(st.sampled_from((None, 200, 2_000))) if orderly else None,
                          join_at_ms=first if moves == "join" else second,
                          leave_at_ms=first if moves in ("leave", "leave-join") else None)
    return Scenario(
        name=name,
        messages=msgs,
        consumers=(group,),
        # a re-put anchors only on what the broker stores (a refused body is never re-put)
        faults=draw(fault_schedules(levels=tuple(_clamped(m.delay_level) for m in msgs if m.delay_level > 0
                                                 and body_refusal(m.body_size, GENERATED_MAX_SIZE) is None),
                                    cluster=cluster, timers=timers)),
        profile=Profile(message_delay_level=GENERATED_LEVELS, max_reconsume_times=mrt,
                        flush_delay_offset_interval_ms=draw(st.sampled_from((1_000, 10_000))), cluster=cluster,
                        schedule_async_deliver=async_deliver, timer_max_delay_sec=GENERATED_MAX_DELAY_SEC,
                        max_message_size=GENERATED_MAX_SIZE),
        requires=((ASYNC_DELIVER,) if async_deliver else ()) + ((TIMER,) if timers else ()),
        description="generated by harness.catalogue.generate",
        # 4.9.x stores an orderly DLQ copy only after level 3 + count (reference.orderly)
        drain_margin_ms=dlq_wait_ms(mrt, parse_level_table(GENERATED_LEVELS)) + 3_000 if orderly else 3_000,
    )


def sample(seed: int, count: int, clusters: tuple[str, ...] = (SINGLE,)) -> list[Scenario]:
    """``count`` scenarios, the same for the same seed (generation only: no shrinking), on one of
    ``clusters`` each (real brokers: ``CLUSTERS``)."""
    out: list[Scenario] = []

    @settings(max_examples=count, phases=[Phase.generate], database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @hyp_seed(seed)
    @given(chaos_scenarios(clusters=clusters))
    def collect(scenario):
        out.append(scenario)

    collect()
    seen: set = set()
    unique = []
    for s in out:  # hypothesis may repeat small examples
        sig = (s.messages, s.faults, s.consumers, s.profile)
        if sig not in seen:
            seen.add(sig)
            unique.append(s)
    return [_named(s, f"gen-{seed}-{i:02d}", seed) for i, s in enumerate(unique[:count])]


def _named(s: Scenario, name: str, seed: int) -> Scenario:
    from dataclasses import replace

    return replace(s, name=name, seed=seed)
