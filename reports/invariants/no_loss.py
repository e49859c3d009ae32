"""NO_LOSS: a message whose send returned SEND_OK reaches the end its plan says by the run's end:
an OK delivery or a DLQ entry. A message whose window is still open when the run ended (or any
not yet final in an interrupted run) is pending, not lost (reported by :mod:`reports.judge_events`)."""

from __future__ import annotations

import numpy as np
import pyarrow.compute as pc

from hourglass.reference.broadcast import DROPPED
from hourglass.reports.invariants.base import Columns, Invariant, Message, Plain, x
from hourglass.reports.rows import DELIVERED, Judgements


class NoLoss(Invariant):
    name = "NO_LOSS"

    def message(self, out: Judgements, m: Message) -> None:
        if m.plain:
            out.checked[self.name] += 1
            return
        if m.rejection is not None or m.status != "SEND_OK":
            return
        out.checked[self.name] += 1
        if m.consumed or m.dlqs or m.pending:
            return
        out.violation(self.name, m.key, group=m.group or None,
                      attempt=x(m.missing, "attempt") if m.missing is not None else max(m.got, default=None),
                      earliest_ms=x(m.missing, "earliest_ms"), latest_ms=x(m.missing, "latest_ms"), observed_ms=m.ended_ms,
                      **(m.missing_queue() if m.missing is not None else {}),
                      **({"path": m.path} if m.path else {}),
                      # every attempt its plan owes came: only the broker's DLQ entry is missing
                      **({DELIVERED: True} if m.missing is None else {}),
                      detail=f"expected {m.final_state} by the run's end, found "
                      + ("no delivery answered" if m.final_state == DROPPED else "neither an OK delivery nor a DLQ entry"))

    def plain(self, c: Columns) -> Plain:
        consumed = np.zeros(c.n_keys * c.n_groups, dtype=bool)
        consumed[c.d_mg[c.d_ok]] = True
        return Plain(rows=pc.equal(c.e_final_state, "CONSUMED").to_numpy(zero_copy_only=False) & consumed[c.e_mg])

    def count(self, out: Judgements, c: Columns) -> None:
        out.checked[self.name] += c.plain_messages

    def undecided(self, violations, pending, unkeyed, run):
        """A message the broker may still hold in the queue it waits in, which its consumer never
        pulled (``reports.stalls.reclassify``), or that recorded stalls on its path may have made
        late beyond the run's end (``reports.stalls.late_beyond_end_reclassify``), is undecided."""
        from hourglass.reports.stalls import lags, late_beyond_end_reclassify, reclassify

        violations, pending = reclassify(violations, pending, lags(unkeyed))
        return late_beyond_end_reclassify(violations, pending, unkeyed, run)


UNIT = NoLoss()
