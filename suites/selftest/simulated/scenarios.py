"""Scenario shapes for the simulator's selftests: one that exposes each defect, and random ones with
faults (seeded) for the clean simulator."""

from __future__ import annotations

import random

from hourglass.adapters.simulated.defects import Defect
from suites.selftest.simulated.driver import Fault, Send

LEVELS = "1s 2s 3s 4s 5s"


def exposing(defect: Defect) -> tuple[list[Send], list[Fault], dict]:
    """A scenario (sends, faults, run options) on which ``defect`` must break its invariant."""
    steady = [Send(i * 50, f"d{i}", delay_level=1 + i % 5) for i in range(40)]
    if defect is Defect.NO_LEVEL_CLAMPING:
        return [Send(0, "above-max", delay_level=9), Send(10, "far-above", delay_level=99)], [], {}
    if defect is Defect.WRONG_RETRY_LEVEL:
        return [Send(0, "retry", plan=("LATER", "LATER", "OK"))], [], {}
    if defect is Defect.ASYNC_SKIP_AFTER_RESENDS:
        # asynchronous delivery; the store full for 4 s while level-1 and level-2 messages fall due:
        # the head's 7th resend comes 2.8 s after its first failure
        sends = [Send(i * 50, f"a{i}", delay_level=1 + i % 2) for i in range(20)]
        return sends, [Fault(1000, "disk_full"), Fault(5000, "disk_free")], {"schedule_async_deliver": True}
    if defect is Defect.GROUP_RETRY_MAX_TIMES_WINS:
        return [Send(0, "thrice", plan=("LATER",) * 3 + ("OK",))], [], {"group_retry_max_times": 1}
    if defect is Defect.CHOSEN_LEVEL_IGNORED:
        return [Send(0, "asks-5", plan=("LATER:5", "OK")), Send(10, "asks-dlq", plan=("LATER:-1",))], [], {}
    if defect is Defect.ACK_INDEX_OFF_BY_ONE:
        # a backlog (the consumer paused while it is sent) pulled as batches of 4; every third message
        # answers LATER once
        sends = [Send(100 + i * 10, f"b{i}", plan=("LATER", "OK") if i % 3 == 1 else ()) for i in range(24)]
        return sends, [Fault(0, "pause", "consumer"), Fault(1000, "resume", "consumer")], {"batch_size": 4}
    if defect in (Defect.ORDERLY_PASSES_FAILING, Defect.ORDERLY_COUNT_NOT_RAISED):
        # an orderly group (suspend 500 ms): in each of the 4 queues a failing message with others behind it
        sends = [Send(i * 20, f"o{i}", plan=("LATER", "LATER", "OK") if i < 4 else ()) for i in range(16)]
        return sends, [], {"orderly_suspend_ms": 500}
    if defect is Defect.BROADCAST_FAILURE_RETRIED:
        # a broadcasting group of two instances; every third message answers LATER (dropped)
        sends = [Send(i * 50, f"b{i}", plan=("LATER", "OK") if i % 3 == 0 else ()) for i in range(9)]
        return sends, [], {"broadcasting": True, "consumers_per_group": 2}
    if defect is Defect.CLEAN_UP_RUNS_ONCE:
        # a consumeTimeout of 1 minute; messages held on their first attempt or their retry, with
        # others behind them; the drain outlasts the latest clean-up (2 minutes after a hold began)
        sends = [Send(i * 50, f"t{i}", plan=("LATER", "SLOW", "OK") if i % 2 == 0 else ("SLOW",)) for i in range(8)]
        return sends, [], {"consume_timeout_min": 1, "drain_ms": 200_000}
    if defect in (Defect.POP_UNACKED_NEVER_REVIVED, Defect.POP_REVIVE_IGNORES_CHANGE, Defect.POP_WRONG_BACKOFF_STEP):
        # a POP group (invisible 5 s): copies held past it (SLOW: revived 5 s after their pop) and
        # answered LATER (changed to 10 s from the answer), the second LATER at 30 s
        sends = [Send(i * 50, f"p{i}", plan=(("SLOW", "OK"), ("LATER", "OK"), ("LATER", "LATER", "OK"), ())[i % 4])
                 for i in range(8)]
        return sends, [], {"pop_invisible_ms": 5000}
    if defect is Defect.POP_COUNT_RESET_ON_RESTART:
        # a POP group's copies invisible (20 s) across a graceful restart of the broker
        sends = [Send(i * 50, f"p{i}", plan=(("SLOW", "OK"), ("LATER", "OK"))[i % 2]) for i in range(6)]
        return sends, [Fault(2000, "stop"), Fault(3000, "start")], {"pop_invisible_ms": 20_000}
    if defect is Defect.SKIPPED_DLQ:
        return [Send(0, "to-dlq", plan=("LATER",) * 3)], [], {"max_reconsume_times": 2}
    if defect is Defect.REORDER_WITHIN_LEVEL:
        return [Send(i * 20, f"burst{i}", delay_level=2) for i in range(10)], [], {}
    if defect in (Defect.LOST_ON_RESTART, Defect.OFFSETS_REWOUND_ON_RESTART):
        # re-puts before a graceful restart (rewound: repeated), messages waiting across it (lost)
        late = [Send(2600 + i * 10, f"w{i}", delay_level=5) for i in range(5)]
        return steady + late, [Fault(3000, "stop"), Fault(4000, "start")], {}
    if defect is Defect.TIMER_CHECKPOINT_IGNORED:
        # timers put 1-4 s in, a kill long after the checkpoint covered them
        sends = [Send(i * 100, f"tc{i}", deliver_after_ms=1000 + i * 150) for i in range(20)]
        return sends, [Fault(12_000, "kill"), Fault(13_000, "start")], {}
    if defect is Defect.TIMER_LOST_ON_KILL:
        sends = [Send(i * 50, f"tl{i}", deliver_after_ms=8000) for i in range(10)]
        return sends, [Fault(2000, "kill"), Fault(3000, "start")], {}
    if defect is Defect.DUPLICATE_AFTER_GRACEFUL_RESTART:
        # re-puts between the first periodic flush (10 s after start) and a graceful stop
        sends = [Send(9000 + i * 50, f"g{i}", delay_level=1) for i in range(20)]
        return sends, [Fault(12_000, "stop"), Fault(13_000, "start")], {}
    if defect is Defect.REPUT_OFFSET_FROM_TASK_START:
        # level-2 messages fall due while the broker is down: the first pass re-puts them in one
        # task run; a graceful restart right after re-puts all but the first again
        sends = [Send(i * 20, f"b{i}", delay_level=2) for i in range(20)]
        return sends, [Fault(500, "kill"), Fault(3000, "start"), Fault(6000, "stop"), Fault(7000, "start")], {}
    if defect is Defect.PERSIST_BEFORE_DELIVERY_STOPS:
        # re-puts every 50 ms while the broker stops gracefully
        sends = [Send(i * 50, f"s{i}", delay_level=1) for i in range(60)]
        return sends, [Fault(2000, "stop"), Fault(3000, "start")], {}
    if defect is Defect.EMPTY_OFFSETS_PERSISTED_BEFORE_LOAD:
        # re-puts persisted by the first flush, then a graceful restart whose start takes 11 s
        sends = [Send(i * 100, f"e{i}", delay_level=1) for i in range(20)]
        return sends, [Fault(12_000, "stop"), Fault(13_000, "start")], {"startup_ms": 11_000}
    if defect is Defect.REPUT_PAUSED_WHILE_PARTITIONED:
        # levels 1..5 fall due while the broker is cut off for 4 s
        return steady, [Fault(1500, "partition"), Fault(5500, "partition_end")], {}
    if defect is Defect.STALLED_BY_CLOCK_BACK:
        # the broker's clock steps 6 s back while level-5 messages wait; level-1 messages sent after
        # it (a level that held nothing at the step) wait for the stall
        before = [Send(i * 100, f"b{i}", delay_level=5) for i in range(10)]
        after = [Send(3000 + i * 100, f"c{i}", delay_level=1) for i in range(10)]
        return before + after, [Fault(2500, "clock", offset_ms=-6000)], {}
    if defect is Defect.REPUT_BY_COUNTDOWN:
        # the broker's clock runs at half speed from 1 s to 9 s (4 s behind after) while level-5
        # messages wait: a correct broker re-puts them up to 4 s late, the broken one on true time
        sends = [Send(i * 100, f"w{i}", delay_level=5) for i in range(8)]
        return sends, [Fault(1000, "clock", rate_permille=-500), Fault(9000, "clock", offset_ms=-4000, rate_permille=0)], {}
    if defect is Defect.SLAVE_REPUTS_WHILE_MASTER_DOWN:
        # a master and its slave; the master is killed after its first offset flush (10 s after its
        # start) while level-5 messages wait, and is back 6 s later: its own offsets re-put them again
        sends = [Send(10_500 + i * 100, f"s{i}", delay_level=5) for i in range(10)]
        return sends, [Fault(12_000, "kill"), Fault(18_000, "start")], {"cluster": "master-slave"}
    return steady, [], {}


def random_scenario(seed: int, messages: int = 40) -> tuple[list[Send], list[Fault], dict]:
    """Sends with levels (some above the maximum) or timers, plans with LATER and CRASH, broker and
    consumer faults (kill -9, graceful restart, pause) at random offsets, failing re-put writes and
    send-backs; deterministic in ``seed``."""
    rng = random.Random(seed)
    sends = []
    for i in range(messages):
        plan = tuple(rng.choice(("OK", "LATER", "LATER", "CRASH")) for _ in range(rng.randint(0, 4)))
        timer = rng.choice((None,) * 5 + (rng.randint(-500, 9000),))
        sends.append(Send(rng.randint(0, 20_000), f"m{i}", topic=rng.choice(("A", "B")),
                          delay_level=rng.choice((0, 1, 2, 3, 4, 5, 7)) if timer is None else 0, plan=plan,
                          deliver_after_ms=timer))
    faults: list[Fault] = []
    t = rng.randint(1000, 5000)
    for _ in range(rng.randint(0, 3)):
        kind = rng.choice(("kill", "stop", "pause", "consumer-kill", "consumer-pause"))
        down = rng.randint(500, 6000)
        if kind in ("kill", "stop"):
            faults += [Fault(t, kind), Fault(t + down, "start")]
        elif kind == "pause":
            faults += [Fault(t, "pause"), Fault(t + down, "resume")]
        elif kind == "consumer-kill":
            faults += [Fault(t, "kill", "consumer"), Fault(t + down, "start", "consumer")]
        else:
            faults += [Fault(t, "pause", "consumer"), Fault(t + down, "resume", "consumer")]
        t += down + rng.randint(500, 8000)
    max_rt = rng.choice((1, 2, 16))
    options = {"max_reconsume_times": max_rt, "flush_ms": rng.choice((1000, 10_000)),
               "consumers_per_group": rng.choice((1, 2)), "seed": seed,
               "put_failure_rate": rng.choice((0.0, 0.1)),
               }
    return sends, faults, options
