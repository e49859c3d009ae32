"""System specs: one string names the system under test, and the family that parses it
(:mod:`harness.families`) opens it: ``python -m hourglass run --help`` lists the specs of every
family found (the RocketMQ family: :mod:`adapters.rocketmq.family`; the simulator:
:mod:`adapters.simulated.family`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hourglass.adapters.base import AdapterError, BrokerProfile, System
from hourglass.reference.profile import passed_through_config
from hourglass.reference.contract import OptionError
from hourglass.harness.families import Family, family_of, spec_help, unknown_system
from hourglass.harness.scenario import Profile


@dataclass(frozen=True)
class SystemSpec:
    spec: str
    runtime: str = "auto"
    image: str | None = None
    namesrv: str | None = None  # external runtime: the cluster's name server
    faults_file: str | None = None  # external runtime: TOML of fault commands
    proxy: str | None = None  # external runtime: the cluster's 5.x proxy (its gRPC endpoint)

    def __post_init__(self):
        family = self.family
        if family is not None:  # run.json and replay: e.g. a cmd: file's absolute path
            object.__setattr__(self, "spec", family.normalize(self.spec))

    @property
    def family(self) -> Family | None:
        return family_of(self.spec)

    @property
    def virtual(self) -> bool:
        """Its systems run in this process on a virtual clock (one at a time)."""
        return bool(self.family and self.family.virtual)

    def check(self, option: str = "--system") -> None:
        """Fail before anything runs on a spec that cannot name a system. What the command line
        itself got wrong — an unknown kind, an unknown defect, a malformed version, a chain or
        runtime that cannot go together, ``--namesrv``/``--faults`` without ``--runtime external`` —
        raises :class:`OptionError` naming ``option`` (a usage error); a file or directory it names
        that does not check — a ``dist:``/``jars:`` directory without a broker jar, a ``cmd:`` or
        ``--faults`` file — raises :class:`ContractError` naming it (a broken input). (Fetching a
        version's jars is not checked here: it takes minutes, and its failure breaks the runs, not
        the input.) The spec's family checks it; a spec no family claims is a usage error."""
        family = self.family
        if family is None:
            raise unknown_system(option, self.spec)
        family.check(self, option)

    @property
    def defects(self) -> tuple[str, ...]:
        return self.family.defects(self.spec) if self.family else ()


def check_options_used(specs: list[SystemSpec], option: str = "--system") -> None:
    """A usage error (:class:`OptionError`) naming the first option no system of the command would
    use: a simulated broker runs in this process, so ``--runtime external``, ``--namesrv``,
    ``--faults`` and ``--image`` mean nothing to it (a real system beside it in a matrix uses them,
    and checks them itself: :meth:`SystemSpec.check`). Each family says what it ignores."""
    ignored = [s.family.ignored_options(s) if s.family else () for s in specs]
    if not specs or not all(ignored):
        return
    name, value = ignored[0][0]
    shown = f"{name} {value}" if name == "--runtime" else name
    raise OptionError(name, None, f"no {shown} with {option} {','.join(x.spec for x in specs)} "
                      f"({specs[0].family.ignored_why()})", value)


def broker_profile(p: Profile, needs: frozenset[str] = frozenset()) -> BrokerProfile:
    return BrokerProfile(message_delay_level=p.message_delay_level, flush_delay_offset_interval_ms=p.flush_delay_offset_interval_ms,
                         cluster=p.cluster, needs=frozenset(needs), schedule_async_deliver=p.schedule_async_deliver,
                         extra=passed_through_config(p.to_run_profile()), disk_warning_percent=p.disk_warning_percent,
                         proxy_mode=p.proxy_mode)


def open_system(spec: SystemSpec, profile: Profile, workdir: Path, seed: int = 0,
                needs: frozenset[str] = frozenset()) -> System:
    """A system for ``spec`` with ``profile`` (not set up yet: call ``setup()``); ``needs``: what it
    must be set up for, for its scenarios' fault steps (``reference.faults.setup_needed``: a
    fillable store, the broker's own network or clock...)."""
    family = spec.family
    if family is None:
        raise AdapterError(f"unknown system {spec.spec!r}: expected {spec_help()}")
    return family.open(spec, broker_profile(profile, needs), workdir, seed)
