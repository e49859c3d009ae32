"""A simulated broadcasting push consumer (reference.broadcast): every instance takes every queue of
its topics, keeps its offsets itself (LocalFileOffsetStore: persisted every 5 s and at a graceful
stop, kept across its deaths) and drops a message it fails; its events name its judging unit
(``group@instance``, reference.modes)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hourglass.adapters.base import ConsumerSpec
from hourglass.adapters.simulated.consumers import SimConsumer
from hourglass.adapters.simulated.defects import Defect
from hourglass.adapters.simulated.store import StoredMessage
from hourglass.reference.modes import unit_group

if TYPE_CHECKING:
    from hourglass.adapters.simulated.system import SimulatedSystem


class BroadcastSimConsumer(SimConsumer):
    def __init__(self, system: "SimulatedSystem", spec: ConsumerSpec):
        super().__init__(system, spec)
        self.group = unit_group(spec.group, spec.instance)  # each instance owns all the queues
        self.subscriptions = tuple(spec.topics)  # copySubscription: no %RETRY% in broadcasting
        self.persisted: dict[tuple[str, int], int] = {}  # the offsets file, kept across deaths

    def commit(self) -> None:
        """LocalFileOffsetStore.persistAll: the client's own file, not the broker."""
        self.persisted.update(self.next_offsets)

    def _pull(self, inc: int, at: int) -> None:
        for queue in self.system.owned_queues(self):
            self.next_offsets.setdefault(queue, self.persisted.get(queue, 0))
        super()._pull(inc, at)

    def send_back(self, msg: StoredMessage, reconsume_times: int, level: int = 0) -> None:
        """processConsumeResult, BROADCASTING: a failed message is dropped (the defect retries it
        locally, as a clustering client whose send-back failed)."""
        if Defect.BROADCAST_FAILURE_RETRIED not in self.system.broker.defects:
            return
        inc, clock = self.incarnation, self.system.clock

        def again() -> None:
            if inc == self.incarnation and self.alive:
                self.consume(msg, reconsume_times + 1)

        clock.call_at(clock.now_ms() + self.system.profile.local_retry_delay_ms, again)
