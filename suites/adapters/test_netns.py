"""The broker's network namespace (``adapters.rocketmq.netns``) without a broker: a listener in the
namespace is reachable from the host at its veth address, unreachable while partitioned, reachable
again after the heal; the namespace and its veth are gone after ``remove``; a namespace whose owner
is gone is removed by the next sweep, one whose owner lives is kept. Needs root."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from hourglass.adapters.rocketmq import netns
from hourglass.adapters.rocketmq.process import owner_alive, owner_tag

pytestmark = pytest.mark.skipif(netns.unavailable() is not None, reason=str(netns.unavailable()))
PORT = 18_765


def _connects(addr: str, timeout_s: float = 1.0) -> bool:
    try:
        with socket.create_connection((addr, PORT), timeout=timeout_s):
            return True
    except OSError:
        return False


def _veths() -> str:
    return subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout


@pytest.fixture
def net():
    net = netns.create(owner_tag())
    try:
        yield net
    finally:
        netns.remove(net)


def test_a_partition_cuts_the_namespace_off_and_the_heal_restores_it(net):
    server = subprocess.Popen([*netns.command_prefix(net), sys.executable, "-c",
                               f"import socket,time; s=socket.socket(); s.bind(('{net.ns_addr}', {PORT})); s.listen(); time.sleep(60)"])
    try:
        deadline = time.monotonic() + 10
        while not _connects(net.ns_addr) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _connects(net.ns_addr)  # the host reaches the namespace through the veth
        netns.partition(net)
        assert netns.is_partitioned(net) and not _connects(net.ns_addr)
        netns.heal(net)
        assert not netns.is_partitioned(net) and _connects(net.ns_addr)
    finally:
        server.kill()
        server.wait()


def test_remove_leaves_no_namespace_and_no_veth(net):
    assert net.name in netns.namespaces() and net.host_if in _veths()
    netns.remove(net)
    assert net.name not in netns.namespaces() and net.host_if not in _veths()


def test_the_sweep_removes_the_namespaces_of_gone_owners_only(net):
    gone = netns.create("999999999:1")  # no such process
    try:
        assert netns.owner_of(gone.name) == "999999999:1" and netns.owner_of(net.name) == owner_tag()
        removed = netns.remove_leftovers(owner_alive)
        assert removed == [gone.name] and gone.host_if not in _veths() and net.name in netns.namespaces()
    finally:
        netns.remove(gone)
