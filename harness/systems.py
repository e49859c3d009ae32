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
from reference.contract import ContractError, OptionError
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

    def check(self, option: str = "--system") -> None:
        """Fail before anything runs on a spec that cannot name a system. What the command line
        itself got wrong — an unknown kind, an unknown defect, a malformed version, a chain or
        runtime that cannot go together, ``--namesrv``/``--faults`` without ``--runtime external`` —
        raises :class:`OptionError` naming ``option`` (a usage error); a file or directory it names
        that does not check — a ``dist:``/``jars:`` directory without a broker jar, a ``cmd:`` or
        ``--faults`` file — raises :class:`ContractError` naming it (a broken input). (Fetching a
        version's jars is not checked here: it takes minutes, and its failure breaks the runs, not
        the input.)"""
        where = f"{option} {self.spec}"
        if self.virtual:
            from adapters.simulated.defects import Defect, parse_defects

            try:
                parse_defects(self.defects)
            except ValueError:
                bad = next(d for d in self.defects if d.strip().upper().replace("-", "_") not in Defect.__members__)
                raise OptionError(where, None, "defects among " + ", ".join(x.slug for x in Defect), bad) from None
            return
        from adapters.rocketmq.provision import CHAIN_SEP, split_chain

        if self.spec.startswith("cmd:"):
            return self._check_cmd(where)
        parts = split_chain(self.spec)
        if len(parts) > 1:
            if any(p.startswith("cmd:") for p in parts):
                raise OptionError(where, None, "a chain of rocketmq:, dist: or jars: systems (a cmd: system "
                                    "cannot take turns with others on one store yet)", self.spec)
            if self.runtime == "external" or self.image:
                raise OptionError(where, None, "--runtime process or container and no --image (each version of a "
                                    f"chain on one store runs from its own jars)",
                                    f"--runtime {self.runtime}" + (f" --image {self.image}" if self.image else ""))
            if len(set(parts)) < 2:
                raise OptionError(where, None, f"two different systems joined by {CHAIN_SEP!r}, e.g. rocketmq:4.9.7+5.5.0",
                                    self.spec)
            for part in parts:
                SystemSpec(part, self.runtime).check(option)
            return
        kind, _, rest = self.spec.partition(":")
        if kind not in ("rocketmq", "dist", "jars") or not rest:
            raise OptionError(option, None, "rocketmq:<version>, dist:/path, jars:/path, cmd:FILE, simulated or "
                                "simulated[defects]", self.spec)
        from adapters.rocketmq.provision import ProvisionError, resolve, valid_version

        if self.runtime == "external":
            from adapters.rocketmq.external import check_namesrv

            check_namesrv(self.namesrv)
            self.fault_commands()
        elif self.namesrv or self.faults_file:
            raise OptionError("--namesrv" if self.namesrv else "--faults", None, "--runtime external (it names an existing cluster)",
                                f"--runtime {self.runtime}")
        if kind == "rocketmq":
            if rest != "latest" and not valid_version(rest):
                raise OptionError(where, None, "a version like 4.9.7 or 5.5.0, or latest", rest)
            return
        try:
            resolve(self.spec)  # local directories: cheap, and a typo shows now
        except ProvisionError as e:
            raise ContractError(where, None, "a distribution or jar directory with a rocketmq-broker jar", str(e)) from None

    def _check_cmd(self, where: str) -> None:
        """A ``cmd:`` file: it checks (errors name the file and field), its programs are there, its
        client's jars are there (a jar directory; a release fetched from Maven Central now, once,
        as its runs would first thing: a version Maven Central lacks is the file's error, not a
        broken run), and the runtime is process (or auto, which means process)."""
        from adapters.rocketmq.cmd import cmd_path, load_cmd_file
        from adapters.rocketmq.provision import ProvisionError, resolve

        if len(self.spec) == len("cmd:"):
            raise OptionError(where, None, "cmd:FILE, a TOML file giving the system's commands", self.spec)
        if self.runtime not in ("auto", "process") or self.image or self.namesrv or self.faults_file:
            given = f"--runtime {self.runtime}" + (f" --image {self.image}" if self.image else "") + \
                (" --namesrv" if self.namesrv else "") + (" --faults" if self.faults_file else "")
            raise OptionError(where, None, "--runtime process (a cmd: system runs its own commands on this host; "
                                "not in a container, not an external cluster)", given)
        cmd = load_cmd_file(cmd_path(self.spec))
        cmd.check_programs()
        try:
            resolve(cmd.client)
        except ProvisionError as e:
            raise ContractError(str(cmd.path), "client", "a client the harness can run: a release on Maven Central "
                                "(python -m adapters.rocketmq.provision --list), or a distribution or jar directory "
                                "with a rocketmq-broker jar", str(e).splitlines()[0]) from None

    @property
    def defects(self) -> tuple[str, ...]:
        m = _SIM.match(self.spec)
        if not m or not m.group("defects"):
            return ()
        return tuple(d.strip() for d in m.group("defects").split(",") if d.strip())


def check_options_used(specs: list[SystemSpec], option: str = "--system") -> None:
    """A usage error (:class:`OptionError`) naming the first option no system of the command would
    use: a simulated broker runs in this process, so ``--runtime external``, ``--namesrv``,
    ``--faults`` and ``--image`` mean nothing to it (a real system beside it in a matrix uses them,
    and checks them itself: :meth:`SystemSpec.check`)."""
    if not specs or any(not s.virtual for s in specs):
        return
    s = specs[0]
    given = [(name, value) for name, value in (("--runtime", "external" if s.runtime == "external" else None),
                                               ("--namesrv", s.namesrv), ("--faults", s.faults_file), ("--image", s.image))
             if value]
    if given:
        name, value = given[0]
        shown = f"{name} {value}" if name == "--runtime" else name
        raise OptionError(name, None, f"no {shown} with {option} {','.join(x.spec for x in specs)} (a simulated broker "
                          "runs in this process: no cluster, no image, no fault commands)", value)


def broker_profile(p: Profile, needs: frozenset[str] = frozenset()) -> BrokerProfile:
    return BrokerProfile(message_delay_level=p.message_delay_level, flush_delay_offset_interval_ms=p.flush_delay_offset_interval_ms,
                         cluster=p.cluster, needs=frozenset(needs))


def open_system(spec: SystemSpec, profile: Profile, workdir: Path, seed: int = 0,
                needs: frozenset[str] = frozenset()) -> System:
    """A system for ``spec`` with ``profile`` (not set up yet: call ``setup()``); ``needs``: what it
    must be set up for, for its scenarios' fault steps (``reference.faults.setup_needed``: a
    fillable store, the broker's own network or clock...)."""
    if spec.virtual:
        from adapters.simulated import open_simulated

        return open_simulated(broker_profile(profile, needs), defects=spec.defects, seed=seed)
    if spec.spec.startswith(("rocketmq:", "dist:", "jars:", "cmd:")):
        from adapters.rocketmq import open_system as open_rocketmq

        return open_rocketmq(system=spec.spec, runtime=spec.runtime, workdir=workdir, profile=broker_profile(profile, needs), image=spec.image,
                             namesrv_addr=spec.namesrv, fault_commands=spec.fault_commands())
    raise AdapterError(
        f"unknown system {spec.spec!r}: expected rocketmq:<version>, dist:/path, jars:/path, cmd:FILE, simulated or "
        "simulated[defects]"
    )
