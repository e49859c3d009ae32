"""System specs: one string names the system under test.

- ``rocketmq:<version>`` (``rocketmq:latest`` = the newest 5.x on Maven Central), ``dist:/path``
  (a local distribution: bin/ conf/ lib/), ``jars:/path`` (a folder of jars): a real broker, in a
  container or as processes (``runtime``), or ``external`` (an existing cluster).
- ``rocketmq:4.9.7+5.5.0`` (any of those joined by ``+``): versions that take turns on one store,
  the broker's first start runs the first and each later start the next (an upgrade, then back).
- ``cmd:FILE``: any implementation, its name server and broker started by the commands of a TOML
  file (placeholders ``{conf}``, ``{port}``, ``{namesrv}``, ``{store}``, ``{home}``, ``{log}``...),
  with its version, the official client that drives it and its capabilities; process runtime only
  (``adapters.rocketmq.cmd``; ``python -m adapters.rocketmq.apache_dist`` makes one that starts an
  Apache release through its own ``bin/`` scripts). The spec is kept with the file's absolute path.
- ``simulated`` or ``simulated[defect,defect]``: the model run as a broker in virtual time, with
  injected defects (``adapters.simulated``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from adapters.base import AdapterError, BrokerProfile, System
from reference.contract import ContractError
from harness.scenario import Profile

_SIM = re.compile(r"^simulated(?:\[(?P<defects>[^\]]*)\])?$")


@dataclass(frozen=True)
class SystemSpec:
    spec: str
    runtime: str = "auto"
    image: str | None = None
    namesrv: str | None = None  # external runtime: the cluster's name server
    faults_file: str | None = None  # external runtime: TOML of fault commands

    def __post_init__(self):
        if self.spec.startswith("cmd:") and len(self.spec) > len("cmd:"):  # run.json and replay: an absolute path
            from adapters.rocketmq.cmd import KIND, cmd_path

            object.__setattr__(self, "spec", KIND + str(cmd_path(self.spec)))

    def fault_commands(self) -> dict[str, str]:
        if not self.faults_file:
            return {}
        from adapters.rocketmq.external import load_fault_commands

        return load_fault_commands(self.faults_file)

    @property
    def virtual(self) -> bool:
        return bool(_SIM.match(self.spec))

    def check(self) -> None:
        """Fail before anything runs on a spec that cannot name a system: an unknown kind, an
        unknown defect, a malformed version, a ``dist:``/``jars:`` directory without a broker jar,
        a ``cmd:`` file that does not check (or a runtime other than process for it).
        Raises :class:`ContractError` naming ``--system`` (or the cmd file). (Fetching a version's
        jars is not checked here: it takes minutes, and its failure breaks the runs, not the input.)"""
        where = f"--system {self.spec}"
        if self.virtual:
            from adapters.simulated.defects import Defect, parse_defects

            try:
                parse_defects(self.defects)
            except ValueError:
                bad = next(d for d in self.defects if d.strip().upper().replace("-", "_") not in Defect.__members__)
                raise ContractError(where, None, "defects among " + ", ".join(x.slug for x in Defect), bad) from None
            return
        from adapters.rocketmq.provision import CHAIN_SEP, split_chain

        if self.spec.startswith("cmd:"):
            return self._check_cmd(where)
        parts = split_chain(self.spec)
        if len(parts) > 1:
            if any(p.startswith("cmd:") for p in parts):
                raise ContractError(where, None, "a chain of rocketmq:, dist: or jars: systems (a cmd: system "
                                    "cannot take turns with others on one store yet)", self.spec)
            if self.runtime == "external" or self.image:
                raise ContractError(where, None, "--runtime process or container and no --image (each version of a "
                                    f"chain on one store runs from its own jars)",
                                    f"--runtime {self.runtime}" + (f" --image {self.image}" if self.image else ""))
            if len(set(parts)) < 2:
                raise ContractError(where, None, f"two different systems joined by {CHAIN_SEP!r}, e.g. rocketmq:4.9.7+5.5.0",
                                    self.spec)
            for part in parts:
                SystemSpec(part, self.runtime).check()
            return
        kind, _, rest = self.spec.partition(":")
        if kind not in ("rocketmq", "dist", "jars") or not rest:
            raise ContractError("--system", None, "rocketmq:<version>, dist:/path, jars:/path, cmd:FILE, simulated or "
                                "simulated[defects]", self.spec)
        from adapters.rocketmq.provision import ProvisionError, resolve, valid_version

        if self.runtime == "external":
            from adapters.rocketmq.external import check_namesrv

            check_namesrv(self.namesrv)
            self.fault_commands()
        elif self.namesrv or self.faults_file:
            raise ContractError("--namesrv/--faults", None, "--runtime external (they name an existing cluster)",
                                f"--runtime {self.runtime}")
        if kind == "rocketmq":
            if rest != "latest" and not valid_version(rest):
                raise ContractError(where, None, "a version like 4.9.7 or 5.5.0, or latest", rest)
            return
        try:
            resolve(self.spec)  # local directories: cheap, and a typo shows now
        except ProvisionError as e:
            raise ContractError(where, None, "a distribution or jar directory with a rocketmq-broker jar", str(e)) from None

    def _check_cmd(self, where: str) -> None:
        """A ``cmd:`` file: it checks (errors name the file and field), its programs are there, its
        client names a version or a jar directory, and the runtime is process (or auto, which means
        process)."""
        from adapters.rocketmq.cmd import cmd_path, load_cmd_file
        from adapters.rocketmq.provision import ProvisionError, resolve

        if len(self.spec) == len("cmd:"):
            raise ContractError(where, None, "cmd:FILE, a TOML file giving the system's commands", self.spec)
        if self.runtime not in ("auto", "process") or self.image or self.namesrv or self.faults_file:
            given = f"--runtime {self.runtime}" + (f" --image {self.image}" if self.image else "") + \
                (" --namesrv" if self.namesrv else "") + (" --faults" if self.faults_file else "")
            raise ContractError(where, None, "--runtime process (a cmd: system runs its own commands on this host; "
                                "not in a container, not an external cluster)", given)
        cmd = load_cmd_file(cmd_path(self.spec))
        cmd.check_programs()
        if not cmd.client.startswith("rocketmq:"):
            try:
                resolve(cmd.client)  # a local jar directory: cheap, and a typo shows now
            except ProvisionError as e:
                raise ContractError(str(cmd.path), "client", "a distribution or jar directory with a rocketmq-broker jar",
                                    str(e)) from None

    @property
    def defects(self) -> tuple[str, ...]:
        m = _SIM.match(self.spec)
        if not m or not m.group("defects"):
            return ()
        return tuple(d.strip() for d in m.group("defects").split(",") if d.strip())


def broker_profile(p: Profile, fillable_store: bool = False, own_network: bool = False, own_clock: bool = False,
                   drifting_clock: bool = False) -> BrokerProfile:
    return BrokerProfile(message_delay_level=p.message_delay_level, flush_delay_offset_interval_ms=p.flush_delay_offset_interval_ms,
                         fillable_store=fillable_store, own_network=own_network, own_clock=own_clock or drifting_clock,
                         drifting_clock=drifting_clock, cluster=p.cluster)


def open_system(spec: SystemSpec, profile: Profile, workdir: Path, seed: int = 0, fillable_store: bool = False,
                own_network: bool = False, own_clock: bool = False, drifting_clock: bool = False) -> System:
    """A system for ``spec`` with ``profile`` (not set up yet: call ``setup()``); ``fillable_store``:
    its scenarios fill the broker's store (``disk_full``); ``own_network``: they cut or slow the
    broker's network (``partition``, ``latency``); ``own_clock``: they step the broker's clock
    (``clock``); ``drifting_clock``: they make it drift (``clock_drift``)."""
    if spec.virtual:
        from adapters.simulated import open_simulated

        return open_simulated(broker_profile(profile), defects=spec.defects, seed=seed)
    if spec.spec.startswith(("rocketmq:", "dist:", "jars:", "cmd:")):
        from adapters.rocketmq import open_system as open_rocketmq

        return open_rocketmq(system=spec.spec, runtime=spec.runtime, workdir=workdir, profile=broker_profile(profile, fillable_store, own_network, own_clock, drifting_clock), image=spec.image,
                             namesrv_addr=spec.namesrv, fault_commands=spec.fault_commands())
    raise AdapterError(
        f"unknown system {spec.spec!r}: expected rocketmq:<version>, dist:/path, jars:/path, cmd:FILE, simulated or "
        "simulated[defects]"
    )
