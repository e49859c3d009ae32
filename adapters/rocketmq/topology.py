"""Which servers a RocketMQ system runs and where: the cluster layout (``reference.cluster``), each
broker process's brokerName, role, store and ports, the name server's config, and the distribution
each start of the broker launches (an across-store chain, ``provision.CHAIN_SEP``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from hourglass.adapters.base import AdapterError, BrokerProfile
from hourglass.adapters.rocketmq import config as cfg
from hourglass.adapters.rocketmq.provision import Distribution
from hourglass.reference.cluster import CONTROLLER, MASTER_SLAVE, SINGLE, broker_targets
from hourglass.reference.contract import BROKER_TARGETS, PROXY_TARGET

#: the second broker's folder under the system's workdir (its store, home, logs of its own)
SECOND_BROKER_DIR = "broker-2"


@dataclasses.dataclass(frozen=True)
class BrokerNode:
    """One broker process of the system (``reference.cluster``): its fault target, its brokerName,
    whether it is a slave, and its own store and home (the first broker's are the system's)."""

    target: str
    name: str
    slave: bool
    layout: cfg.StoreLayout


def cluster_unsupported(cluster: str, external: bool, commands: bool) -> str | None:
    """Why a system cannot run ``cluster``'s second broker, or None."""
    if cluster == SINGLE:
        return None
    if external:
        return "an external cluster is what it is: the harness starts no broker there"
    if commands:
        return "a cmd: system launches one broker by its own command"
    return None


class Topology:
    def __init__(self, dist: Distribution, chain: tuple[Distribution, ...], workdir: Path, profile: BrokerProfile,
                 base_port: int, external: bool):
        #: the name server, the clients and the broker's first start run ``dist``; with a ``chain``
        #: (``dist`` is its first), each later start of the broker launches the next distribution
        #: of the chain on the same store
        self.chain = chain or (dist,)
        self.dist = dist
        self.broker_dist = dist
        self._broker_starts = 0
        self.profile = profile
        self.layout = cfg.StoreLayout.under(workdir)
        self.base_port = base_port
        self.ports: cfg.SystemPorts | None = None
        self._lease: cfg.PortLease | None = None
        self._lease2: cfg.PortLease | None = None
        self._ports2: cfg.SystemPorts | None = None  # the second broker's (its namesrv is the system's)
        self.broker_name = "hg-broker"
        why = cluster_unsupported(profile.cluster, external, self.commands)
        if why is None and profile.cluster != SINGLE and len(self.chain) > 1:
            why = "an across-store chain upgrades a single broker"
        if why is None and profile.cluster == CONTROLLER and dist.major < 5:
            why = f"controller mode (automatic failover) came with RocketMQ 5.0; this is {dist.version}"
        self.cluster = SINGLE if why else profile.cluster
        self.cluster_unsupported = why
        #: the broker processes, by target (reference.cluster); the first one's store is the system's
        self.nodes = {t: self._node(t) for t in broker_targets(self.cluster)}

    def _node(self, target: str) -> BrokerNode:
        first = target == BROKER_TARGETS[0]
        name = self.broker_name if first or self.cluster in (MASTER_SLAVE, CONTROLLER) else f"{self.broker_name}-2"
        layout = self.layout if first else cfg.StoreLayout.under(self.layout.root / SECOND_BROKER_DIR)
        return BrokerNode(target, name, not first and self.cluster == MASTER_SLAVE, layout)

    @property
    def commands(self) -> bool:
        """Whether a version of the system is launched by commands of its own (a ``cmd:`` system)."""
        return any(type(d).command is not Distribution.command for d in self.chain)

    @property
    def second(self) -> BrokerNode | None:
        return self.nodes.get(BROKER_TARGETS[1])

    def ports_of(self, target: str) -> cfg.SystemPorts:
        """The ports of a broker process (the system's for the first broker and the name server)."""
        if target == BROKER_TARGETS[1]:
            if self._ports2 is None:
                raise AdapterError("system not set up: no ports for broker-2 yet")
            return self._ports2
        return self.ports

    def lease(self) -> None:
        """Lease the system's ports (the name server's, the first broker's, the controller's)."""
        self._lease = cfg.lease_ports(self.base_port)
        self.ports = self._lease.ports

    def lease_second(self, details: dict) -> None:
        """The second broker's own ports (a lease of its own) and folders, recorded in ``details``."""
        second = self.second
        if second is None:
            return
        self._lease2 = cfg.lease_ports(self.base_port)
        self._ports2 = cfg.SystemPorts(namesrv=self.ports.namesrv, broker=self._lease2.ports.broker)
        second.layout.make()
        self.dist.make_home(second.layout.home_dir)
        details["ports"][second.target] = self._ports2.broker
        details["brokers"] = {n.target: {"name": n.name, "role": "slave" if n.slave else "master",
                                         "store": str(n.layout.store_dir)} for n in self.nodes.values()}

    def release(self) -> None:
        for lease in (self._lease, self._lease2):
            if lease is not None:
                lease.release()
        self._lease = self._lease2 = None

    def write_namesrv_conf(self) -> None:
        cfg.write_properties(self.layout.conf_dir / "namesrv.conf", cfg.namesrv_config(
            self.ports, self.layout.root / "controller" if self.cluster == CONTROLLER else None))

    def conf_of(self, component: str, dist: Distribution) -> Path:
        """The config file ``component`` is launched with (a chain's broker: one per version)."""
        if component == BROKER_TARGETS[0] and len(self.chain) > 1:
            return self.layout.conf_dir / f"broker-{dist.version}.conf"
        if component == PROXY_TARGET:  # ProxyConfig is JSON
            return self.layout.conf_dir / "rmq-proxy.json"
        return self.layout.conf_dir / f"{component}.conf"

    def next_broker_dist(self) -> Distribution:
        """The next distribution of the chain, for the broker's next start on the same store."""
        self._broker_starts += 1
        self.broker_dist = self.chain[self._broker_starts % len(self.chain)]
        return self.broker_dist
