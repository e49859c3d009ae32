"""The broker in a network namespace of its own, so the harness can cut it off or slow it (the
``partition``, ``latency`` and ``loss`` faults, :mod:`reference.network`).

:func:`create` makes a namespace and a veth pair on a free ``10.213.X.0/30``: the host end
(``.1``) stays on the host, the other end (``.2``) and ``lo`` come up in the namespace. The broker
JVM is launched with :func:`command_prefix` (``ip netns exec NS``, which execs: the pid, the
process group and the signals are the JVM's own), with ``brokerIP1`` the namespace address and
``namesrvAddr`` the host end (the name server listens on every interface of the host). Every client
reaches the broker through the veth only, so rules inside the namespace cut every path to it:
:func:`partition` drops everything but ``lo`` (iptables in the namespace), :func:`add_latency`
delays what the broker sends (netem on the namespace end), :func:`add_loss` drops a share of its
packets at random (iptables' statistic match). Nothing on the host changes but the
host end of the veth and its address.

On the container runtime the broker's container starts without a network and its JVM waits until
the namespace end of the veth is there: :func:`attach` names the container's namespace and plumbs the
pair in after each start (a restarted container has a new namespace); the rules are the same.

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

from hourglass.adapters.base import AdapterError

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
        if not _plumb(net):
            _run("ip", "netns", "del", name, check=False)  # the name is taken by another harness: next X
            continue
        return net
    raise AdapterError(f"no free {SUBNET}.X.0/30 subnet for a broker's network namespace (X in 0..255 all used)")


def _plumb(net: BrokerNet) -> bool:
    """The veth pair between the host and the namespace named ``net.name``, addressed and up (lo
    too); False when its host end's name is taken."""
    if _run("ip", "link", "add", net.host_if, "type", "veth", "peer", "name", net.ns_if, check=False).returncode != 0:
        return False
    try:
        _run("ip", "link", "set", net.ns_if, "netns", net.name)
        _run("ip", "addr", "add", f"{net.host_addr}/30", "dev", net.host_if)
        _run("ip", "link", "set", net.host_if, "up")
        _run("ip", "-n", net.name, "addr", "add", f"{net.ns_addr}/30", "dev", net.ns_if)
        _run("ip", "-n", net.name, "link", "set", net.ns_if, "up")
        _run("ip", "-n", net.name, "link", "set", "lo", "up")
    except BaseException:
        remove(net)
        raise
    return True


def attach(net: BrokerNet, pid: int) -> None:
    """Make the network namespace of process ``pid`` (a container started without a network: its
    JVM waits for :attr:`BrokerNet.ns_if`) the one named ``net.name``, with the veth pair plumbed
    in: the name and the pair of a previous start are dropped first (a container's restart brings
    a new namespace). Nothing to do when that namespace is already the named one, plumbed."""
    try:
        same = os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat(f"/var/run/netns/{net.name}").st_ino
    except OSError:
        same = False
    if same and _run("ip", "link", "show", net.host_if, check=False).returncode == 0:
        return
    _run("ip", "netns", "del", net.name, check=False)
    _run("ip", "link", "del", net.host_if, check=False)
    _run("ip", "netns", "attach", net.name, str(pid))
    if not _plumb(net):
        raise AdapterError(f"could not plumb {net.host_if} into the namespace of process {pid} ({net.name})")


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


def _loss_rules(loss_percent: int) -> tuple[tuple[str, ...], ...]:
    share = f"{min(max(loss_percent, 0), 100) / 100:.2f}"
    return tuple(rule[:-2] + ("-m", "statistic", "--mode", "random", "--probability", share) + rule[-2:] for rule in _DROP)


def add_loss(net: BrokerNet, loss_percent: int) -> None:
    """Drop ``loss_percent`` of the packets in and out of the namespace at random (iptables'
    statistic match: no netem needed); loopback untouched."""
    for rule in _loss_rules(loss_percent):
        _in_ns(net, "iptables", "-w", "-I", *rule)


def remove_loss(net: BrokerNet) -> None:
    """Remove every loss rule (whatever its share)."""
    for chain in ("INPUT", "OUTPUT"):
        listed = _in_ns(net, "iptables", "-w", "-S", chain, check=False).stdout.splitlines()
        for line in listed:
            if "--mode random" in line and line.startswith("-A "):
                _in_ns(net, "iptables", "-w", "-D", *line.split()[1:])


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
