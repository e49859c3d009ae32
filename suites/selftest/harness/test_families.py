"""Broker families register themselves (``harness.families``): the harness, the CLI and the plugin
know none by name. The shipped families are found in the checkout (``adapters.<pkg>.family``); a
new one — the toy family of ``toyfamily/``, a package of its own — is found through the
``hourglass.families`` entry point group and runs like any other, touching no file of Hourglass."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hourglass.harness import families
from hourglass.harness.cli import main
from hourglass.harness.runner import capabilities
from hourglass.harness.scenario import ConsumerGroup, Message, Profile, Scenario
from hourglass.harness.systems import SystemSpec, check_options_used, open_system
from hourglass.reference.contract import OptionError
from hourglass.reports.verdict import EXIT_USAGE

ROOT = Path(__file__).resolve().parents[3]
TOY = "suites.selftest.harness.toyfamily.family:FAMILY"
PLAIN = Scenario("toy-plain", tuple(Message(f"m{i}", "Toy", at_ms=i * 100, delay_level=1) for i in range(3)),
                 (ConsumerGroup("cg-toy", ("Toy",)),))
TIMER = Scenario("toy-timer", (Message("t", "Toy", deliver_after_ms=1000),), (ConsumerGroup("cg-toy", ("Toy",)),),
                 requires=("timer",))


def _entry_points(*values: str):
    eps = [importlib.metadata.EntryPoint(f"probe{i}", v, families.ENTRY_POINT_GROUP) for i, v in enumerate(values)]

    def entry_points(**select):
        return [e for e in eps if e.group == select.get("group")]
    return entry_points


@pytest.fixture
def registry(monkeypatch):
    """The registry read afresh with the installed entry points replaced (``use(*values)``)."""
    def use(*values: str):
        monkeypatch.setattr(importlib.metadata, "entry_points", _entry_points(*values))
        families.families.cache_clear()
    yield use
    families.families.cache_clear()


def test_the_shipped_families_are_found_in_the_checkout_without_an_entry_point(registry):
    registry()
    assert [f.name for f in families.families()] == ["rocketmq", "simulated"]
    assert families.spec_help() == "rocketmq:<version>, dist:/path, jars:/path, cmd:FILE, simulated or simulated[defects]"
    assert families.default_system() == "rocketmq:latest"
    assert families.family_of("simulated[early-delivery]").name == "simulated"
    assert families.family_of("rocketmq:4.9.7+5.5.0").name == "rocketmq"
    assert families.family_of("kafka:3.0") is None and families.family_of("rocketmq:") is None


def test_a_family_of_an_installed_distribution_is_found_by_its_entry_point(registry):
    registry(TOY)
    assert [f.name for f in families.families()] == ["rocketmq", "simulated", "toy"]
    assert families.spec_help().endswith(", simulated or simulated[defects], toy or toy[seed]")
    with pytest.raises(OptionError, match=r"expected .*toy or toy\[seed\], found 'kafka:3.0'"):
        SystemSpec("kafka:3.0").check()
    with pytest.raises(OptionError, match=r"--system toy\[x\]: expected toy\[<a seed: digits>\]"):
        SystemSpec("toy[x]").check()
    with pytest.raises(OptionError, match=r"no --image with --system toy \(a toy broker lives in memory\)"):
        check_options_used([SystemSpec("toy", image="apache/rocketmq:5.3.3")])


def test_an_entry_point_and_the_checkout_naming_one_family_give_it_once(registry):
    registry("hourglass.adapters.simulated.family:FAMILY")
    assert [f.name for f in families.families()] == ["rocketmq", "simulated"]


def test_an_object_that_is_not_a_family_is_refused_naming_what_it_lacks(registry):
    registry("hourglass.harness.families:ENTRY_POINT_GROUP")
    with pytest.raises(Exception, match=r"missing name, adapter, spec_help"):
        families.families()


def test_a_family_that_cannot_be_loaded_is_named(registry):
    registry("suites.selftest.harness.toyfamily.family:NO_SUCH")
    with pytest.raises(Exception, match=r"broker family probe0 \(suites.selftest.harness.toyfamily.family:NO_SUCH, "
                                        r"entry point group hourglass.families\): AttributeError"):
        families.families()


def test_the_toy_opens_through_the_registry_and_its_capabilities_rule_holds(registry, tmp_path):
    registry(TOY)
    system = open_system(SystemSpec("toy[3]"), Profile(), tmp_path)
    assert (system.info.adapter, system.info.version, system.info.runtime) == ("toy", "toy-1", "memory")
    assert capabilities(system) == set()  # the toy's rule: no timer messages (a system does not say)


def test_the_cli_runs_and_replays_a_scenario_on_the_toy(registry, tmp_path, capsys):
    registry(TOY)
    PLAIN.save(tmp_path / "plain.json")
    assert main(["run", "--scenario", str(tmp_path / "plain.json"), "--system", "toy", "--out", str(tmp_path / "o")]) == 0
    run_dir = next(p for p in (tmp_path / "o").iterdir() if (p / "scenario.json").exists())
    run = json.loads((run_dir / "run.json").read_text())
    assert (run["system"]["adapter"], run["system"]["spec"]) == ("toy", "toy")
    assert main(["replay", str(run_dir), "--out", str(tmp_path / "again")]) == 0
    assert "on toy" in capsys.readouterr().out
    TIMER.save(tmp_path / "timer.json")  # the family's capabilities rule: skipped, nothing judged
    assert main(["run", "--scenario", str(tmp_path / "timer.json"), "--system", "toy", "--out", str(tmp_path / "t")]) == 2
    assert main(["matrix", "--systems", "toy,simulated", "--across-store", "--out", str(tmp_path / "m")]) == EXIT_USAGE
    assert "a toy broker keeps no store" in capsys.readouterr().err


def _site_with_toy(tmp_path: Path) -> dict:
    """A fake installed distribution declaring the toy family in its entry points."""
    info = tmp_path / "site" / "toy_family-0.0.dist-info"
    info.mkdir(parents=True)
    info.joinpath("METADATA").write_text("Metadata-Version: 2.1\nName: toy-family\nVersion: 0.0\n")
    info.joinpath("entry_points.txt").write_text(f"[{families.ENTRY_POINT_GROUP}]\ntoy = {TOY}\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS",) and not k.startswith("HOURGLASS_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(tmp_path / "site")])
    return env


def test_an_installed_family_reaches_the_cli_and_the_plugin(tmp_path):
    """In a fresh process, through a real dist-info on the path: the CLI's help and the plugin's."""
    env = _site_with_toy(tmp_path)
    cli = subprocess.run([sys.executable, "-m", "hourglass", "run", "--help"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    assert cli.returncode == 0 and "toy or toy[seed]" in cli.stdout, cli.stdout + cli.stderr
    plugin = subprocess.run([sys.executable, "-m", "pytest", "--help"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert "toy or toy[seed]" in " ".join(plugin.stdout.split()), plugin.stdout[-2000:] + plugin.stderr[-2000:]
