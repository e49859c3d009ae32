"""An admin command on every broker (``RocketMQSystem.admin``: a topic, a group, POP mode, a
group's start offsets, the broker's config) rides over what a busy host or the name server does to
it — a timeout of RocketMQ's own 5 s admin call, a broker the name server dropped for a while
(``reference.cluster.REGISTERED_WITHIN_MS``) — and fails with the client's error past them."""

from __future__ import annotations

import pytest

from hourglass.adapters.rocketmq import system as system_mod
from hourglass.adapters.rocketmq.clientlink import NO_BROKER, ClientError
from hourglass.adapters.rocketmq.system import RocketMQSystem
from hourglass.reference.cluster import REGISTERED_WITHIN_MS

TIMEOUT = "RemotingTimeoutException: wait response on the channel <127.0.0.1:10911> timeout, 5000(ms)"


class FakeClock:
    def __init__(self):
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s


def _system(monkeypatch, answers: list):
    """A system whose client answers ``answers`` in turn (an error string raises ClientError)."""
    clock = FakeClock()
    monkeypatch.setattr(system_mod.time, "monotonic", clock.monotonic)
    monkeypatch.setattr(system_mod.time, "sleep", clock.sleep)
    system = RocketMQSystem.__new__(RocketMQSystem)
    calls = []

    def request(cmd, timeout_s=30.0, **args):
        calls.append((cmd, args, clock.now))
        answer = answers[min(len(calls), len(answers)) - 1]
        if isinstance(answer, str):
            raise ClientError(cmd, answer)
        return answer

    system.request = request
    return system, calls, clock


def test_a_broker_the_name_server_dropped_is_waited_for_until_it_registers_again(monkeypatch):
    system, calls, clock = _system(monkeypatch, [f"RuntimeError: {NO_BROKER}"] * 12 + [{"brokers": ["127.0.0.1:10911"]}])
    system.create_topic("T", queues=2)
    assert len(calls) == 13 and calls[-1][:2] == ("create_topic", {"topic": "T", "queues": 2})
    assert clock.now - 1000.0 < REGISTERED_WITHIN_MS / 1000


def test_no_broker_registered_for_longer_than_a_registration_is_the_clients_error(monkeypatch):
    system, calls, clock = _system(monkeypatch, [f"RuntimeError: {NO_BROKER}"])
    with pytest.raises(ClientError, match=NO_BROKER):
        system.admin("create_group", group="g", retry_max_times=3)
    assert clock.now - 1000.0 >= REGISTERED_WITHIN_MS / 1000
    assert clock.now - 1000.0 < REGISTERED_WITHIN_MS / 1000 + 2


def test_a_timeout_is_tried_again_up_to_the_attempts_then_raised(monkeypatch):
    system, calls, _ = _system(monkeypatch, [TIMEOUT] * 3 + [{"brokers": {}}])
    assert system.admin("set_pop_mode", topic="T", group="g") == {"brokers": {}}
    assert len(calls) == 4
    system, calls, _ = _system(monkeypatch, [TIMEOUT])
    with pytest.raises(ClientError, match="timeout"):
        system.admin("set_pop_mode", topic="T", group="g")
    assert len(calls) == RocketMQSystem.ADMIN_ATTEMPTS


def test_any_other_error_is_raised_at_once(monkeypatch):
    system, calls, _ = _system(monkeypatch, ["MQClientException: CODE: 1 DESC: the topic name is illegal"])
    with pytest.raises(ClientError, match="illegal"):
        system.create_topic("bad topic")
    assert len(calls) == 1


SENT_FAILED = ("RemotingSendRequestException: send request to </127.0.0.1:19891> failed")


def test_a_request_failed_with_the_channel_another_requests_timeout_closed_is_asked_again(monkeypatch):
    """NettyRemotingClient.invokeSync closes the channel of a timed-out request: every request in
    flight on it fails with RemotingSendRequestException (13 topic creations and group configs of
    a shared broker's runs at once, in a proof run on a starved broker). Each is asked again."""
    system, calls, _ = _system(monkeypatch, [SENT_FAILED, TIMEOUT, {"brokers": ["127.0.0.1:19891"]}])
    system.create_topic("T", queues=2)
    assert len(calls) == 3


def test_a_dlq_read_is_asked_again_after_a_failure_on_its_way(monkeypatch):
    system, calls, _ = _system(monkeypatch, [SENT_FAILED, {"messages": [{"key": "k"}]}])
    assert system.read_dlq("g") == [{"key": "k"}]
    assert [c[0] for c in calls] == ["read_dlq", "read_dlq"]
    system, calls, _ = _system(monkeypatch, ["MQClientException: CODE: 17 DESC: topic not exist"])
    with pytest.raises(ClientError, match="topic not exist"):  # the broker's answer: at once
        system.read_dlq("g")
    assert len(calls) == 1
