"""How a server of a RocketMQ system is launched on its runtime: a JVM from the distribution's
jars (:data:`~adapters.rocketmq.provision.MAIN_CLASS`), or, for a ``cmd:`` system, the command line
of its own file (:mod:`adapters.rocketmq.cmd`), a launcher whose server may be a grandchild."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from hourglass.adapters.rocketmq.provision import MAIN_CLASS, Distribution
from hourglass.adapters.rocketmq.runtime import LaunchSpec, Runtime
from hourglass.reference.stalls import SAFEPOINT_LOG, SAFEPOINT_LOG_OPTION


@dataclasses.dataclass(frozen=True)
class Launch:
    """What one server's launch takes: its component and kind (``namesrv`` or ``broker``: the main
    class and heap), the distribution it runs, its home and config, the ports it listens on, the
    values of a ``cmd:`` command line, and what it runs under (a network namespace, libfaketime)."""

    component: str
    kind: str
    dist: Distribution
    home: Path
    conf: Path
    log_file: Path
    root: Path  # the system's workdir: mounted into a container
    ports: tuple[int, ...]
    port: int  # a cmd: command's {port}
    namesrv: str  # a cmd: command's {namesrv}
    store: Path  # a cmd: command's {store}
    prefix: tuple[str, ...] = ()
    wait_for_interface: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    jvm_props: tuple[str, ...] = ()  # -D options after the distribution's (the later one wins)
    args: tuple[str, ...] | None = None  # the main class's arguments (default: -c <conf>)
    lib_dir: Path | None = None  # the jars it runs from (default: the distribution's)
    main: str | None = None  # the MAIN_CLASS key it runs (default: its kind's)


def disk_warning_props(profile) -> tuple[str, ...]:
    """The broker's diskSpaceWarningLevelRatio a scenario asked for (``BrokerProfile.disk_warning_percent``,
    reference.disk), as the system property both lines read (after the distribution's default 0.98)."""
    pct = getattr(profile, "disk_warning_percent", None)
    return () if pct is None else (f"-Drocketmq.broker.diskSpaceWarningLevelRatio={pct / 100:.2f}",)


def launch_spec(launch: Launch) -> LaunchSpec:
    """The runtime's :class:`LaunchSpec`: the ``cmd:`` system's own command line, else the JVM's."""
    labels = {"hourglass.component": launch.component, "hourglass.version": launch.dist.version}
    own = launch.dist.command(launch.component, {"conf": launch.conf, "port": launch.port, "namesrv": launch.namesrv,
                                                 "store": launch.store, "home": launch.home, "log": launch.log_file})
    if own is not None:
        argv, env = own
        return LaunchSpec(component=launch.component, main_class="", classpath=(), jvm_opts=(), args=(), env=env,
                          log_file=launch.log_file, mounts=(launch.root,), ports=launch.ports, labels=labels,
                          command=argv, command_prefix=launch.prefix)
    props = ("-Duser.home=" + str(launch.home), "-Drocketmq.home.dir=" + str(launch.home))
    if launch.kind == "broker":  # its JVM-wide pauses, in its own logs (reference.stalls.SAFEPOINT_LOG; JDK 9+)
        props += (SAFEPOINT_LOG_OPTION.format(path=launch.home / "logs" / SAFEPOINT_LOG),)
    lib = launch.lib_dir or launch.dist.lib_dir
    return LaunchSpec(
        command_prefix=launch.prefix, wait_for_interface=launch.wait_for_interface,
        component=launch.component, main_class=MAIN_CLASS[launch.main or launch.kind], classpath=(str(lib / "*"),),
        jvm_opts=launch.dist.jvm_opts(launch.kind) + props + launch.jvm_props,
        args=launch.args if launch.args is not None else ("-c", str(launch.conf)),
        env=(("ROCKETMQ_HOME", str(launch.home)),) + launch.env, log_file=launch.log_file,
        mounts=(launch.root, lib), ports=launch.ports, labels=labels)


def note_processes(runtime: Runtime, component: str) -> None:
    """Write into the component's log which processes answered (what a launcher really ran)."""
    procs = runtime.processes(component)
    if procs:
        runtime.note(component, f"{component} answered a round trip; its processes:"
                     + "".join(f"\n  {pid} {line}" for pid, line in procs))
