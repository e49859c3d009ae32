"""The simulated system's fault targets (:mod:`adapters.parts`): the broker (every fault, its
store, network and clock included), the name server, the consumers, 5.x's proxy; ``broker-2`` is
:class:`adapters.simulated.slave.Slave`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hourglass.adapters.base import NotReady
from hourglass.adapters.parts import Part, faculties
from hourglass.adapters.simulated.broker import DOWN, SHUTDOWN_MS, STARTING, UP
from hourglass.reference.contract import PROXY_TARGET
from hourglass.reference.pop import PROXY_IN_BROKER

if TYPE_CHECKING:
    from hourglass.adapters.simulated.system import SimulatedSystem


class Machine:
    """The simulated broker's store, network and clock: each fault takes at once."""

    def __init__(self, system: "SimulatedSystem"):
        self.system = system

    def cannot(self, action: str) -> str | None:
        return None

    def fill_disk(self, fill_percent: int = 0) -> None:
        """reference.disk: the store is marked full at once (a real broker within DISK_CHECK_MS); a
        fill to a ratio is one above the warning ratio (harness.scenario checks it)."""
        self.system.broker.schedule.store_full = True

    def free_disk(self) -> None:
        self.system.broker.schedule.store_full = False  # failed re-puts are tried again every RETRY_PUT_MS

    def partition(self) -> None:
        """reference.network: sends time out (some stored at the heal), pulls and send-backs fail."""
        self.system.broker.partitioned = True

    def heal_partition(self) -> None:
        self.system.broker.heal_partition()
        self.system.on_broker_ready()  # the consumers' pulls go through again

    def add_loss(self, loss_percent: int) -> None:
        """reference.network: a loss period at its worst, every packet dropped (a partition)."""
        self.partition()

    def remove_loss(self) -> None:
        self.heal_partition()

    def add_latency(self, delay_ms: int) -> None:
        """What the broker sends arrives ``delay_ms`` later: send results and deliveries."""
        self.system.broker.latency_ms = delay_ms

    def remove_latency(self) -> None:
        self.system.broker.latency_ms = 0

    def stall_io(self) -> None:
        """reference.faults.io: puts and re-puts wait at once; sends fail (SYSTEM_BUSY), re-puts are
        tried again after the thaw (the full store's machinery: a refused write, retried)."""
        self.system.broker.schedule.store_full = True

    def resume_io(self) -> None:
        self.system.broker.schedule.store_full = False

    def throttle_cpu(self, cpu_permille: int) -> None:
        """reference.faults.cpu: a start from now on takes 1000/cpu_permille times as long, its
        timers running all along (a running broker's own work is not slowed: it is never late)."""
        self.system.broker.cpu_permille = int(cpu_permille)

    def unthrottle_cpu(self) -> None:
        self.system.broker.cpu_permille = 0

    def set(self, offset_ms: int) -> None:
        """The broker's wall clock steps at once (a real broker's process within its settle time)."""
        self.system.broker.set_clock_offset(offset_ms)

    def set_rate(self, offset_ms: int, rate_permille: int) -> None:
        """The broker's wall clock drifts from now on (virtual time: exactly the model's line)."""
        self.system.broker.set_clock_offset(offset_ms, rate_permille)


class Broker(Part):
    def __init__(self, system: "SimulatedSystem"):
        machine = Machine(system)
        super().__init__("broker", faculties(disk=machine, io=machine, cpu=machine, network=machine, clock=machine))
        self.system = system

    def start(self) -> None:
        self.system.broker.start()

    def stop(self) -> None:
        """A graceful stop returns when the process would have exited: SHUTDOWN_MS after the
        signal (its shutdown hooks' time; nothing it does after its schedule service stopped)."""
        running = self.system.broker.state != DOWN
        self.system.broker.stop(graceful=True)
        self.system.after_master_down()
        if running:
            self.system.clock.sleep_until(self.system.clock.now_ms() + SHUTDOWN_MS)

    def kill(self) -> None:
        self.system.broker.stop(graceful=False)
        self.system.after_master_down()

    def pause(self) -> None:
        self.system.broker.pause()

    def resume(self) -> None:
        self.system.broker.resume()
        self.system.on_broker_ready()

    def wait_ready(self, timeout_s: float = 120.0) -> None:
        b, clock = self.system.broker, self.system.clock
        if b.state == STARTING and b.ready_at_ms is not None and b.ready_at_ms - clock.now_ms() <= timeout_s * 1000:
            clock.sleep_until(b.ready_at_ms)
        if b.state != UP:
            raise NotReady(f"simulated broker is {b.state} (not serving) after waiting {timeout_s} s")


class NameServer(Part):
    """Up or down; a pause freezes nothing the simulator models."""

    def __init__(self, system: "SimulatedSystem"):
        super().__init__("namesrv")
        self.system = system

    def start(self) -> None:
        self.system.namesrv_up = True

    def stop(self) -> None:
        self.system.namesrv_up = False

    kill = stop


class Consumers(Part):
    def __init__(self, system: "SimulatedSystem"):
        super().__init__("consumer")
        self.system = system

    def start(self) -> None:
        for c in self.system.consumers.values():
            if not c.left:
                c.start()

    def stop(self) -> None:
        for c in self.system.consumers.values():
            c.stop()

    def kill(self) -> None:
        for c in self.system.consumers.values():
            c.die(crashed=False)

    def pause(self) -> None:
        for c in self.system.consumers.values():
            c.paused = True

    def resume(self) -> None:
        for c in self.system.consumers.values():
            c.paused = False
            c.schedule_pull()


class Proxy(Part):
    """5.x's proxy: while it is down (killed, stopped, paused) the gRPC consumers receive and answer
    nothing (their copies' invisible times run on at the broker); back, they receive again."""

    def __init__(self, system: "SimulatedSystem", local: bool = False):
        super().__init__(PROXY_TARGET)
        self.system, self.local = system, local

    def cannot(self, action: str) -> str | None:
        return PROXY_IN_BROKER if self.local else super().cannot(action)

    def stop(self) -> None:
        self.system.proxy_up = False

    kill = pause = stop

    def start(self) -> None:
        self.system.proxy_up = True
        self.system.on_broker_ready()  # every live consumer pulls again

    resume = start
