"""Broker and name-server configuration for one system, and the free ports it listens on.

Harness-facing API::

    ports = pick_ports(base_hint=19876)            # SystemPorts(namesrv, broker) all free now
    lease = lease_ports(19876); lease.ports; lease.release()   # the same, held across processes
    layout = StoreLayout.under(workdir)              # store/, store/commitlog, home/, conf/
    conf = broker_config(dist, profile, ports, layout)   # dict of broker.conf keys
    write_properties(layout.conf_dir / "broker.conf", conf)
    read_delay_offsets(layout.store_dir)             # delayOffset.json -> {level: offset}

The broker listens on ``listenPort``, ``listenPort-2`` (VIP channel, 4.x) and ``listenPort+1``
(HA); 5.x also opens ``listenPort`` for the remoting proxy-less client. A base is chosen where all
of them and the name server's port are free.
"""

from __future__ import annotations

import fcntl
import json
import re
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hourglass.adapters.base import AdapterError, BrokerProfile
from hourglass.adapters.rocketmq.provision import Distribution
from hourglass.reference.contract import POP_CONSUMPTION, TIMER


@dataclass(frozen=True)
class SystemPorts:
    namesrv: int
    broker: int  # listenPort; the broker also takes broker-2 and broker+1
    broker_host: str = "127.0.0.1"  # brokerIP1 (its network namespace's address: adapters.rocketmq.netns)
    namesrv_host_for_broker: str = "127.0.0.1"  # where the broker finds the name server (the veth's host end)

    def all(self) -> tuple[int, ...]:
        return (self.namesrv, self.broker - 2, self.broker, self.broker + 1, self.controller, self.proxy_grpc,
                self.proxy_remoting)

    @property
    def proxy_grpc(self) -> int:
        """The proxy's gRPC port (5.x, ``grpcServerPort``): free in every base."""
        return self.namesrv + 7

    @property
    def proxy_remoting(self) -> int:
        """The proxy's remoting port (5.1+, ``remotingListenPort``)."""
        return self.namesrv + 9

    @property
    def proxy_addr(self) -> str:
        return f"127.0.0.1:{self.proxy_grpc}"

    @property
    def controller(self) -> int:
        """The controller's port (5.x controller mode, in the name server): free in every base."""
        return self.namesrv + 8

    @property
    def controller_addr(self) -> str:
        return f"127.0.0.1:{self.controller}"

    @property
    def namesrv_addr(self) -> str:
        return f"127.0.0.1:{self.namesrv}"

    @property
    def broker_addr(self) -> str:
        return f"{self.broker_host}:{self.broker}"


@dataclass(frozen=True)
class StoreLayout:
    root: Path

    @classmethod
    def under(cls, workdir: Path) -> "StoreLayout":
        return cls(Path(workdir).resolve())

    @property
    def store_dir(self) -> Path:
        return self.root / "store"

    @property
    def commitlog_dir(self) -> Path:
        return self.store_dir / "commitlog"

    @property
    def home_dir(self) -> Path:
        return self.root / "home"

    @property
    def conf_dir(self) -> Path:
        return self.root / "conf"

    @property
    def logs_dir(self) -> Path:
        return self.root / "logs"

    def make(self) -> None:
        for d in (self.store_dir, self.commitlog_dir, self.home_dir, self.conf_dir, self.logs_dir):
            d.mkdir(parents=True, exist_ok=True)


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def pick_ports(base_hint: int = 19876, span: int = 1000, step: int = 10) -> SystemPorts:
    """The first base from ``base_hint`` (in ``step``s) where the name server (base) and the
    broker (base+5, base+3, base+6) ports are all free."""
    for base in range(base_hint, base_hint + span, step):
        ports = SystemPorts(namesrv=base, broker=base + 5)
        if all(_port_free(p) for p in ports.all()):
            return ports
    raise AdapterError(f"no free ports for a RocketMQ system in {base_hint}..{base_hint + span}")


class PortLease:
    """Ports held for one system across processes: an flock on ``<tmp>/hourglass-ports/<base>``
    for as long as the system lives (released on :meth:`release` or when the process dies).
    Without it two harness processes could both find a base free before either JVM binds it, and
    one would then talk to the other's broker."""

    def __init__(self, ports: SystemPorts, handle):
        self.ports, self._handle = ports, handle

    def release(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


def lease_ports(base_hint: int = 19876, span: int = 1000, step: int = 10) -> PortLease:
    lock_dir = Path(tempfile.gettempdir()) / "hourglass-ports"
    lock_dir.mkdir(parents=True, exist_ok=True)
    for base in range(base_hint, base_hint + span, step):
        handle = open(lock_dir / str(base), "w")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        ports = SystemPorts(namesrv=base, broker=base + 5)
        if all(_port_free(p) for p in ports.all()):
            return PortLease(ports, handle)
        handle.close()
    raise AdapterError(f"no free ports for a RocketMQ system in {base_hint}..{base_hint + span}")


#: brokerRole of a master and of a slave (reference.cluster: the masters do not wait for a slave)
MASTER_ROLE, SLAVE_ROLE = "ASYNC_MASTER", "SLAVE"


#: brokerClusterName of the system's brokers (the proxy's rocketMQClusterName)
CLUSTER_NAME = "HourglassCluster"


def broker_config(dist: Distribution, profile: BrokerProfile, ports: SystemPorts, layout: StoreLayout,
                  cluster: str = CLUSTER_NAME, broker_name: str = "hg-broker", slave: bool = False,
                  controller: str | None = None) -> dict[str, str]:
    """``slave``: brokerId 1 of ``broker_name``, role SLAVE (it finds its master's HA address
    through the name server: the master listens on ``listenPort + 1``, advertised at ``brokerIP2``).
    ``controller`` (5.x controller mode, ``reference.cluster``): a replica whose role the controller
    at that address decides, acknowledging a send once the whole sync state set has it."""
    conf = {
        "brokerClusterName": cluster,
        "brokerName": broker_name,
        "brokerId": "1" if slave else "0",
        "brokerRole": SLAVE_ROLE if slave else MASTER_ROLE,
        "flushDiskType": "ASYNC_FLUSH",
        "namesrvAddr": f"{ports.namesrv_host_for_broker}:{ports.namesrv}",
        "brokerIP1": ports.broker_host,
        "brokerIP2": ports.broker_host,  # the HA address a slave connects to (default: the first NIC's)
        "listenPort": str(ports.broker),
        "storePathRootDir": str(layout.store_dir),
        "storePathCommitLog": str(layout.commitlog_dir),
        "messageDelayLevel": profile.message_delay_level,
        "flushDelayOffsetInterval": str(profile.flush_delay_offset_interval_ms),
        "autoCreateTopicEnable": "true",
        "autoCreateSubscriptionGroup": "true",
        # small files: the store stays a few hundred MB per system
        "mappedFileSizeCommitLog": str(64 * 1024 * 1024),
        "mappedFileSizeConsumeQueue": str(60_000 * 20),
        "deleteWhen": "04",
        "diskMaxUsedSpaceRatio": "95",
        # re-register quickly after a name-server restart (default 30 s)
        "registerNameServerPeriod": "10000",
        "waitTimeMillsInSendQueue": "1000",
    }
    if TIMER in dist.capabilities:  # the 5.x timer wheel
        conf.update({
            "timerWheelEnable": "true",  # timerPrecisionMs, timerMaxDelaySec: the profile's (BrokerProfile.extra)
            "mappedFileSizeTimerLog": str(16 * 1024 * 1024),
            "enableControllerMode": "false",
        })
    if POP_CONSUMPTION in dist.capabilities:
        # each pop, checkpoint, ack and revive in pop.log (BrokerConfig.enablePopLog, PopBufferMergeService,
        # PopLongPollingService): the evidence a POP verdict is read against when a pop's answer was lost
        conf["enablePopLog"] = "true"
    if controller is not None:
        conf.update({"enableControllerMode": "true", "controllerAddr": controller, "brokerId": "-1",
                     "brokerRole": SLAVE_ROLE, "allAckInSyncStateSet": "true"})
    if profile.schedule_async_deliver:  # ScheduleMessageService's asynchronous delivery (reference.profile)
        conf["enableScheduleAsyncDeliver"] = "true"
    if profile.fillable_store:  # notice a full store within 1 s (reference.disk; 60 s after start)
        conf["cleanResourceInterval"] = "1000"
    for key, value in profile.extra:
        conf[key] = value
    return conf


def namesrv_config(ports: SystemPorts, controller_store: Path | None = None) -> dict[str, str]:
    """``controller_store``: the name server also runs the controller of 5.x controller mode
    (enableControllerInNamesrv; one DLedger peer at :attr:`SystemPorts.controller`)."""
    conf = {"listenPort": str(ports.namesrv)}
    if controller_store is not None:
        conf.update({"enableControllerInNamesrv": "true", "controllerDLegerGroup": "hg",
                     "controllerDLegerPeers": f"n0-127.0.0.1:{ports.controller}", "controllerDLegerSelfId": "n0",
                     "controllerStorePath": str(controller_store), "mappedFileSize": str(64 * 1024 * 1024)})
    return conf


def write_properties(path: Path, conf: dict[str, str]) -> Path:
    lines = [f"{k}={v}" for k, v in conf.items()]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


_UNQUOTED_INT_KEY = re.compile(r"([{,]\s*)(-?\d+)(\s*:)")


def parse_delay_offsets(text: str, where: str) -> dict[int, int]:
    """``{"offsetTable":{1:3,2:0}}`` (fastjson, unquoted int keys) -> ``{1: 3, 2: 0}``."""
    try:
        obj = json.loads(_UNQUOTED_INT_KEY.sub(r'\1"\2"\3', text))
    except json.JSONDecodeError as e:
        raise AdapterError(f"{where}: expected fastjson {{\"offsetTable\": {{level: offset}}}}, "
                           f"found unparsable text ({e}): {text[:200]!r}") from None
    table = obj.get("offsetTable") if isinstance(obj, dict) else None
    if not isinstance(table, dict):
        raise AdapterError(f"{where}: field 'offsetTable': expected an object, found {table!r}")
    return {int(k): int(v) for k, v in table.items()}


def delay_offset_path(layout: StoreLayout) -> Path:
    return layout.store_dir / "config" / "delayOffset.json"


def read_delay_offsets(layout: StoreLayout) -> dict[int, int] | None:
    """The persisted schedule offsets, or None when the broker has not written the file yet."""
    path = delay_offset_path(layout)
    if not path.exists():
        return None
    text = path.read_text()
    if not text.strip():
        return None
    return parse_delay_offsets(text, str(path))
