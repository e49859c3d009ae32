"""Hypothesis profiles for the model's property tests: ``ci`` (the default: derandomized, a fixed
seed, so CI runs are reproducible) and ``nightly`` (many more examples, random). Select with
``HYPOTHESIS_PROFILE=nightly``."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=60, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("nightly", deadline=None, max_examples=1000, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
