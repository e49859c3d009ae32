"""The RocketMQ family: real brokers, in a container, as processes or an existing cluster, and
``cmd:`` systems (any implementation started by the commands of a TOML file).

- ``rocketmq:<version>`` (``rocketmq:latest`` = the newest 5.x on Maven Central), ``dist:/path``
  (a local distribution: bin/ conf/ lib/), ``jars:/path`` (a folder of jars): a real broker, in a
  container or as processes (``runtime``), or ``external`` (an existing cluster).
- ``rocketmq:4.9.7+5.5.0`` (any of those joined by ``+``): versions that take turns on one store,
  the broker's first start runs the first and each later start the next (an upgrade, then back).
- ``cmd:FILE``: any implementation, its name server and broker started by the commands of a TOML
  file (placeholders ``{conf}``, ``{port}``, ``{namesrv}``, ``{store}``, ``{home}``, ``{log}``...),
  with its version, the official client that drives it and its capabilities; process runtime only
  (``adapters.rocketmq.cmd``; ``python -m hourglass.adapters.rocketmq.apache_dist`` makes one that starts an
  Apache release through its own ``bin/`` scripts). The spec is kept with the file's absolute path.

Registered with the harness by this module's ``FAMILY`` (``harness.families``). ``spec``
arguments are the harness's system specs (``spec``, ``runtime``, ``image``, ``namesrv``,
``faults_file``).
"""

from __future__ import annotations

from pathlib import Path

from hourglass.adapters.base import AdapterError, BrokerProfile, SystemInfo
from hourglass.reference.contract import (ASYNC_DELIVER, GRPC, POP_CONSUMPTION, PROXY_TARGET, ROCKETMQ_ADAPTER, TIMER, ContractError,
                                          OptionError)

PREFIXES = ("rocketmq:", "dist:", "jars:", "cmd:")
#: the first 5.x major: timer messages (a chain can do what every one of its versions can)
TIMER_MAJOR = 5

#: the first release with ScheduleMessageService's asynchronous delivery (enableScheduleAsyncDeliver:
#: ISSUE #3449, first in rocketmq-all-4.9.3)
ASYNC_DELIVER_SINCE = (4, 9, 3)


def capabilities_of(versions) -> set[str]:
    """``timer`` (5.x timer messages) and ``pop`` (5.x POP consumption) unless a version before 5
    runs, ``async_deliver`` unless one before 4.9.3 runs; a chain across one store can do what
    every one of its versions can (a version that is no release number, a fork's, is taken at its
    word: all)."""
    out = {TIMER, ASYNC_DELIVER, POP_CONSUMPTION}
    if any(v.split(".")[0].isdigit() and int(v.split(".")[0]) < TIMER_MAJOR for v in versions):
        out -= {TIMER, POP_CONSUMPTION}
    if any((r := _release(v)) is not None and r < ASYNC_DELIVER_SINCE for v in versions):
        out.discard(ASYNC_DELIVER)
    return out


class RocketMQFamily:
    name = "rocketmq"
    adapter = ROCKETMQ_ADAPTER
    spec_help = "rocketmq:<version>, dist:/path, jars:/path, cmd:FILE"
    default_spec = "rocketmq:latest"
    runtimes = ("auto", "container", "process", "external")
    virtual = False
    test_marks = ("realbroker",)

    def claims(self, spec_text: str) -> bool:
        """Its kinds with something after the colon (``cmd:`` alone too: its check says what it needs)."""
        return spec_text.startswith(PREFIXES) and (bool(spec_text.partition(":")[2]) or spec_text == "cmd:")

    def normalize(self, spec_text: str) -> str:
        """A ``cmd:`` spec with the file's absolute path (run.json and replay)."""
        from hourglass.adapters.rocketmq.cmd import KIND, cmd_path

        if spec_text.startswith(KIND) and len(spec_text) > len(KIND):
            return KIND + str(cmd_path(spec_text))
        return spec_text

    def check(self, spec, option: str) -> None:
        """See :meth:`harness.systems.SystemSpec.check`."""
        from hourglass.adapters.rocketmq.provision import CHAIN_SEP, ProvisionError, resolve, split_chain, valid_version

        where = f"{option} {spec.spec}"
        if spec.spec.startswith("cmd:"):
            return self._check_cmd(spec, where)
        parts = split_chain(spec.spec)
        if len(parts) > 1:
            if any(p.startswith("cmd:") for p in parts):
                raise OptionError(where, None, "a chain of rocketmq:, dist: or jars: systems (a cmd: system "
                                    "cannot take turns with others on one store yet)", spec.spec)
            if spec.runtime == "external" or spec.image:
                raise OptionError(where, None, "--runtime process or container and no --image (each version of a "
                                    "chain on one store runs from its own jars)",
                                    f"--runtime {spec.runtime}" + (f" --image {spec.image}" if spec.image else ""))
            if len(set(parts)) < 2:
                raise OptionError(where, None, f"two different systems joined by {CHAIN_SEP!r}, e.g. rocketmq:4.9.7+5.5.0",
                                    spec.spec)
            for part in parts:  # each part as a spec of its own (a part no family claims: unknown)
                type(spec)(part, spec.runtime).check(option)
            return
        kind, _, rest = spec.spec.partition(":")
        self._check_runtime(spec)
        if kind == "rocketmq":
            if rest != "latest" and not valid_version(rest):
                raise OptionError(where, None, "a version like 4.9.7 or 5.5.0, or latest", rest)
            return
        try:
            resolve(spec.spec)  # local directories: cheap, and a typo shows now
        except ProvisionError as e:
            raise ContractError(where, None, "a distribution or jar directory with a rocketmq-broker jar", str(e)) from None

    def _check_runtime(self, spec) -> None:
        from hourglass.adapters.rocketmq.external import check_namesrv

        if spec.runtime == "external":
            check_namesrv(spec.namesrv)
            if spec.proxy:
                check_namesrv(spec.proxy, "--proxy", "HOST:PORT of the cluster's 5.x proxy (its gRPC port), port 1..65535")
            self._fault_commands(spec)
        elif spec.namesrv or spec.faults_file or spec.proxy:
            given = "--namesrv" if spec.namesrv else "--faults" if spec.faults_file else "--proxy"
            raise OptionError(given, None, "--runtime external (it names an existing cluster)", f"--runtime {spec.runtime}")

    def _check_cmd(self, spec, where: str) -> None:
        """A ``cmd:`` file: it checks (errors name the file and field), its programs are there, its
        client's jars are there (a jar directory; a release fetched from Maven Central now, once,
        as its runs would first thing: a version Maven Central lacks is the file's error, not a
        broken run), and the runtime is process (or auto, which means process)."""
        from hourglass.adapters.rocketmq.cmd import cmd_path, load_cmd_file
        from hourglass.adapters.rocketmq.provision import ProvisionError, resolve

        if len(spec.spec) == len("cmd:"):
            raise OptionError(where, None, "cmd:FILE, a TOML file giving the system's commands", spec.spec)
        if spec.runtime not in ("auto", "process") or spec.image or spec.namesrv or spec.faults_file:
            given = f"--runtime {spec.runtime}" + (f" --image {spec.image}" if spec.image else "") + \
                (" --namesrv" if spec.namesrv else "") + (" --faults" if spec.faults_file else "")
            raise OptionError(where, None, "--runtime process (a cmd: system runs its own commands on this host; "
                                "not in a container, not an external cluster)", given)
        cmd = load_cmd_file(cmd_path(spec.spec))
        cmd.check_programs()
        try:
            resolve(cmd.client)
        except ProvisionError as e:
            raise ContractError(str(cmd.path), "client", "a client the harness can run: a release on Maven Central "
                                "(python -m hourglass.adapters.rocketmq.provision --list), or a distribution or jar directory "
                                "with a rocketmq-broker jar", str(e).splitlines()[0]) from None

    @staticmethod
    def _fault_commands(spec) -> dict[str, str]:
        if not spec.faults_file:
            return {}
        from hourglass.adapters.rocketmq.external import load_fault_commands

        return load_fault_commands(spec.faults_file)

    def ignored_options(self, spec) -> tuple[tuple[str, str], ...]:
        return ()  # it uses each, and checks them itself

    def ignored_why(self) -> str:
        return ""

    def open(self, spec, profile: BrokerProfile, workdir: Path, seed: int):
        from hourglass.adapters.rocketmq import open_system

        return open_system(system=spec.spec, runtime=spec.runtime, workdir=workdir, profile=profile, image=spec.image,
                           namesrv_addr=spec.namesrv, fault_commands=self._fault_commands(spec), proxy_addr=spec.proxy)

    def capabilities(self, info: SystemInfo) -> set[str]:
        """:func:`capabilities_of` its versions, and ``grpc`` where a proxy runs in front of its
        brokers (the harness started one: ``info.details['proxy']`` is its gRPC address)."""
        found = capabilities_of(info.details.get("versions") or [info.version])
        return found | {GRPC} if info.details.get(PROXY_TARGET) and POP_CONSUMPTION in found else found

    def defects(self, spec_text: str) -> tuple[str, ...]:
        return ()

    def replay_spec(self, system: dict) -> str:
        """The spec a run recorded, ``rocketmq:latest`` pinned to the version it resolved to; runs
        made before the spec was recorded: ``rocketmq:<version>``."""
        spec = system.get("spec")
        if spec == "rocketmq:latest" and system.get("version"):
            return f"rocketmq:{system['version']}"
        return spec if isinstance(spec, str) and spec else f"rocketmq:{system['version']}"

    def across_store(self, spec_text: str) -> str | None:
        if spec_text.startswith("cmd:"):
            return "a cmd: system cannot take turns with others on one store yet"
        return None

    def chain(self, first: str, then: str) -> str:
        from hourglass.adapters.rocketmq.provision import CHAIN_SEP

        if self.across_store(first) or self.across_store(then):
            raise AdapterError(f"{first}, {then}: {self.across_store(first) or self.across_store(then)}")
        return first + CHAIN_SEP + then


FAMILY = RocketMQFamily()


def _release(version: str) -> tuple[int, ...] | None:
    """``4.9.3`` as (4, 9, 3); None for what is no release number."""
    parts = version.split("-")[0].split(".")
    return tuple(int(p) for p in parts) if parts and all(p.isdigit() for p in parts) else None
