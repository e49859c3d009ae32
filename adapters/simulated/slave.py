"""The slave of a master-slave pair on the simulator (``reference.cluster``): fault target
``broker-2`` (its process only), what consumers read while the master is down, and the broken slave
that re-puts on its own (``SLAVE_REPUTS_WHILE_MASTER_DOWN``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hourglass.adapters.parts import Part
from hourglass.adapters.simulated.broker import DOWN
from hourglass.adapters.simulated.defects import Defect
from hourglass.adapters.simulated.schedule import ScheduleService
from hourglass.reference.contract import BROKER_TARGETS

if TYPE_CHECKING:
    from hourglass.adapters.simulated.system import SimulatedSystem

#: SLAVE_REPUTS_WHILE_MASTER_DOWN: how often the broken slave's level tasks run
SLAVE_TICK_MS = 100


class SlaveView:
    """What consumers read while the master of a master-slave pair is down (reference.cluster): the
    slave's replica of its store (the same store here: replicated at once) and consume offsets of its
    own (copied from the master's persisted ones when it took over; commits made to it stay there)."""

    def __init__(self, store, consumer_offsets: dict):
        self.store = store
        self.consumer_offsets = consumer_offsets
        self.reachable = True
        self.latency_ms = 0


class Slave(Part):
    """``broker-2``: up or down (a frozen slave serves nothing); while the master is down and the
    slave up, consumers read and commit through it."""

    def __init__(self, system: "SimulatedSystem"):
        super().__init__(BROKER_TARGETS[1])
        self.system = system
        self.up = True
        self.view: SlaveView | None = None  # serving reads while the master is down

    def source(self):
        """The slave's view while the master is down and the slave up
        (PullAPIWrapper.recalculatePullFromWhichNode); else the master."""
        broker = self.system.broker
        if broker.state == DOWN and self.up:
            if self.view is None:
                self.view = SlaveView(broker.store, dict(broker.consumer_offsets_persisted))
            return self.view
        self.view = None
        return broker

    def _set(self, up: bool) -> None:
        self.up = up
        if not up:
            self.view = None
        self.after_master_down()

    def start(self) -> None:
        self._set(True)

    resume = start

    def stop(self) -> None:
        self._set(False)

    kill = pause = stop

    def after_master_down(self) -> None:
        if self.system.broker.state == DOWN and self.up:
            self._take_over()
            self.system.on_broker_ready()  # the consumers' pulls go to the slave now

    def _take_over(self) -> None:
        """The broken slave starts a schedule service of its own while the master is down, from the
        delay offsets it copied (the master's last persisted ones), re-putting into the store it
        replicates (the same one here) every 100 ms until the master is back."""
        broker = self.system.broker
        if Defect.SLAVE_REPUTS_WHILE_MASTER_DOWN not in broker.defects or broker.state != DOWN:
            return
        slave = ScheduleService(broker.profile.level_table, broker.store, frozenset(), broker.rng, 0.0)
        slave.persisted = dict(broker.schedule.persisted)
        slave.start()
        broker.slave_schedule = slave
        self._tick(slave)

    def _tick(self, slave: ScheduleService) -> None:
        broker = self.system.broker
        if broker.slave_schedule is not slave or broker.state != DOWN:
            return
        now = broker.wall_ms()
        for level in range(1, broker.profile.max_level + 1):
            slave.run_level(level, now, broker.reput)
        broker.at(broker.clock.now_ms() + SLAVE_TICK_MS, lambda: self._tick(slave))
