"""The runs of a shared system start their consumer JVMs in turns (``harness.batch``): longest own
wait first, at most :data:`JVMS_AT_ONCE` such runs setting up at a time.

A run's setup (its topics, its consumers' start: ``harness.runner.ScenarioRun._set_up``) is the
heavy part of a shared system's first seconds: 22 runs starting their consumers at once on 2 cores
held each start back, the longest run's with the others, and the proxy's own start (beside them,
``adapters.rocketmq.proxy.ProxyStart``) took 20 s instead of 6. What is heavy is a JVM's start: a
group with a process of its own (a gRPC group, one a plan crashes, one a fault acts on:
``harness.runner.hosted``); a hosted group starts in the system's consumer host, warm by then, in
a fraction of a second, and its run never waits. The batch waits for its longest run; a shorter one
has the time to start later (its own wait is shorter by more than its setup). So the runs with JVMs
to start take turns in the order of their own waits (the model's:
``harness.summary.scenario_wait_ms``), longest first. Beside the load generator four turns of such
runs, each JVM starting for minutes, held every hosted run back for two minutes: those no longer
wait. The runs start together and ask for their turns within milliseconds of each other: for
:data:`ARRIVAL_S` a turn waits for the longer runs that have not asked yet, then only for those
waiting; so a run that never asks (skipped, broken before its setup) holds nobody up for long."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Iterator

from hourglass.harness.runner import hosted
from hourglass.harness.summary import scenario_wait_ms
from hourglass.reference.modes import GRPC_MODES

#: how many runs of one system that start consumer JVMs of their own set up at once (a gRPC
#: group's run waits for the proxy in its turn)
JVMS_AT_ONCE = 2
#: how long the turns wait for a longer run that has not asked for its turn yet (measured: the
#: longest run of the conformance suite, asking a few milliseconds after four shorter ones, waited
#: 3.8 s for its turn without this)
ARRIVAL_S = 2.0
#: the phase of a run waiting for its turn (the progress line's; its broker is up)
WAITING = "waiting for its setup turn"


def own_jvms(scenario) -> int:
    """How many consumer JVMs of its own a run of ``scenario`` starts at its setup."""
    return sum(c.instances for c in scenario.consumers if c.mode in GRPC_MODES or not hosted(scenario, c))


class SetUpTurns:
    def __init__(self, scenarios, stop: threading.Event, at_once: int = JVMS_AT_ONCE):
        order = sorted((s for s in scenarios if own_jvms(s)), key=scenario_wait_ms, reverse=True)  # stable
        self._rank = {s.name: i for i, s in enumerate(order)}
        self._at_once, self._stop = at_once, stop
        self._cond = threading.Condition()
        self._waiting: set[str] = set()
        self._asked: set[str] = set()
        self.active: set[str] = set()
        self._since = time.monotonic()

    def _first_in_line(self, name: str) -> bool:
        line = set(self._waiting)
        if time.monotonic() - self._since < ARRIVAL_S:  # the longer runs that have not asked yet
            line |= {n for n in self._rank if n not in self._asked}
        return min(line, key=self._rank.__getitem__) == name

    @contextmanager
    def turn(self, name: str, progress=None) -> Iterator[None]:
        """While run ``name`` sets up: at once for a run without JVMs of its own to start; else
        once fewer than ``at_once`` such runs set up and no longer one is in line (at once when the
        batch is being stopped). Its ``progress`` (harness.runner.Progress) reads :data:`WAITING`
        meanwhile."""
        if name not in self._rank:
            yield
            return
        if progress is not None:
            progress.phase = WAITING
        with self._cond:
            self._waiting.add(name)
            self._asked.add(name)
            try:
                while not self._stop.is_set() and not (len(self.active) < self._at_once and self._first_in_line(name)):
                    self._cond.wait(0.2)
            finally:
                self._waiting.discard(name)
            self.active.add(name)
            self._cond.notify_all()
        try:
            yield
        finally:
            with self._cond:
                self.active.discard(name)
                self._cond.notify_all()
