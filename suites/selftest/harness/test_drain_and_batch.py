"""The run drains on the model's word, and batches share brokers only where that is fair."""

from __future__ import annotations

from hourglass.harness.batch import job_wait_ms, plan_jobs
from hourglass.harness.summary import scenario_wait_ms
from hourglass.harness.drain import CONSUMER_RECOVERY_MS, drain_state
from hourglass.harness.scenario import COMPRESSED_LEVELS, ConsumerGroup, FaultStep, Message, Profile, Scenario

T0 = 1_700_000_000_000
RUN = {
    "run_id": "r", "scenario": "s", "system": {"adapter": "simulated", "version": "model", "runtime": "virtual"},
    "profile": {"message_delay_level": "1s 2s 3s", "max_reconsume_times": 1, "flush_delay_offset_interval_ms": 10000, "slack_ms": 1000},
    "started_ms": T0, "ended_ms": 0,
}


def send(key, ts, level=0, plan=None, status="SEND_OK"):
    e = {"type": "send", "ts_ms": ts, "key": key, "topic": "T", "delay_level": level, "status": status, "born_ms": ts - 1}
    if plan:
        e["plan"] = plan
    return e


def deliver(key, ts, k, outcome, store=None):
    return {"type": "deliver", "ts_ms": ts, "key": key, "group": "g", "topic": "T", "queue_id": 0, "queue_offset": 0,
            "msg_id": key, "reconsume_times": k, "born_ms": T0, "store_ms": store or ts - 5, "outcome": outcome}


def test_nothing_delivered_waits_for_the_latest_window():
    ev = [send("a", T0, level=3), send("b", T0 + 10, level=1)]
    st = drain_state(RUN, ev, T0 + 100)
    assert st.pending == ("a", "b")
    assert st.deadline_ms == T0 + 3000 + 1000  # level 3 (3 s) + slack, from the send


def test_a_run_waits_for_what_its_resumed_consumers_still_owe():
    """The model's windows judge store times; a consumer the run paused (a fault step: no cause)
    pulls what waited for it only after the resume. Seen: batch-ack-index's resume came 24.7 s after
    its pause, past every window, and the drain ended 70 ms later, three DLQ entries "lost". The
    run waits CONSUMER_REDELIVERY_MS after the harness resumed or started its consumers."""
    from hourglass.harness.drain import CONSUMER_REDELIVERY_MS

    pause = {"type": "fault", "ts_ms": T0 - 100, "action": "pause", "target": "consumer", "step": 0}
    resume = {"type": "fault", "ts_ms": T0 + 24_700, "action": "resume", "target": "consumer", "step": 1}
    ev = [pause, send("a", T0, level=1), resume]
    assert drain_state(RUN, ev[:2], T0 + 100).deadline_ms == T0 + 1000 + 1000  # before the resume: the window's
    assert drain_state(RUN, ev, T0 + 24_800).deadline_ms == T0 + 24_700 + CONSUMER_REDELIVERY_MS
    setup = {"type": "fault", "ts_ms": T0 - 5_000, "action": "start", "target": "consumer", "cause": "scenario", "name": "g-0"}
    assert drain_state(RUN, [setup, send("a", T0, level=1)], T0 + 100).deadline_ms == T0 + 2000  # a setup's start: no wait


def test_consumed_message_is_final():
    ev = [send("a", T0, level=1), deliver("a", T0 + 1010, 0, "OK")]
    st = drain_state(RUN, ev, T0 + 2000)
    assert st.pending == () and st.final == 1


def test_retry_pending_until_the_final_attempt_and_dlq_path_is_final():
    ev = [send("a", T0, plan=["LATER", "LATER"]), deliver("a", T0 + 5, 0, "LATER")]
    st = drain_state(RUN, ev, T0 + 10)
    assert st.pending == ("a",)
    assert st.deadline_ms == T0 + 5 + 3000 + 1000  # retry 1 at level 3 (table max) from the LATER
    ev.append(deliver("a", T0 + 3010, 1, "LATER"))  # max_reconsume_times 1: this LATER goes to the DLQ
    assert drain_state(RUN, ev, T0 + 3020).pending == ()


def test_indeterminate_send_that_never_arrives_is_not_waited_for_after_its_window():
    ev = [send("u", T0, level=1, status="UNKNOWN")]
    assert drain_state(RUN, ev, T0 + 100).pending == ("u",)
    assert drain_state(RUN, ev, T0 + 10_000).pending == ()


def test_failed_send_is_not_waited_for():
    assert drain_state(RUN, [send("f", T0, status="FAILED")], T0).messages == 0


def _sc(name, faults=(), levels=COMPRESSED_LEVELS):
    return Scenario(name, (Message("k", "T"),), (ConsumerGroup("g", ("T",)),), faults, Profile(message_delay_level=levels))


def test_faulting_scenarios_get_their_own_system_others_share_per_table():
    """A broker fault: a system of its own; a kill of the run's own consumers shares (there it
    kills that run's consumers only: shares_a_system)."""
    a, b, c = _sc("a"), _sc("b"), _sc("c", levels="2s 4s")
    k = _sc("k", faults=(FaultStep(10, "kill_restart"),))
    ck = _sc("ck", faults=(FaultStep(10, "kill", "consumer"),))
    jobs = plan_jobs([a, b, c, k, ck], virtual=False)
    assert [j.scenarios for j in jobs if not j.shared] == [(k,)]
    assert sorted([tuple(s.name for s in j.scenarios) for j in jobs if j.shared]) == [("a", "b", "ck"), ("c",)]


def test_grpc_scenarios_share_the_system_of_their_profile_which_runs_a_proxy_for_them():
    """One broker's start for every fault-free scenario of a profile: the gRPC groups' need (a
    proxy) is the system's (Batch._open_and_run: the union of its scenarios' needs)."""
    grpc = [Scenario(n, (Message("k", "T"),), (ConsumerGroup("g", ("T",), mode="grpc-push"),), (), Profile(),
                     requires=("grpc",)) for n in ("g1", "g2")]
    jobs = plan_jobs([_sc("a"), grpc[0], _sc("b"), grpc[1]], virtual=False)
    assert [tuple(s.name for s in j.scenarios) for j in jobs] == [("a", "g1", "b", "g2")]


def test_the_longest_job_takes_a_slot_first():
    """Jobs take the batch's slots in the plan's order: the longest (by the model's waits) first,
    so it does not start last and hold the batch up alone (a shared job counts its longest run, a
    job alone the sum of its runs)."""
    def sc(name, at_ms, faults=(), levels=COMPRESSED_LEVELS):
        return Scenario(name, (Message("k", "T", delay_level=3, at_ms=at_ms),), (ConsumerGroup("g", ("T",)),), faults,
                        Profile(message_delay_level=levels))
    short_fault = sc("k", 0, faults=(FaultStep(10, "kill_restart"),))
    long_fault = sc("k2", 20_000, faults=(FaultStep(10, "kill_restart"),))
    shared = [sc("a", 0), sc("b", 40_000)]
    other_table = sc("c", 5_000, levels="2s 4s 6s")
    jobs = plan_jobs([short_fault, long_fault, *shared, other_table], virtual=False)
    # a kill's job waits for the broker's ready and watches 15 s after it: longer than c's 11 s
    assert [tuple(s.name for s in j.scenarios) for j in jobs] == [("a", "b"), ("k2",), ("k",), ("c",)]
    waits = [job_wait_ms(j) for j in jobs]
    assert waits == sorted(waits, reverse=True) and waits[0] == scenario_wait_ms(shared[1])


def test_the_first_job_sets_its_system_up_alone_and_the_others_start_once_it_is_up(tmp_path, monkeypatch):
    """Three systems starting at once on 2 cores took 29 s to bring the longest job's up (batch.FirstSetUp):
    the other jobs' systems start once the first one's is set up, each in its own slot then."""
    import threading
    import time
    from types import SimpleNamespace

    from hourglass.harness import batch as batch_mod
    from hourglass.harness.systems import SystemSpec

    setups, lock = [], threading.Lock()

    class Fake:
        def __init__(self, name):
            self.name = name
            self.clock = SimpleNamespace(now_ms=lambda: int(time.time() * 1000))
            self.info = SimpleNamespace(details={}, version="fake")

        def setup(self):
            began = time.monotonic()
            time.sleep(0.3)
            with lock:
                setups.append((self.name, began, time.monotonic()))
            raise RuntimeError("no broker here")  # the job ends broken: enough to see when its setup ran

        def teardown(self):
            pass

    def opened(spec, profile, workdir, **kw):
        return Fake(workdir.name)

    monkeypatch.setattr(batch_mod, "open_system", opened)
    def sc(name, at_ms, faults=()):
        return Scenario(name, (Message("k", "T", delay_level=3, at_ms=at_ms),), (ConsumerGroup("g", ("T",)),), faults,
                        Profile(message_delay_level=COMPRESSED_LEVELS))
    scenarios = [sc("a", 40_000), sc("k", 0, faults=(FaultStep(10, "kill_restart"),)),
                 sc("k2", 0, faults=(FaultStep(10, "kill_restart"),))]
    b = batch_mod.Batch(scenarios, batch_mod.BatchOptions(SystemSpec("rocketmq:5.5.0"), tmp_path, max_systems=3, progress=False))
    b.run()
    first, *others = sorted(setups, key=lambda x: x[1])
    assert first[0].startswith("job00") and len(others) == 2
    assert all(o[1] >= first[2] for o in others), setups  # after the first one's setup ended
    assert abs(others[0][1] - others[1][1]) < 0.25  # then side by side, each in its slot
    assert set(b.errors) == {"a", "k", "k2"} and "no broker here" in b.errors["a"]


def test_virtual_systems_run_each_scenario_alone():
    jobs = plan_jobs([_sc("a"), _sc("b")], virtual=True)
    assert [len(j.scenarios) for j in jobs] == [1, 1] and not any(j.shared for j in jobs)


def test_after_a_broker_restart_the_run_waits_for_consumers_to_recover():
    from hourglass.harness.drain import CONSUMER_RECOVERY_MS

    ready = {"type": "fault", "ts_ms": T0 + 500, "action": "ready", "target": "broker"}
    st = drain_state(RUN, [send("a", T0, level=1), ready], T0 + 600)
    assert st.pending == ("a",) and st.deadline_ms >= T0 + 500 + CONSUMER_RECOVERY_MS


def test_a_run_waits_for_a_consumer_that_died_until_its_replacement_had_time_to_be_redelivered():
    """Seen under a starved broker: a broadcasting instance's replacement started 69 s after its
    death and the run had ended 30 s before, its messages judged lost. While a consumer that died
    is down the run waits on; after its replacement's start, CONSUMER_REDELIVERY_MS more."""
    from hourglass.harness.drain import CONSUMER_REDELIVERY_MS
    from hourglass.reference.contract import consumer_fault

    died = consumer_fault("kill", T0 + 1_000, "g-1", "g", "died")
    back = consumer_fault("start", T0 + 69_000, "g-1", "g", "died")
    ev = [send("a", T0, level=1), died]
    for now in (T0 + 30_000, T0 + 60_000):  # down: the deadline moves on with the clock
        st = drain_state(RUN, ev, now)
        assert st.pending == ("a",) and st.deadline_ms == now + CONSUMER_REDELIVERY_MS
    st = drain_state(RUN, [*ev, back], T0 + 70_000)
    assert st.deadline_ms == T0 + 69_000 + CONSUMER_REDELIVERY_MS
    # a consumer the scenario started is no death; the window alone decides
    joined = consumer_fault("start", T0 + 500, "g-1", "g", "scenario")
    assert drain_state(RUN, [send("a", T0, level=1), joined], T0 + 600).deadline_ms == T0 + 1000 + 1000


def test_an_overdue_fault_step_goes_before_overdue_sends():
    """A send to a paused broker blocks the timeline for the send timeout: five such sends held a
    kill planned 1.5 s after the pause back by 15 s (4.9.7 in CI). When the timeline is behind,
    the overdue step goes first, then the sends in their order; on time, the earliest goes first."""
    import heapq

    from hourglass.harness.runner import _next_due

    timeline = []
    for when, kind, order, item in [(100, 1, 0, "send a"), (130, 1, 1, "send b"), (150, 0, 2, "kill"), (160, 1, 3, "send c"),
                                    (400, 0, 4, "start")]:
        heapq.heappush(timeline, (when, kind, order, item))
    assert _next_due(timeline, 100)[3] == "send a"  # on time: nothing overdue but the earliest
    assert [_next_due(timeline, 900)[3] for _ in range(4)] == ["kill", "start", "send b", "send c"]


def test_a_scenarios_own_wait_counts_a_consumer_pause_and_a_batch_mates_send_back():
    """The estimate (harness.summary.scenario_wait_ms: the ETA, the order of the jobs) of a batch
    consumer paused while its backlog is sent: its chains start at the resume, and a message whose
    last attempt shares a batch with a failure is sent back once more (processConsumeResult sends
    back every message after the ack index). Measured on 5.5.0: the last delivery of batch-ack-index
    came 13.05 s after its first send (its third attempts at level 5, the batch's asked level); the
    estimate without either said 8.6 s."""
    from hourglass.harness.catalogue.conformance import batch_ack_index

    levels = ConsumerGroup("g", ("T",), batch_size=4)
    plain = Scenario("s", (Message("a", "T", at_ms=0, plan=("LATER:5", "OK")),), (levels,), (), Profile())
    # level 5, then once more at the highest level the group's failures ask for (5; the default 3 + 1 is lower)
    assert scenario_wait_ms(plain) == 5_000 + 5_000 + plain.drain_margin_ms
    paused = Scenario("p", plain.messages, (levels,), (FaultStep(0, "pause", "consumer"), FaultStep(3_000, "resume", "consumer")),
                      Profile())
    assert scenario_wait_ms(paused) == 3_000 + 5_000 + 5_000 + paused.drain_margin_ms
    single = Scenario("one", plain.messages, (ConsumerGroup("g", ("T",)),), (), Profile())
    assert scenario_wait_ms(single) == 5_000 + single.drain_margin_ms  # no batch: its own plan only
    assert 13_000 <= scenario_wait_ms(batch_ack_index()) - batch_ack_index().drain_margin_ms <= 14_000


def test_a_scenarios_own_wait_counts_its_brokers_restart_and_the_duplicate_watch_after_it():
    """Measured on 5.5.0 (process runtime): graceful-restart-while-due and kill9-during-delivery ran
    44 and 46 s, estimated 12.8 and 9.4 s (the broker's stop, its start and the 15 s the drain
    watches for scheduler duplicates after its ready left out), and the ETA of the main job was
    20-43 % short from its first minute. What falls due while the broker is down is taken at its
    ready and first re-put pass; a graceful stop takes STOP_ESTIMATE_MS before the start."""
    from hourglass.harness.drain import DUPLICATE_WATCH_MS
    from hourglass.harness.summary import READY_ESTIMATE_MS, STOP_ESTIMATE_MS, broker_outages_ms
    from hourglass.reference.profile import FIRST_DELAY_MS

    def sc(faults, at_ms=0):
        return Scenario("s", (Message("k", "T", delay_level=3, at_ms=at_ms),), (ConsumerGroup("g", ("T",)),), faults, Profile())

    killed = sc((FaultStep(1_000, "kill_restart"),))
    assert broker_outages_ms(killed) == [(1_000, 1_000 + READY_ESTIMATE_MS, True)]
    assert scenario_wait_ms(killed) == 1_000 + READY_ESTIMATE_MS + DUPLICATE_WATCH_MS
    stopped = sc((FaultStep(1_000, "restart", duration_ms=2_000),))
    ready = 1_000 + STOP_ESTIMATE_MS + READY_ESTIMATE_MS
    assert broker_outages_ms(stopped) == [(1_000, ready, True)]
    assert scenario_wait_ms(stopped) == ready + DUPLICATE_WATCH_MS
    # a message due (at 3 s) in the outage is taken at the ready and its first pass; a long wait of its own decides
    late = sc((FaultStep(1_000, "outage", duration_ms=60_000),))
    assert scenario_wait_ms(late) == 1_000 + 60_000 + READY_ESTIMATE_MS + DUPLICATE_WATCH_MS
    paused = sc((FaultStep(1_000, "pause", duration_ms=5_000),))  # frozen, resumed: no start, no duplicate watch
    assert broker_outages_ms(paused) == [(1_000, 6_000, False)]
    assert scenario_wait_ms(paused) == 6_000 + FIRST_DELAY_MS + paused.drain_margin_ms
    assert scenario_wait_ms(sc(())) == 3_000 + sc(()).drain_margin_ms  # no fault: the message's own wait


def test_a_start_under_a_cpu_quota_is_ready_as_late_as_its_cpu_allows_and_a_pause_then_kill_is_a_kill():
    """CI's chaos batch ran timer-spread-whiledue-pausekill-throttled last and alone (+129 s): its
    throttled start (the quota, then the start, then the lift: the start is no step's last primitive)
    never ended the outage, so the estimate left the broker's 40-85 s start out. A start under a
    quota of q thousandths of one CPU is ready START_CPU_MS x 1000 / q after it at the soonest; a
    pause, then a kill is a kill (the run watches for duplicates after the ready); a slow start's
    resume is ready no sooner than its start's ready."""
    from hourglass.harness.drain import DUPLICATE_WATCH_MS
    from hourglass.harness.summary import READY_ESTIMATE_MS, START_CPU_MS, broker_outages_ms
    from hourglass.harness.scenario import FaultAnchor

    prev = FaultAnchor("previous")

    def sc(faults):
        return Scenario("s", (Message("k", "T", delay_level=3),), (ConsumerGroup("g", ("T",)),), faults, Profile())

    throttled = sc((FaultStep(1_000, "pause"), FaultStep(1_500, "kill", after=prev),
                    FaultStep(1_000, "throttled_start", duration_ms=1, cpu_permille=100, after=prev)))
    ready = 3_500 + START_CPU_MS * 1000 // 100
    assert ready - 3_500 > READY_ESTIMATE_MS
    assert broker_outages_ms(throttled) == [(1_000, ready, True)]
    assert scenario_wait_ms(throttled) == ready + DUPLICATE_WATCH_MS
    full = sc((FaultStep(1_000, "kill"), FaultStep(1_000, "throttled_start", duration_ms=1, cpu_permille=1000, after=prev)))
    assert broker_outages_ms(full) == [(1_000, 2_000 + READY_ESTIMATE_MS, True)]  # a whole CPU: an ordinary start
    slow = sc((FaultStep(1_000, "kill"), FaultStep(1_000, "slow_start", duration_ms=3_000, after=prev)))
    assert broker_outages_ms(slow) == [(1_000, 2_000 + READY_ESTIMATE_MS, True)]  # resumed at 5 s, ready later


def test_a_batch_run_again_into_the_same_output_gets_systems_of_its_own(tmp_path):
    """The runs that did not pass run again as a batch of their own into the same output: a broker of
    that batch must not start on the store of the attempt before (seen under the load generator:
    batch-ack-index, alone on its system with its names unprefixed, was delivered the first
    attempt's messages 762 s "early", and convicted of five invariants)."""
    from hourglass.harness.batch import Batch, BatchOptions, job_workdir
    from hourglass.harness.systems import SystemSpec

    scenarios = [_sc("a"), _sc("k", faults=(FaultStep(10, "kill_restart"),))]
    opts = BatchOptions(SystemSpec("rocketmq:latest", "process"), tmp_path)
    first, again = Batch(scenarios, opts), Batch(scenarios, opts)
    dirs = [job_workdir(tmp_path, b.token, i, j) for b in (first, again) for i, j in enumerate(b.jobs)]
    assert len(set(dirs)) == len(dirs) and all(d.is_relative_to(tmp_path / "_systems") for d in dirs)


def test_a_scenario_whose_faults_act_on_its_own_consumers_only_shares_its_profiles_system():
    """batch-ack-index pauses its consumer while its backlog is sent: on a shared system that pause
    acts on its own consumers only (harness.faults.FaultDriver's ``consumers``), so it shares the
    system; a broker, name server or network fault, or a consumer fault that is no process verb,
    keeps a system of its own."""
    from hourglass.harness.batch import shares_a_system
    from hourglass.harness.catalogue.conformance import batch_ack_index
    from hourglass.harness.scenario import FaultAnchor

    def sc(name, *faults):
        return Scenario(name, (Message("k", "T", delay_level=1),), (ConsumerGroup("g", ("T",)),), faults, Profile())

    assert shares_a_system(batch_ack_index()) and shares_a_system(sc("none"))
    assert shares_a_system(sc("killed", FaultStep(0, "outage", "consumer", 1_000)))
    for alone in (sc("broker", FaultStep(0, "pause", "broker")), sc("namesrv", FaultStep(0, "kill", "namesrv")),
                  sc("slow", FaultStep(0, "slow_start", "consumer", 1_000)),
                  sc("both", FaultStep(0, "pause", "consumer"), FaultStep(0, "kill", "broker")),
                  sc("anchored", FaultStep(0, "kill", "consumer", after=FaultAnchor("flush")))):
        assert not shares_a_system(alone), alone.name
    jobs = plan_jobs([batch_ack_index(), sc("plain"), sc("broker", FaultStep(0, "pause", "broker", 1_000))], virtual=False)
    assert sorted(tuple(sorted(s.name for s in j.scenarios)) for j in jobs) == [("batch-ack-index", "plain"), ("broker",)]


def _stall(thread: str, from_ms: int, ms: int, psi_ms: int | None = None) -> list[dict]:
    """``thread`` of the broker waited ``ms`` for a CPU from ``from_ms``; the host's CPU pressure saw ``psi_ms`` of it."""
    return [{"type": "stall", "ts_ms": from_ms + ms, "source": "run-queue", "subject": "broker", "from_ms": from_ms,
             "stalled_ms": ms, "detail": f"thread {thread}"},
            {"type": "stall", "ts_ms": from_ms + ms, "source": "psi-cpu", "subject": "host", "from_ms": from_ms,
             "stalled_ms": ms if psi_ms is None else psi_ms, "full_ms": 0}]


def test_a_run_waits_longer_for_an_attempt_as_far_as_stalls_on_its_path_held_it_back():
    """Proof C (2026-11-29, 5.5.0, the broker starved 6 s in every 20 s): dlq-default's third retry
    was stored in time and reached its consumer 6.2 s later, its dispatch and schedule threads
    waiting for a CPU; the drain had given up 0.5 s before it came, and the message, retried on
    after the run's end, was judged lost. The wait grows by what the recorded, corroborated stalls
    on its path explain since it was due — and by nothing else."""
    ev = [send("a", T0, level=1)]  # due at +1000, window closes at +2000
    assert drain_state(RUN, ev, T0 + 3000).deadline_ms == T0 + 2000
    held = _stall("ReputMessageService", T0 + 1000, 2500)
    assert drain_state(RUN, ev, T0 + 3000, held, cpus=2).deadline_ms == T0 + 2000 + 2000  # 2000 of it by +3000
    assert drain_state(RUN, ev, T0 + 6000, held, cpus=2).deadline_ms == T0 + 2000 + 2500
    # a broker held for as long as the load lasts: waited for as after an outage, no longer
    endless = _stall("ScheduleMessage", T0 + 1000, 600_000)
    assert drain_state(RUN, ev, T0 + 601_000, endless, cpus=2).deadline_ms == T0 + 2000 + CONSUMER_RECOVERY_MS
    # a compiler's wait, a wait the host did not see, one before the attempt was due, or the
    # consumer's own (niced: on a busy host it waits nearly all the time): no longer
    for stalls in (_stall("C2 CompilerThread", T0 + 1000, 2500), _stall("ScheduleMessage", T0 + 1000, 2500, psi_ms=100),
                   _stall("ScheduleMessage", T0, 900),
                   [dict(e, subject="consumer-g-0", detail="thread ConsumeMessageThread_1") if e["source"] == "run-queue" else e
                    for e in _stall("ConsumeMessageThread_1", T0 + 1000, 2500)]):
        assert drain_state(RUN, ev, T0 + 6000, stalls, cpus=2).deadline_ms == T0 + 2000, stalls


def test_a_broadcasting_instance_waits_for_its_own_copy_whatever_its_twin_answered():
    """Proof C (2026-11-29, 5.5.0): broadcast-instance-crash's instance 1 died on BC-06 and its
    replacement was not up before the run ended, because its twin's OK had made BC-06 "final": the
    drain counted a message per key, not per judging unit (reference.modes.unit_group). Every unit
    owes its own end; another group's answer ends nothing of this one's."""
    run = {**RUN, "profile": {**RUN["profile"], "broadcasting_groups": {"g": 2}}}
    ev = [send("a", T0), dict(deliver("a", T0 + 100, 0, "OK"), group="g@0")]
    st = drain_state(run, ev, T0 + 200)
    assert st.pending == ("a",) and (st.messages, st.final) == (1, 0)
    assert st.deadline_ms == T0 + 1000  # level 0: its window closes at the send + slack
    st = drain_state(run, [*ev, dict(deliver("a", T0 + 300, 0, "OK"), group="g@1")], T0 + 400)
    assert st.pending == () and (st.messages, st.final) == (1, 1)


def test_the_other_jobs_start_once_the_first_job_s_runs_are_past_their_setup():
    """Started once the first job's broker was up, the other jobs' brokers took the cores from its
    proxy and its gRPC groups' JVMs (batch.FirstSetUp): they wait for its runs to be set up, and the
    batch is not settled (no Spark start) while they wait."""
    import threading
    import time

    from hourglass.harness.batch import FirstSetUp

    ready = threading.Event()
    first = FirstSetUp(threading.Event(), ready.is_set)
    started = threading.Event()
    waiter = threading.Thread(target=lambda: (first.wait(), started.set()))
    waiter.start()
    time.sleep(0.5)
    assert not started.is_set() and first.waiting == 1  # the first job's broker may be up: not enough
    ready.set()
    assert started.wait(2)
    waiter.join(2)
    assert first.waiting == 0


def test_the_other_jobs_wait_for_the_first_only_when_it_is_the_longest_path():
    """The conformance suite's shared job (91 s) outlasts its two short jobs in the other slot: they
    wait for its start. The main job's other jobs (38 + 30 + 16 + 12 s, one after the other in the
    second slot) outlast it: holding them back lengthened the batch (197 s instead of 175 s)."""
    from hourglass.harness.batch import first_job_critical
    from hourglass.harness.catalogue.chaos import SHORT
    from hourglass.harness.catalogue.conformance import CONFORMANCE

    assert first_job_critical(plan_jobs(list(CONFORMANCE), False), 2)
    assert not first_job_critical(plan_jobs(list(CONFORMANCE) + list(SHORT), False), 2)
    assert first_job_critical(plan_jobs(list(CONFORMANCE) + list(SHORT), False), 5)  # a slot each: the longest is first
