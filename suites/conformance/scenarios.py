"""The conformance catalogue lives in the package (``harness.catalogue.conformance``); this name
stays for the suites' tests and for users who imported it from a checkout."""

from hourglass.harness.catalogue.conformance import *  # noqa: F401,F403
from hourglass.harness.catalogue.conformance import CONFORMANCE  # noqa: F401
