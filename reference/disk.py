"""A full store disk: what a correct broker does with delayed messages and retries while its
writes fail, and for how long (the ``disk_full`` / ``disk_free`` fault events of ``target: broker``).

The rule, method by method:

- DefaultMessageStore.checkStoreStatus / RunningFlags.isWriteable: once the store is marked
  *disk full*, every put is refused (``SERVICE_NOT_AVAILABLE``): a send fails (``FAILED``: the
  producer's retries meet the same refusal), a consumer's send-back fails (the client re-consumes
  the same stored copy locally, ``reference.plans.later_not_stored``), and a re-put of the schedule
  service fails.
- The mark follows the disk with a lag: DefaultMessageStore.addScheduleTask checks the used ratio of
  the commit log's partition (CleanCommitLogService.isSpaceFull every 10 s in 4.9.x;
  cleanFilesPeriodically → isSpaceToDelete every ``cleanResourceInterval`` from 60 s after the
  start in both lines) against ``diskSpaceWarningLevelRatio`` (at most 0.90 in 5.x), and clears it
  the same way when space returns. So writes may still succeed for a moment after the disk filled,
  and may still fail up to :data:`DISK_CHECK_MS` after it was freed.
- ScheduleMessageService.DeliverDelayedMessageTimerTask (4.9.4+, 5.3.3+): a re-put that fails is
  tried again ``DELAY_FOR_A_WHILE`` (100 ms) later from the same schedule offset: a message due
  while the store is full is late, never dropped. (5.0.0–5.3.2 go on with the next entry and leave
  the failed one behind until a restart reloads the offset: apache/rocketmq#9249 — a loss.)

So for the windows: a store-full period is a *write outage* from ``disk_full`` to ``disk_free`` +
:data:`DISK_CHECK_MS`, widening ON_TIME like a broker outage (the first pass after it plays the role
of the start's first pass) — but unlike a kill it restores no offset: it allows no duplicate, and
NO_LOSS holds throughout.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from hourglass.reference.faults.disk import DISK_ACTIONS, FILL, FREE  # noqa: F401 (the family owns the names)
from hourglass.reference.contract import BROKER_TARGETS
from hourglass.reference.windows import Outage, periods

#: diskSpaceWarningLevelRatio a scenario may set, in percent: DefaultMessageStore.CleanCommitLogService
#: (5.x getDiskSpaceWarningLevelRatio) clamps it to [0.35, 0.90]; 4.9.x takes it as given — within
#: this range both lines run what the scenario asked (the ``rocketmq.broker.diskSpaceWarningLevelRatio``
#: system property, which both read)
DISK_WARNING_PERCENT_RANGE = (35, 90)

#: the longest the broker takes to notice that its disk filled or emptied (the 4.9.x disk check
#: period; 5.x checks every ``cleanResourceInterval``, which the harness sets to 1 s)
DISK_CHECK_MS = 10_000


def write_outages(faults: Iterable[Mapping], target: str = "broker") -> list[Outage]:
    """The periods in which ``target``'s store may refuse writes, from its ``disk_full`` and
    ``disk_free`` fault events (any order), sorted: each from a fill to the next free +
    :data:`DISK_CHECK_MS` (``up_ms`` None: never freed)."""
    return [Outage(FILL, since, None if freed is None else freed + DISK_CHECK_MS)
            for since, freed, _ in periods(faults, FILL, FREE, target)]


def store_outages(faults: Iterable[Mapping], targets: tuple[str, ...] = BROKER_TARGETS) -> list[Outage]:
    """The write outages of the stores of ``targets`` (the ``store`` window effect of the disk family)."""
    faults = list(faults)
    return [o for t in targets for o in write_outages(faults, t)]
