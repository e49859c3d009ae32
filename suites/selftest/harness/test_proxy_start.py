"""The proxy in front of the brokers is started again when it exits while starting
(``LocalRocketMQSystem._start_proxy``, ``PROXY_START_ATTEMPTS``): seen under a starved 5.5.0
broker, ProxyStartup exited on "create system broadcast topic DefaultHeartBeatSyncerTopic failed on
cluster HourglassCluster", and the shared system of 21 scenarios broke at its setup. A proxy that
does not answer in time, or exits every time, still fails the setup with its own error."""

from __future__ import annotations

import pytest

from hourglass.adapters.base import AdapterError, NotReady
from hourglass.adapters.rocketmq.local import PROXY_START_ATTEMPTS, LocalRocketMQSystem
from hourglass.reference.contract import PROXY_TARGET


class FakeProxy:
    def __init__(self, outcomes: list):
        self.outcomes, self.calls = list(outcomes), []

    def launch(self):
        self.calls.append("launch")

    def start(self):
        self.calls.append("start")

    def wait_ready(self):
        self.calls.append("wait")
        outcome = self.outcomes.pop(0)
        if outcome is not None:
            raise outcome


class FakeSystem:
    proxy_local = False

    def __init__(self, proxy):
        self.parts = {PROXY_TARGET: proxy}
        self.info = type("Info", (), {"details": {}})()
        self.ports = type("Ports", (), {"proxy_addr": "127.0.0.1:1"})()
        self.dist = type("Dist", (), {"version": "5.5.0"})()


EXITED = AdapterError("proxy of rocketmq 5.5.0 exited with status 1 (config x).\n... create system broadcast topic failed")


def test_a_proxy_that_exited_while_starting_is_started_again():
    proxy = FakeProxy([EXITED, None])
    LocalRocketMQSystem._start_proxy(FakeSystem(proxy))
    assert proxy.calls == ["launch", "wait", "start", "wait"]


@pytest.mark.parametrize("outcomes, error", [([EXITED] * PROXY_START_ATTEMPTS, AdapterError),
                                             ([NotReady("did not answer a round trip within 120 s")], NotReady)])
def test_a_proxy_that_exits_every_time_or_never_answers_fails_the_setup(outcomes, error):
    proxy = FakeProxy(outcomes)
    with pytest.raises(error):
        LocalRocketMQSystem._start_proxy(FakeSystem(proxy))
    assert proxy.calls.count("wait") == len(outcomes)
