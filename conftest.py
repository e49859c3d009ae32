"""The repo root's conftest: loads the Hourglass pytest plugin for every suite."""

pytest_plugins = ["harness.pytest_plugin"]
