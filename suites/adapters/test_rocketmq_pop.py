"""The remoting push consumer in POP mode against a real broker, judged by ``reference.pop``: the
broker hands the group's queues out by POP (its request mode for the group and topic), a LATER
changes the copy's invisible time by the POP table, and a copy nobody answered is revived its
invisible time after its pop; never before, and within the revive's lag after (issue 23).

Times compared are the broker's (``store_ms`` of a revived copy, ``pop_ms``) and the consumer's
(``ts_ms``), all on this host's clock."""

from __future__ import annotations

from pathlib import Path

import pytest

from hourglass.adapters.base import AdapterError, ConsumerSpec, SendRequest
from hourglass.reference import pop
from hourglass.reference.profile import DEFAULT_SLACK_MS
from hourglass.reports.baseline import version_number
from suites.adapters.conftest import wait_for_events

# on containers nightly: CI's hour is shared, and the consumer is the same process on both
pytestmark = [pytest.mark.realbroker, pytest.mark.ci_runtime("process")]

#: the timer wheel's precision of the brokers the harness starts (MessageStoreConfig.timerPrecisionMs)
TIMER_PRECISION_MS = 1000


@pytest.fixture
def pop_system(system_name, runtime_name, request):
    """The module's shared broker, on a 5.x system only (no 4.9.x broker is started to be skipped)."""
    if system_name.partition(":")[2].startswith("4."):
        pytest.skip(f"POP consumption is 5.x's, not {system_name}'s (the refusal is tested below)")
    return request.getfixturevalue("shared_system")


def _pop_consumer(system, names, tmp_path: Path, invisible_ms: int) -> tuple[Path, pop.PopGroup]:
    system.create_topic(names["topic"], queues=2)
    spec = ConsumerSpec(names["consumer"], names["group"], (names["topic"],), events_dir=tmp_path, mode=pop.POP,
                        pop_invisible_ms=invisible_ms)
    system.start_consumer(spec)
    group = pop.PopGroup(pop.POP, version_number(system.info.version).release, pop.pop_invisible_ms(invisible_ms))
    return tmp_path / f"consumer-{names['consumer']}.jsonl", group


def _deliveries(events: list[dict], key: str) -> list[dict]:
    return [e for e in events if e["type"] == "deliver" and e["key"] == key]


def test_a_later_comes_back_the_pop_tables_delay_after_the_answer(pop_system, names, tmp_path):
    shared_system = pop_system
    events_file, group = _pop_consumer(shared_system, names, tmp_path, invisible_ms=20_000)
    key = names["key"]
    assert shared_system.send(SendRequest(names["topic"], key, b"pop-me", plan=("LATER", "OK"))).status == "SEND_OK"
    events = wait_for_events(events_file, lambda ev: len(_deliveries(ev, key)) >= 2, 60, what="two POP deliveries")
    first, second = _deliveries(events, key)[:2]
    assert [first["reconsume_times"], second["reconsume_times"]] == [0, 1]
    assert first.get("pop_ms") and second.get("pop_ms"), "a POP delivery carries its pop time (POP_CK)"
    assert first["topic"] == second["topic"] == names["topic"]  # a retry is handed out as its own topic's
    # the LATER is answered right after the deliver event is written: the change of the invisible
    # time is at or after first["ts_ms"] (ChangeInvisibleTimeProcessor: a new checkpoint from then)
    window = pop.next_window(group, 0, pop.ANSWERED_LATER, first["pop_ms"], first["ts_ms"], TIMER_PRECISION_MS, DEFAULT_SLACK_MS)
    assert second["store_ms"] >= window.earliest_ms, f"revived {window.earliest_ms - second['store_ms']} ms early"
    assert second["ts_ms"] >= window.earliest_ms
    assert second["ts_ms"] <= window.latest_ms, f"{second['ts_ms'] - window.latest_ms} ms after the window {window}"


def test_a_copy_nobody_answered_is_revived_its_invisible_time_after_its_pop(pop_system, names, tmp_path):
    shared_system = pop_system
    events_file, group = _pop_consumer(shared_system, names, tmp_path, invisible_ms=5_000)
    key = names["key"]
    # SLOW: the listener holds the copy past its invisible time, so the client drops the answer
    # (ConsumeRequest.run: isPopTimeout) and nobody acks it
    assert shared_system.send(SendRequest(names["topic"], key, b"pop-me", plan=("SLOW", "OK"))).status == "SEND_OK"
    events = wait_for_events(events_file, lambda ev: len(_deliveries(ev, key)) >= 2, 90, system=shared_system,
                             what="the copy again after its invisible time ran out")
    first, second = _deliveries(events, key)[:2]
    assert first["outcome"] == "LATER" and first["timed_out"] and second["reconsume_times"] == 1
    window = pop.next_window(group, 0, pop.NOT_ANSWERED, first["pop_ms"], None, TIMER_PRECISION_MS, DEFAULT_SLACK_MS)
    # the revive is the broker's (store_ms)
    assert window.earliest_ms <= second["store_ms"] <= window.latest_ms, (second["store_ms"], window)
    assert second["ts_ms"] >= window.earliest_ms


def test_a_4_9_broker_refuses_pop_consumption_with_a_clear_error(names, tmp_path):
    from hourglass.adapters.rocketmq import open_system

    system = open_system("rocketmq:4.9.7", runtime="process", workdir=tmp_path / "system")  # no broker started
    spec = ConsumerSpec(names["consumer"], names["group"], (names["topic"],), events_dir=tmp_path, mode=pop.POP)
    with pytest.raises(AdapterError, match="POP consumption needs RocketMQ 5.x; this broker is 4.9.7"):
        system.start_consumer(spec)
