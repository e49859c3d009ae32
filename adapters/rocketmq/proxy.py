"""5.x's proxy, the gRPC endpoint of the 5.x clients, as a server of the system (fault target
``proxy``): its own JVM in cluster mode (``ProxyStartup -pc <conf> -pm cluster -n <namesrv>``), so
it can be killed, stopped and paused on its own, in front of the system's brokers.

Its config (``rmq-proxy.json``, ``ProxyConfig``): the broker's cluster name, the name server, the
gRPC port (``grpcServerPort``) and the remoting port (``remotingListenPort``, 5.1+; a key the
release does not know is ignored). Ready once its gRPC port accepts a connection and its output
printed ``rocketmq-proxy startup successfully`` (``ProxyStartup.main``, after the gRPC server
started) once more than it had before this start: the gRPC clients themselves are the round trip.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING

from hourglass.adapters.rocketmq import config as cfg
from hourglass.adapters.rocketmq.family import _release
from hourglass.adapters.rocketmq.launch import Launch
from hourglass.adapters.rocketmq.provision import PROXY_ARTIFACT, proxy_lib
from hourglass.adapters.base import AdapterError, NotReady
from hourglass.adapters.rocketmq.servers import Server
from hourglass.reference.contract import PROXY_TARGET
from hourglass.reference.pop import PROXY_CLUSTER, PROXY_IN_BROKER, PROXY_LOCAL

if TYPE_CHECKING:
    from hourglass.adapters.rocketmq.system import RocketMQSystem

#: what ProxyStartup.main prints once every service, the gRPC server included, has started
STARTED_LINE = b"rocketmq-proxy startup successfully"
#: GrpcServerBuilder.configSslContext at rocketmq-all-5.0.0 always puts TLS on the gRPC port (a
#: self-signed certificate: grpcTlsTestModeEnable); from 5.1.0 TlsSystemConfig.tlsMode decides, its
#: default PERMISSIVE taking plain connections too
TLS_ONLY_BEFORE = (5, 1, 0)

#: ProxyStartup exits when its own first requests to the brokers fail (seen on a starved 5.5.0 broker:
#: "create system broadcast topic DefaultHeartBeatSyncerTopic failed on cluster ..."): the setup
#: starts it again, a few times, as an operator's supervisor would; a proxy that exits during a run
#: is the run's fault, never started again by this
PROXY_START_ATTEMPTS = 3


def tls_only(version: str) -> bool:
    """Whether the proxy of ``version`` takes TLS connections only (a release number; a fork's: no)."""
    release = _release(version)
    return release is not None and release < TLS_ONLY_BEFORE


def endpoint(details: dict) -> tuple[str, bool] | None:
    """The proxy a system runs, from its ``info.details``: (gRPC address, TLS only), or None."""
    addr = details.get(PROXY_TARGET)
    return (addr, bool(details.get("proxy_tls"))) if addr else None


def write_proxy_conf(topology, dist) -> Path:
    """The proxy's config (ProxyConfig, JSON) for ``topology``'s ports, written; its path."""
    ports = topology.ports
    conf = topology.conf_of(PROXY_TARGET, dist)
    conf.write_text(json.dumps({"rocketMQClusterName": cfg.CLUSTER_NAME, "namesrvAddr": ports.namesrv_addr,
                                "grpcServerPort": ports.proxy_grpc, "remotingListenPort": ports.proxy_remoting}, indent=1))
    return conf


def proxy_jars(dist, runtime) -> Path:
    """The jars the proxy runs from: a user's image's own when it ships ``rocketmq-proxy`` (the
    distribution's lib, which the container runtime maps to the image's), else the release's from
    Maven Central (provision.proxy_lib): a fork's image is tested with its own proxy."""
    return dist.lib_dir if runtime.ships(PROXY_ARTIFACT) else proxy_lib(dist)


def local_mode_args(topology, dist, broker_conf: Path) -> tuple[str, ...]:
    """ProxyStartup's arguments in local mode: it starts the broker of ``broker_conf`` in its own
    process (ProxyStartup.createBrokerController), and the proxy in front of it."""
    conf = write_proxy_conf(topology, dist)
    return ("-pm", PROXY_LOCAL, "-bc", str(broker_conf), "-pc", str(conf), "-n", topology.ports.namesrv_addr)


class ProxyEndpoint(Server):
    """A proxy at ``addr`` (an external cluster's: ``--proxy``): ready once its gRPC port accepts a
    connection; its faults are its runtime's (the user's ``[proxy]`` commands)."""

    kind = "proxy"

    def __init__(self, system: "RocketMQSystem", addr: str):
        super().__init__(system, PROXY_TARGET, system.layout.home_dir)
        self.addr = addr

    def answers(self) -> bool:
        host, port = self.addr.rsplit(":", 1)
        with socket.socket() as s:
            s.settimeout(2)
            return s.connect_ex((host, int(port))) == 0


class Proxy(ProxyEndpoint):
    """The proxy the harness starts: its own JVM in cluster mode."""

    def __init__(self, system: "RocketMQSystem"):
        super().__init__(system, system.topology.ports.proxy_addr if system.topology.ports else "")
        self.started_seen = 0  # the STARTED_LINEs in its output before the current start

    @property
    def log_file(self):
        return self.system.layout.logs_dir / f"{self.target}.out"

    def _started_lines(self) -> int:
        try:
            return self.log_file.read_bytes().count(STARTED_LINE)
        except FileNotFoundError:
            return 0

    def launch(self) -> None:
        self.started_seen = self._started_lines()
        super().launch()

    def start(self) -> None:
        self.started_seen = self._started_lines()
        super().start()

    def launch_args(self) -> Launch:
        topo = self.system.topology
        ports, layout = topo.ports, topo.layout
        conf = write_proxy_conf(topo, self.dist)
        return Launch(component=self.target, kind=self.kind, dist=self.dist, home=self.home, conf=conf,
                      log_file=self.log_file, root=layout.root, ports=(ports.proxy_grpc, ports.proxy_remoting),
                      port=ports.proxy_grpc, namesrv=ports.namesrv_addr, store=layout.store_dir,
                      args=("-pc", str(conf), "-pm", PROXY_CLUSTER, "-n", ports.namesrv_addr), lib_dir=proxy_jars(self.dist, self.runtime))

    def answers(self) -> bool:
        self.addr = self.system.topology.ports.proxy_addr  # leased at setup, after the part was made
        return self._started_lines() > self.started_seen and super().answers()


class InBrokerProxy(ProxyEndpoint):
    """The proxy in the broker's process (local mode): ready once its gRPC port answers; every
    fault of it is the broker's (reference.pop.PROXY_IN_BROKER)."""

    def __init__(self, system: "RocketMQSystem"):
        super().__init__(system, "")

    def cannot(self, action: str) -> str | None:
        return PROXY_IN_BROKER

    def answers(self) -> bool:
        self.addr = self.system.topology.ports.proxy_addr
        return super().answers()


class ProxyStart:
    """The proxy's start after the brokers' (ProxyStartup creates its system topics on them first),
    in a thread of its own in cluster mode: the runs that need no proxy begin beside it, and what
    needs it waits for it (:meth:`wait`), failing with its reason when it did not start. A proxy that exits
    while starting is started again (:data:`PROXY_START_ATTEMPTS`), unless the system is being torn
    down (:meth:`close`): nothing starts it after that."""

    def __init__(self, proxy: ProxyEndpoint, local: bool):
        self.proxy, self.local = proxy, local
        self.done: Future = Future()
        self._lock = threading.Lock()
        self._closed = False
        if local:  # the broker's process runs it: answering by now
            self._start()
        else:
            threading.Thread(target=self._start, name="hg-proxy-start", daemon=True).start()

    def _start(self) -> None:
        try:
            if not self.local:
                with self._lock:  # a teardown meanwhile ends what was launched, or finds nothing launched
                    if self._closed:
                        raise AdapterError("the system was torn down before its proxy started")
                    self.proxy.launch()
            for attempt in range(1, PROXY_START_ATTEMPTS + 1):
                try:
                    self.proxy.wait_ready()
                    break
                except NotReady:
                    raise
                except AdapterError as e:  # it exited while starting
                    with self._lock:
                        if self.local or self._closed or attempt == PROXY_START_ATTEMPTS:
                            raise
                        print(f"hourglass: the proxy exited while starting (attempt {attempt} of {PROXY_START_ATTEMPTS}), "
                              f"started again: {str(e).splitlines()[0]}", file=sys.stderr, flush=True)
                        self.proxy.start()
            self.done.set_result(None)
        except BaseException as e:  # noqa: BLE001 - handed to whoever waits for the proxy
            self.done.set_exception(e)

    def wait(self) -> None:
        """Once the proxy answers; its start's failure raised (every time it is asked)."""
        self.done.result()

    def close(self) -> None:
        with self._lock:
            self._closed = True
