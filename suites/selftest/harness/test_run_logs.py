"""Each run directory gets a copy of its system's logs (``RUN/logs/``), recorded in run.json.

The runner knows no layout: a system that has logs names them (``adapters.base.LogFiles``). A run
alone on its system gets each file whole; a run sharing it, the part written while it ran; a
copy holds at most the end of its part and its first line says when it was cut. The simulator has
no logs: its runs have no ``logs/`` and their report no logs section.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from types import SimpleNamespace

from hourglass.adapters.base import BrokerProfile, LogFiles
from hourglass.adapters.rocketmq.provision import Distribution
from hourglass.adapters.rocketmq.external_system import ExternalRocketMQSystem
from hourglass.adapters.rocketmq.local import LocalRocketMQSystem
from hourglass.adapters.rocketmq.system import RocketMQSystem
from hourglass.adapters.simulated import DEFAULT_START_MS, SimulatedSystem, open_simulated
from hourglass.harness.logcopy import CUT_MARK, copy_logs
from hourglass.harness.runner import RunLogs, ScenarioRun
from hourglass.harness.scenario import COMPRESSED_LEVELS, ConsumerGroup, Message, Scenario
from hourglass.reference.contract import POP_REVIVED, SEND_BACK_FAILED, validate_event
from hourglass.reference.rundir import BROKER_LOGS, CLIENT_LOG_EVENTS, EVENTS_DIR, LOGS_DIR, RUN_JSON
from hourglass.reports.html import report_html
from hourglass.reports.logs import run_logs

BEFORE = "broker started\n"


class LoggedSimulation(SimulatedSystem):
    """The simulator with log files, as a real system has: its broker log gets a line per send."""

    def __init__(self, logs: Path):
        super().__init__(BrokerProfile(message_delay_level=COMPRESSED_LEVELS), frozenset(), 0, DEFAULT_START_MS)
        self.logs = logs
        logs.mkdir(parents=True, exist_ok=True)
        (logs / "broker.log").write_text(BEFORE)
        (logs / "g.log").write_text("consumer up\n")

    def log_files(self) -> dict[str, Path]:
        return {"broker.log": self.logs / "broker.log", "clients/g.log": self.logs / "g.log"}

    def logs_not_collected(self) -> str | None:
        return None

    def send(self, req):
        with open(self.logs / "broker.log", "a") as f:
            f.write(f"stored {req.key}\n")
        return super().send(req)


def _scenario() -> Scenario:
    return Scenario("logged", (Message("k1", "T"), Message("k2", "T", at_ms=100)), (ConsumerGroup("g", ("T",)),))


def _run(system, run_dir: Path, shared: bool = False) -> dict:
    system.setup()
    try:
        ScenarioRun(_scenario(), system, run_dir, shared_system=shared).execute()
    finally:
        system.teardown()
    return json.loads((run_dir / RUN_JSON).read_text())


def _verdict(passed):
    return {"run_id": "r", "passed": passed, "messages": 2, "attempts": 2, "recovered": 0, "invariants": {}}


def test_a_simulated_run_has_no_logs_and_its_report_no_logs_section(tmp_path):
    system = open_simulated(BrokerProfile(message_delay_level=COMPRESSED_LEVELS))
    assert not isinstance(system, LogFiles)
    run = _run(system, tmp_path / "run")
    assert not (tmp_path / "run" / LOGS_DIR).exists()
    assert "logs" not in run and "logs_not_collected" not in run
    assert run_logs(_verdict(False), run, str(tmp_path / "run"), tmp_path / "run") is None


def test_a_run_alone_on_its_system_gets_each_log_whole_linked_from_its_report(tmp_path):
    system = LoggedSimulation(tmp_path / "system-logs")
    assert isinstance(system, LogFiles)
    run_dir = tmp_path / "run"
    run = _run(system, run_dir)
    copy = run_dir / LOGS_DIR / "broker.log"
    assert copy.read_text() == BEFORE + "stored k1\nstored k2\n"
    assert (run_dir / LOGS_DIR / "clients" / "g.log").read_text() == "consumer up\n"
    assert run["logs"]["broker.log"] == {"source": str(system.logs / "broker.log"), "from_byte": 0,
                                         "to_byte": copy.stat().st_size}
    logs = run_logs(_verdict(True), run, str(run_dir), run_dir)
    assert [(link.name, link.href) for link in logs.links] == [("broker.log", "logs/broker.log"),
                                                               ("clients/g.log", "logs/clients/g.log")]
    page = report_html(_verdict(True) | {"invariants": _invariants()}, None, None, run, [], logs)
    assert "<a href='logs/broker.log'>" in page and "<a href='logs/clients/g.log'>" in page
    assert logs.tail is None, "a passed run shows no log tail"


def test_a_run_sharing_its_system_gets_the_part_written_while_it_ran(tmp_path):
    system = LoggedSimulation(tmp_path / "system-logs")
    run = _run(system, tmp_path / "run", shared=True)
    assert (tmp_path / "run" / LOGS_DIR / "broker.log").read_text() == "stored k1\nstored k2\n"
    assert run["logs"]["broker.log"]["from_byte"] == len(BEFORE)


def test_a_copy_keeps_the_end_from_a_line_start_and_says_in_its_first_line_that_it_was_cut(tmp_path):
    source = tmp_path / "broker.log"
    lines = [f"line {i:02d} of the broker's log\n" for i in range(40)]
    source.write_text("".join(lines))
    record = copy_logs({"broker.log": source}, tmp_path / "run", since={"broker.log": len(lines[0])}, max_bytes=100)
    head, *kept = (tmp_path / "run" / LOGS_DIR / "broker.log").read_text().splitlines(keepends=True)
    assert head.startswith(CUT_MARK) and str(source) in head
    assert kept == lines[-len(kept):] and 0 < sum(map(len, kept)) <= 100  # whole lines, the last ones
    entry = record["broker.log"]
    assert entry["from_byte"] == len(lines[0]) and entry["to_byte"] == source.stat().st_size
    assert entry["cut_bytes"] == entry["to_byte"] - entry["from_byte"] - sum(map(len, kept))
    uncut = copy_logs({"broker.log": source}, tmp_path / "whole")
    assert "cut_bytes" not in uncut["broker.log"]
    assert (tmp_path / "whole" / LOGS_DIR / "broker.log").read_text() == "".join(lines)


def _invariants() -> dict:
    from hourglass.reference.contract import INVARIANTS

    return {n: {"passed": True, "checked": 1, "violations": 0, "examples": []} for n in INVARIANTS}


def _rocketmq(tmp_path: Path, external: bool) -> RocketMQSystem:
    dist = Distribution("rocketmq:5.5.0", "5.5.0", tmp_path / "lib")
    if external:
        return ExternalRocketMQSystem(dist, SimpleNamespace(name="external"), tmp_path / "system", BrokerProfile(),
                                      "127.0.0.1:9876")
    return LocalRocketMQSystem(dist, SimpleNamespace(name="process"), tmp_path / "system", BrokerProfile())


def _touch(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(path.name + "\n")


def test_rocketmq_names_its_logs_so_the_broker_log_is_found_on_every_version(tmp_path):
    system = _rocketmq(tmp_path, external=False)
    logs, home = system.layout.logs_dir, system.layout.home_dir / "logs"
    for rel in ("broker.out", "namesrv.out", "client-process.log", "consumer-g-0.log", "logs/rocketmqlogs/broker.log"):
        _touch(logs / rel)
    for rel in ("rocketmqlogs/broker.log", "rocketmqlogs/store.log"):  # 5.x's own logback layout
        _touch(home / rel)
    files = system.log_files()
    assert set(files) == {"broker.out", "namesrv.out", "client-process.log", "consumer-g-0.log",
                          "clients/rocketmqlogs/broker.log", "broker.log", "store.log"}
    assert files["broker.log"] == home / "rocketmqlogs" / "broker.log"  # the broker's, not the client's
    assert set(BROKER_LOGS) <= set(files)
    assert system.logs_not_collected() is None
    _touch(home / "broker.log")  # 4.x: the harness's logback config writes here
    assert system.log_files()["broker.log"] == home / "broker.log"


def test_an_external_cluster_gives_the_harness_client_logs_and_says_the_servers_are_not_collected(tmp_path):
    system = _rocketmq(tmp_path, external=True)
    _touch(system.layout.logs_dir / "consumer-g-0.log")
    _touch(system.layout.home_dir / "logs" / "broker.log")
    assert set(system.log_files()) == {"consumer-g-0.log"}
    assert "not collected (external cluster" in system.logs_not_collected()


def _log_line(at_ms: int, utc_offset_s: int, text: str, millis: bool) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at_ms / 1000 + utc_offset_s))
    return f"{stamp}{f',{at_ms % 1000:03d}' if millis else ''} {text}\n"


def test_the_send_backs_the_client_logged_failed_become_fault_events_of_the_runs_groups(tmp_path):
    """4.9.x's client log (the harness's pattern: milliseconds, the host's zone) and 5.x's (RocketMQ's
    own: seconds, GMT+8) both give their failed send-backs as ``send_back_failed`` faults, in the
    run's period and of its groups only (reference.network.send_back_failures)."""
    run_dir, sources = tmp_path / "run", tmp_path / "sources"
    (run_dir / LOGS_DIR / "clients").mkdir(parents=True)
    sources.mkdir()
    started = (int(time.time()) - 3_600) * 1000
    run = {"started_ms": started, "ended_ms": started + 60_000, "logs": {}}
    old = _log_line(started + 5_123, 0, "ERROR RocketmqClient - sendMessageBack Exception, g", True)
    other_group = _log_line(started + 6_000, 0, "ERROR RocketmqClient - sendMessageBack Exception, h", True)
    before = _log_line(started - 10_000, 0, "ERROR RocketmqClient - sendMessageBack Exception, g", True)
    last = _log_line(started + 70_000, 0, "INFO RocketmqClient - closed", True)
    new = _log_line(started + 9_000, 8 * 3600, "ERROR ConsumeMessageThread_1 - Failed to send message back, "
                    "consumerGroup=g, brokerName=b, mq=MessageQueue [topic=T], message=MessageExt [queueId=0, "
                    "toString()=Message{topic='T', flag=0, properties={KEYS=k2, HG_PLAN=LATER}, body=[1]}]", False)
    # an orderly group's send to the DLQ re-sent at once by the client's own producer (the one it gave up on may be stored)
    resent = _log_line(started + 12_000, 8 * 3600, "WARN ConsumeMessageThread_g_11 - sendKernelImpl exception, resend at "
                       "once, InvokeID: -7402, RT: 2102ms, Broker: MessageQueue [topic=%RETRY%g, brokerName=b, queueId=0]", False)
    new_last = _log_line(started + 70_000, 8 * 3600, "INFO main - shutdown", False)
    for name, text, written in [("rocketmq_client.log", before + old + other_group + last, started + 70_000),
                                ("clients/broker_default.log", new + resent + new_last, started + 70_400)]:
        source = sources / name.replace("/", "_")
        source.write_text(text)
        os.utime(source, (written / 1000, written / 1000))
        (run_dir / LOGS_DIR / name).write_text(text)
        run["logs"][name] = {"source": str(source), "from_byte": 0, "to_byte": len(text)}
    (run_dir / EVENTS_DIR).mkdir()
    RunLogs(None, run_dir).record_client_failures(run, {c.group for c in _scenario().consumers})
    events = [json.loads(line) for line in (run_dir / EVENTS_DIR / CLIENT_LOG_EVENTS).read_text().splitlines()]
    for e in events:
        validate_event(e)
    assert [(e["ts_ms"] - started, e["action"], e["target"], e["group"], e.get("key")) for e in events] == [
        (5_123, SEND_BACK_FAILED, "consumer", "g", None), (9_000, SEND_BACK_FAILED, "consumer", "g", "k2"),
        (12_000, SEND_BACK_FAILED, "consumer", "g", None)]
    assert "rocketmq_client.log: " in events[0]["cause"] and "sendMessageBack Exception" in events[0]["cause"]


def test_the_revives_the_brokers_pop_log_recorded_become_fault_events_of_the_runs_groups(tmp_path):
    """5.x's pop.log (enablePopLog: RocketMQ's own pattern, seconds, GMT+8) records each revive and the
    copy it put: a ``pop_revived`` fault of the run's group (reference.pop.popped_unseen), matched by
    that copy, not by time; another group's revive, or one that stored nothing, is none."""
    run_dir, source = tmp_path / "run", tmp_path / "pop.log"
    (run_dir / LOGS_DIR).mkdir(parents=True)
    (run_dir / EVENTS_DIR).mkdir()
    started = (int(time.time()) - 3_600) * 1000

    def revive(group: str, wrote: int, status: str = "PUT_OK") -> str:
        return _log_line(started + 9_000, 8 * 3600, (
            f"INFO PopReviveService_1 - reviveQueueId=1,retry msg, ck=PopCheckPoint [topic=%RETRY%{group}_t, cid={group}, "
            f"queueId=0, startOffset=3, bitMap=0, num=1, reviveTime=1, reviveOffset=9, diff=[0], brokerName=b, rePutTimes=0], "
            f"msg queueId 0, offset 3, reviveDelay=1, result is PutMessageResult [putMessageStatus={status}, appendMessage"
            f"Result=AppendMessageResult{{status={status}, wroteOffset={wrote}, wroteBytes=612, msgId='7F', storeTimestamp=1, "
            f"logicsOffset=4, pagecacheRT=0, msgNum=1}}, remotePut=false] "), False)

    text = revive("g", 88_123) + revive("h", 88_200) + revive("g", 88_300, "CREATE_MAPPED_FILE_FAILED") + \
        _log_line(started + 70_000, 8 * 3600, "INFO PopReviveService_1 - reviveQueueId=1, ck listSize=1", False)
    source.write_text(text)
    os.utime(source, ((started + 70_000) / 1000, (started + 70_000) / 1000))
    (run_dir / LOGS_DIR / "pop.log").write_text(text)
    run = {"started_ms": started, "ended_ms": started + 60_000,
           "logs": {"pop.log": {"source": str(source), "from_byte": 0, "to_byte": len(text)}}}
    RunLogs(None, run_dir).record_client_failures(run, {"g"})
    events = [json.loads(line) for line in (run_dir / EVENTS_DIR / CLIENT_LOG_EVENTS).read_text().splitlines()]
    for e in events:
        validate_event(e)
    assert [(e["ts_ms"] - started, e["action"], e["group"], e["commit_log_offset"]) for e in events] == [
        (9_000, POP_REVIVED, "g", 88_123)]
    assert events[0]["cause"] == "pop.log: %RETRY%g_t queue 0 offset 3"


def test_a_cut_log_copy_loses_no_send_back_failure_and_a_repeated_line_is_no_repeated_event(tmp_path):
    """A copy cut to its size cap left out the front of the run's part of a shared client log, where
    the failures were (seen on 5.0.0 in a matrix: the model, not told, blamed the broker for the
    client's re-send): the run's part of the source is read instead. A batch's send-backs failing
    in one millisecond log one line each, the same: each is its own event, numbered (an exact
    repeat would be taken for a recording fault)."""
    run_dir, source = tmp_path / "run", tmp_path / "rocketmq_client.log"
    (run_dir / LOGS_DIR).mkdir(parents=True)
    (run_dir / EVENTS_DIR).mkdir()
    started = (int(time.time()) - 3_600) * 1000
    failed = _log_line(started + 5_123, 0, "ERROR RocketmqClient - sendMessageBack Exception, g", True)
    earlier = _log_line(started - 5_000, 0, "INFO RocketmqClient - earlier run", True)
    last = _log_line(started + 70_000, 0, "INFO RocketmqClient - closed", True)
    text = earlier + failed + failed + last
    source.write_text(text)
    os.utime(source, ((started + 70_000) / 1000, (started + 70_000) / 1000))
    (run_dir / LOGS_DIR / "rocketmq_client.log").write_text(last)  # the cut copy: only the tail
    run = {"started_ms": started, "ended_ms": started + 60_000,
           "logs": {"rocketmq_client.log": {"source": str(source), "from_byte": len(earlier), "to_byte": len(text),
                                            "cut_bytes": 2 * len(failed)}}}
    RunLogs(None, run_dir).record_client_failures(run, {"g"})
    events = [json.loads(line) for line in (run_dir / EVENTS_DIR / CLIENT_LOG_EVENTS).read_text().splitlines()]
    assert [e["ts_ms"] - started for e in events] == [5_123, 5_123]
    assert events[0] != events[1] and "(#2 such line)" in events[1]["cause"]


def test_a_shared_runs_send_back_failures_after_its_end_are_recorded_until_its_consumers_stop(tmp_path):
    """A shared system's run ends when its own messages are final, but its consumers go on until the
    batch stops them, and what they deliver meanwhile is judged. A send-back they logged failed then
    (seen on 5.5.0 under the load generator: a send whose own status was UNKNOWN ended its run 30 s
    in; 40 s later a failed send-back's two copies of one retry were blamed on the broker's scheduler)
    is recorded too, from what the log's source gained since the run's end."""
    run_dir, source = tmp_path / "run", tmp_path / "broker_default.log"
    (run_dir / LOGS_DIR / "clients").mkdir(parents=True)
    (run_dir / EVENTS_DIR).mkdir()
    started = (int(time.time()) - 3_600) * 1000
    line = lambda at, text: _log_line(started + at, 8 * 3600, text, False)  # noqa: E731
    during = line(5_000, "INFO main - consuming")
    text = during
    source.write_text(text)
    (run_dir / LOGS_DIR / "clients/broker_default.log").write_text(text)
    run = {"run_id": "r", "scenario": "s", "system": {}, "started_ms": started, "ended_ms": started + 30_000,
           "profile": {"message_delay_level": "1s", "max_reconsume_times": 16, "flush_delay_offset_interval_ms": 10000,
                       "slack_ms": 3000},
           "logs": {"clients/broker_default.log": {"source": str(source), "from_byte": 0, "to_byte": len(text)}}}
    (run_dir / "run.json").write_text(json.dumps(run))
    logs = RunLogs(None, run_dir)
    logs.record_client_failures(run, {"g"})
    assert not (run_dir / EVENTS_DIR / CLIENT_LOG_EVENTS).exists()
    after = line(70_000, "ERROR ConsumeMessageThread_g_7 - Failed to send message back, consumerGroup=g, brokerName=b, "
                         "mq=MessageQueue [topic=%RETRY%g], message=MessageExt [queueId=0, toString()=Message{topic='T', "
                         "flag=0, properties={KEYS=k1}, body=[1]}]")
    other = line(71_000, "ERROR ConsumeMessageThread_h_1 - Failed to send message back, consumerGroup=h, brokerName=b")
    past = line(95_000, "ERROR ConsumeMessageThread_g_7 - Failed to send message back, consumerGroup=g, brokerName=b")
    source.write_text(text + after + other + past)
    os.utime(source, ((started + 95_000) / 1000, (started + 95_000) / 1000))  # written with its last line
    logs.record_client_failures_until(started + 90_000)
    events = [json.loads(x) for x in (run_dir / EVENTS_DIR / CLIENT_LOG_EVENTS).read_text().splitlines()]
    assert [(e["ts_ms"] - started, e["group"], e.get("key")) for e in events] == [(70_000, "g", "k1")]


def test_a_copy_leaves_logbacks_status_lines_out_says_how_many_and_keeps_the_whole_beside_it(tmp_path):
    """A 5.x client JVM prints logback's configuration chatter (pages of ``|-INFO in ch.qos.logback…``)
    at its start: the copy leaves those out and says so in its first line; the whole part is beside
    it gzipped, so nothing is lost; an ``|-ERROR`` status (a log that could not be opened) stays."""
    import gzip

    from hourglass.harness.logcopy import FULL_SUFFIX, TRIM_MARK

    status = [f"17:33:11,{i:03d} |-INFO in org.apache.rocketmq.logging.ch.qos.logback.classic.LoggerContext[default] - "
              f"status {i}\n" for i in range(30)]
    warn = "17:33:13,399 |-WARN in ch.qos.logback.classic.joran.action.LevelAction - <level> element is deprecated.\n"
    error = "17:33:13,400 |-ERROR in ch.qos.logback.core.FileAppender[FILE] - openFile(x) call failed.\n"
    real = ["2026-11-27 01:33:20,000 INFO main - consumer started\n", "  |-INFO in nested status\n"]
    source = tmp_path / "consumer-g-0.log"
    source.write_text("".join(status[:20]) + warn + error + real[0] + "".join(status[20:]) + real[1])
    entry = copy_logs({"consumer-g-0.log": source}, tmp_path / "run")["consumer-g-0.log"]
    head, *kept = (tmp_path / "run" / LOGS_DIR / "consumer-g-0.log").read_text().splitlines(keepends=True)
    assert head.startswith(TRIM_MARK) and "32 logback status lines" in head and "consumer-g-0.log" + FULL_SUFFIX in head
    assert kept == [error, real[0]]
    assert entry["status_lines"] == 32 and entry["full"] == "consumer-g-0.log" + FULL_SUFFIX
    with gzip.open(tmp_path / "run" / LOGS_DIR / entry["full"], "rt") as f:
        assert f.read() == source.read_text()
    logs = run_logs(_verdict(True), {"run_id": "r", "logs": {"consumer-g-0.log": entry}}, str(tmp_path / "run"), tmp_path / "run")
    (link,) = logs.links
    assert "32 logback status lines left out" in link.note and link.full_href == "logs/consumer-g-0.log" + FULL_SUFFIX
    plain = copy_logs({"broker.log": tmp_path / "run" / LOGS_DIR / "consumer-g-0.log"}, tmp_path / "again")["broker.log"]
    assert "status_lines" not in plain and not (tmp_path / "again" / LOGS_DIR / ("broker.log" + FULL_SUFFIX)).exists()


def test_a_copy_records_the_zone_its_log_prints_times_in(tmp_path):
    """RocketMQ's own patterns print GMT+8 whatever the host's zone: the copy records the zone from
    its last timed line against when the source was last written, and the report labels it."""
    source = tmp_path / "broker.log"
    written = (int(time.time()) - 600) * 1000
    source.write_text(_log_line(written - 2_000, 8 * 3600, "INFO a", False) + _log_line(written, 8 * 3600, "INFO b", False))
    os.utime(source, (written / 1000, written / 1000))
    entry = copy_logs({"broker.log": source}, tmp_path / "run")["broker.log"]
    assert entry["utc_offset_s"] == 8 * 3600
    logs = run_logs(_verdict(True), {"run_id": "r", "logs": {"broker.log": entry}}, str(tmp_path / "run"), tmp_path / "run")
    assert "times in the broker's local zone, UTC+08:00" in logs.links[0].note
