"""The container runtime against real RocketMQ name servers and brokers in Docker containers.

One name server + broker pair (module scope) is started with :class:`ContainerRuntime` and put
through the faults; answers are remoting round trips (``container_remoting``), not TCP connects.
``HOURGLASS_CONTAINER_SYSTEM`` picks the version (default ``rocketmq:4.9.7``). Without a Docker
engine these tests skip, unless ``HOURGLASS_REQUIRE_DOCKER=1`` (CI), where they fail.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from hourglass.adapters.base import BrokerProfile
from hourglass.adapters.rocketmq import config as cfg
from hourglass.adapters.rocketmq.container import LABEL_RUNTIME, ContainerRuntime
from hourglass.adapters.rocketmq.provision import MAIN_CLASS, resolve
from hourglass.adapters.rocketmq.runtime import LaunchSpec
from suites.adapters import container_remoting as rm

pytestmark = [pytest.mark.realbroker, pytest.mark.container]

SYSTEM = os.environ.get("HOURGLASS_CONTAINER_SYSTEM", "rocketmq:4.9.7")
READY_TIMEOUT_S = 180.0


def engine_or_skip():
    from hourglass.adapters.base import AdapterError
    from hourglass.adapters.rocketmq.image import engine

    try:
        return engine()
    except AdapterError as e:
        if os.environ.get("HOURGLASS_REQUIRE_DOCKER") == "1":
            raise
        pytest.skip(str(e))


class Pair:
    """A name server and a broker of ``dist`` under ``workdir``, as LaunchSpecs for a runtime."""

    def __init__(self, dist, workdir: Path, base_hint: int, profile: BrokerProfile | None = None):
        self.dist = dist
        self.layout = cfg.StoreLayout.under(workdir)
        self.layout.make()
        self.home = dist.make_home(self.layout.home_dir)
        self.ports = cfg.pick_ports(base_hint)
        conf = cfg.broker_config(dist, profile or BrokerProfile(message_delay_level="1s 2s 3s"),
                                 self.ports, self.layout)
        cfg.write_properties(self.layout.conf_dir / "broker.conf", conf)
        cfg.write_properties(self.layout.conf_dir / "namesrv.conf", cfg.namesrv_config(self.ports))

    def spec(self, component: str) -> LaunchSpec:
        return LaunchSpec(
            component=component, main_class=MAIN_CLASS[component], classpath=(str(self.dist.lib_dir / "*"),),
            jvm_opts=self.dist.jvm_opts(component) + (f"-Duser.home={self.home}",),
            args=("-c", str(self.layout.conf_dir / f"{component}.conf")),
            env=(("ROCKETMQ_HOME", str(self.home)),), log_file=self.layout.logs_dir / f"{component}.out",
            mounts=(self.layout.root, self.dist.lib_dir))

    def wait_namesrv(self, rt) -> float:
        return rm.wait_until("namesrv route of TBW102 (broker registered)",
                             lambda: rm.answers(self.ports.namesrv_addr, rm.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"}),
                             READY_TIMEOUT_S, lambda: rt.log_tail("namesrv") + "\n" + rt.log_tail("broker"))

    def wait_broker(self, rt) -> float:
        return rm.wait_until("broker config request",
                             lambda: rm.answers(self.ports.broker_addr, rm.GET_BROKER_CONFIG),
                             READY_TIMEOUT_S, lambda: rt.log_tail("broker"))


@pytest.fixture(scope="module")
def dist():
    return resolve(SYSTEM)


@pytest.fixture(scope="module")
def running(dist, tmp_path_factory):
    """(runtime, pair) with both components up."""
    engine_or_skip()
    pair = Pair(dist, tmp_path_factory.mktemp("container-system"), base_hint=29876)
    rt = ContainerRuntime(dist, pair.layout.root, labels={"run_id": "test-container-runtime"})
    try:
        rt.launch(pair.spec("namesrv"))
        rt.launch(pair.spec("broker"))
        pair.wait_broker(rt)
        pair.wait_namesrv(rt)
        yield rt, pair
    finally:
        rt.close()


def test_namesrv_and_broker_answer_from_their_containers(running):
    rt, pair = running
    assert rt.running("namesrv") and rt.running("broker")
    header, body = rm.request(pair.ports.namesrv_addr, rm.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"})
    assert header["code"] == rm.SUCCESS and f"127.0.0.1:{pair.ports.broker}".encode() in body
    container = rt.client.containers.get(rt.container_id("broker"))
    host_config = container.attrs["HostConfig"]
    assert host_config["NetworkMode"] == "host" and host_config["Init"] is True
    assert container.labels["hourglass"] == "1" and container.labels[LABEL_RUNTIME] == rt.runtime_id
    assert container.attrs["Config"]["User"] == f"{os.getuid()}:{os.getgid()}"
    # the JVM's stdout reaches the host through the bind mount (printed just after it answers)
    rm.wait_until("'boot success' in the broker's log file", lambda: "boot success" in rt.log_tail("broker"),
                  READY_TIMEOUT_S, lambda: rt.log_tail("broker"))


def test_kill_and_restart_keep_the_store_in_the_same_container(running):
    rt, pair = running
    body = f"before-kill-{uuid.uuid4()}".encode()
    sent = rm.send(pair.ports.broker_addr, "HG_CONTAINER_T", body)
    offset = rm.commit_log_offset(sent["msgId"])
    container_id = rt.container_id("broker")

    rt.kill("broker")
    assert not rt.running("broker")
    assert rt.exit_code("broker") == 137
    assert "boot success" in rt.log_tail("broker")  # readable after the container died
    assert any(pair.layout.commitlog_dir.iterdir())

    rt.start("broker")
    assert rt.container_id("broker") == container_id  # restarted, not recreated
    pair.wait_broker(rt)
    assert body in rm.stored_message(pair.ports.broker_addr, offset)
    assert rm.max_offset(pair.ports.broker_addr, "HG_CONTAINER_T") >= int(sent["queueOffset"]) + 1


def test_graceful_stop_writes_delay_offsets_the_host_can_read(running):
    rt, pair = running
    rt.stop("broker", timeout_s=60)
    assert rt.exit_code("broker") is not None and not rt.running("broker")
    path = cfg.delay_offset_path(pair.layout)
    assert path.exists(), f"expected {path} after a graceful stop; log:\n{rt.log_tail('broker')}"
    assert path.stat().st_uid == os.getuid()
    assert cfg.read_delay_offsets(pair.layout) is not None
    rt.start("broker")
    pair.wait_broker(rt)


def test_pause_silences_the_broker_and_resume_restores_it(running):
    rt, pair = running
    rt.pause("broker")
    try:
        assert rt.running("broker")  # paused is alive, as a SIGSTOPped process
        assert not rm.answers(pair.ports.broker_addr, rm.GET_BROKER_CONFIG, timeout_s=2.0)
    finally:
        rt.resume("broker")
    pair.wait_broker(rt)


def test_kill_while_paused_and_start_again(running):
    rt, pair = running
    rt.pause("broker")
    rt.kill("broker")
    assert rt.exit_code("broker") == 137
    rt.start("broker")
    pair.wait_broker(rt)
    pair.wait_namesrv(rt)


def test_a_broker_that_exits_reports_its_status_and_log(dist, tmp_path):
    engine_or_skip()
    pair = Pair(dist, tmp_path, base_hint=29976, profile=BrokerProfile(message_delay_level="1s  2s"))
    rt = ContainerRuntime(dist, pair.layout.root)
    try:
        rt.launch(pair.spec("broker"))  # no name server needed: it exits while parsing the levels
        rt.client.containers.get(rt.container_id("broker")).wait(timeout=READY_TIMEOUT_S)
        assert rt.exit_code("broker") == 253, rt.log_tail("broker")
        assert "==== hourglass: container start" in rt.log_tail("broker")
    finally:
        rt.close()
