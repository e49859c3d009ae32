"""The repo root's conftest: loads the Hourglass pytest plugin for every suite — unless the
installed package's ``pytest11`` entry point (``hourglass``) already did: pytest refuses a module
registered twice under two names."""

import sys

PLUGIN = "hourglass.harness.pytest_plugin"


def pytest_addhooks(pluginmanager):
    """Called as this conftest registers, before the command line is parsed (so ``--hg-*``
    options still count)."""
    loaded = sys.modules.get(PLUGIN)
    if loaded is None or not pluginmanager.is_registered(loaded):
        pluginmanager.import_plugin(PLUGIN)
