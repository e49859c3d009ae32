"""The shipped baseline of known upstream failures (suites/baselines/rocketmq.toml): it loads, every
entry is explained by an upstream change, and none of them covers a version CI gates on."""

from __future__ import annotations

import re
from pathlib import Path

from hourglass.reports.baseline import in_range, load

BASELINE = Path(__file__).resolve().parents[1] / "baselines" / "rocketmq.toml"
#: the versions CI runs every suite on: a baseline entry there would hide a regression
CI_VERSIONS = ("4.9.7", "5.5.0")


def test_every_entry_is_explained_and_none_covers_a_version_ci_gates_on():
    baseline = load(BASELINE)
    assert baseline.entries
    for entry in baseline.entries:
        assert re.search(r"#\d+", entry.reason), f"{entry.invariant} {entry.versions}: name the upstream change"
        assert entry.versions, f"{entry.invariant}: a version range (a known bug is in some versions only)"
        for v in CI_VERSIONS:
            assert not in_range(v, entry.versions), f"{entry.invariant} {entry.versions} covers {v}"
    assert in_range("4.9.3", next(e.versions for e in baseline.entries if "#3966" in e.reason))
