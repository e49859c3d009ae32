"""Scenarios round-trip through JSON and bad ones are refused with the field named; the event log
is durable line by line and its reader survives a torn last line; faults expand into timed
primitives and every run can be healed."""

from __future__ import annotations

import json

import pytest

from hourglass.adapters.rundir import EventLog, EventTail, read_events
from hourglass.harness.faults import TimedFault, expand
from hourglass.harness.scenario import ConsumerGroup, FaultAnchor, FaultStep, Message, Scenario, scenario_from_json
from hourglass.reference.contract import ContractError
from hourglass.harness.catalogue.chaos import NIGHTLY
from hourglass.harness.catalogue.conformance import CONFORMANCE


@pytest.mark.parametrize("scenario", CONFORMANCE + NIGHTLY, ids=lambda s: s.name)
def test_catalogue_round_trips_through_json(scenario, tmp_path):
    scenario.save(tmp_path / "scenario.json")
    assert Scenario.load(tmp_path / "scenario.json") == scenario


def _raw(**over):
    raw = {"name": "x", "messages": [{"key": "a", "topic": "T", "plan": ["LATER", "OK"]}], "consumers": [{"group": "g", "topics": ["T"]}]}
    raw.update(over)
    return raw


@pytest.mark.parametrize(
    "raw, field, found",
    [
        (_raw(messages=[{"key": "a", "topic": "T", "plan": ["LATER", "MAYBE"]}]), "messages[0].plan[1]", "MAYBE"),
        (_raw(messages=[{"topic": "T"}]), "messages[0].key", "missing"),
        (_raw(faults=[{"at_ms": 10, "action": "explode"}]), "faults[0].action", "explode"),
        (_raw(faults=[{"at_ms": 10, "action": "kill", "target": "zookeeper"}]), "faults[0].target", "zookeeper"),
        (_raw(messages=[{"key": "a", "topic": "T"}, {"key": "a", "topic": "T"}]), "messages[1].key", "a"),
    ],
)
def test_bad_scenario_names_the_field(raw, field, found):
    with pytest.raises(ContractError) as e:
        scenario_from_json(raw, "my.json")
    assert e.value.field == field and e.value.found == found
    assert "my.json" in str(e.value)


def test_unreadable_scenario_file_names_the_file(tmp_path):
    p = tmp_path / "broken.json"
    p.write_text("{not json")
    with pytest.raises(ContractError, match="broken.json"):
        Scenario.load(p)


def test_event_log_refuses_contract_breaking_events(tmp_path):
    with EventLog(tmp_path / "events" / "h.jsonl") as log:
        with pytest.raises(ContractError, match="status"):
            log.write({"type": "send", "ts_ms": 1, "key": "k", "topic": "T", "status": "MAYBE"})
        log.write({"type": "fault", "ts_ms": 2, "action": "kill", "target": "broker"})
    assert [e["ts_ms"] for e in read_events(tmp_path / "events")] == [2]


def test_tail_reads_only_complete_lines_and_resumes(tmp_path):
    d = tmp_path / "events"
    d.mkdir()
    f = d / "consumer-a.jsonl"
    f.write_text(json.dumps({"type": "fault", "ts_ms": 1, "action": "kill", "target": "consumer"}) + "\n{\"type\": \"fau")
    tail = EventTail(d)
    assert [e["ts_ms"] for e in tail.new_events()] == [1]
    with open(f, "a") as out:  # the torn line completes later
        out.write('lt", "ts_ms": 2, "action": "start", "target": "consumer"}\n')
    assert [e["ts_ms"] for e in tail.new_events()] == [2]
    assert list(tail.new_events()) == []


def test_compound_faults_expand_into_timed_primitives():
    steps = (
        FaultStep(1000, "outage", "broker", 5000),
        FaultStep(500, "restart", "namesrv", 200),
        FaultStep(9000, "pause", "broker", 1000),
        FaultStep(12000, "kill", "consumer"),
        FaultStep(13000, "slow_start", "broker", 4000),
        FaultStep(0, "kill_restart", "broker", 100, after=FaultAnchor("ready")),  # expanded when its anchor comes
    )
    assert expand(steps) == [
        TimedFault(500, "stop", "namesrv", step=1),
        TimedFault(700, "start", "namesrv", step=1),
        TimedFault(1000, "kill", "broker", step=0),
        TimedFault(6000, "start", "broker", step=0),
        TimedFault(9000, "pause", "broker", step=2),
        TimedFault(10000, "resume", "broker", step=2),
        TimedFault(12000, "kill", "consumer", step=3),
        TimedFault(13000, "start_paused", "broker", step=4),
        TimedFault(17000, "resume", "broker", step=4),
    ]


def test_a_clock_drift_expands_into_a_rated_clock_change_and_its_end_at_the_offset_reached(tmp_path):
    """reference.clock: a drift starts from the offset in force and ends at the true rate from the
    offset it reached (neither written in the step: the driver computes them, as the model's line)."""
    from hourglass.adapters.simulated import open_simulated
    from hourglass.adapters.base import BrokerProfile
    from hourglass.harness.faults import FaultDriver

    drift = FaultStep(2000, "clock_drift", "broker", 4000, rate_permille=-250)
    assert expand((drift,)) == [TimedFault(2000, "clock", "broker", step=0, fields=(("rate_permille", -250),)),
                                TimedFault(6000, "clock", "broker", step=0, fields=(("rate_permille", 0),))]
    system = open_simulated(BrokerProfile(), seed=1)
    system.setup()
    log = EventLog(tmp_path / "h.jsonl")
    driver = FaultDriver(system, log)
    driver.apply("clock", "broker", {"offset_ms": 1000})  # a step ahead first
    driver.apply("clock", "broker", {"rate_permille": -500})
    system.clock.advance(4000)
    driver.apply("clock", "broker", {"rate_permille": 0})
    driver.heal()
    log.close()
    moves = [json.loads(line) for line in (tmp_path / "h.jsonl").read_text().splitlines()]
    assert [(m["offset_ms"], m.get("rate_permille")) for m in moves] == [(1000, None), (1000, -500), (-1000, 0), (0, None)]
    assert system.broker.wall_ms() == system.clock.now_ms()  # healed: true again


def test_prefix_keeps_scenarios_apart_on_a_shared_broker():
    s = Scenario("s", (Message("k", "T"),), (ConsumerGroup("g", ("T",)),))
    p = s.with_prefix("s_")
    assert p.messages[0].topic == "s_T" and p.consumers[0].group == "s_g" and p.consumers[0].topics == ("s_T",)
    assert p.messages[0].key == "k"


def test_the_event_writer_refuses_what_no_reader_could_decode(tmp_path):
    """A lone surrogate is valid JSON once json.dumps escapes it, but no UTF-8 reader can decode
    it: the one writer refuses it, naming the file and field, and writes nothing."""
    from hourglass.reference.contract import ContractError

    path = tmp_path / "events" / "h.jsonl"
    with EventLog(path) as log:
        with pytest.raises(ContractError, match=r"h\.jsonl: field 'key': expected text encodable as UTF-8"):
            log.write({"type": "send", "ts_ms": 1, "key": "\ud800", "topic": "T", "status": "SEND_OK"})
        log.write({"type": "send", "ts_ms": 2, "key": "ключ", "topic": "T", "status": "SEND_OK"})
    assert read_events(tmp_path / "events") == [{"type": "send", "ts_ms": 2, "key": "ключ", "topic": "T", "status": "SEND_OK"}]


def test_a_writer_reopening_after_a_torn_line_starts_on_a_fresh_line(tmp_path):
    path = tmp_path / "events" / "c.jsonl"
    path.parent.mkdir()
    path.write_text('{"type":"send","ts_ms":1,"key":"a","topic":"T","status":"SEND_OK"}\n{"type":"deli')
    with EventLog(path) as log:
        log.write({"type": "send", "ts_ms": 2, "key": "b", "topic": "T", "status": "SEND_OK"})
    lines = path.read_text().splitlines()
    assert lines[1] == '{"type":"deli' and json.loads(lines[2])["key"] == "b"
