"""A stall of the broker's store writes (``io_stall``): the store's filesystem frozen (FIFREEZE)
for ``duration_ms``, then thawed.

The rule, method by method (4.9.7 and 5.3.3 alike):

- CommitLog.putMessage / asyncPutMessage append under the put-message lock into a mapped file;
  a write to a mapped page of a frozen filesystem waits in ``page_mkwrite`` until the thaw, the
  lock held all along. So the first put in the stall waits, and a producer's send of it times out
  (``UNKNOWN``: stored at the thaw).
- DefaultMessageStore.isOSPageCacheBusy: a lock held longer than ``osPageCacheBusyTimeOutMills``
  (1 s) makes BrokerFastFailure and SendMessageProcessor answer SYSTEM_BUSY: later sends fail
  (``FAILED``: not stored) and a consumer's send-back fails (the client re-consumes locally,
  ``reference.network.send_back_failures``).
- ScheduleMessageService's re-put goes through the same put: a message due in the stall is re-put
  after the thaw, late, never dropped and never twice (no offset is restored: nothing restarts).

So for the windows: a stall is an outage of the broker's store (window channel ``store``) from the
freeze to the thaw, widening ON_TIME like a broker outage; it allows no duplicate and no loss.
"""

from __future__ import annotations

from hourglass.reference.faults import REQUIRED, Family, Primitive, StepKind

STALL, THAW = "io_stall", "io_resume"
#: the longest stall a scenario takes: a frozen store holds every put behind it, and the schedule
#: service's and the consumers' offsets wait to be persisted; 30 s stays below every client's
#: heartbeat and channel expiry
MAX_IO_STALL_MS = 30_000
#: what its system must be set up for: the store on a filesystem the harness can freeze
FREEZABLE_STORE = "freezable_store"


def _expand(step) -> list:
    return [(0, STALL, {}), (step.duration_ms, THAW, {})]


def _bounded(step, raw) -> str | None:
    duration = raw.get("duration_ms", "missing")
    if duration == "missing" or not 0 < duration <= MAX_IO_STALL_MS:
        return f"how long the store's writes stall, 1..{MAX_IO_STALL_MS}"
    return None


def stall_outages(faults, targets=("broker",)) -> list:
    """The ``store`` window effect: each target's store from a stall to its thaw (None: never thawed)."""
    from hourglass.reference.windows import period_outages

    return period_outages(faults, STALL, THAW, targets, "store writes stalled at", "thawed at", "never thawed")


FAMILY = Family(
    name="io",
    rank=25,
    steps=(StepKind(STALL, _expand, REQUIRED, broker_only=True, what="stalls the broker's store writes",
                    delays_deliveries=True, setup=frozenset({FREEZABLE_STORE}), check_duration=_bounded,
                    description="io_stall = freeze the broker's store (its writes wait) for duration_ms (> 0), "
                                "then thaw it"),),
    primitives=(Primitive(STALL, verb="stall_io", heals=THAW), Primitive(THAW, verb="resume_io")),
    effects={"store": "hourglass.reference.faults.io:stall_outages"},
    skip_words="stall the store writes of",
)
