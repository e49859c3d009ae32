"""The scenario generator lives in the package (``harness.catalogue.generate``); this name stays
for the suites' tests and for users who imported it from a checkout."""

from hourglass.harness.catalogue.generate import *  # noqa: F401,F403
from hourglass.harness.catalogue.generate import chaos_scenarios, fault_schedules, messages, sample  # noqa: F401
