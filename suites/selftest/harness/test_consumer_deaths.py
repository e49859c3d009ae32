"""Consumer deaths are recorded when they happen, one kill/start pair per death, by whoever sees it.

A consumer that answers ``CRASH`` writes its own ``fault`` ``kill`` (``cause: died``) into its
events file right after the ``CRASH`` delivery; the system's restart path writes the ``start`` of
its replacement there when it restarts it. The runner's poll only triggers restarts.
"""

from __future__ import annotations

import json
import shutil

from hourglass.adapters.base import BrokerProfile, ConsumerSpec, ConsumersNotRestarted, SendRequest
from hourglass.adapters.simulated import open_simulated
from hourglass.harness.batch import BatchOptions, run_batch
from hourglass.harness.runner import ConsumerWatch
from hourglass.harness.scenario import ConsumerGroup, Message, Scenario
from hourglass.harness.systems import SystemSpec
from hourglass.harness.verdicts import assert_conforms
from hourglass.reference.rundir import EVENTS_DIR, HARNESS_EVENTS, RUN_JSON, consumer_events

#: a kill recorded by the dying consumer is written right after its CRASH delivery (same clock)
KILL_AFTER_CRASH_MS = 5


def _lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _consumer_faults(events: list[dict], name: str) -> list[dict]:
    return [e for e in events if e["type"] == "fault" and e["target"] == "consumer" and e.get("name") == name]


def _two_crashes() -> Scenario:
    msgs = (Message("crash-early", "T", at_ms=1_000, plan=("CRASH", "OK")),
            Message("steady", "T", at_ms=5_000, delay_level=1),
            Message("just-before", "T", at_ms=20_500),  # consumed, not committed when the consumer dies
            Message("crash-late", "T", at_ms=21_000, plan=("CRASH", "OK")))
    return Scenario("two-consumer-crashes", msgs, (ConsumerGroup("g", ("T",)),))


def test_two_crash_answers_give_two_kill_start_pairs_at_the_crash_times(tmp_path):
    results, errors = run_batch([_two_crashes()], BatchOptions(SystemSpec("simulated"), tmp_path, progress=False))
    assert not errors, errors
    (res,) = results
    events_dir = res.run_dir / EVENTS_DIR
    own = _lines(events_dir / consumer_events("g-0"))
    crashes = [e for e in own if e["type"] == "deliver" and e["outcome"] == "CRASH"]
    assert [c["key"] for c in crashes] == ["crash-early", "crash-late"]
    faults = _consumer_faults(own, "g-0")
    assert [(f["action"], f["cause"]) for f in faults] == [("kill", "died"), ("start", "died")] * 2, faults
    kills, starts = faults[0::2], faults[1::2]
    for crash, kill, start in zip(crashes, kills, starts):
        assert kill["group"] == "g" and start["group"] == "g"
        assert 0 <= kill["ts_ms"] - crash["ts_ms"] <= KILL_AFTER_CRASH_MS, (crash, kill)
        assert start["ts_ms"] >= kill["ts_ms"]
    assert starts[0]["ts_ms"] < kills[1]["ts_ms"], "the first replacement starts before the second death"
    # each key's CRASH is the last event of its incarnation: the kill follows it in the file
    for crash, kill in zip(crashes, kills):
        assert own.index(kill) == own.index(crash) + 1
    # the harness log keeps the scenario's own consumer start and no death of its own
    harness = _lines(events_dir / HARNESS_EVENTS)
    assert [(f["action"], f["cause"]) for f in _consumer_faults(harness, "g-0")] == [("start", "scenario")]


def test_deaths_of_one_consumer_between_two_polls_are_each_recorded(tmp_path):
    """Whoever polls, and however late: each death and each restart is its own pair, at its own time."""
    system = open_simulated(BrokerProfile("1s 2s 3s"), seed=3)
    system.setup()
    system.create_topic("T")
    system.start_consumer(ConsumerSpec("c", "g", ("T",), 16, tmp_path))
    clock = system.clock
    for i, wait_ms in enumerate((1_000, 7_000)):
        system.send(SendRequest("T", f"k{i}", b"x", plan=("CRASH", "OK")))
        clock.sleep_until(clock.now_ms() + wait_ms)  # no poll while it lies dead
        system.poll_consumers()
    clock.sleep_until(clock.now_ms() + 3_000)
    system.poll_consumers()
    system.teardown()
    own = _lines(tmp_path / consumer_events("c"))
    crashes = [e["ts_ms"] for e in own if e["type"] == "deliver" and e["outcome"] == "CRASH"]
    faults = _consumer_faults(own, "c")
    assert len(crashes) == 2
    assert [f["action"] for f in faults] == ["kill", "start", "kill", "start"]
    assert [f["ts_ms"] for f in faults[0::2]] == crashes


def test_where_the_consumer_deaths_are_written_does_not_change_the_verdict(tmp_path):
    """The checker reads ``fault`` events from every events file: the same run with the consumer's
    kill/start moved into the harness log gets the same verdict (and conforms)."""
    from hourglass.reports.check import check_runs

    (res,), errors = run_batch([_two_crashes()], BatchOptions(SystemSpec("simulated"), tmp_path / "runs", progress=False))
    assert not errors, errors
    moved = tmp_path / "moved" / res.run_dir.name
    shutil.copytree(res.run_dir, moved)
    own_path = moved / EVENTS_DIR / consumer_events("g-0")
    own = _lines(own_path)
    deaths = _consumer_faults(own, "g-0")
    assert len(deaths) == 4
    own_path.write_text("".join(json.dumps(e) + "\n" for e in own if e not in deaths))
    with open(moved / EVENTS_DIR / HARNESS_EVENTS, "a") as f:
        f.writelines(json.dumps(e) + "\n" for e in deaths)
    run_json = moved / RUN_JSON
    run_json.write_text(json.dumps({**json.loads(run_json.read_text()), "run_id": "moved"}))
    verdicts = {v["run_id"]: v for v in check_runs([res.run_dir, moved], out_dir=tmp_path / "verdicts")}
    here, there = verdicts[res.run_id], verdicts["moved"]
    assert here["invariants"]["NO_DUPLICATE"]["checked"] > 0, "the redeliveries after the deaths were judged"
    assert_conforms(here)
    assert here["invariants"] == there["invariants"]
    assert (here["messages"], here["attempts"]) == (there["messages"], there["attempts"])


class _RefusingRestarts:
    """A system whose dead consumers ``a`` and ``b`` cannot be restarted this time."""

    def __init__(self):
        self.polls = 0

    def poll_consumers(self) -> list[str]:
        self.polls += 1
        raise ConsumersNotRestarted({"a-0": "RemotingTimeoutException at the name server", "b-0": "no JVM"}, ["c-0"])


def test_a_consumer_that_cannot_be_restarted_fails_its_own_run_only():
    """Seen under a starved broker: a CRASH group's replacement could not start (its client's
    request to the name server timed out) and the run that happened to poll was broken for it.
    The failure is raised to the run whose consumer it is, naming only its own; another run's poll
    goes on; a caller that names no consumers owns them all."""
    system = _RefusingRestarts()
    watch = ConsumerWatch(system)
    watch.poll(frozenset({"x-0", "c-0"}))  # neither a nor b is this run's: it goes on
    try:
        watch.poll(frozenset({"a-0"}))
    except ConsumersNotRestarted as e:
        assert e.failed == {"a-0": "RemotingTimeoutException at the name server"} and "'a-0'" in str(e) and "b-0" not in str(e)
    else:
        raise AssertionError("the owner's poll did not fail")
    try:
        watch.poll()
    except ConsumersNotRestarted as e:
        assert set(e.failed) == {"a-0", "b-0"}
    else:
        raise AssertionError("an unowned poll did not fail")
    assert system.polls == 3


def test_a_runs_poll_never_waits_behind_another_runs_restart():
    """On a shared system every run polls the consumers from its timeline's waits. A restart takes
    seconds (a JVM's start): a second poll meanwhile returns at once (the first restarts every dead
    consumer), so no run's fault step or send waits for another run's consumer (seen:
    batch-ack-index's resume 3 s after its pause came 9.8-24.7 s late)."""
    import threading
    import time

    class Slow:
        def __init__(self):
            self.entered, self.release, self.polls = threading.Event(), threading.Event(), 0

        def poll_consumers(self):
            self.polls += 1
            self.entered.set()
            self.release.wait(10)
            return []

    system = Slow()
    watch = ConsumerWatch(system)
    first = threading.Thread(target=watch.poll)
    first.start()
    assert system.entered.wait(5)
    began = time.monotonic()
    watch.poll(frozenset({"x-0"}))  # another run's poll: at once
    assert time.monotonic() - began < 1.0 and system.polls == 1
    system.release.set()
    first.join(5)
    watch.poll()  # the restart done, the next poll polls
    assert system.polls == 2


def test_one_consumer_that_cannot_be_restarted_stops_no_other_restart(tmp_path, monkeypatch):
    """ConsumerProcesses.poll restarts every dead consumer it can, then names those it could not."""
    from hourglass.adapters.base import AdapterError
    from hourglass.adapters.rocketmq.consumers import ConsumerProcesses

    class Dead:
        def alive(self):
            return False

        def death(self):
            return "died"

        def kill(self):
            pass

    class Alive(Dead):
        def alive(self):
            return True

    parts = ConsumerProcesses(tmp_path, lambda: "127.0.0.1:9876", tmp_path)
    parts.CONSUMER_START_ATTEMPTS = 1
    for name in ("a-0", "b-0"):
        parts.procs[name], parts.specs[name] = Dead(), ConsumerSpec(name, name[0], ("T",), 16, tmp_path)

    def spawn(spec, restarted_after=None):
        if spec.name == "a-0":
            raise AdapterError("the client's start timed out")
        return Alive()

    monkeypatch.setattr(parts, "_spawn", spawn)
    try:
        parts.poll()
    except ConsumersNotRestarted as e:
        assert e.failed == {"a-0": "the client's start timed out"} and e.restarted == ["b-0"]
    else:
        raise AssertionError("the failed restart was not named")
    assert parts.procs["b-0"].alive() and not parts.procs["a-0"].alive() and not parts.starting


def test_nothing_starts_once_the_consumers_were_torn_down_and_a_start_under_way_then_ends(tmp_path, monkeypatch):
    """Proof C (2026-11-29): a batch stopped by SIGTERM tore its systems down while a run still
    drained; that run's poll went on restarting its dead consumer (five attempts, a new JVM each)
    for a system already gone, and a replacement started while the teardown ran was left running.
    After ``discard`` a poll starts nothing, and a start that was under way ends at once."""
    from hourglass.adapters.rocketmq.consumers import ConsumerProcesses

    ended = []

    class Proc:
        def __init__(self, up: bool):
            self.up = up

        def alive(self):
            return self.up

        def death(self):
            return "died"

        def _ask_to_end(self):
            return False

        def kill(self):
            self.up = False
            ended.append(self)

    parts = ConsumerProcesses(tmp_path, lambda: "127.0.0.1:9876", tmp_path)
    parts.procs["a-0"], parts.specs["a-0"] = Proc(False), ConsumerSpec("a-0", "a", ("T",), 16, tmp_path)
    started = []

    def spawn(spec, restarted_after=None):  # the teardown comes while the replacement's JVM starts
        parts.discard()
        started.append(Proc(True))
        return started[-1]

    monkeypatch.setattr(parts, "_spawn", spawn)
    assert parts.poll() == []
    (replacement,) = started
    assert replacement in ended and not replacement.alive() and parts.procs["a-0"] is not replacement
    monkeypatch.undo()
    parts.procs["a-0"] = Proc(False)
    parts.stopped.clear()
    assert parts.poll() == [] and len(started) == 1  # torn down: nothing is due any more
