"""The chaos catalogue lives in the package (``harness.catalogue.chaos``); this name stays for the
suites' tests and for users who imported it from a checkout."""

from hourglass.harness.catalogue.chaos import *  # noqa: F401,F403
from hourglass.harness.catalogue.chaos import NIGHTLY, SHORT  # noqa: F401
