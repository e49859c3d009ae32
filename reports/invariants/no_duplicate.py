"""NO_DUPLICATE: an attempt is delivered once, unless the model allows the repeat
(:func:`reference.expected.rule_duplicate`): each stored copy's redeliveries against its first
delivery (a consumer redelivery), each later-stored copy against the copy stored before it (a
re-put repeated: the cause lies between the two re-puts). The copies of a retry that the previous
attempt's own LATER answers stored (:func:`reference.expected.sent_back_copies`) are allowed."""

from __future__ import annotations

from hourglass.reference import expected as model
from hourglass.reports.invariants.base import Attempt, Columns, Invariant, Plain
from hourglass.reports.rows import Judgements


class NoDuplicate(Invariant):
    name = "NO_DUPLICATE"

    def attempt(self, out: Judgements, a: Attempt) -> None:
        out.checked[self.name] += 1
        copies = a.copies
        later_copies = [(copies[i - 1][0], copies[i][0]) for i in range(1, len(copies))]
        # the copies of a retry that its attempt's own LATER answers stored, beyond the first: the
        # earliest-stored later copies
        sent_back = model.sent_back_copies(a.prev[0], a.faults) if a.attempt >= 1 and a.prev is not None else 0
        sent_back_extra = later_copies[:max(0, sent_back - 1)]
        out.plot["duplicates"]["consumer allowed"] += len(sent_back_extra)
        timer_slot = model.timer_slot_ms(a.row, a.attempt)
        for one, other in [(c[0], d) for c in copies for d in c[1:]] + later_copies[len(sent_back_extra):]:
            ruling = model.rule_duplicate(a.run, a.faults, one, other, timer_slot)
            out.plot["duplicates"][f"{ruling.cause} {'allowed' if ruling.allowed else 'not allowed'}"] += 1
            if ruling.allowed:
                continue
            if ruling.cause == "scheduler":  # explained by the faults between the two re-puts
                anchor, observed = one["store_ms"], other["store_ms"]
                detail = f"scheduler duplicate not allowed: {ruling.reason}; delivered at {one['ts_ms']} and {other['ts_ms']}"
            else:
                anchor, observed = one["ts_ms"], other["ts_ms"]
                detail = f"{ruling.cause} duplicate not allowed: {ruling.reason}"
            out.violation(self.name, a.key, group=a.group, attempt=a.attempt, anchor_ms=anchor, observed_ms=observed,
                          cause=ruling.cause, detail=detail)

    def plain(self, c: Columns) -> Plain:
        return Plain(attempts=c.a_deliveries == 1)  # delivered once: nothing to rule on

    def count(self, out: Judgements, c: Columns) -> None:
        out.checked[self.name] += int(c.plain_a.sum())


    def undecided(self, violations, pending, unkeyed, run):
        """What the client's re-sends of a message whose own send-back failed on a stalled broker
        stored is undecided (``reports.stalls.resent_reclassify``)."""
        from hourglass.reports.stalls import resent_reclassify

        return resent_reclassify(violations, pending, unkeyed, run, self.name)

UNIT = NoDuplicate()
