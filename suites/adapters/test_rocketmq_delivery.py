"""Delay levels, retries, the DLQ and consumer crashes against a real broker (one per module).

Each test takes its own topic and consumer group on the shared broker; times compared are the
broker's store timestamps and the harness's clock, both on this host.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hourglass.adapters.base import ConsumerSpec, SendRequest
from hourglass.reference.contract import SENT_BACK
from suites.adapters.conftest import LATE_ALLOWANCE_MS, LEVELS_S, delay_ms, wait_for_events

pytestmark = pytest.mark.realbroker


def _consumer(system, names, tmp_path: Path, max_reconsume_times: int = 16) -> Path:
    system.create_topic(names["topic"], queues=4)
    spec = ConsumerSpec(names["consumer"], names["group"], (names["topic"],), max_reconsume_times, tmp_path)
    system.start_consumer(spec)
    return tmp_path / f"consumer-{names['consumer']}.jsonl"


def _deliveries(events: list[dict], key: str) -> list[dict]:
    return [e for e in events if e["type"] == "deliver" and e["key"] == key]


def test_delayed_message_is_not_early_and_arrives_soon_after(shared_system, names, tmp_path):
    events_file = _consumer(shared_system, names, tmp_path)
    sends = {}
    for level in (0, 2, 4):
        key = f"{names['key']}-L{level}"
        sends[key] = (level, shared_system.send(SendRequest(names["topic"], key, b"body-" + key.encode(),
                                                            delay_level=level)))
        assert sends[key][1].status == "SEND_OK", sends[key][1]
    events = wait_for_events(events_file, lambda ev: all(_deliveries(ev, k) for k in sends), 60,
                             what="one delivery per key")
    for key, (level, sent) in sends.items():
        first = _deliveries(events, key)[0]
        due_ms = sent.born_ms + delay_ms(level)
        assert first["store_ms"] >= due_ms, f"{key} level {level}: stored {due_ms - first['store_ms']} ms early"
        assert first["ts_ms"] <= sent.ts_ms + delay_ms(level) + LATE_ALLOWANCE_MS, f"{key} level {level} late"
        assert first["topic"] == names["topic"] and first["reconsume_times"] == 0
        assert first["body_crc"] == sent.body_crc and first["msg_id"] == sent.msg_id


def test_level_above_the_maximum_behaves_as_the_maximum(shared_system, names, tmp_path):
    events_file = _consumer(shared_system, names, tmp_path)
    top = len(LEVELS_S)
    sent = {lvl: shared_system.send(SendRequest(names["topic"], f"{names['key']}-{lvl}", b"x", delay_level=lvl))
            for lvl in (top, top + 3)}
    events = wait_for_events(events_file, lambda ev: all(_deliveries(ev, f"{names['key']}-{lvl}") for lvl in sent),
                             60, what="both deliveries")
    waits = {}
    for lvl, res in sent.items():
        first = _deliveries(events, f"{names['key']}-{lvl}")[0]
        waits[lvl] = first["store_ms"] - res.born_ms
        assert waits[lvl] >= delay_ms(top), f"level {lvl}: waited {waits[lvl]} ms, expected >= {delay_ms(top)}"
        assert first["ts_ms"] <= res.ts_ms + delay_ms(top) + LATE_ALLOWANCE_MS
    # and not longer than the maximum's delay would explain: a level beyond the table is the maximum
    assert abs(waits[top + 3] - waits[top]) < 2 * 1000, waits


def test_later_twice_gives_reconsume_times_0_1_2_with_retry_level_delays(shared_system, names, tmp_path):
    events_file = _consumer(shared_system, names, tmp_path)
    key = names["key"]
    res = shared_system.send(SendRequest(names["topic"], key, b"retry-me", plan=("LATER", "LATER", "OK")))
    assert res.status == "SEND_OK"
    events = wait_for_events(events_file, lambda ev: len(_deliveries(ev, key)) >= 3, 60, what="three attempts")
    attempts = _deliveries(events, key)
    assert [a["reconsume_times"] for a in attempts] == [0, 1, 2]
    assert [a["outcome"] for a in attempts] == ["LATER", "LATER", "OK"]
    for k in (1, 2):
        retry_level = min(3 + k - 1, len(LEVELS_S))
        waited = attempts[k]["store_ms"] - attempts[k - 1]["ts_ms"]
        assert waited >= delay_ms(retry_level), f"retry {k}: {waited} ms after LATER, level {retry_level}"
        assert attempts[k]["ts_ms"] <= attempts[k - 1]["ts_ms"] + delay_ms(retry_level) + LATE_ALLOWANCE_MS
        assert attempts[k]["queue_topic"] == "%RETRY%" + names["group"]
        assert attempts[k]["topic"] == names["topic"] and attempts[k]["msg_id"] == res.msg_id
    # each LATER's send-back recorded as the request left the client (contract.SENT_BACK): after the
    # answer, before the retry was stored, once per attempt sent back
    sent = [e for e in wait_for_events(events_file, lambda ev: True, 1) if e.get("action") == SENT_BACK]
    assert [(e["key"], e["group"], e["reconsume_times"]) for e in sent] == [(key, names["group"], k) for k in (0, 1)], sent
    for k in (0, 1):
        assert attempts[k]["ts_ms"] <= sent[k]["ts_ms"] <= attempts[k + 1]["store_ms"], (attempts, sent)


def test_failing_more_than_max_reconsume_times_lands_in_the_dlq(shared_system, names, tmp_path):
    max_reconsume = 1
    events_file = _consumer(shared_system, names, tmp_path, max_reconsume_times=max_reconsume)
    key, ok_key = names["key"], names["key"] + "-ok"
    res = shared_system.send(SendRequest(names["topic"], key, b"doomed", plan=("LATER",) * (max_reconsume + 1)))
    shared_system.send(SendRequest(names["topic"], ok_key, b"fine", plan=("LATER", "OK")))
    assert res.status == "SEND_OK"
    wait_for_events(events_file, lambda ev: len(_deliveries(ev, key)) >= max_reconsume + 1
                    and len(_deliveries(ev, ok_key)) >= 2, 60, what="all attempts")
    dlq: list[dict] = []
    import time

    deadline = time.monotonic() + 30
    while not dlq and time.monotonic() < deadline:
        dlq = shared_system.read_dlq(names["group"])
        if not dlq:
            time.sleep(0.5)  # the send-back to the DLQ follows the last LATER asynchronously
    assert [m["key"] for m in dlq] == [key], dlq
    assert dlq[0]["msg_id"] == res.msg_id and dlq[0]["group"] == names["group"]
    attempts = _deliveries(wait_for_events(events_file, lambda ev: True, 1), key)
    assert [a["reconsume_times"] for a in attempts] == list(range(max_reconsume + 1)), "delivered after the DLQ"


def test_consumer_crash_is_redelivered(shared_system, names, tmp_path):
    events_file = _consumer(shared_system, names, tmp_path)
    key = names["key"]
    shared_system.send(SendRequest(names["topic"], key, b"crash-once", plan=("CRASH", "OK")))
    events = wait_for_events(events_file, lambda ev: [e["outcome"] for e in _deliveries(ev, key)][:2] == ["CRASH", "OK"],
                             90, system=shared_system, what="CRASH then OK")
    crash, again = _deliveries(events, key)[:2]
    assert again["commit_log_offset"] == crash["commit_log_offset"], "a redelivery is the same stored copy"
    assert again["reconsume_times"] == 0
    shared_system.stop_consumers()


def test_timer_message_is_not_delivered_before_its_deliver_time(shared_system, names, tmp_path):
    if shared_system.dist.major < 5:
        pytest.skip("timer messages (TIMER_DELIVER_MS) are a 5.x feature")
    events_file = _consumer(shared_system, names, tmp_path)
    key = names["key"]
    deliver_at_ms = shared_system.clock.now_ms() + 4000
    res = shared_system.send(SendRequest(names["topic"], key, b"timer", deliver_at_ms=deliver_at_ms))
    assert res.status == "SEND_OK", res
    events = wait_for_events(events_file, lambda ev: _deliveries(ev, key), 60, what="the timer message")
    first = _deliveries(events, key)[0]
    # timerPrecisionMs = 1000: the timer wheel may fire up to one slot before deliver_at_ms
    assert first["ts_ms"] >= deliver_at_ms - 1000
    assert first["ts_ms"] <= deliver_at_ms + LATE_ALLOWANCE_MS
