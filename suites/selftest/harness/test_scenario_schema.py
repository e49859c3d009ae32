"""Scenario files are strict: the shipped JSON Schema is valid and is what the loader uses, every bad
field is refused in one line naming the file and the field's path, the cross-checks catch what a
schema cannot, and every catalogue scenario built in Python passes the same checks."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import fields, replace

import pytest
from jsonschema import Draft202012Validator

from hourglass.harness.scenario import (
    FAULT_ACTIONS_SCHEDULABLE,
    KNOWN_REQUIREMENTS,
    SCHEMA_PATH,
    ConsumerGroup,
    FaultStep,
    Message,
    Profile,
    Scenario,
    ScenarioError,
    scenario_from_json,
    scenario_schema,
    validate_scenario,
)
from hourglass.reference.contract import CHOSEN_LEVEL_WORD, FAULT_TARGETS, PLAN_WORDS, ContractError
from hourglass.harness.catalogue.generate import sample
from hourglass.harness.catalogue.chaos import NIGHTLY, SHORT
from hourglass.harness.catalogue.conformance import CONFORMANCE

ROOT = SCHEMA_PATH.parent.parent


def _raw(**over) -> dict:
    raw = {"name": "x", "messages": [{"key": "a", "topic": "T", "plan": ["LATER", "OK"]}],
           "consumers": [{"group": "g", "topics": ["T"]}]}
    raw.update(over)
    return raw


def _msgs(*extra: dict) -> list[dict]:
    return [{"key": f"k{i}", "topic": "T"} for i in range(3)] + list(extra)


BAD = [
    # (id, raw, field path, found)
    ("unknown-top-level", _raw(seeds=3), "seeds", 3),
    ("unknown-in-message", _raw(messages=_msgs({"key": "d", "topic": "T", "delay": 2})), "messages[3].delay", 2),
    ("unknown-in-consumer", _raw(consumers=[{"group": "g", "topics": ["T"], "maxReconsumeTimes": 2}]),
     "consumers[0].maxReconsumeTimes", 2),
    ("unknown-in-fault", _raw(faults=[{"at_ms": 1, "action": "kill", "duration": 500}]), "faults[0].duration", 500),
    ("unknown-in-profile", _raw(profile={"messageDelayLevel": "1s"}), "profile.messageDelayLevel", "1s"),
    ("wrong-type", _raw(messages=[{"key": "a", "topic": "T", "at_ms": "soon"}]), "messages[0].at_ms", "soon"),
    ("bool-is-no-int", _raw(messages=[{"key": "a", "topic": "T", "delay_level": True}]), "messages[0].delay_level", True),
    ("negative-fault-time", _raw(faults=[{"at_ms": -5, "action": "kill"}]), "faults[0].at_ms", -5),
    ("unknown-plan-word", _raw(messages=[{"key": "a", "topic": "T", "plan": ["LATER", "MAYBE"]}]),
     "messages[0].plan[1]", "MAYBE"),
    ("unknown-fault-action", _raw(faults=[{"at_ms": 10, "action": "explode"}]), "faults[0].action", "explode"),
    ("unknown-fault-target", _raw(faults=[{"at_ms": 10, "action": "kill", "target": "zookeeper"}]),
     "faults[0].target", "zookeeper"),
    ("chosen-level-not-a-number", _raw(messages=[{"key": "a", "topic": "T", "plan": ["LATER:five"]}]),
     "messages[0].plan[0]", "LATER:five"),
    ("chosen-level-beyond-an-int", _raw(messages=[{"key": "a", "topic": "T", "plan": ["OK", "LATER:2147483648"]}]),
     "messages[0].plan[1]", "LATER:2147483648"),
    ("async-without-requires", _raw(profile={"schedule_async_deliver": True}), "requires", []),
    ("async-not-a-boolean", _raw(profile={"schedule_async_deliver": 1}, requires=["async_deliver"]),
     "profile.schedule_async_deliver", 1),
    ("batch-of-zero", _raw(consumers=[{"group": "g", "topics": ["T"], "batch_size": 0}]), "consumers[0].batch_size", 0),
    ("batch-beyond-the-client", _raw(consumers=[{"group": "g", "topics": ["T"], "batch_size": 1025}]),
     "consumers[0].batch_size", 1025),
    ("unknown-mode", _raw(consumers=[{"group": "g", "topics": ["T"], "mode": "broadcast"}]), "consumers[0].mode", "broadcast"),
    ("broadcast-asked-level", _raw(messages=[{"key": "a", "topic": "T", "plan": ["LATER:-1"]}],
                                   consumers=[{"group": "g", "topics": ["T"], "mode": "broadcasting", "instances": 2}]),
     "messages[0].plan[0]", "LATER:-1"),
    ("suspend-below-the-clamp", _raw(consumers=[{"group": "g", "topics": ["T"], "mode": "orderly", "suspend_ms": 5}]),
     "consumers[0].suspend_ms", 5),
    ("suspend-without-orderly", _raw(consumers=[{"group": "g", "topics": ["T"], "suspend_ms": 500}]),
     "consumers[0].suspend_ms", 500),
    ("slow-without-timeout", _raw(messages=[{"key": "a", "topic": "T", "plan": ["SLOW"]}]),
     "consumers[0].consume_timeout_min", None),
    ("slow-in-orderly", _raw(messages=[{"key": "a", "topic": "T", "plan": ["LATER", "SLOW"]}],
                             consumers=[{"group": "g", "topics": ["T"], "mode": "orderly"}]), "messages[0].plan[1]", "SLOW"),
    ("slow-in-batch", _raw(messages=[{"key": "a", "topic": "T", "plan": ["SLOW"]}],
                           consumers=[{"group": "g", "topics": ["T"], "batch_size": 2, "consume_timeout_min": 1}]),
     "consumers[0].batch_size", 2),
    ("join-alone", _raw(consumers=[{"group": "g", "topics": ["T"], "join_at_ms": 1000}]), "consumers[0].instances", 1),
    ("leave-broadcasting", _raw(consumers=[{"group": "g", "topics": ["T"], "mode": "broadcasting", "instances": 2,
                                            "leave_at_ms": 1000}]), "consumers[0].leave_at_ms", 1000),
    ("join-and-leave-at-once", _raw(consumers=[{"group": "g", "topics": ["T"], "instances": 2, "join_at_ms": 1000,
                                                "leave_at_ms": 1000}]), "consumers[0].leave_at_ms", 1000),
    ("timeout-zero", _raw(consumers=[{"group": "g", "topics": ["T"], "consume_timeout_min": 0}]),
     "consumers[0].consume_timeout_min", 0),
    ("timeout-broadcasting", _raw(consumers=[{"group": "g", "topics": ["T"], "mode": "broadcasting",
                                              "consume_timeout_min": 1}]), "consumers[0].consume_timeout_min", 1),
    ("orderly-batch", _raw(consumers=[{"group": "g", "topics": ["T"], "mode": "orderly", "batch_size": 4}]),
     "consumers[0].batch_size", 4),
    ("orderly-asked-level", _raw(messages=[{"key": "a", "topic": "T", "plan": ["LATER", "LATER:5"]}],
                                 consumers=[{"group": "g", "topics": ["T"], "mode": "orderly"}]),
     "messages[0].plan[1]", "LATER:5"),
    ("pop-without-requires", _raw(consumers=[{"group": "g", "topics": ["T"], "mode": "pop"}]), "requires", []),
    ("pop-crash", _raw(messages=[{"key": "a", "topic": "T", "plan": ["LATER", "CRASH"]}], requires=["pop"],
                       consumers=[{"group": "g", "topics": ["T"], "mode": "pop"}]), "messages[0].plan[1]", "CRASH"),
    ("pop-dlq-at-once", _raw(messages=[{"key": "a", "topic": "T", "plan": ["LATER:-1"]}], requires=["pop"],
                             consumers=[{"group": "g", "topics": ["T"], "mode": "pop"}]), "messages[0].plan[0]", "LATER:-1"),
    ("pop-invisible-without-pop", _raw(consumers=[{"group": "g", "topics": ["T"], "pop_invisible_ms": 5000}]),
     "consumers[0].pop_invisible_ms", 5000),
    ("pop-invisible-below-the-client", _raw(consumers=[{"group": "g", "topics": ["T"], "mode": "pop", "pop_invisible_ms": 1000}],
                                            requires=["pop"]), "consumers[0].pop_invisible_ms", 1000),
    ("pop-joins-late", _raw(consumers=[{"group": "g", "topics": ["T"], "mode": "pop", "instances": 2, "join_at_ms": 500}],
                            requires=["pop"]), "consumers[0].join_at_ms", 500),
    ("grpc-without-requires", _raw(consumers=[{"group": "g", "topics": ["T"], "mode": "grpc-push"}]), "requires", []),
    ("grpc-slow", _raw(messages=[{"key": "a", "topic": "T", "plan": ["SLOW"]}], requires=["grpc"],
                       consumers=[{"group": "g", "topics": ["T"], "mode": "grpc-simple"}]), "messages[0].plan[0]", "SLOW"),
    ("grpc-simple-invisible-below-the-proxy", _raw(consumers=[{"group": "g", "topics": ["T"], "mode": "grpc-simple",
                                                               "pop_invisible_ms": 5000}], requires=["grpc"]),
     "consumers[0].pop_invisible_ms", 5000),
    ("grpc-push-invisible", _raw(consumers=[{"group": "g", "topics": ["T"], "mode": "grpc-push", "pop_invisible_ms": 20000}],
                                 requires=["grpc"]), "consumers[0].pop_invisible_ms", 20000),
    ("grpc-max-reconsume", _raw(consumers=[{"group": "g", "topics": ["T"], "mode": "grpc-push", "max_reconsume_times": 3}],
                                requires=["grpc"]), "consumers[0].max_reconsume_times", 3),
    ("grpc-proxy-fault-in-local-mode", _raw(consumers=[{"group": "g", "topics": ["T"], "mode": "grpc-push"}], requires=["grpc"],
                                            profile={"proxy_mode": "local"},
                                            faults=[{"at_ms": 100, "action": "outage", "target": "proxy", "duration_ms": 1000}]),
     "faults[0].target", "proxy"),
    ("unknown-proxy-mode", _raw(profile={"proxy_mode": "sidecar"}), "profile.proxy_mode", "sidecar"),
    ("zero-instances", _raw(consumers=[{"group": "g", "topics": ["T"], "instances": 0}]), "consumers[0].instances", 0),
    ("max-reconsume-below-minus-one", _raw(profile={"max_reconsume_times": -2}), "profile.max_reconsume_times", -2),
    ("missing-key", _raw(messages=[{"topic": "T"}]), "messages[0].key", "missing"),
    ("no-messages", _raw(messages=[]), "messages", []),
    ("unknown-requirement", _raw(requires=["timers"]), "requires[0]", "timers"),
    # cross-checks
    ("topic-without-group", _raw(messages=_msgs({"key": "d", "topic": "Typo"})), "messages[3].topic", "Typo"),
    ("group-without-messages", _raw(consumers=[{"group": "g", "topics": ["T"]}, {"group": "h", "topics": ["Idle"]}]),
     "consumers[1].topics", ["Idle"]),
    ("bad-level-table", _raw(profile={"message_delay_level": "1s 2x"}), "profile.message_delay_level", "1s 2x"),
    ("duplicate-group", _raw(consumers=[{"group": "g", "topics": ["T"]}, {"group": "g", "topics": ["T"]}]),
     "consumers[1].group", "g"),
    ("duplicate-key", _raw(messages=_msgs({"key": "k1", "topic": "T"})), "messages[3].key", "k1"),
    ("outage-without-duration", _raw(faults=[{"at_ms": 10, "action": "outage"}]), "faults[0].duration_ms", "missing"),
    ("outage-of-zero", _raw(faults=[{"at_ms": 10, "action": "outage", "duration_ms": 0}]), "faults[0].duration_ms", 0),
    ("duration-on-kill", _raw(faults=[{"at_ms": 10, "action": "kill", "duration_ms": 300}]), "faults[0].duration_ms", 300),
    ("unknown-cluster", _raw(profile={"cluster": "three-masters"}), "profile.cluster", "three-masters"),
    ("second-broker-without-cluster", _raw(faults=[{"at_ms": 10, "action": "kill", "target": "broker-2"}]),
     "faults[0].target", "broker-2"),
    ("timer-without-requires", _raw(messages=[{"key": "a", "topic": "T", "deliver_after_ms": 1500}]), "requires", []),
    ("delay-sec-without-requires", _raw(messages=[{"key": "a", "topic": "T", "delay_time_sec": 2}]), "requires", []),
    ("delay-sec-beyond-a-long", _raw(messages=[{"key": "a", "topic": "T", "delay_time_sec": 2**63}], requires=["timer"]),
     "messages[0].delay_time_sec", 2**63),
    ("negative-body", _raw(messages=_msgs({"key": "d", "topic": "T", "body_size": -1})), "messages[3].body_size", -1),
    ("topic-beyond-its-limit", _raw(messages=[{"key": "a", "topic": "T" * 128}], consumers=[{"group": "g", "topics": ["T" * 128]}]),
     "messages[0].topic", "T" * 128),
    ("precision-the-timer-snaps", _raw(profile={"timer_precision_ms": 300}), "profile.timer_precision_ms", 300),
    ("fill-without-warning-ratio", _raw(faults=[{"at_ms": 10, "action": "disk_fill", "fill_percent": 92, "duration_ms": 500}]),
     "faults[0].fill_percent", 92),
    ("fill-below-warning-ratio", _raw(faults=[{"at_ms": 10, "action": "disk_fill", "fill_percent": 80, "duration_ms": 500}],
                                      profile={"disk_warning_percent": 85}), "faults[0].fill_percent", 80),
    ("warning-ratio-5x-would-clamp", _raw(profile={"disk_warning_percent": 95}), "profile.disk_warning_percent", 95),
    # times: within MAX_SCENARIO_MS of the start, each field and what they add up to (2^40 hung a batch)
    ("message-in-years", _raw(messages=_msgs({"key": "d", "topic": "T", "at_ms": 2**40})), "messages[3].at_ms", 2**40),
    ("fault-in-years", _raw(faults=[{"at_ms": 2**40, "action": "kill_restart"}]), "faults[0].at_ms", 2**40),
    ("outage-of-years", _raw(faults=[{"at_ms": 10, "action": "outage", "duration_ms": 2**40}]), "faults[0].duration_ms",
     2**40),
    ("margin-of-years", _raw(drain_margin_ms=2**40), "drain_margin_ms", 2**40),
    ("slack-of-years", _raw(profile={"slack_ms": 2**40}), "profile.slack_ms", 2**40),
    ("timer-beyond-a-long", _raw(messages=[{"key": "a", "topic": "T", "deliver_after_ms": 2**63}], requires=["timer"]),
     "messages[0].deliver_after_ms", 2**63),
    ("delays-adding-up-to-years", _raw(profile={"message_delay_level": "1s 100000d"},
                                       messages=[{"key": "a", "topic": "T", "delay_level": 2}]),
     "messages[0]", f"{100000 * 86400 * 1000} ms"),
    ("anchor-that-comes-in-years", _raw(faults=[{"at_ms": 0, "action": "kill_restart",
                                                 "after": {"event": "flush", "count": 10**9}}]),
     "faults[0]", f"{10**9 * 10_000} ms"),
    # fault schedules no broker can follow
    ("kill-twice", _raw(faults=[{"at_ms": 10, "action": "kill"}, {"at_ms": 500, "action": "kill"},
                                {"at_ms": 900, "action": "start"}]), "faults[1].action", "kill"),
    ("start-while-up", _raw(faults=[{"at_ms": 10, "action": "start"}]), "faults[0].action", "start"),
    ("restart-inside-an-outage", _raw(faults=[{"at_ms": 10, "action": "outage", "duration_ms": 5000},
                                              {"at_ms": 1000, "action": "restart", "duration_ms": 100}]),
     "faults[1].action", "restart"),
    ("started-twice-after-previous", _raw(faults=[{"at_ms": 10, "action": "stop"},
                                                  {"at_ms": 100, "action": "start", "after": {"event": "previous"}},
                                                  {"at_ms": 100, "action": "start", "after": {"event": "previous"}}]),
     "faults[2].action", "start"),
    ("killed-never-started", _raw(faults=[{"at_ms": 10, "action": "kill", "target": "consumer"}]), "faults[0].action",
     "kill"),
]


@pytest.mark.parametrize("raw, path, found", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_field_is_one_line_naming_file_and_path(raw, path, found, tmp_path):
    p = tmp_path / "my.json"
    p.write_text(json.dumps(raw))
    with pytest.raises(ScenarioError) as e:
        Scenario.load(p)
    err = e.value
    assert isinstance(err, ContractError)
    assert err.field == path and err.found == found
    text = str(err)
    assert "\n" not in text
    assert text.startswith(f"{p}: field '{path}': expected ")
    assert "Traceback" not in text and "jsonschema" not in text.lower()
    # nothing but the ScenarioError itself: no Python error underneath it
    assert err.__cause__ is None and (err.__context__ is None or err.__suppress_context__)


def test_unknown_field_lists_the_allowed_ones():
    with pytest.raises(ScenarioError) as e:
        scenario_from_json(_raw(messages=_msgs({"key": "d", "topic": "T", "delay": 2})), "my.json")
    assert str(e.value) == ("my.json: field 'messages[3].delay': expected no such field (allowed: key, topic, "
                            "at_ms, delay_level, deliver_after_ms, deliver_time_ms, delay_time_sec, delay_time_ms, body_size, plan), found 2")


def test_levels_out_of_the_table_are_legal_conformance_input():
    """Level 0 and below are not delayed and levels above the maximum are clamped: both are rules the
    conformance suite checks, so the schema must let them through."""
    msgs = [{"key": f"L{lv}", "topic": "T", "delay_level": lv} for lv in (-1, 0, 1, 18, 19, 100)]
    assert [m.delay_level for m in scenario_from_json(_raw(messages=msgs)).messages] == [-1, 0, 1, 18, 19, 100]


def test_a_valid_file_round_trips(tmp_path):
    s = Scenario(
        "round-trip",
        (Message("a", "T", at_ms=5, delay_level=3, body_size=10, plan=("LATER", "CRASH", "OK")),
         Message("b", "U", deliver_after_ms=2000)),
        (ConsumerGroup("g", ("T", "U"), instances=2, max_reconsume_times=-1),),
        (FaultStep(100, "outage", "broker", 500), FaultStep(900, "pause", "consumer")),
        Profile(message_delay_level="2s 4s 6s", max_reconsume_times=3, slack_ms=0),
        seed=7, description="d", drain_margin_ms=0, requires=("timer",),
    )
    s.save(tmp_path / "s.json")
    assert Scenario.load(tmp_path / "s.json") == s
    raw = json.loads((tmp_path / "s.json").read_text())
    raw["$schema"] = str(SCHEMA_PATH)  # editors' association is allowed and ignored
    assert scenario_from_json(raw) == s


def test_shipped_schema_is_valid_and_identical_to_the_generated_one():
    shipped = json.loads(SCHEMA_PATH.read_text())
    Draft202012Validator.check_schema(shipped)
    assert shipped == scenario_schema(), "regenerate: python -m hourglass.harness.scenario --schema > harness/scenario.schema.json"


def test_schema_vocabularies_and_fields_come_from_the_code():
    schema = scenario_schema()
    defs = schema["$defs"]
    words, chosen = defs["message"]["properties"]["plan"]["items"]["anyOf"]
    assert words["enum"] == list(PLAN_WORDS) and chosen["pattern"] == f"^{CHOSEN_LEVEL_WORD}$"
    assert defs["fault"]["properties"]["action"]["enum"] == list(FAULT_ACTIONS_SCHEDULABLE)
    assert defs["fault"]["properties"]["target"]["enum"] == list(FAULT_TARGETS)
    assert schema["properties"]["requires"]["items"]["enum"] == list(KNOWN_REQUIREMENTS)
    for cls, obj in ((Scenario, schema), (Message, defs["message"]), (ConsumerGroup, defs["consumer"]),
                     (FaultStep, defs["fault"]), (Profile, defs["profile"])):
        assert set(obj["properties"]) - {"$schema"} == {f.name for f in fields(cls)}, cls.__name__
        assert obj["additionalProperties"] is False


def test_schema_module_writes_the_schema(tmp_path):
    out = subprocess.run([sys.executable, "-m", "hourglass.harness.scenario", "--schema"], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert json.loads(out) == scenario_schema()


CATALOGUE = list(CONFORMANCE) + list(NIGHTLY) + [s for seed in (0, 1, 7) for s in sample(seed, 20)]


@pytest.mark.parametrize("scenario", CATALOGUE, ids=lambda s: s.name)
def test_every_catalogue_scenario_validates(scenario):
    assert set(SHORT) <= set(NIGHTLY)
    validate_scenario(scenario, f"catalogue {scenario.name}")
    validate_scenario(scenario.with_prefix("x" * 24 + "_"))  # as a shared broker runs it


def test_python_built_scenario_is_checked_like_a_file():
    bad = Scenario("py", (Message("a", "T", delay_level=2),), (ConsumerGroup("g", "T"),))  # topics: str, not tuple
    with pytest.raises(ScenarioError, match=r"^scenario 'py': field 'consumers\[0\]\.topics': expected a list, found 'T'$"):
        validate_scenario(bad)
    outage = replace(Scenario("o", (Message("a", "T"),), (ConsumerGroup("g", ("T",)),)), faults=(FaultStep(0, "outage"),))
    with pytest.raises(ScenarioError, match=r"faults\[0\]\.duration_ms"):
        validate_scenario(outage, "generated.py")


def test_a_file_that_is_not_utf8_is_one_line_naming_the_file_and_the_byte(tmp_path):

    p = tmp_path / "latin1.json"
    p.write_bytes(json.dumps(_raw(description="caf\u00e9"), ensure_ascii=False).encode("latin-1"))
    offset = p.read_bytes().index(b"\xe9")
    expected = f"{p}: expected a UTF-8 scenario JSON file, found 'byte 0xe9 at offset {offset}'"
    checked = subprocess.run([sys.executable, "-m", "hourglass.harness.scenario", str(p)], capture_output=True, text=True, cwd=ROOT)
    assert (checked.returncode, checked.stderr.strip()) == (3, expected)
    out = tmp_path / "o"
    ran = subprocess.run([sys.executable, "-m", "hourglass", "run", "--scenario", str(p), "--system", "simulated",
                          "--out", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert (ran.returncode, ran.stderr.strip()) == (3, f"hourglass: {expected}")
    assert not out.exists()


def test_a_schedule_a_broker_can_follow_is_kept():
    """A stop and a later start (also timed from the stop), and steps timed from a broker event
    whose moment only the run knows: not refused on a guess of the order."""
    ok = [{"at_ms": 10, "action": "stop"}, {"at_ms": 2000, "action": "start", "after": {"event": "previous"}},
          {"at_ms": 500, "action": "restart", "after": {"event": "ready"}}, {"at_ms": 3000, "action": "kill_restart"}]
    assert len(scenario_from_json(_raw(faults=ok)).faults) == 4


def test_a_shared_brokers_prefix_keeps_a_name_at_its_limit():
    """A scenario at the limits shares a broker too: the prefix replaces the head of a topic at 127
    characters and of a group at the longest whose retry topic is valid (reference.limits), so the
    names stay at the limit and unique; a short name just gets the prefix."""
    from hourglass.harness.catalogue.limits import name_lengths
    from hourglass.reference.limits import RETRY_GROUP_MAX_LENGTH, TOPIC_MAX_LENGTH
    from hourglass.reference.rundir import consumer_name

    sc = name_lengths()
    shared = sc.with_prefix("limits-name-lengths_")
    assert {len(m.topic) for m in shared.messages} == {TOPIC_MAX_LENGTH}
    assert shared.messages[0].topic.startswith("limits-name-lengths_")
    assert len(shared.consumers[0].group) == RETRY_GROUP_MAX_LENGTH and shared.consumers[0].group.startswith("limits-name")
    assert shared.consumers[0].topics == (shared.messages[0].topic,)
    short = scenario_from_json(_raw()).with_prefix("p_")
    assert all(m.topic.startswith("p_") for m in short.messages)
    # a consumer's name (its events file) stays short enough for a file name, and tells groups apart
    a, b = consumer_name("g" * 255, 0), consumer_name("g" * 254 + "h", 0)
    assert len(a) < 120 and a != b and consumer_name("cg", 3) == "cg-3"
