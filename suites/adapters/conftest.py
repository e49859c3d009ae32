"""Shared fixtures for the adapter integration tests against real RocketMQ brokers.

Which brokers: ``HOURGLASS_ROCKETMQ_SYSTEMS`` (comma separated, default :data:`DEFAULT_SYSTEMS`:
the newest 4.9.x whose broker is on Maven Central and ``rocketmq:latest``) run always;
:data:`SLOW_SYSTEMS` (4.9.3, 4.9.4) run marked ``slow``. Which runtimes: ``HOURGLASS_ADAPTER_RUNTIMES``
(comma separated, default ``process``); the container runtime joins the matrix by adding
``container``.

``shared_system`` is one broker per (system, runtime) per module for tests that do not fault it;
each test takes its own topic and group (``names``). ``own_system`` opens a fresh system for a
test that kills or stops the broker, and tears it down afterwards, also on failure.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Callable, Iterator

import pytest

from hourglass.adapters.base import BrokerProfile

#: 4.9.8's broker and name-server jars are not on Maven Central: 4.9.7 is the newest 4.9.x there.
DEFAULT_SYSTEMS = ("rocketmq:4.9.7", "rocketmq:latest")
SLOW_SYSTEMS = ("rocketmq:4.9.3", "rocketmq:4.9.4")

#: A compressed level table keeps the tests short; retry k waits level min(3 + k, 5).
LEVELS_S = (1, 2, 3, 4, 5)
PROFILE = BrokerProfile(message_delay_level=" ".join(f"{s}s" for s in LEVELS_S), flush_delay_offset_interval_ms=1000)
READY_TIMEOUT_S = 180.0
#: How late a delivery may come after it is due and still count as "soon after" (CPU contention
#: from other JVMs on a 2-core machine included). Not a speed target: a missing delivery fails.
LATE_ALLOWANCE_MS = 12_000


def _csv_env(name: str, default: tuple[str, ...]) -> list[str]:
    raw = os.environ.get(name)
    return [x.strip() for x in raw.split(",") if x.strip()] if raw else list(default)


def system_params() -> list:
    params = [pytest.param(s, id=s.split(":", 1)[1]) for s in _csv_env("HOURGLASS_ROCKETMQ_SYSTEMS", DEFAULT_SYSTEMS)]
    if "HOURGLASS_ROCKETMQ_SYSTEMS" not in os.environ:
        params += [pytest.param(s, id=s.split(":", 1)[1], marks=pytest.mark.slow) for s in SLOW_SYSTEMS]
    return params


def runtime_params() -> list[str]:
    return _csv_env("HOURGLASS_ADAPTER_RUNTIMES", ("process",))


@pytest.fixture(scope="module", params=system_params())
def system_name(request) -> str:
    return request.param


@pytest.fixture(scope="module", params=runtime_params())
def runtime_name(request) -> str:
    return request.param


#: the system the container runtime (the same broker and faults, another launcher: the one users
#: take from the official apache/rocketmq images) is proved on in CI; on the others it runs nightly
CONTAINER_CI_SYSTEM = "rocketmq:latest"


@pytest.hookimpl(tryfirst=True)  # before -m deselects what is marked slow
def pytest_collection_modifyitems(config, items):
    """CI's hour is shared: a test on the container runtime runs in CI on :data:`CONTAINER_CI_SYSTEM`
    only, on every other system nightly (``slow``); the process runtime runs on every system, but
    for a test marked ``ci_system(SYSTEM)`` (a long machine-fault test whose rule does not depend on
    the version), which runs in CI on that system and on the others nightly; and for a test marked
    ``ci_runtime(RUNTIME)`` (a fault whose launcher code other CI tests already drive on the other
    runtime), which runs in CI on that runtime and on the other nightly."""
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        system = params.get("system_name")
        if params.get("runtime_name") == "container" and system not in (None, CONTAINER_CI_SYSTEM):
            item.add_marker(pytest.mark.slow)
        ci = item.get_closest_marker("ci_system")
        if ci is not None and system is not None and system != ci.args[0]:
            item.add_marker(pytest.mark.slow)
        ci_runtime = item.get_closest_marker("ci_runtime")
        if ci_runtime is not None and params.get("runtime_name") not in (None, ci_runtime.args[0]):
            item.add_marker(pytest.mark.slow)


def process_first_runtimes() -> list:
    """The runtimes for a long test: the process runtime in every run, the container runtime
    (the same broker and fault, another launcher) nightly only (``slow``): CI's hour is shared."""
    return [pytest.param(r, id=r, marks=() if r == "process" else pytest.mark.slow) for r in runtime_params()]


def _open(system_name: str, runtime_name: str, workdir: Path, profile: BrokerProfile = PROFILE):
    from hourglass.adapters.rocketmq import open_system

    return open_system(system_name, runtime=runtime_name, workdir=workdir, profile=profile)


@pytest.fixture(scope="module")
def shared_system(system_name, runtime_name, tmp_path_factory) -> Iterator:
    system = _open(system_name, runtime_name, tmp_path_factory.mktemp("shared-system"))
    try:
        system.setup()
        yield system
    finally:
        system.teardown()


@pytest.fixture
def own_system(system_name, runtime_name, tmp_path) -> Iterator[Callable]:
    """``own_system(profile=PROFILE)`` -> a started system of its own, torn down after the test."""
    opened = []

    def make(profile: BrokerProfile = PROFILE, setup: bool = True):
        system = _open(system_name, runtime_name, tmp_path / f"system-{len(opened)}", profile)
        opened.append(system)
        if setup:
            system.setup()
        return system

    try:
        yield make
    finally:
        for system in opened:
            system.teardown()


@pytest.fixture
def names() -> dict:
    tag = uuid.uuid4().hex[:8]
    return {"topic": f"T_{tag}", "group": f"G_{tag}", "consumer": f"c-{tag}", "key": f"k-{tag}"}


def read_events(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a torn last line
    return out


def wait_for_events(path: Path, done: Callable[[list[dict]], bool], timeout_s: float, system=None,
                    what: str = "events") -> list[dict]:
    """Poll the consumer's events file until ``done(events)``; restart crashed consumers of
    ``system`` while waiting. Fails with what was seen when the deadline passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        events = read_events(path)
        if done(events):
            return events
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not seen within {timeout_s:.0f} s in {path}; events so far:\n"
                        + "\n".join(json.dumps(e) for e in events[-20:]))
        if system is not None:
            system.poll_consumers()
        time.sleep(0.2)  # poll interval of the file, not a wait for the broker


def delay_ms(level: int) -> int:
    """The delay of ``level`` in :data:`PROFILE`, clamped to the table's maximum; 0 below 1."""
    if level <= 0:
        return 0
    return LEVELS_S[min(level, len(LEVELS_S)) - 1] * 1000


def run_and_check(scenario, system_name: str, runtime_name: str, out: Path, skip_if_skipped: bool = False):
    """Run one scenario through the batch on its own system and check it: (run directory, verdict,
    run.json, every event of the run). A scenario the system skips fails the test, or with
    ``skip_if_skipped`` skips it with the system's reason (a fault this machine cannot make)."""
    from hourglass.harness.batch import BatchOptions, run_batch
    from hourglass.harness.systems import SystemSpec
    from hourglass.reports.check import check_runs

    results, errors = run_batch([scenario], BatchOptions(SystemSpec(system_name, runtime_name), out, progress=False))
    assert not errors, errors
    (res,) = results
    if res.skipped and skip_if_skipped:
        pytest.skip(res.skipped)
    assert res.skipped is None, res.skipped
    (verdict,) = check_runs([res.run_dir])
    run = json.loads((res.run_dir / "run.json").read_text())
    events = [json.loads(x) for f in sorted((res.run_dir / "events").glob("*.jsonl")) for x in f.read_text().splitlines()]
    return res.run_dir, verdict, run, events
