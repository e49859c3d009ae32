"""The consumer host against a real broker: hosted consumers (``ConsumerSpec.hosted``) share one
JVM and each is still a client of its own, consuming only its own group's messages into its own
events file; one leaves its group alone while the other goes on; the host's end is each running
consumer's death, recorded like a consumer process's exit, and the restart brings them back in a new
host."""

from __future__ import annotations

import os
import signal
import time

import pytest

from hourglass.adapters.base import ConsumerSpec, SendRequest
from hourglass.reference.rundir import consumer_events
from suites.adapters.conftest import wait_for_events

pytestmark = pytest.mark.realbroker


def _deliveries(events: list[dict], key: str) -> list[dict]:
    return [e for e in events if e["type"] == "deliver" and e["key"] == key]


def _faults(events: list[dict], name: str) -> list[dict]:
    return [e for e in events if e["type"] == "fault" and e["target"] == "consumer" and e.get("name") == name]


def test_hosted_consumers_share_a_jvm_each_a_client_of_its_own(shared_system, names, tmp_path):
    a, b = ({k: f"{v}-{x}" for k, v in names.items()} for x in "ab")
    for n in (a, b):
        shared_system.create_topic(n["topic"], queues=2)
        shared_system.start_consumer(ConsumerSpec(n["consumer"], n["group"], (n["topic"],), 16, tmp_path, hosted=True))
    files = {n["consumer"]: tmp_path / consumer_events(n["consumer"]) for n in (a, b)}
    try:
        hosts = {shared_system.consumers[n["consumer"]].proc.pid for n in (a, b)}
        assert len(hosts) == 1, f"two hosted consumers in {len(hosts)} processes"
        (host_pid,) = hosts
        assert "consumer_host" in open(f"/proc/{host_pid}/cmdline").read()
        assert list(shared_system.consumer.watched().values()).count(host_pid) == 1, "the host is watched once"

        for n in (a, b):
            assert shared_system.send(SendRequest(n["topic"], n["key"] + "-1", b"x")).status == "SEND_OK"
        for n in (a, b):
            events = wait_for_events(files[n["consumer"]], lambda ev, n=n: _deliveries(ev, n["key"] + "-1"), 60,
                                     what=f"{n['consumer']}'s delivery")
            assert {e["group"] for e in events if e["type"] == "deliver"} == {n["group"]}, "a consumer got another group's message"

        shared_system.stop_consumer(a["consumer"])  # leaves its group alone: b goes on in the same host
        assert not shared_system.consumers[a["consumer"]].alive()
        assert shared_system.consumers[b["consumer"]].alive() and shared_system.consumers[b["consumer"]].proc.pid == host_pid
        assert shared_system.send(SendRequest(b["topic"], b["key"] + "-2", b"x")).status == "SEND_OK"
        wait_for_events(files[b["consumer"]], lambda ev: _deliveries(ev, b["key"] + "-2"), 60, what="b's delivery after a left")

        killed_ms = time.time_ns() // 1_000_000
        os.kill(host_pid, signal.SIGKILL)  # the OS's kill, not the harness's: a death of every consumer it hosts
        events = wait_for_events(files[b["consumer"]], lambda ev: _faults(ev, b["consumer"]), 15, what="b's death")
        (kill,) = _faults(events, b["consumer"])
        assert (kill["action"], kill["cause"], kill["exit_code"]) == ("kill", "exited", -signal.SIGKILL)
        assert kill["ts_ms"] >= killed_ms
        assert not _faults(wait_for_events(files[a["consumer"]], lambda ev: True, 1), a["consumer"]), \
            "a consumer that had left its group does not die with the host"
        assert shared_system.poll_consumers() == [b["consumer"]], "only the running one is restarted"
        restarted = shared_system.consumers[b["consumer"]]
        assert restarted.alive() and restarted.proc.pid != host_pid
        assert [(f["action"], f["cause"]) for f in _faults(wait_for_events(files[b["consumer"]], lambda ev: True, 1),
                                                             b["consumer"])] == [("kill", "exited"), ("start", "exited")]
        assert shared_system.send(SendRequest(b["topic"], b["key"] + "-3", b"x")).status == "SEND_OK"
        wait_for_events(files[b["consumer"]], lambda ev: _deliveries(ev, b["key"] + "-3"), 60, what="b's delivery after its restart")
    finally:
        shared_system.stop_consumers()
    assert not shared_system.consumer.hosts, "the stop ends the hosts"
    assert len(_faults(wait_for_events(files[b["consumer"]], lambda ev: True, 1), b["consumer"])) == 2, \
        "a stop the harness asked for is no death"
