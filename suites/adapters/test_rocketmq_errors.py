"""Bad input to the RocketMQ adapter gets a clear error: an unknown version, a bad system name, a
container runtime without a Docker engine (the process runtime still works)."""

from __future__ import annotations

import pytest

from hourglass.adapters.base import AdapterError
from hourglass.adapters.rocketmq import docker_engine_answers, open_system
from hourglass.adapters.rocketmq.provision import ProvisionError, resolve


def test_malformed_system_names_are_rejected_without_maven(tmp_path):
    for bad, expected in (("rocketmq:", "expected 'rocketmq:<version>'"), ("rocketmq:four", "expected a version"),
                          ("kafka:3.7", "unknown kind 'kafka'"), (f"dist:{tmp_path}", "expected a distribution directory"),
                          (f"jars:{tmp_path}", "rocketmq-broker-<version>.jar")):
        with pytest.raises(ProvisionError, match=expected.replace("(", r"\(")):
            resolve(bad)


def test_jars_dir_version_is_read_from_the_broker_jar(tmp_path):
    (tmp_path / "rocketmq-broker-4.9.8-SNAPSHOT.jar").write_bytes(b"not a zip")
    dist = resolve(f"jars:{tmp_path}")
    assert (dist.version, dist.major, dist.source) == ("4.9.8-SNAPSHOT", 4, "jars")


def test_unknown_runtime_is_rejected(tmp_path):
    with pytest.raises(AdapterError, match="expected one of auto, process, container, external"):
        open_system("rocketmq:4.9.7", runtime="vm", workdir=tmp_path)


@pytest.mark.realbroker
def test_unknown_version_says_how_to_find_versions(tmp_path, monkeypatch):
    monkeypatch.setenv("HOURGLASS_CACHE", str(tmp_path / "cache"))
    with pytest.raises(ProvisionError) as err:
        resolve("rocketmq:4.9.99")
    text = str(err.value)
    assert "Maven Central has no" in text and "rocketmq-broker" in text, text
    assert "--list" in text and "dist:" in text
    assert "Traceback" not in text and "[ERROR]" not in text.split("mvn said:")[0]


def test_without_a_docker_engine_auto_picks_the_process_runtime(tmp_path, monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    assert not docker_engine_answers()
    dist_dir = tmp_path / "jars"
    dist_dir.mkdir()
    (dist_dir / "rocketmq-broker-4.9.7.jar").write_bytes(b"")
    system = open_system(f"jars:{dist_dir}", runtime="auto", workdir=tmp_path / "w")
    try:
        assert system.runtime.name == "process" and system.info.runtime == "process"
    finally:
        system.teardown()


def test_without_a_docker_engine_the_container_runtime_says_so(tmp_path, monkeypatch):
    pytest.importorskip("docker")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    dist_dir = tmp_path / "jars"
    dist_dir.mkdir()
    (dist_dir / "rocketmq-broker-4.9.7.jar").write_bytes(b"")
    with pytest.raises(AdapterError, match="(?i)docker"):
        open_system(f"jars:{dist_dir}", runtime="container", workdir=tmp_path / "w")
