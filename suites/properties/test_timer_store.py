"""The model of the 5.x timer store across a stop (reference.timer.timer_duplicate_allowed) and of
the schedule offset at each persist (reference.persistence.flush_covers_reputs, reports.offsets)."""

from __future__ import annotations

from hourglass.reference.persistence import flush_covers_reputs
from hourglass.reference.timer import parse_timer_checkpoint, timer_duplicate_allowed
from hourglass.reports.offsets import FLUSH_WINDOW_FROM, count_reputs

T0 = 1_763_800_000_000


def _f(ts, action):
    return {"type": "fault", "ts_ms": T0 + ts, "action": action, "target": "broker"}


FAULTS = [_f(0, "start"), _f(1_500, "ready"), _f(20_000, "kill"), _f(21_000, "start"), _f(23_000, "ready")]


def _allowed(slot, first, second, born=None, faults=FAULTS):
    return timer_duplicate_allowed(faults, T0 + slot, T0 + first, T0 + second, 1_000, 1_000, 300,
                                   None if born is None else T0 + born)[0]


def test_a_kill_repeats_only_what_its_last_checkpoint_did_not_cover():
    """TimerFlushService every second: a put 500 ms before the kill may repeat, one 5 s before may not
    (its slot long read and checkpointed), unless the message was sent after that checkpoint."""
    assert _allowed(slot=19_000, first=19_500, second=23_100)
    assert not _allowed(slot=14_000, first=15_000, second=23_100, born=10_000)
    assert _allowed(slot=14_000, first=15_000, second=23_100, born=19_900)  # re-enqueued from the timer topic
    # both copies after the restart, the message sent before the kill: recover put it twice
    assert _allowed(slot=19_000, first=23_100, second=23_120, born=19_500)
    # no stop between: no excuse
    assert not _allowed(slot=5_000, first=5_100, second=5_200, born=1_900)


def test_a_graceful_stop_repeats_the_slot_being_read():
    """TimerMessageStore.shutdown prepares the checkpoint first: a slot read up to then may repeat."""
    graceful = [_f(0, "start"), _f(1_500, "ready"), _f(20_000, "stop"), _f(21_000, "start"), _f(23_000, "ready")]
    assert _allowed(slot=19_000, first=19_900, second=23_100, faults=graceful)
    assert not _allowed(slot=10_000, first=10_100, second=23_100, born=5_000, faults=graceful)


def test_the_checkpoint_file_reads_as_the_broker_wrote_it():
    data = b"".join(v.to_bytes(8, "big", signed=True) for v in (T0, 4096, 17, 17, 0, T0, 3))
    assert parse_timer_checkpoint(data) == {"last_read_time_ms": T0, "last_timer_log_flush_pos": 4096,
                                            "last_timer_queue_offset": 17, "master_timer_queue_offset": 17,
                                            "state_version": 0, "data_version_timestamp": T0, "data_version_counter": 3}
    assert parse_timer_checkpoint(b"\0" * 16) is None


def test_a_persist_must_cover_the_entries_re_put_before_it_each_entry_once():
    """reference.persistence.flush_covers_reputs: a re-put repeated after a kill is the same
    schedule-queue entry (counted once); entries re-put after the cut-off do not count."""
    def d(key, store, attempt=0, copy=None):
        return {"key": key, "group": "g", "reconsume_times": attempt, "store_ms": store, "commit_log_offset": copy or store,
                "topic": "T", "queue_id": 0, "queue_offset": copy or store, "broker": "b", "msg_id": str(copy or store)}

    deliveries = [d("a", 100), d("b", 200), d("a", 900, copy=901), d("c", 5_000), d("b", 300, attempt=1)]
    w = (FLUSH_WINDOW_FROM, 1_000)
    counts = count_reputs([w], deliveries, lambda x: 3)
    assert counts[w] == {3: 3}  # a, b, and b's retry: a's second copy is the same entry, c is after the cut-off
    assert flush_covers_reputs(3, 3) is None and flush_covers_reputs(2, 3)


def test_a_persist_is_judged_only_where_the_count_of_entries_holds():
    """One broker, synchronous delivery, no clock step, and no send-back the client logged failed
    (its re-send stores the retry through the producer path: found on 5.0.0, which refuses every
    retry's send-back)."""
    from hourglass.reports.offsets import plan

    flush = {"type": "snapshot", "ts_ms": 5_000, "source": "delayOffset.json", "offsets": {"3": 1}, "moment": "flush"}
    failed = {"type": "fault", "ts_ms": 4_000, "action": "send_back_failed", "target": "consumer", "group": "g"}
    assert [c.rule for c in plan([flush], {"cluster": "single"})] == ["flush"]
    assert plan([flush, failed], {"cluster": "single"}) == []
    assert plan([flush], {"cluster": "single", "schedule_async_deliver": True}) == []
