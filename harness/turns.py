"""The runs of a shared system set up in turns (``harness.batch``): longest own wait first, a few
at a time in each of two lanes.

A run's setup (its topics, its consumers' start: ``harness.runner.ScenarioRun._set_up``) is the
heavy part of a shared system's first seconds: 22 runs starting their consumers at once on 2 cores
held each start back, the longest run's with the others, and the proxy's own start (beside them,
``adapters.rocketmq.proxy.ProxyStart``) took 20 s instead of 6. The batch waits for its longest run;
a shorter one has the time to start later (its own wait is shorter by more than its setup). So the
runs take turns in the order of their own waits (the model's: ``harness.summary.scenario_wait_ms``),
longest first: :data:`AT_ONCE` of the runs that start a consumer JVM of their own (a gRPC group,
one a plan crashes, one a fault acts on: ``harness.runner.hosted``), and beside them as many of the
runs whose groups all start in the system's consumer host, warm by then, in a fraction of a second
each. Two lanes: beside the load generator a single lane of four turns, each a JVM starting for
minutes, held every hosted run back for two minutes; with no turns for the hosted runs, twenty
groups starting at once in the host made the longest run's start 6.8 s instead of 2.5 s.

The runs start together and ask for their turns within milliseconds of each other: for
:data:`ARRIVAL_S` a turn waits for the longer runs of its lane that have not asked yet, then only
for those waiting; so a run that never asks (skipped, broken before its setup) holds nobody up for
long."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Iterator

from hourglass.harness.runner import hosted
from hourglass.harness.summary import scenario_wait_ms
from hourglass.reference.modes import GRPC_MODES

#: how many runs of one system set up at once, by lane: those that start consumer JVMs of their
#: own (a gRPC group's run waits for the proxy in its turn), those whose groups are all hosted
AT_ONCE = {"jvm": 2, "hosted": 4}
#: how long the turns wait for a longer run that has not asked for its turn yet (measured: the
#: longest run of the conformance suite, asking a few milliseconds after four shorter ones, waited
#: 3.8 s for its turn without this)
ARRIVAL_S = 2.0
#: the phase of a run waiting for its turn (the progress line's; its broker is up)
WAITING = "waiting for its setup turn"


def own_jvms(scenario) -> int:
    """How many consumer JVMs of its own a run of ``scenario`` starts at its setup."""
    return sum(c.instances for c in scenario.consumers if c.mode in GRPC_MODES or not hosted(scenario, c))


def lane(scenario) -> str:
    return "jvm" if own_jvms(scenario) else "hosted"


class SetUpTurns:
    def __init__(self, scenarios, stop: threading.Event, at_once: dict[str, int] = AT_ONCE):
        order = sorted(scenarios, key=scenario_wait_ms, reverse=True)  # stable: equal waits keep their order
        self._rank = {s.name: i for i, s in enumerate(order)}
        self._lane = {s.name: lane(s) for s in scenarios}
        self._at_once, self._stop = at_once, stop
        self._cond = threading.Condition()
        self._waiting: set[str] = set()
        self._asked: set[str] = set()
        self.active: set[str] = set()
        self._since = time.monotonic()

    def _may_enter(self, name: str) -> bool:
        mine = self._lane.get(name)
        if sum(1 for n in self.active if self._lane.get(n) == mine) >= self._at_once.get(mine, 1):
            return False
        line = set(self._waiting)
        if time.monotonic() - self._since < ARRIVAL_S:  # the longer runs that have not asked yet
            line |= {n for n in self._rank if n not in self._asked}
        return min((n for n in line if self._lane.get(n) == mine), key=lambda n: self._rank.get(n, len(self._rank))) == name

    @contextmanager
    def turn(self, name: str, progress=None) -> Iterator[None]:
        """While run ``name`` sets up: entered once fewer than its lane's ``at_once`` runs set up
        and no longer run of its lane is in line (at once when the batch is being stopped). Its
        ``progress`` (harness.runner.Progress) reads :data:`WAITING` meanwhile."""
        if progress is not None:
            progress.phase = WAITING
        with self._cond:
            self._waiting.add(name)
            self._asked.add(name)
            try:
                while not self._stop.is_set() and not self._may_enter(name):
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
