"""The runs of a shared system set up in turns, longest own wait first, a few at a time
(``harness.turns.SetUpTurns``): the batch waits for its longest run, so its setup goes first, also
when shorter runs asked a moment before it; a run that never asks for its turn holds nobody up for
long; a stop lets every waiting run through."""

from __future__ import annotations

import threading
import time

from hourglass.harness.scenario import ConsumerGroup, Message, Scenario
from hourglass.harness.turns import ARRIVAL_S, SetUpTurns


def _scenario(name: str, wait_s: int, plan=("CRASH", "OK")) -> Scenario:
    """A run whose group has a JVM of its own (a plan crashes it), or with ``plan`` ("OK",) a hosted one."""
    return Scenario(name=name, messages=(Message(key="k", topic="t", at_ms=wait_s * 1000, plan=plan),),
                    consumers=(ConsumerGroup("g", ("t",)),))


def _take_turns(turns: SetUpTurns, names: list[str], hold_s: float = 0.05) -> tuple[list[str], int]:
    order, most = [], [0]
    lock = threading.Lock()

    def run(name):
        with turns.turn(name):
            with lock:
                order.append(name)
                most[0] = max(most[0], len(turns.active))
            time.sleep(hold_s)

    threads = [threading.Thread(target=run, args=(n,)) for n in names]
    for t in threads:
        t.start()
        time.sleep(0.01)  # all waiting before the first turn ends (they start together in a batch)
    for t in threads:
        t.join(10)
    return order, most[0]


def test_the_longest_runs_set_up_first_and_at_most_a_few_at_once():
    scenarios = [_scenario(f"s{level}", level) for level in (1, 5, 3, 18, 9, 2, 14)]  # own waits grow with the send time
    turns = SetUpTurns(scenarios, threading.Event(), at_once={"jvm": 2})
    order, most = _take_turns(turns, [s.name for s in scenarios], hold_s=0.2)
    assert most == 2
    # by own wait, longest first, though the shorter ones asked first (within ARRIVAL_S of each other)
    assert order == sorted(order, key=lambda n: -int(n[1:])), order


def test_a_run_that_never_asks_holds_nobody_up():
    scenarios = [_scenario("long", 18), _scenario("short", 1)]
    turns = SetUpTurns(scenarios, threading.Event(), at_once={"jvm": 1})
    began = time.monotonic()
    order, _ = _take_turns(turns, ["short"])  # "long" was skipped: never asks
    assert order == ["short"] and time.monotonic() - began < ARRIVAL_S + 1


def test_a_stop_lets_every_waiting_run_through():
    stop = threading.Event()
    turns = SetUpTurns([_scenario("a", 1), _scenario("b", 2)], stop, at_once={"jvm": 1})
    entered = threading.Event()

    def b():
        with turns.turn("b"):
            entered.set()

    with turns.turn("a"):
        t = threading.Thread(target=b)
        t.start()
        assert not entered.wait(0.5)  # b waits for a's turn to end
        stop.set()
        assert entered.wait(2)
    t.join(2)


def test_the_hosted_runs_take_turns_of_their_own_beside_the_jvm_starts():
    """Beside the load generator a single lane of four turns, each a JVM starting for minutes,
    held every hosted run back for two minutes: the hosted runs have a lane of their own."""
    turns = SetUpTurns([_scenario("jvm", 18), _scenario("jvm2", 17), _scenario("hosted", 1, plan=("OK",))],
                       threading.Event(), at_once={"jvm": 1, "hosted": 1})
    with turns.turn("jvm"):
        began = time.monotonic()
        with turns.turn("hosted"):
            assert time.monotonic() - began < 0.5
        entered = threading.Event()

        def jvm2():
            with turns.turn("jvm2"):
                entered.set()
        t = threading.Thread(target=jvm2)
        t.start()
        assert not entered.wait(0.5)  # its lane is full
    assert entered.wait(2)
    t.join(2)
