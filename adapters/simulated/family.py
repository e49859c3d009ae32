"""The simulated family: ``simulated`` or ``simulated[defect,defect]``, the model run as a broker in
virtual time, with injected defects (:mod:`adapters.simulated.defects`).

Registered with the harness by this module's ``FAMILY`` (``harness.families``).
"""

from __future__ import annotations

import re
from pathlib import Path

from hourglass.adapters.base import AdapterError, BrokerProfile, SystemInfo
from hourglass.reference.contract import SIMULATED_ADAPTER, OptionError

_SIM = re.compile(r"^simulated(?:\[(?P<defects>[^\]]*)\])?$")


class SimulatedFamily:
    name = "simulated"
    adapter = SIMULATED_ADAPTER
    spec_help = "simulated or simulated[defects]"
    default_spec = None
    runtimes = ()
    virtual = True  # in this process, on a virtual clock: one system at a time
    test_marks = ()

    def claims(self, spec_text: str) -> bool:
        return bool(_SIM.match(spec_text))

    def normalize(self, spec_text: str) -> str:
        return spec_text

    def check(self, spec, option: str) -> None:
        """Every defect named is one of :class:`~adapters.simulated.defects.Defect` (else a usage error)."""
        from hourglass.adapters.simulated.defects import Defect, parse_defects

        defects = self.defects(spec.spec)
        try:
            parse_defects(defects)
        except ValueError:
            bad = next(d for d in defects if d.strip().upper().replace("-", "_") not in Defect.__members__)
            raise OptionError(f"{option} {spec.spec}", None, "defects among " + ", ".join(x.slug for x in Defect), bad) from None

    def ignored_options(self, spec) -> tuple[tuple[str, str], ...]:
        """The options given that mean nothing to a broker in this process."""
        given = (("--runtime", "external" if spec.runtime == "external" else None), ("--namesrv", spec.namesrv),
                 ("--faults", spec.faults_file), ("--image", spec.image), ("--proxy", spec.proxy))
        return tuple((name, value) for name, value in given if value)

    def ignored_why(self) -> str:
        return "a simulated broker runs in this process: no cluster, no image, no fault commands"

    def open(self, spec, profile: BrokerProfile, workdir: Path, seed: int):
        from hourglass.adapters.simulated import open_simulated

        return open_simulated(profile, defects=self.defects(spec.spec), seed=seed)

    def capabilities(self, info: SystemInfo) -> set[str]:
        return set(info.details.get("capabilities", ("timer",)))

    def defects(self, spec_text: str) -> tuple[str, ...]:
        m = _SIM.match(spec_text)
        if not m or not m.group("defects"):
            return ()
        return tuple(d.strip() for d in m.group("defects").split(",") if d.strip())

    def replay_spec(self, system: dict) -> str:
        spec = system.get("spec")
        return spec if isinstance(spec, str) and spec else self.name

    def across_store(self, spec_text: str) -> str | None:
        return "a simulated broker has no store"

    def chain(self, first: str, then: str) -> str:
        raise AdapterError(f"{first}, {then}: {self.across_store(first)}")


FAMILY = SimulatedFamily()
