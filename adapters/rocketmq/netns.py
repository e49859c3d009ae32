"""The broker in a network namespace of its own, so the harness can cut it off or slow it (the
``partition`` and ``latency`` faults, :mod:`reference.network`).

:func:`create` makes a namespace and a veth pair on a free ``10.213.X.0/30``: the host end
(``.1``) stays on the host, the other end (``.2``) and ``lo`` come up in the namespace. The broker
JVM is launched with :func:`command_prefix` (``ip netns exec NS``, which execs: the pid, the
process group and the signals are the JVM's own), with ``brokerIP1`` the namespace address and
``namesrvAddr`` the host end (the name server listens on every interface of the host). Every client
reaches the broker through the veth only, so rules inside the namespace cut every path to it:
:func:`partition` drops everything but ``lo`` (iptables in the namespace), :func:`add_latency`
delays what the broker sends (netem on the namespace end). Nothing on the host changes but the
host end of the veth and its address.

Needs root (CAP_NET_ADMIN) and Linux. Each namespace's name carries its owner
(``hourglass-<pid>-<start time>-<X>``) so :func:`remove_leftovers` (run by the next system that
makes one) deletes the namespaces of a harness killed with SIGKILL; deleting a namespace deletes
its veth pair.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

from adapters.base import AdapterError

PREFIX = "hourglass-"
#: the /30 subnets tried, 10.213.X.0/30 for X in 0..255
SUBNET = "10.213"
#: rule spec (after the chain) of the partition, one per direction: all but loopback
_DROP = (("INPUT", "!", "-i", "lo", "-j", "DROP"), ("OUTPUT", "!", "-o", "lo", "-j", "DROP"))


@dataclass(frozen=True)
class BrokerNet:
    name: str  # the network namespace
    host_if: str  # the host end of the veth
    ns_if: str  # its end in the namespace
    host_addr: str  # 10.213.X.1
    ns_addr: str  # 10.213.X.2: the broker's address


def unavailable() -> str | None:
    """Why this machine cannot give the broker a namespace of its own, or None."""
    if not os.path.exists("/proc/self/ns/net"):
        return "network namespaces need Linux"
    if os.geteuid() != 0:
        return "a network namespace for the broker needs root (CAP_NET_ADMIN)"
    missing = [tool for tool in ("ip", "iptables", "tc") if shutil.which(tool) is None]
    if missing:
        return f"network faults need {', '.join(missing)} on PATH"
    return None


def _run(*cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    res = subprocess.run(cmd, capture_output=True, text=True)
    if check and res.returncode != 0:
        raise AdapterError(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr.strip() or res.stdout.strip()}")
    return res


def _in_ns(net: BrokerNet, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    return _run("ip", "netns", "exec", net.name, *cmd, check=check)


def namespaces() -> list[str]:
    out = _run("ip", "netns", "list", check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _used_subnets() -> set[int]:
    out = _run("ip", "-o", "-4", "addr", "show", check=False).stdout
    used = set()
    for word in out.split():
        if word.startswith(SUBNET + "."):
            try:
                used.add(int(word.split(".")[2]))
            except (IndexError, ValueError):
                pass
    return used


def _owner_part(owner: str) -> str:
    return owner.replace(":", "-")


def create(owner: str) -> BrokerNet:
    """A namespace with a veth pair on the first free 10.213.X.0/30 (lo and both ends up)."""
    why = unavailable()
    if why:
        raise AdapterError(why)
    taken = set(namespaces())
    used = _used_subnets()
    for x in range(256):
        name = f"{PREFIX}{_owner_part(owner)}-{x}"
        if x in used or name in taken:
            continue
        net = BrokerNet(name, f"hgnet{x}h", f"hgnet{x}n", f"{SUBNET}.{x}.1", f"{SUBNET}.{x}.2")
        if _run("ip", "netns", "add", name, check=False).returncode != 0:
            continue
        if _run("ip", "link", "add", net.host_if, "type", "veth", "peer", "name", net.ns_if, check=False).returncode != 0:
            _run("ip", "netns", "del", name, check=False)  # the name is taken by another harness: next X
            continue
        try:
            _run("ip", "link", "set", net.ns_if, "netns", name)
            _run("ip", "addr", "add", f"{net.host_addr}/30", "dev", net.host_if)
            _run("ip", "link", "set", net.host_if, "up")
            _run("ip", "-n", name, "addr", "add", f"{net.ns_addr}/30", "dev", net.ns_if)
            _run("ip", "-n", name, "link", "set", net.ns_if, "up")
            _run("ip", "-n", name, "link", "set", "lo", "up")
        except BaseException:
            remove(net)
            raise
        return net
    raise AdapterError(f"no free {SUBNET}.X.0/30 subnet for a broker's network namespace (X in 0..255 all used)")


def remove(net: BrokerNet) -> None:
    """Delete the namespace and the veth pair (the kernel would delete the pair with the namespace,
    but asynchronously: deleted here so it is gone on return); idempotent."""
    _run("ip", "netns", "del", net.name, check=False)
    _run("ip", "link", "del", net.host_if, check=False)


def command_prefix(net: BrokerNet) -> tuple[str, ...]:
    """What runs a command inside the namespace (``ip netns exec`` execs it: same pid)."""
    return ("ip", "netns", "exec", net.name)


def partition(net: BrokerNet) -> None:
    """Drop every packet in and out of the namespace but loopback's: the broker is cut off from
    every client and the name server (connections stay open; TCP retransmits)."""
    for rule in _DROP:
        _in_ns(net, "iptables", "-w", "-I", *rule)


def heal(net: BrokerNet) -> None:
    """Remove the partition's rules (each as often as it is there)."""
    for rule in _DROP:
        while _in_ns(net, "iptables", "-w", "-C", *rule, check=False).returncode == 0:
            _in_ns(net, "iptables", "-w", "-D", *rule)


def is_partitioned(net: BrokerNet) -> bool:
    return all(_in_ns(net, "iptables", "-w", "-C", *rule, check=False).returncode == 0 for rule in _DROP)


def add_latency(net: BrokerNet, delay_ms: int) -> None:
    """netem: everything the broker sends (its end of the veth) leaves ``delay_ms`` later."""
    _in_ns(net, "tc", "qdisc", "replace", "dev", net.ns_if, "root", "netem", "delay", f"{int(delay_ms)}ms")


def latency_unavailable(net: BrokerNet) -> str | None:
    """Why netem cannot delay packets here (a kernel without sch_netem), or None: tried on the
    namespace's loopback."""
    res = _in_ns(net, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms", check=False)
    if res.returncode != 0:
        return f"latency needs the kernel's netem qdisc (sch_netem): tc said {res.stderr.strip() or res.returncode}"
    _in_ns(net, "tc", "qdisc", "del", "dev", "lo", "root", check=False)
    return None


def remove_latency(net: BrokerNet) -> None:
    _in_ns(net, "tc", "qdisc", "del", "dev", net.ns_if, "root", check=False)


def owner_of(name: str) -> str | None:
    """The owner tag (``pid:start``) a namespace name carries, or None when it is not ours."""
    if not name.startswith(PREFIX):
        return None
    rest = name[len(PREFIX):].rsplit("-", 1)[0]  # drop the subnet index
    pid, _, started = rest.partition("-")
    return f"{pid}:{started}" if pid.isdigit() else None


def remove_leftovers(owner_alive, say=None) -> list[str]:
    """Delete the namespaces (and their veths) whose owner (a harness process) is gone."""
    gone = []
    for name in namespaces():
        owner = owner_of(name)
        if owner is not None and not owner_alive(owner):
            x = name.rsplit("-", 1)[1]  # the kernel deletes the veth with the namespace, but later: now
            remove(BrokerNet(name, f"hgnet{x}h", f"hgnet{x}n", f"{SUBNET}.{x}.1", f"{SUBNET}.{x}.2"))
            gone.append(name)
    if gone and say is not None:
        say(f"hourglass: deleted network namespaces left by harnesses that are gone: {', '.join(gone)}")
    return gone
