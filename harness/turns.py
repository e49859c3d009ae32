"""The runs of a shared system set up in turns (``harness.batch``): longest own wait first, at most
:data:`SETUP_AT_ONCE` at a time.

A run's setup (its topics, its consumers' start: ``harness.runner.ScenarioRun._set_up``) is the
heavy part of a shared system's first seconds: 22 runs starting their consumers at once on 2 cores
held each start back, the longest run's with the others, and the proxy's own start (beside them,
``adapters.rocketmq.proxy.ProxyStart``) took 20 s instead of 6. The batch waits for its longest run;
a shorter one has the time to start later (its own wait is shorter by more than its setup). So the
runs take turns in the order of their own waits (the model's: ``harness.summary.scenario_wait_ms``),
longest first. The runs start together and ask for their turns within milliseconds of each other:
for :data:`ARRIVAL_S` a turn waits for the longer runs that have not asked yet, then only for those
waiting; so a run that never asks (skipped, broken before its setup) holds nobody up for long."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Iterator

from hourglass.harness.summary import scenario_wait_ms

#: how many runs of one system set up at once: a gRPC group's own JVM and the proxy it waits for
#: take one slot each; the hosted groups start in the system's one consumer host
SETUP_AT_ONCE = 4
#: how long the turns wait for a longer run that has not asked for its turn yet (measured: the
#: longest run of the conformance suite, asking a few milliseconds after four shorter ones, waited
#: 3.8 s for its turn without this)
ARRIVAL_S = 2.0
#: the phase of a run waiting for its turn (the progress line's; its broker is up)
WAITING = "waiting for its setup turn"


class SetUpTurns:
    def __init__(self, scenarios, stop: threading.Event, at_once: int = SETUP_AT_ONCE):
        order = sorted(scenarios, key=scenario_wait_ms, reverse=True)  # stable: equal waits keep their order
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
        return min(line, key=lambda n: self._rank.get(n, len(self._rank))) == name

    @contextmanager
    def turn(self, name: str, progress=None) -> Iterator[None]:
        """While run ``name`` sets up: entered once fewer than ``at_once`` runs set up and no run
        with a longer own wait is waiting (at once when the batch is being stopped). Its
        ``progress`` (harness.runner.Progress) reads :data:`WAITING` meanwhile."""
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
