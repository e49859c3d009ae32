"""ON_TIME: an attempt is stored (re-put) by the time its window closes (``latest_ms`` of the
model: slack and outages included; a local re-consume: its delivery, ``local_latest_ms``). A
window without an end (the broker never came back) is not judged."""

from __future__ import annotations

from hourglass.reports.invariants.base import NULL, Attempt, Columns, Invariant, Plain, window_violation
from hourglass.reports.rows import Judgements
from hourglass.reference.clock import BrokerClock


def _ambiguous_in_time(a: Attempt, hi: int) -> bool:
    """reference.clock.BrokerClock.earliest_true_ms: a store reading a step of the broker's clock
    back made ambiguous is judged by its earliest moment at which the copy could have been stored
    (not before its window opened), never late on a guess."""
    clock = BrokerClock.from_faults(a.faults) if not a.local else None
    if clock is None or not a.deliveries:
        return False
    return clock.earliest_true_ms(a.observed, a.deliveries[0]["ts_ms"], a.earliest) <= hi


class OnTime(Invariant):
    name = "ON_TIME"

    def attempt(self, out: Judgements, a: Attempt) -> None:
        hi = a.latest
        if hi is None:
            return
        out.checked[self.name] += 1
        if a.observed > hi and not _ambiguous_in_time(a, hi):
            window_violation(out, self.name, a, "arrived after its window closed")

    def plain(self, c: Columns) -> Plain:
        return Plain(attempts=(c.hi != NULL) & (c.observed <= c.hi))

    def count(self, out: Judgements, c: Columns) -> None:
        out.checked[self.name] += int(c.plain_a.sum())

    def undecided(self, violations, pending, unkeyed, run):
        """A lateness within the recorded stalls on its path is undecided (``reports.stalls.host_reclassify``)."""
        from hourglass.reports.stalls import host_reclassify

        return host_reclassify(violations, pending, unkeyed, run)


UNIT = OnTime()
