"""Every number an input holds is bounded by what RocketMQ means by it, and the model's memory
follows the plan, never the bound: a schema-valid ``max_reconsume_times`` of 10^12 once grew the
harness to 21.5 GB (one expected row per attempt the limit allowed). Errors in a run's profile
name its run.json; a field's kind reads as English ("an integer")."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from hourglass.harness.scenario import MAX_CONSUMER_INSTANCES, Scenario, ScenarioError
from hourglass.reference.contract import ContractError, validate_run
from hourglass.reference.expected import build_expected_rows
from hourglass.reference.profile import MAX_RECONSUME_TIMES
from hourglass.reports import cli as reports_cli
from suites.selftest.checker.runs import RunBuilder

HUGE = 10**12


def _scenario(tmp_path, **over):
    raw = {"name": "bounds", "messages": [{"key": "a", "topic": "T", "plan": ["LATER", "OK"]}],
           "consumers": [{"group": "g", "topics": ["T"]}], **over}
    p = tmp_path / "bounds.json"
    p.write_text(json.dumps(raw))
    return p


@pytest.mark.parametrize("over, field", [
    ({"profile": {"max_reconsume_times": HUGE}}, "profile.max_reconsume_times"),
    ({"consumers": [{"group": "g", "topics": ["T"], "max_reconsume_times": HUGE}]}, "consumers[0].max_reconsume_times"),
])
def test_a_retry_limit_beyond_a_java_int_is_refused_naming_the_field(tmp_path, over, field):
    p = _scenario(tmp_path, **over)
    with pytest.raises(ScenarioError) as e:
        Scenario.load(p)
    text = str(e.value)
    assert text.startswith(f"{p}: field '{field}': expected an integer") and text.endswith(f" <= {MAX_RECONSUME_TIMES}, found {HUGE}")


def test_the_model_allocates_per_planned_attempt_not_per_allowed_one():
    b = RunBuilder("wide", max_reconsume_times=MAX_RECONSUME_TIMES)
    for i in range(3):
        b.send(f"k{i}", i * 100, level=1, plan=["LATER", "OK"])
    tracemalloc.start()
    try:
        rows = build_expected_rows(b.run_json(), b.events)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(rows) == 6  # each message: its first attempt and the one retry its plan asks for
    assert peak < 2_000_000, f"{peak} bytes for 6 expected attempts"


def test_check_of_a_run_whose_profile_is_out_of_bounds_is_broken_and_names_its_run_json(tmp_path, capsys):
    run_dir = RunBuilder("huge").send("a", 0, level=1, plan=["LATER", "OK"]).write(tmp_path / "runs")
    run = json.loads((run_dir / "run.json").read_text())
    run["profile"]["max_reconsume_times"] = HUGE
    (run_dir / "run.json").write_text(json.dumps(run))
    assert reports_cli.main(["check", str(tmp_path / "runs"), "--out", str(tmp_path / "out")]) == 3
    out = capsys.readouterr().out
    assert f"{run_dir}/run.json profile: field 'max_reconsume_times'" in out and str(HUGE) in out


def test_a_profile_error_names_the_run_json_it_is_in(tmp_path):
    run = RunBuilder("p").run_json()
    run["profile"]["message_delay_level"] = "1s 2x"
    with pytest.raises(ContractError, match=r"^/runs/p/run\.json profile: field 'message_delay_level'"):
        validate_run(run, "/runs/p/run.json")


@pytest.mark.parametrize("field, value, words", [("started_ms", "soon", "an integer"), ("scenario", 3, "a string"),
                                                  ("system", [], "an object")])
def test_a_field_kind_reads_as_english(field, value, words):
    run = {**RunBuilder("k").run_json(), field: value}
    with pytest.raises(ContractError) as e:
        validate_run(run, "run.json")
    assert str(e.value) == f"run.json: field '{field}': expected {words}, found {value!r}"


class RemotingConnectException(Exception):
    """What the 5.x client raises for a channel that never connected: its message names no address."""


@pytest.mark.parametrize("request_, named", [
    ({"id": 1, "cmd": "brokers"}, "the name server 10.0.0.5:9876 or a broker it routes to"),
    ({"id": 2, "cmd": "broker_status", "addrs": ["10.0.0.6:10911"]}, "10.0.0.6:10911"),
])
def test_a_failed_connection_names_where_it_went(monkeypatch, request_, named):
    import io
    import sys

    from hourglass.adapters.rocketmq import client_proc

    class Client:
        namesrv = "10.0.0.5:9876"

        def brokers(self, addrs=None):
            raise RemotingConnectException("connect to  failed")

        broker_status = brokers

    class Chan:
        def __init__(self):
            self.lines = []

        def write(self, obj):
            self.lines.append(obj)

    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(request_) + "\n"))
    chan = Chan()
    client_proc.serve(Client(), chan)
    (reply,) = chan.lines
    assert reply["ok"] is False
    assert reply["error"] == f"RemotingConnectException: connect to {named} failed (the client's exception named no address)"


def test_more_consumer_instances_than_queues_to_give_them_are_refused_naming_the_field(tmp_path):
    p = _scenario(tmp_path, consumers=[{"group": "g", "topics": ["T"], "instances": 10**6}])
    with pytest.raises(ScenarioError) as e:
        Scenario.load(p)
    assert str(e.value).startswith(f"{p}: field 'consumers[0].instances': expected an integer")
    assert str(e.value).endswith(f" <= {MAX_CONSUMER_INSTANCES}, found {10**6}")
    ok = _scenario(tmp_path, consumers=[{"group": "g", "topics": ["T"], "instances": MAX_CONSUMER_INSTANCES}])
    assert Scenario.load(ok).consumers[0].instances == MAX_CONSUMER_INSTANCES
