"""The RocketMQ adapter's pure parts, without a broker: config, ports, delayOffset.json, plans,
brokerStatus parsing, the process runtime's signals, the external runtime's fault commands."""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path

import pytest

from hourglass.adapters.base import AdapterError
from hourglass.adapters.rocketmq import config as cfg
from hourglass.adapters.rocketmq.consumer_proc import delivered_attempts
from hourglass.adapters.rocketmq.external import ExternalRuntime
from hourglass.adapters.rocketmq.process import ProcessRuntime
from hourglass.adapters.rocketmq.provision import Distribution, newest_complete
from hourglass.adapters.rocketmq.runtime import LaunchSpec
from hourglass.adapters.rocketmq.logs import first_errors
from hourglass.adapters.rocketmq.whitebox import schedule_offsets


def test_delay_offset_json_with_unquoted_int_keys():
    assert cfg.parse_delay_offsets('{"offsetTable":{1:3,2:0,18:12}}', "x") == {1: 3, 2: 0, 18: 12}
    assert cfg.parse_delay_offsets('{\n\t"offsetTable":{\n\t\t1:3\n\t}\n}', "x") == {1: 3}
    with pytest.raises(AdapterError, match="delayOffset.json: expected fastjson"):
        cfg.parse_delay_offsets("{offsetTable:", "store/config/delayOffset.json")
    with pytest.raises(AdapterError, match="field 'offsetTable'"):
        cfg.parse_delay_offsets('{"other": 1}', "x")


def test_read_delay_offsets_absent_or_empty_is_none(tmp_path):
    layout = cfg.StoreLayout.under(tmp_path)
    assert cfg.read_delay_offsets(layout) is None
    path = cfg.delay_offset_path(layout)
    path.parent.mkdir(parents=True)
    path.write_text("")
    assert cfg.read_delay_offsets(layout) is None
    path.write_text('{"offsetTable":{3:7}}')
    assert cfg.read_delay_offsets(layout) == {3: 7}


def test_broker_config_has_the_profile_paths_and_version_keys(tmp_path):
    layout = cfg.StoreLayout.under(tmp_path)
    ports = cfg.SystemPorts(19876, 19881)
    from hourglass.harness.scenario import Profile
    from hourglass.harness.systems import broker_profile

    profile = broker_profile(Profile(message_delay_level="1s 2s", flush_delay_offset_interval_ms=500, max_message_size=1024))
    four = cfg.broker_config(Distribution("rocketmq:4.9.7", "4.9.7", tmp_path), profile, ports, layout)
    five = cfg.broker_config(Distribution("rocketmq:5.5.0", "5.5.0", tmp_path), profile, ports, layout)
    assert four["messageDelayLevel"] == "1s 2s" and four["flushDelayOffsetInterval"] == "500"
    assert four["storePathCommitLog"] == str(layout.commitlog_dir) and four["listenPort"] == "19881"
    assert four["namesrvAddr"] == "127.0.0.1:19876" and four["brokerIP1"] == "127.0.0.1"
    assert four["maxMessageSize"] == "1024" and "timerWheelEnable" not in four
    assert five["timerWheelEnable"] == "true" and five["timerPrecisionMs"] == "1000"
    assert five["enablePopLog"] == "true" and "enablePopLog" not in four  # pop.log: a POP verdict's evidence
    from hourglass.adapters.rocketmq.launch import disk_warning_props

    assert disk_warning_props(profile) == ()  # the distribution's default (0.98) stands
    ratio = broker_profile(Profile(disk_warning_percent=85))
    assert disk_warning_props(ratio) == ("-Drocketmq.broker.diskSpaceWarningLevelRatio=0.85",)
    written = cfg.write_properties(tmp_path / "broker.conf", four).read_text()
    assert "messageDelayLevel=1s 2s\n" in written
    in_ns = cfg.SystemPorts(19876, 19881, broker_host="10.213.7.2", namesrv_host_for_broker="10.213.7.1")
    conf = cfg.broker_config(Distribution("rocketmq:4.9.7", "4.9.7", tmp_path), profile, in_ns, layout)
    assert conf["brokerIP1"] == "10.213.7.2" and conf["namesrvAddr"] == "10.213.7.1:19876"  # adapters.rocketmq.netns
    assert in_ns.broker_addr == "10.213.7.2:19881" and in_ns.namesrv_addr == "127.0.0.1:19876"  # the clients' view


def test_a_command_prefix_runs_the_jvm_under_it_with_the_same_pid(tmp_path):
    from hourglass.adapters.rocketmq.process import java_command

    spec = LaunchSpec("broker", "Main", ("a.jar",), ("-Xmx1g",), ("-c", "b.conf"), (), tmp_path / "log",
                      command_prefix=("ip", "netns", "exec", "ns1"))
    assert java_command(spec) == ["ip", "netns", "exec", "ns1", "java", "-Xmx1g", "-cp", "a.jar", "Main", "-c", "b.conf"]


def test_pick_ports_skips_a_base_with_a_busy_broker_port():
    first = cfg.pick_ports(20500)
    with socket.socket() as busy:
        busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        busy.bind(("127.0.0.1", first.broker + 1))  # the HA port of the first choice
        busy.listen()
        second = cfg.pick_ports(20500)
    assert second.namesrv != first.namesrv and first.broker + 1 not in second.all()


def test_leased_ports_are_not_handed_out_twice_until_released():
    first = cfg.lease_ports(20600)
    second = cfg.lease_ports(20600)
    try:
        assert second.ports.namesrv != first.ports.namesrv
        first.release()
        third = cfg.lease_ports(20600)
        assert third.ports == first.ports
        third.release()
    finally:
        first.release()
        second.release()


def test_plan_position_is_rebuilt_from_the_events_file_and_skips_a_torn_line(tmp_path):
    events = tmp_path / "consumer-c.jsonl"
    events.write_text('{"type":"deliver","key":"a","group":"G","reconsume_times":0}\n'
                      '{"type":"deliver","key":"a","group":"G","reconsume_times":1,"batch_index":2,"ack_index":0}\n'
                      '{"type":"deliver","key":"b","group":"H"}\n{"type":"deliv')
    assert delivered_attempts(events, "G") == {"a": [0, (1, True)]}


def test_two_deliveries_of_a_key_in_one_millisecond_are_never_the_same_line(tmp_path, monkeypatch):
    """A copy pulled twice (a rebalance) and consumed by two threads at once is two lines that
    differ in ts_ms: an exact repeat in a consumer's file can only be a recording fault."""
    from hourglass.adapters.rocketmq import consumer_proc

    monkeypatch.setattr(consumer_proc, "now_ms", lambda: 1_000)
    follower = consumer_proc.PlanFollower("G", tmp_path / "consumer-c.jsonl")
    assert [follower.stamp("a"), follower.stamp("a"), follower.stamp("b")] == [1_000, 1_001, 1_000]


def test_schedule_offsets_from_broker_status():
    table = {"scheduleMessageOffset_2": "5,7", "scheduleMessageOffset_10": "1,1", "putTps": "0.0"}
    assert schedule_offsets(table) == ({"2": 5, "10": 1}, {"2": 7, "10": 1})


def test_first_errors_picks_error_lines_with_context(tmp_path):
    log = tmp_path / "broker.log"
    log.write_text("INFO a\nERROR x - parse failed\njava.lang.Boom\n\tat y\nINFO b\n")
    assert first_errors(log).splitlines()[:2] == ["ERROR x - parse failed", "java.lang.Boom"]


def test_newest_complete_needs_every_artifact():
    versions = {"rocketmq-broker": ["5.5.0", "5.5.1", "4.9.7"], "rocketmq-namesrv": ["5.5.0", "4.9.7"]}
    assert newest_complete(versions) == "5.5.0" and newest_complete(versions, 4) == "4.9.7"


def _sleeper_spec(tmp_path: Path, name: str = "sleeper") -> LaunchSpec:
    # a tiny "JVM": the runtime only needs a command line; python stands in for java here
    return LaunchSpec(name, "-c", (), (), ("import time, signal; time.sleep(600)",), (), tmp_path / f"{name}.out")


def test_process_runtime_signals_and_exit_codes(tmp_path):
    rt = ProcessRuntime(java=sys.executable)
    try:
        spec = _sleeper_spec(tmp_path)
        rt.launch(LaunchSpec(spec.component, "-c", (), (), spec.args, (), spec.log_file))
        assert rt.running("sleeper") and rt.exit_code("sleeper") is None
        rt.pause("sleeper")
        rt.resume("sleeper")
        rt.kill("sleeper")
        assert not rt.running("sleeper") and rt.exit_code("sleeper") == 137
        rt.start("sleeper")
        assert rt.running("sleeper")
        rt.stop("sleeper", timeout_s=10)
        assert rt.exit_code("sleeper") == 128 + 15
        assert "starting sleeper" in rt.log_tail("sleeper")
        with pytest.raises(AdapterError, match="no component 'broker'"):
            rt.kill("broker")
    finally:
        rt.close()
    assert not rt.running("sleeper")


def test_process_runtime_close_kills_everything(tmp_path):
    rt = ProcessRuntime(java=sys.executable)
    for name in ("a", "b"):
        spec = _sleeper_spec(tmp_path, name)
        rt.launch(spec)
    pids = [rt.pid("a"), rt.pid("b")]
    rt.close()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            import os

            os.kill(pid, 0)


def test_external_runtime_runs_the_given_commands_and_refuses_missing_ones(tmp_path):
    marker = tmp_path / "killed"
    rt = ExternalRuntime({"kill:broker": f"touch {marker}", "stop:broker": "exit 3"})
    rt.kill("broker")
    assert marker.exists()
    with pytest.raises(AdapterError, match="stop:broker command exited 3"):
        rt.stop("broker")
    with pytest.raises(AdapterError, match="no fault command for 'pause:broker'"):
        rt.pause("broker")
    with pytest.raises(AdapterError, match="expected '<action>:<component>'"):
        ExternalRuntime({"reboot": "true"})


_ALLOCATE = """
import json, sys
from hourglass.adapters.rocketmq.jvm import start_jvm
start_jvm(sys.argv[1], sys.argv[2])
from java.util import ArrayList
from org.apache.rocketmq.common.message import MessageQueue
from hourglass.adapters.rocketmq.consumer_proc import make_allocation
mqs = ArrayList([MessageQueue("T", "b", i) for i in range(4)])
out = {}
for name, cids in (("duplicated", ["me", "me"]), ("two", ["me", "other"])):
    got = make_allocation().allocate("g", "me", mqs, ArrayList(cids))
    out[name] = sorted(int(q.getQueueId()) for q in got)
print(json.dumps(out))
"""


@pytest.mark.realbroker
@pytest.mark.parametrize("system", ["rocketmq:4.9.7", "rocketmq:latest"])
def test_a_client_the_broker_lists_twice_still_gets_every_queue(system, tmp_path):
    """5.3.3 after a kill -9 listed the harness's one consumer twice (a closed channel kept
    registered): averaging over [me, me] left half the queues unpulled. The harness's consumer
    allocates over the distinct clients, and still shares queues with a real second client."""
    import json
    import subprocess

    from hourglass.adapters.rocketmq.provision import resolve

    lib = resolve(system).lib_dir
    done = subprocess.run([sys.executable, "-c", _ALLOCATE, str(lib), str(tmp_path)], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got == {"duplicated": [0, 1, 2, 3], "two": [0, 1]}
    assert "allocating over the distinct ['me']" in done.stderr


def test_broker_clock_control_file_and_leftovers(tmp_path):
    """adapters/rocketmq/brokerclock: the offset as libfaketime reads it (seconds with a fraction,
    replaced whole), the preload environment, and the shared-memory files of dead processes removed."""
    from hourglass.adapters.rocketmq import brokerclock

    control = tmp_path / "broker.faketime"
    brokerclock.write_offset(control, -6000)
    assert control.read_text() == "-6.000\n"
    brokerclock.write_offset(control, 1500)
    assert control.read_text() == "+1.500\n" and not list(tmp_path.glob("*.tmp"))
    env = dict(brokerclock.environment(control))
    assert env["FAKETIME_TIMESTAMP_FILE"] == str(control) and env["FAKETIME_FORCE_MONOTONIC_FIX"] == "0"
    assert "process runtime only" in brokerclock.unavailable("container")
    shm = tmp_path / "shm"
    shm.mkdir()
    (shm / "faketime_shm_999999999").write_text("")
    (shm / f"sem.faketime_sem_{os.getpid()}").write_text("")
    brokerclock.remove_leftovers(shm)
    assert [p.name for p in shm.iterdir()] == [f"sem.faketime_sem_{os.getpid()}"]


def test_broker_clock_drift_line_is_continuous_under_libfaketimes_speed_rule(tmp_path):
    """adapters/rocketmq/brokerclock: libfaketime reads '+O xR' as t + O + (R - 1)(t - P) (P the
    process's start, measured), so the line written at ``now`` reads the offset reached there and
    then drifts at the rate; a drifting broker's launch fakes the monotonic clock along (the
    speed hangs every JVM timed wait otherwise) and leaves the monotonic fix to libfaketime."""
    from hourglass.adapters.rocketmq import brokerclock

    start, now = 1_000_000.0, 1_060_000.0  # the broker started 60 s before the change

    def reads(spec: str, t: float) -> float:  # libfaketime's rule, as measured
        offset, speed = spec.split(" x")
        return t + float(offset) * 1000 + (float(speed) - 1) * (t - start)

    for offset, rate in ((0, 500), (2_000, 0), (2_000, -500), (-7_500, 900)):
        spec = brokerclock.rate_spec(offset, rate, now, start)
        assert abs(reads(spec, now) - (now + offset)) <= 1  # continuous at the change (to the written ms)
        assert abs(reads(spec, now + 10_000) - (now + 10_000 + offset + rate * 10)) <= 1
    brokerclock.write_rate(tmp_path / "c", 0, -500, start)
    assert (tmp_path / "c").read_text().endswith(" x0.500\n")
    drifting = dict(brokerclock.environment(tmp_path / "c", drift=True))
    assert "FAKETIME_DONT_FAKE_MONOTONIC" not in drifting and "FAKETIME_FORCE_MONOTONIC_FIX" not in drifting
    assert brokerclock.process_start_ms(os.getpid()) <= time.time() * 1000


def test_a_topic_creation_that_timed_out_on_a_starved_broker_is_asked_again(monkeypatch):
    from hourglass.adapters.rocketmq import system as sysmod
    from hourglass.adapters.rocketmq.clientlink import ClientError

    class Client:
        calls = 0

        def request(self, cmd, timeout_s, **args):
            Client.calls += 1
            if Client.calls < 3:
                raise ClientError(cmd, "org.apache.rocketmq.remoting.exception.RemotingTimeoutException: wait response "
                                       "on the channel <127.0.0.1:19881> timeout, 5000(ms)")
            return {}

    monkeypatch.setattr(sysmod.time, "sleep", lambda s: None)
    system = object.__new__(sysmod.RocketMQSystem)
    system.client = Client()
    system.create_topic("T")
    assert Client.calls == 3
    Client.calls = -10  # every attempt times out: the last error is raised
    with pytest.raises(ClientError, match="RemotingTimeoutException"):
        system.create_topic("T")

    def refused(cmd, timeout_s, **args):
        raise ClientError(cmd, "MQClientException: CODE: 1 DESC: no permission")
    system.client.request = refused
    with pytest.raises(ClientError, match="no permission"):  # not a timeout: at once
        system.create_topic("T")


def test_plan_positions_are_the_groups_across_its_instances(tmp_path):
    """A retry (or a moved queue) reaches another instance of the group: it goes on in the plan where
    the group stopped (found on a real 4.9.7 broker: two instances, plans LATER then OK, the retries
    answered LATER again by the instance that had not seen the first attempt)."""
    from hourglass.adapters.rocketmq.consumer_proc import PlanFollower

    other = tmp_path / "consumer-g-1.jsonl"
    other.write_text('{"type":"deliver","ts_ms":5,"key":"k","group":"g","reconsume_times":0,"outcome":"LATER"}\n'
                     '{"type":"deliver","ts_ms":6,"key":"k","group":"g-other","reconsume_times":0,"outcome":"LATER"}\n'
                     '{"type":"deliver","ts_ms":7,"key":"k","gr')
    follower = PlanFollower("g", tmp_path / "consumer-g-0.jsonl")
    follower.history.refresh()
    assert follower.history.delivered("k") == [0]
    with open(other, "a") as f:  # the torn line ends: read once complete
        f.write('oup":"g","reconsume_times":1,"outcome":"LATER"}\n')
    follower.history.refresh()
    assert follower.history.delivered("k") == [0, 1]


def test_a_key_twice_in_one_call_gets_the_groups_cursor_both_times(tmp_path):
    """Two stored copies of one retry pulled into one batch (a scheduler duplicate after a kill -9,
    seen on 5.3.3): both are answered where the group stopped in the plan; the consumer once took
    the key's history for the first copy and answered the second from the plan's start (LATER: an
    attempt the plan does not lead to, blamed on the broker)."""
    from hourglass.adapters.rocketmq.consumer_proc import PlanFollower

    class Msg:
        def getUserProperty(self, name):
            return "LATER,OK"

    own = tmp_path / "consumer-g-0.jsonl"
    own.write_text('{"type":"deliver","ts_ms":5,"key":"k","group":"g","reconsume_times":0,"outcome":"LATER"}\n')
    follower = PlanFollower("g", own)
    follower.history.refresh()
    first, second = follower._cursor("k", Msg()), follower._cursor("k", Msg())
    assert first == second and first[1].used == 1 and first[1].settled == {0}


def test_a_consumer_joining_again_is_started_once_while_other_runs_poll(tmp_path):
    """Found in a version sweep: a group's instance that left and joined again while another run on
    the shared system polled it was started twice (the poll saw the old, stopped process no longer
    marked stopped during the slow start), and the copy nobody held ran on, into the next
    version's broker, stealing its queues. The start is one: polls skip a consumer being started."""
    import threading
    import time

    from hourglass.adapters.base import ConsumerSpec
    from hourglass.adapters.rocketmq.consumers import ConsumerProcesses

    class Proc:
        def __init__(self, alive=True):
            self.up = alive

        def alive(self):
            return self.up

        def death(self):
            return None

        def kill(self):
            self.up = False

        def ask_to_stop(self):
            self.up = False

        def stopped_by(self, deadline):
            self.up = False

    spawned = []

    def spawn(spec):
        spawned.append(spec.name)
        time.sleep(0.3)  # a JVM start
        return Proc()

    consumers = ConsumerProcesses(tmp_path, lambda: "127.0.0.1:1", tmp_path)
    consumers._spawn = spawn
    spec = ConsumerSpec("g-1", "g", ("T",))
    consumers.add(spec, lambda *a, **k: None)
    consumers.stop_one("g-1")  # it leaves
    joining = threading.Thread(target=consumers.add, args=(spec, lambda *a, **k: None))
    joining.start()
    time.sleep(0.1)
    assert consumers.poll() == []  # another run's poll while it starts again
    joining.join()
    assert spawned == ["g-1", "g-1"] and consumers.procs["g-1"].alive()


def test_a_pop_deliverys_pop_time_and_invisible_time_come_from_its_pop_ck():
    from hourglass.adapters.rocketmq.consumer_proc import pop_ck_times

    class Msg:
        def __init__(self, ck):
            self.ck = ck

        def getProperty(self, name):
            return self.ck if name == "POP_CK" else None

    assert pop_ck_times(Msg("0 1795768142875 5000 2 0 hg-broker 1 0")) == (1795768142875, 5000)
    assert pop_ck_times(Msg(None)) == (None, None)  # not a POP delivery
    assert pop_ck_times(Msg("0 1795768142875")) == (1795768142875, None)


# --- 5.x's proxy and the gRPC consumer (adapters.rocketmq.proxy, grpc_consumer_proc) ---------------

def test_a_receipt_handle_gives_the_pop_time_and_the_stored_copys_place():
    from hourglass.adapters.rocketmq.grpc_consumer_proc import receipt_fields

    # ReceiptHandle.encode at rocketmq-all-5.3.3: startOffset popTime invisibleTime reviveQueueId topicType
    # brokerName queueId offset commitLogOffset (and a trailing field on later releases)
    got = receipt_fields("12 1795785283136 15000 3 2 hg-broker 1 7 104857 extra")
    assert got == {"pop_ms": 1795785283136, "invisible_ms": 15000, "broker": "hg-broker", "queue_id": 1,
                   "queue_offset": 7, "commit_log_offset": 104857}
    assert receipt_fields("not a receipt handle") == {}
    assert receipt_fields("12 x 15000 3 2 hg-broker 1 7 104857") == {}


def test_the_grpc_capability_comes_with_a_running_proxy_on_5x_only():
    from hourglass.adapters.base import SystemInfo
    from hourglass.adapters.rocketmq.family import FAMILY
    from hourglass.reference.contract import GRPC, POP_CONSUMPTION

    with_proxy = FAMILY.capabilities(SystemInfo("rocketmq", "5.5.0", "process", {"proxy": "127.0.0.1:19883"}))
    assert {GRPC, POP_CONSUMPTION} <= with_proxy
    assert GRPC not in FAMILY.capabilities(SystemInfo("rocketmq", "5.5.0", "process", {}))
    assert GRPC not in FAMILY.capabilities(SystemInfo("rocketmq", "4.9.7", "process", {"proxy": "127.0.0.1:19883"}))


def test_a_grpc_group_needs_the_proxy_and_a_remoting_one_does_not():
    from hourglass.adapters.base import BrokerProfile
    from hourglass.reference import pop

    assert pop.setup_needed(["concurrently", pop.POP]) == frozenset()
    for mode in (pop.GRPC_SIMPLE, pop.GRPC_PUSH):
        needs = pop.setup_needed(["concurrently", mode])
        assert needs == {pop.PROXY_NEEDED}
        assert BrokerProfile(needs=needs).proxy
    assert not BrokerProfile().proxy


def test_the_proxys_ports_are_the_systems_own_and_distinct():
    from hourglass.adapters.rocketmq.config import SystemPorts

    ports = SystemPorts(namesrv=19876, broker=19881)
    assert len(set(ports.all())) == len(ports.all())
    assert {ports.proxy_grpc, ports.proxy_remoting} <= set(ports.all())
    assert ports.proxy_addr == f"127.0.0.1:{ports.proxy_grpc}"


def test_the_proxy_is_launched_in_cluster_mode_from_its_own_jars(tmp_path, monkeypatch):
    import json

    from hourglass.adapters.base import BrokerProfile
    from hourglass.adapters.rocketmq import proxy as proxy_mod
    from hourglass.adapters.rocketmq.launch import launch_spec
    from hourglass.adapters.rocketmq.local import LocalRocketMQSystem
    from hourglass.adapters.rocketmq.config import SystemPorts
    from hourglass.adapters.rocketmq.provision import Distribution
    from hourglass.reference.pop import PROXY_NEEDED

    lib, plib = tmp_path / "lib", tmp_path / "proxy-lib"
    monkeypatch.setattr(proxy_mod, "proxy_lib", lambda dist: plib)
    dist = Distribution("rocketmq:5.5.0", "5.5.0", lib)

    class NoRuntime:
        name = "process"

        def ships(self, artifact):
            return False

    system = LocalRocketMQSystem(dist, NoRuntime(), tmp_path / "sys", BrokerProfile(needs=frozenset({PROXY_NEEDED})))
    assert "proxy" in system.parts
    system.layout.make()
    system.topology.ports = SystemPorts(namesrv=19876, broker=19881)
    spec = launch_spec(system.parts["proxy"].launch_args())
    assert spec.main_class == "org.apache.rocketmq.proxy.ProxyStartup"
    assert spec.classpath == (str(plib / "*"),) and plib in spec.mounts
    conf = spec.args[spec.args.index("-pc") + 1]
    assert spec.args[spec.args.index("-pm") + 1] == "cluster" and spec.args[spec.args.index("-n") + 1] == "127.0.0.1:19876"
    written = json.loads(open(conf).read())
    assert written["grpcServerPort"] == 19883 and written["namesrvAddr"] == "127.0.0.1:19876"
    assert written["rocketMQClusterName"] == "HourglassCluster"
    old = LocalRocketMQSystem(Distribution("rocketmq:4.9.7", "4.9.7", lib), NoRuntime(), tmp_path / "old",
                              BrokerProfile(needs=frozenset({PROXY_NEEDED})))
    assert "proxy" not in old.parts  # no proxy before 5.x: its gRPC scenarios are skipped (no capability)


def test_the_proxy_takes_tls_only_before_5_1_and_the_consumer_is_told(tmp_path):
    from hourglass.adapters.rocketmq.proxy import endpoint, tls_only

    assert tls_only("5.0.0") and not tls_only("5.1.0") and not tls_only("5.5.0") and not tls_only("trunk")
    assert endpoint({}) is None
    assert endpoint({"proxy": "127.0.0.1:19883", "proxy_tls": True}) == ("127.0.0.1:19883", True)


def test_a_proxy_maven_central_lacks_is_told_apart_from_a_failed_download(tmp_path, monkeypatch):
    import subprocess

    from hourglass.adapters.rocketmq import provision

    said = ("[ERROR] Failed to execute goal on project rocketmq-5.1.4: Could not resolve dependencies for project "
            "hourglass.provision:rocketmq-5.1.4:pom:1: org.apache.rocketmq:rocketmq-proxy:jar:5.1.4 was not found in "
            "https://repo.maven.apache.org/maven2")
    monkeypatch.setattr(provision, "_mvn", lambda *a: subprocess.CompletedProcess([], 1, said, ""))
    with pytest.raises(provision.NotOnCentral, match="Maven Central has no rocketmq-proxy 5.1.4"):
        provision._fetch_once(tmp_path / "p", ("rocketmq-proxy",), "5.1.4", "x", "rocketmq:5.1.4")
    monkeypatch.setattr(provision, "_mvn", lambda *a: subprocess.CompletedProcess([], 1, "[ERROR] Failed: network", ""))
    with pytest.raises(provision.ProvisionError) as e:
        provision._fetch_once(tmp_path / "q", ("rocketmq-proxy",), "5.5.0", "x", "rocketmq:5.5.0")
    assert not isinstance(e.value, provision.NotOnCentral) and "network" in str(e.value)


def test_the_proxy_runs_from_maven_central_unless_the_runtime_ships_its_own(tmp_path, monkeypatch):
    from hourglass.adapters.rocketmq import proxy
    from hourglass.adapters.rocketmq.process import ProcessRuntime
    from hourglass.adapters.rocketmq.provision import Distribution

    dist = Distribution("rocketmq:5.5.0", "5.5.0", tmp_path / "lib")
    monkeypatch.setattr(proxy, "proxy_lib", lambda d: tmp_path / "central" / d.version / "proxy" / "lib")
    rt = ProcessRuntime()
    try:
        assert proxy.proxy_jars(dist, rt) == tmp_path / "central" / "5.5.0" / "proxy" / "lib"
    finally:
        rt.close()

    class Ships:
        def ships(self, artifact):
            return artifact == proxy.PROXY_ARTIFACT

    assert proxy.proxy_jars(dist, Ships()) == dist.lib_dir


def test_an_external_clusters_proxy_is_its_grpc_endpoint_faulted_by_the_users_commands(tmp_path):
    from hourglass.adapters.base import BrokerProfile
    from hourglass.adapters.rocketmq.external import ExternalRuntime, load_fault_commands
    from hourglass.adapters.rocketmq.external_system import ExternalRocketMQSystem
    from hourglass.adapters.rocketmq.family import FAMILY
    from hourglass.adapters.rocketmq.provision import Distribution
    from hourglass.reference.contract import GRPC

    faults = tmp_path / "faults.toml"
    faults.write_text('[proxy]\nkill = "ssh p1 pkill -9 -f ProxyStartup"\nstart = "ssh p1 systemctl start rmq-proxy"\n')
    commands = load_fault_commands(faults)
    system = ExternalRocketMQSystem(Distribution("rocketmq:5.5.0", "5.5.0", tmp_path), ExternalRuntime(commands),
                                    tmp_path / "sys", BrokerProfile(), "127.0.0.1:9876", "10.0.0.7:8081")
    assert GRPC in FAMILY.capabilities(system.info)
    assert system.cannot("kill", "proxy") is None and "stop:proxy" in system.cannot("stop", "proxy")
    bare = ExternalRocketMQSystem(Distribution("rocketmq:5.5.0", "5.5.0", tmp_path), ExternalRuntime({}),
                                  tmp_path / "bare", BrokerProfile(), "127.0.0.1:9876")
    assert GRPC not in FAMILY.capabilities(bare.info) and "proxy" not in bare.parts


def test_in_local_mode_the_broker_is_started_by_the_proxy_and_takes_its_faults(tmp_path, monkeypatch):
    from hourglass.adapters.base import BrokerProfile
    from hourglass.adapters.rocketmq import proxy
    from hourglass.adapters.rocketmq.config import SystemPorts
    from hourglass.adapters.rocketmq.launch import launch_spec
    from hourglass.adapters.rocketmq.local import LocalRocketMQSystem
    from hourglass.adapters.rocketmq.provision import Distribution
    from hourglass.reference.pop import PROXY_IN_BROKER, PROXY_LOCAL, PROXY_NEEDED

    plib = tmp_path / "proxy-lib"
    monkeypatch.setattr(proxy, "proxy_lib", lambda dist: plib)

    class NoRuntime:
        name = "process"

        def cannot(self, action, component):
            return None

        def ships(self, artifact):
            return False

    system = LocalRocketMQSystem(Distribution("rocketmq:5.5.0", "5.5.0", tmp_path / "lib"), NoRuntime(), tmp_path / "sys",
                                 BrokerProfile(needs=frozenset({PROXY_NEEDED}), proxy_mode=PROXY_LOCAL))
    system.layout.make()
    system.topology.ports = SystemPorts(namesrv=19876, broker=19881)
    spec = launch_spec(system.parts["broker"].launch_args())
    assert spec.main_class == "org.apache.rocketmq.proxy.ProxyStartup" and spec.classpath == (str(plib / "*"),)
    assert spec.args[:2] == ("-pm", "local") and spec.args[spec.args.index("-bc") + 1].endswith("broker.conf")
    # the broker's JVM-wide pauses, in its own logs (reference.stalls.SAFEPOINT_LOG); the name server has none
    home_logs = system.parts["broker"].launch_args().home / "logs"
    assert f"-Xlog:safepoint:file={home_logs / 'safepoint.log'}:time,uptime" in spec.jvm_opts
    assert not any(o.startswith("-Xlog:") for o in launch_spec(system.parts["namesrv"].launch_args()).jvm_opts)
    assert system.cannot("kill", "proxy") == PROXY_IN_BROKER and system.cannot("kill", "broker") is None
