"""An existing RocketMQ cluster under test (the external runtime, :mod:`adapters.rocketmq.external`):
reached through its name server, its faults the user's commands. The harness starts no server here:
its parts are the name server and the first broker the name server lists, each faulted only where
the user gave a command (``--faults``), and the harness's own consumers. Its store is not this
host's to read (no :class:`~adapters.base.OffsetFlushWatching`), nor its logs, nor its processes."""

from __future__ import annotations

from pathlib import Path

from hourglass.adapters.base import BrokerProfile, NotReady
from hourglass.adapters.parts import faculties
from hourglass.adapters.rocketmq.external import ExternalRuntime
from hourglass.adapters.rocketmq.logs import client_log_files
from hourglass.adapters.rocketmq.machine import CommandStore, Refused
from hourglass.adapters.rocketmq.provision import Distribution
from hourglass.adapters.rocketmq.servers import Broker, NameServer
from hourglass.adapters.rocketmq.system import RocketMQSystem
from hourglass.adapters.rocketmq.whitebox import memory_snapshots
from hourglass.adapters.rocketmq.proxy import ProxyEndpoint, tls_only
from hourglass.reference.contract import BROKER_TARGETS, PROXY_TARGET
from hourglass.reference.disk import DISK_ACTIONS

NO_NETWORK_COMMANDS = "the external runtime has no commands for network faults yet"
NO_CLOCK_COMMAND = "the external runtime has no command to step a broker's clock yet"


class ExternalRocketMQSystem(RocketMQSystem):
    def __init__(self, dist: Distribution, runtime: ExternalRuntime, workdir: Path, profile: BrokerProfile,
                 namesrv_addr: str, proxy_addr: str | None = None):
        super().__init__(dist, runtime, workdir, profile, external=True)
        self._namesrv_addr = namesrv_addr
        net, clock = Refused(NO_NETWORK_COMMANDS), Refused(NO_CLOCK_COMMAND)
        self.parts = {"namesrv": NameServer(self, "namesrv", self.layout.home_dir,
                                            faculties(disk=CommandStore(runtime, "namesrv"), network=net, clock=clock))}
        self.parts.update({t: Broker(self, node, faculties(disk=CommandStore(runtime, t), network=net, clock=clock))
                           for t, node in self.nodes.items()})
        self.parts["consumer"] = self.consumer
        if proxy_addr:  # its gRPC clients' endpoint, faulted by the user's [proxy] commands
            self.parts[PROXY_TARGET] = ProxyEndpoint(self, proxy_addr)
            self.info.details.update({PROXY_TARGET: proxy_addr, "proxy_tls": tls_only(dist.version)})

    @property
    def namesrv_addr(self) -> str:
        return self._namesrv_addr

    def setup(self) -> None:
        if self._is_setup:
            return
        try:
            self.open_client()
            details = self.info.details
            if any(self.cannot(a, BROKER_TARGETS[0]) for a in DISK_ACTIONS):
                details["disk_faults"] = "no fault command for disk_full/disk_free broker (give them in --faults)"
            if self.profile.own_network:
                details["network_faults"] = NO_NETWORK_COMMANDS
            if self.profile.own_clock:
                details["clock_faults"] = NO_CLOCK_COMMAND
            names = self.request("brokers", timeout_s=30)["brokers"]
            if not names:
                raise NotReady(f"external cluster at {self.namesrv_addr}: no broker registered")
            self.topology.broker_name = sorted(names)[0]
            self.parts[BROKER_TARGETS[0]].wait_ready()
            if PROXY_TARGET in self.parts:
                self.parts[PROXY_TARGET].wait_ready()
            self._is_setup = True
        except BaseException:
            self.teardown()
            raise

    def watched_processes(self) -> dict[str, int]:
        return {}

    def host_not_observed(self) -> str | None:
        return "an external cluster: its brokers run on hosts the harness does not see"

    def log_files(self) -> dict[str, Path]:
        """The client side's logs only (:func:`~adapters.rocketmq.logs.client_log_files`)."""
        return client_log_files(self.layout.logs_dir)

    def logs_not_collected(self) -> str | None:
        return "broker and name server logs: not collected (external cluster: they stay on its hosts)"

    def snapshot(self) -> list[dict]:
        """The in-memory schedule offsets of every broker the name server lists (``brokerStatus``)."""
        if "namesrv" in self.paused:
            return []
        return memory_snapshots(self.broker_status(), {}, self.cluster)
