"""The conformance catalogue lives in the package (``harness.catalogue.conformance``); this name
stays for the suites' tests and for users who imported it from a checkout."""

from harness.catalogue.conformance import *  # noqa: F401,F403
from harness.catalogue.conformance import CONFORMANCE  # noqa: F401
