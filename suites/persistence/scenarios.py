"""The persistence catalogue lives in the package (``harness.catalogue.persistence``); this name
stays for the suites' tests."""

from hourglass.harness.catalogue.persistence import *  # noqa: F401,F403
from hourglass.harness.catalogue.persistence import FULL, FULL_ASYNC, SHORT  # noqa: F401
