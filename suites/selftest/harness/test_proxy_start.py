"""The proxy in front of the brokers (``adapters.rocketmq.proxy.ProxyStart``).

It starts after the brokers (ProxyStartup creates its system topics on them), in cluster mode in a
thread of its own, so that the runs needing no proxy begin beside its 6 s start; what needs it (a
gRPC group's start, a fault of the proxy) waits for it and fails with its reason. It is started
again when it exits while starting (``PROXY_START_ATTEMPTS``): seen under a starved 5.5.0 broker,
ProxyStartup exited on "create system broadcast topic DefaultHeartBeatSyncerTopic failed on cluster
HourglassCluster", and the shared system of 21 scenarios broke at its setup. Once the system is
being torn down, nothing starts it again."""

from __future__ import annotations

import threading

import pytest

from hourglass.adapters.base import AdapterError, ConsumerSpec, NotReady
from hourglass.adapters.rocketmq.local import LocalRocketMQSystem
from hourglass.adapters.rocketmq.proxy import PROXY_START_ATTEMPTS, ProxyStart
from hourglass.reference.contract import PROXY_TARGET
from hourglass.reference.modes import CONCURRENTLY
from hourglass.reference.pop import GRPC_PUSH


class FakeProxy:
    def __init__(self, outcomes: list, gate: threading.Event | None = None):
        self.outcomes, self.calls, self.gate = list(outcomes), [], gate

    def launch(self):
        self.calls.append("launch")

    def start(self):
        self.calls.append("start")

    def wait_ready(self):
        self.calls.append("wait")
        if self.gate is not None:
            assert self.gate.wait(10)
        outcome = self.outcomes.pop(0)
        if outcome is not None:
            raise outcome


EXITED = AdapterError("proxy of rocketmq 5.5.0 exited with status 1 (config x).\n... create system broadcast topic failed")


def test_a_proxy_that_exited_while_starting_is_started_again():
    proxy = FakeProxy([EXITED, None])
    ProxyStart(proxy, local=False).wait()
    assert proxy.calls == ["launch", "wait", "start", "wait"]


@pytest.mark.parametrize("outcomes, error", [([EXITED] * PROXY_START_ATTEMPTS, AdapterError),
                                             ([NotReady("did not answer a round trip within 120 s")], NotReady)])
def test_a_proxy_that_exits_every_time_or_never_answers_fails_what_waits_for_it(outcomes, error):
    proxy = FakeProxy(outcomes)
    start = ProxyStart(proxy, local=False)
    for _ in range(2):  # every run that needs it gets the reason
        with pytest.raises(error):
            start.wait()
    assert proxy.calls.count("wait") == len(outcomes)


def test_in_local_mode_the_start_is_the_setup_s_own_and_never_repeated():
    proxy = FakeProxy([EXITED, None])
    start = ProxyStart(proxy, local=True)
    assert proxy.calls == ["wait"]  # done before the constructor returned: no launch, no restart
    with pytest.raises(AdapterError):
        start.wait()


def test_a_proxy_exiting_while_the_system_is_torn_down_is_not_started_again():
    gate = threading.Event()
    proxy = FakeProxy([EXITED, None], gate)
    start = ProxyStart(proxy, local=False)
    start.close()
    gate.set()
    with pytest.raises(AdapterError):
        start.wait()
    assert "start" not in proxy.calls


def _system(start: ProxyStart) -> LocalRocketMQSystem:
    system = object.__new__(LocalRocketMQSystem)
    system.parts = {PROXY_TARGET: start.proxy, "broker": object()}
    system._proxy_start = start
    return system


def test_the_runs_go_on_beside_the_proxy_s_start_and_what_needs_it_waits():
    gate = threading.Event()
    proxy = FakeProxy([None], gate)
    system = _system(ProxyStart(proxy, local=False))  # returned while the proxy is still starting
    assert system.part("broker") is system.parts["broker"]
    got = []
    waiter = threading.Thread(target=lambda: got.append(system.part(PROXY_TARGET)))
    waiter.start()
    waiter.join(0.3)
    assert waiter.is_alive() and not got  # a fault of the proxy waits for a proxy up
    gate.set()
    waiter.join(5)
    assert got == [proxy]


def test_a_grpc_group_does_not_start_without_its_proxy():
    system = _system(ProxyStart(FakeProxy([EXITED] * PROXY_START_ATTEMPTS), local=False))
    spec = ConsumerSpec("c-0", "cg", ("t",), mode=GRPC_PUSH)
    with pytest.raises(AdapterError, match="exited"):
        system.start_consumer(spec)
    started = []
    system2 = _system(ProxyStart(FakeProxy([EXITED] * PROXY_START_ATTEMPTS), local=False))
    system2.consumer = type("C", (), {"add": lambda self, s, create: started.append(s.name)})()
    system2.info = type("I", (), {"details": {}})()
    system2.create_topic = lambda *a, **k: None
    system2.start_consumer(ConsumerSpec("r-0", "rg", ("t",), mode=CONCURRENTLY))
    assert started == ["r-0"]


def test_the_consumer_hosts_warmed_are_those_hosted_groups_use():
    """A shared system's consumer hosts start beside its broker (``warm_consumer_hosts``): the POP
    groups' and the others', never one for gRPC groups (each a process of its own)."""
    from hourglass.adapters.rocketmq.system import RocketMQSystem
    from hourglass.reference.modes import BROADCASTING, ORDERLY
    from hourglass.reference.pop import GRPC_SIMPLE, POP

    def warmed(modes):
        system = object.__new__(LocalRocketMQSystem)
        calls = []
        system.consumer = type("C", (), {"warm": lambda self, pop: calls.append(pop)})()
        RocketMQSystem.warm_consumer_hosts(system, modes)
        return calls

    assert warmed({CONCURRENTLY, ORDERLY, BROADCASTING}) == [False]
    assert warmed({POP, CONCURRENTLY, GRPC_SIMPLE}) == [False, True]
    assert warmed({GRPC_SIMPLE, GRPC_PUSH}) == []
