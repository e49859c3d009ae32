"""Across-store chains (``rocketmq:4.9.7+5.5.0``): how they are named, checked, matched by a
baseline, and what a matrix runs with ``--across-store``. (The chain on real brokers:
``suites/adapters/test_rocketmq_across_store.py``.)"""

from __future__ import annotations

import pytest

from hourglass.adapters.base import SystemInfo
from hourglass.adapters.rocketmq.provision import split_chain
from hourglass.harness.cli import MATRIX_DEFAULT_SUITES, main, matrix_systems
from hourglass.harness.runner import capabilities
from hourglass.harness.systems import SystemSpec
from hourglass.reference.contract import ContractError
from hourglass.reports.baseline import Acceptance


def test_a_chain_names_each_system_and_a_bare_version_takes_the_kind_before_it():
    assert split_chain("rocketmq:4.9.7+5.5.0") == ["rocketmq:4.9.7", "rocketmq:5.5.0"]
    assert split_chain("rocketmq:5.5.0+rocketmq:4.9.7+dist:/opt/fork") == ["rocketmq:5.5.0", "rocketmq:4.9.7", "dist:/opt/fork"]
    assert split_chain("rocketmq:5.5.0") == ["rocketmq:5.5.0"]


@pytest.mark.parametrize("spec, runtime, image, expected", [
    ("rocketmq:4.9.7+4.9.7", "process", None, "two different systems"),
    ("rocketmq:4.9.7+5.5.0", "external", None, "--runtime process or container"),
    ("rocketmq:4.9.7+5.5.0", "container", "apache/rocketmq:5.3.3", "no --image"),
    ("rocketmq:4.9.7+5.x", "process", None, "a version like 4.9.7"),
])
def test_a_chain_that_cannot_run_is_refused_before_anything_starts(spec, runtime, image, expected):
    with pytest.raises(ContractError, match=expected):
        SystemSpec(spec, runtime, image, namesrv="127.0.0.1:9876" if runtime == "external" else None).check()


def test_a_chain_can_do_what_each_of_its_versions_can():
    class Sys:
        def __init__(self, version, versions=None):
            self.info = SystemInfo("rocketmq", version, "process", {"versions": versions} if versions else {})

    assert capabilities(Sys("5.5.0")) == {"timer", "async_deliver", "pop"}
    assert capabilities(Sys("5.3.3+5.5.0", ["5.3.3", "5.5.0"])) == {"timer", "async_deliver", "pop"}
    # timer messages and POP consumption: 5.x only
    assert capabilities(Sys("4.9.7+5.5.0", ["4.9.7", "5.5.0"])) == {"async_deliver"}
    # enableScheduleAsyncDeliver: 4.9.3 and later (ISSUE #3449)
    assert capabilities(Sys("4.9.2+4.9.7", ["4.9.2", "4.9.7"])) == set() and capabilities(Sys("4.9.3")) == {"async_deliver"}


def test_a_baseline_entry_holds_for_a_chain_with_one_of_its_versions():
    known = Acceptance("OFFSET_PERSISTENCE", "apache/rocketmq#3473", ">=4.9.0,<4.9.3")
    chain = {"adapter": "rocketmq", "version": "4.9.2+4.9.7", "versions": ["4.9.2", "4.9.7"]}
    assert known.matches("OFFSET_PERSISTENCE", None, chain)
    assert not known.matches("OFFSET_PERSISTENCE", None, {**chain, "version": "4.9.7+5.5.0", "versions": ["4.9.7", "5.5.0"]})


def test_across_store_runs_each_system_and_each_consecutive_pair_both_ways():
    assert matrix_systems(["rocketmq:4.9.7", "rocketmq:5.5.0"], False) == ["rocketmq:4.9.7", "rocketmq:5.5.0"]
    a, b, c = "rocketmq:4.9.7", "rocketmq:5.5.0", "dist:/opt/fork"  # chained by their family (rocketmq: "+")
    assert matrix_systems([a, b, c], True) == [a, b, c, f"{a}+{b}", f"{b}+{a}", f"{b}+{c}", f"{c}+{b}"]


def test_matrix_runs_the_persistence_suite_unless_told_otherwise(tmp_path, monkeypatch):
    import hourglass.harness.cli as cli

    seen = {}

    def fake_run_system(system, scenarios, args, out):
        seen.setdefault("names", [s.name for s in scenarios])
        seen.setdefault("systems", []).append(system)
        return [{"run_id": system, "passed": True, "invariants": {}}]

    monkeypatch.setattr(cli, "run_system", fake_run_system)
    assert MATRIX_DEFAULT_SUITES == ("persistence",)
    assert main(["matrix", "--systems", "simulated,simulated[offsets-rewound-on-restart]", "--out", str(tmp_path)]) == 0
    expected = [s.name for s in cli.load_suite("persistence")]
    assert seen["names"] == expected and expected
    assert seen["systems"] == ["simulated", "simulated[offsets-rewound-on-restart]"]


def test_across_store_refuses_a_simulated_system(tmp_path, capsys):
    assert main(["matrix", "--systems", "simulated,rocketmq:5.5.0", "--across-store", "--out", str(tmp_path)]) == 64
    assert "a simulated broker has no store" in capsys.readouterr().err
