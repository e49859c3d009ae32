"""The one file that turns red green is the strictest: a baseline entry whose condition could not
mean what its author meant is refused (exit 3, before anything runs) naming the file, the entry
and the field, instead of quietly accepting the invariant for every key, version or system."""

from __future__ import annotations

from pathlib import Path

import pytest

from hourglass.reference.contract import ADAPTERS, ContractError
from hourglass.reports import cli as reports_cli
from hourglass.reports.baseline import admits_a_version, load

ROOT = Path(__file__).resolve().parents[3]
ENTRY = '[[accept]]\ninvariant = "NOT_EARLY"\nreason = "known"\n'


@pytest.mark.parametrize("extra, field, expected, found", [
    ('kye = "ZZZ*"\n', "kye", "no such field (allowed: invariant, reason, versions, adapter, key)", "ZZZ*"),
    ('adapter = "rocketmg"\n', "adapter", "one of rocketmq, simulated (run.json system.adapter)", "rocketmg"),
    ('versions = ">=6.0,<5.0"\n', "versions", "a range some version lies in, like '>=4.9.0,<5.0'", ">=6.0,<5.0"),
    ('versions = "==4.9.3,!=4.9.3"\n', "versions", "a range some version lies in, like '>=4.9.0,<5.0'", "==4.9.3,!=4.9.3"),
    ("key = 3\n", "key", "a string", 3),
])
def test_a_condition_that_cannot_mean_what_was_meant_is_refused(tmp_path, extra, field, expected, found):
    p = tmp_path / "accepted.toml"
    p.write_text(ENTRY + '[[accept]]\ninvariant = "ON_TIME"\nreason = "typo below"\n' + extra)
    with pytest.raises(ContractError) as e:
        load(p)
    assert str(e.value) == f"{p}: accept[1]: field '{field}': expected {expected}, found {found!r}"


def test_the_checker_refuses_it_before_judging(tmp_path, capsys):
    from suites.selftest.checker.runs import RunBuilder

    RunBuilder("early").send("a", 0, level=2).deliver("a", 1000).write(tmp_path / "runs")  # 4 s early
    p = tmp_path / "accepted.toml"
    p.write_text(ENTRY + 'kye = "ZZZ*"\n')
    assert reports_cli.main(["check", str(tmp_path / "runs"), "--baseline", str(p)]) == 3
    assert f"{p}: accept[0]: field 'kye'" in capsys.readouterr().err


@pytest.mark.parametrize("spec", [">=4.9.0,<5.0", ">4.9.0,<4.9.1", "==4.9.3", "4.9.3", "~=5.3", "==5.*", "<0.1",
                                  ">=5.0.0rc1,<5.0.1", ">=4.9.3,!=4.9.3"])
def test_ranges_some_version_lies_in_are_kept(spec):
    assert admits_a_version(spec)


def test_the_known_adapters_are_the_adapter_packages():
    packages = {p.name for p in (ROOT / "adapters").iterdir() if (p / "system.py").exists()}
    assert packages == set(ADAPTERS)
