"""The toy family: the spec ``toy`` (or ``toy[seed]``), a broker in memory without timer messages.
Duck-typed (:class:`harness.families.Family`); a third party's family looks the same."""

from __future__ import annotations

import re
from pathlib import Path

from hourglass.adapters.base import AdapterError, BrokerProfile, SystemInfo
from hourglass.reference.contract import OptionError

ADAPTER = "toy"
_SPEC = re.compile(r"^toy(?:\[(?P<seed>[^\]]*)\])?$")


class ToyFamily:
    name = "toy"
    adapter = ADAPTER
    spec_help = "toy or toy[seed]"
    default_spec = None
    runtimes = ()
    virtual = True
    test_marks = ()

    def claims(self, spec_text: str) -> bool:
        return bool(_SPEC.match(spec_text))

    def normalize(self, spec_text: str) -> str:
        return spec_text

    def check(self, spec, option: str) -> None:
        seed = _SPEC.match(spec.spec).group("seed")
        if seed is not None and not seed.isdigit():
            raise OptionError(f"{option} {spec.spec}", None, "toy[<a seed: digits>]", seed)

    def ignored_options(self, spec) -> tuple[tuple[str, str], ...]:
        return tuple((name, value) for name, value in (("--namesrv", spec.namesrv), ("--image", spec.image)) if value)

    def ignored_why(self) -> str:
        return "a toy broker lives in memory"

    def open(self, spec, profile: BrokerProfile, workdir: Path, seed: int):
        from hourglass.adapters.simulated import open_simulated

        own = _SPEC.match(spec.spec).group("seed")
        system = open_simulated(profile, seed=int(own) if own else seed, timers=False, version="toy-1")
        details = {k: v for k, v in system.info.details.items() if k != "capabilities"}  # the family's rule says
        system.info = SystemInfo(ADAPTER, "toy-1", "memory", details)
        return system

    def capabilities(self, info: SystemInfo) -> set[str]:
        return set()  # no timer messages

    def defects(self, spec_text: str) -> tuple[str, ...]:
        return ()

    def replay_spec(self, system: dict) -> str:
        return system.get("spec") or self.name

    def across_store(self, spec_text: str) -> str | None:
        return "a toy broker keeps no store"

    def chain(self, first: str, then: str) -> str:
        raise AdapterError(self.across_store(first))


FAMILY = ToyFamily()
