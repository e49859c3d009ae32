"""The main job's tests (``python -m harness main``): the conformance catalogue and the short chaos
set, one test per scenario. Shipped with the package (the installed CLI has no ``suites/``); pytest
collects it because the CLI names the file. ``suites/conformance`` and ``suites/chaos`` run the same
catalogues in a checkout."""

from __future__ import annotations

import pytest

from harness.catalogue.chaos import SHORT
from harness.catalogue.conformance import CONFORMANCE
from harness.verdicts import assert_conforms


@pytest.mark.conformance
@pytest.mark.parametrize("scenario", CONFORMANCE, ids=lambda s: s.name)
def test_conforms(scenario, hg_verdict):
    if hg_verdict.get("skipped"):
        pytest.skip(hg_verdict["skipped"])
    assert_conforms(hg_verdict)


@pytest.mark.chaos
@pytest.mark.parametrize("scenario", SHORT, ids=lambda s: s.name)
def test_survives(scenario, hg_verdict):
    if hg_verdict.get("skipped"):
        pytest.skip(hg_verdict["skipped"])
    assert_conforms(hg_verdict)
