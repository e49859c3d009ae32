"""Real Apache RocketMQ brokers under the harness's control.

Harness-facing API::

    from hourglass.adapters.rocketmq import open_system
    system = open_system("rocketmq:latest", runtime="auto", workdir=run_dir / "system", profile=profile)
    system.setup(); ...; system.teardown()

``system``: ``rocketmq:<version>`` (jars from Maven Central, cached), ``rocketmq:latest``
(= ``provision.LATEST``), ``dist:/path`` (a distribution dir: bin/ conf/ lib/) or ``jars:/path``;
or a chain of them on one store, ``rocketmq:4.9.7+5.5.0`` (``provision.CHAIN_SEP``: each start of
the broker after the first launches the next version); or ``cmd:FILE``, any implementation started
by the commands of a TOML file (:mod:`adapters.rocketmq.cmd`; process runtime only).
``runtime``: ``auto`` (container when a Docker engine answers ``docker info``, else process),
``process``, ``container`` (``image`` names an existing image instead of building one), or
``external`` (an existing cluster: pass ``namesrv_addr`` and ``fault_commands``, see
:mod:`adapters.rocketmq.external`). Module map: ``provision`` (versions → jars, ROCKETMQ_HOME,
JVM options), ``cmd`` (``cmd:`` files), ``apache_dist`` (an Apache release's own bin/ scripts as a
``cmd:`` system), ``config`` (broker.conf, ports, delayOffset.json), ``process`` / ``container``
(runtimes), ``external`` (an existing cluster's runtime), ``system`` (what every RocketMQ
:class:`~adapters.base.System` does through its client), ``local`` / ``external_system`` (the
system the harness starts, the existing cluster), ``topology`` (which servers run where),
``servers`` / ``consumers`` (the fault targets as parts), ``launch`` (a server's launch, ``cmd:``
included), ``machine`` (disk, network and clock faults), ``whitebox`` (schedule offsets),
``logs``, ``client_proc`` / ``consumer_proc`` / ``clientlink`` (the JPype client processes and
their harness side), ``helpers`` + ``java/`` (the send loop in Java), ``bench`` (figures:
``python -m hourglass.adapters.rocketmq.bench``).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from hourglass.adapters.base import AdapterError, BrokerProfile

RUNTIMES = ("auto", "process", "container", "external")


def docker_engine_answers(timeout_s: float = 10.0) -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=timeout_s).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def open_system(system: str = "rocketmq:latest", runtime: str = "auto", workdir: Path | None = None,
                profile: BrokerProfile | None = None, image: str | None = None, *, base_port: int = 19876,
                labels: dict | None = None, namesrv_addr: str | None = None,
                fault_commands: dict[str, str] | None = None, proxy_addr: str | None = None):
    """A :class:`~adapters.rocketmq.system.RocketMQSystem`, not yet started (call ``setup()``):
    a :class:`~adapters.rocketmq.local.LocalRocketMQSystem` for the process and container runtimes,
    an :class:`~adapters.rocketmq.external_system.ExternalRocketMQSystem` for the external one."""
    from hourglass.adapters.rocketmq.local import LocalRocketMQSystem
    from hourglass.adapters.rocketmq.provision import resolve_chain

    if runtime not in RUNTIMES:
        raise AdapterError(f"runtime {runtime!r}: expected one of {', '.join(RUNTIMES)}")
    if workdir is None:
        raise AdapterError("open_system: workdir is required (the system's store, configs and logs go there)")
    workdir = Path(workdir)
    profile = profile or BrokerProfile()
    chain = resolve_chain(system)
    dist = chain[0]
    if len(chain) > 1 and (runtime == "external" or image):
        raise AdapterError(f"{system}: a chain of versions on one store needs the process or container runtime "
                           "and the jars of each version (not --runtime external, not --image)")
    if dist.source == "cmd":  # its own commands run on this host
        if runtime not in ("auto", "process") or image:
            raise AdapterError(f"{system}: a cmd: system runs its commands as processes on this host: it needs "
                               f"--runtime process, found --runtime {runtime}" + (f" --image {image}" if image else ""))
        runtime = "process"
    if runtime == "auto":
        runtime = "container" if docker_engine_answers() else "process"
    if runtime == "process":
        from hourglass.adapters.rocketmq.process import ProcessRuntime

        rt = ProcessRuntime()
    elif runtime == "container":
        try:
            from hourglass.adapters.rocketmq.container import ContainerRuntime
        except ImportError as e:
            raise AdapterError(f"runtime 'container' is unavailable here: {e}") from None
        rt = ContainerRuntime(dist, workdir, image=image, labels=labels or {})
    else:
        from hourglass.adapters.rocketmq.external import ExternalRuntime
        from hourglass.adapters.rocketmq.external_system import ExternalRocketMQSystem

        if not namesrv_addr:
            raise AdapterError("runtime 'external': namesrv_addr (host:port of the cluster's name server) is required")
        return ExternalRocketMQSystem(dist, ExternalRuntime(fault_commands or {}), workdir, profile, namesrv_addr, proxy_addr)
    return LocalRocketMQSystem(dist, rt, workdir, profile, base_port=base_port, chain=chain)
