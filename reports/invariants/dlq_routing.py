"""DLQ_ROUTING: a message whose plan ends in the DLQ (its last allowed attempt answered LATER) has
exactly one DLQ entry and no attempt after its last; a message whose plan ends consumed, or that
was never sent, has none."""

from __future__ import annotations

import numpy as np
import pyarrow.compute as pc

from hourglass.reports.invariants.base import Columns, Invariant, Message, Plain
from hourglass.reports.rows import Judgements


class DlqRouting(Invariant):
    name = "DLQ_ROUTING"

    def message(self, out: Judgements, m: Message) -> None:
        if m.plain or m.rejection is not None:
            return
        n_dlq = len(m.dlqs)
        stored = m.status == "SEND_OK" or (m.status == "UNKNOWN" and m.got)
        if not ((m.final_state == "DLQ" and stored) or n_dlq):
            return
        out.checked[self.name] += 1
        detail = None
        if m.final_state is None:
            detail = "in the DLQ, but the key was never sent"
        elif m.final_state != "DLQ" and n_dlq:
            detail = "in the DLQ, but its plan ends in CONSUMED"
        elif m.pending:
            detail = None
        elif n_dlq > 1 or (n_dlq == 0 and m.ended_ms is not None):  # the DLQ is read at the end: not yet, if interrupted
            detail = f"expected exactly one DLQ entry, found {n_dlq}"
        elif m.got and m.final_attempt is not None and max(m.got) > m.final_attempt:
            detail = f"delivered again after its last attempt {m.final_attempt}: attempt {max(m.got)}"
        if detail:
            first_dlq = min((d["ts_ms"] for d in m.dlqs), default=None)
            out.violation(self.name, m.key, group=m.group or None, attempt=m.final_attempt, observed_ms=first_dlq, detail=detail)

    def plain(self, c: Columns) -> Plain:
        in_dlq = np.zeros(c.n_keys, dtype=bool)
        in_dlq[c.q_key] = True  # the DLQ entries' keys: routing is ruled on event at a time
        return Plain(keys=~in_dlq, rows=pc.equal(c.e_final_state, "CONSUMED").to_numpy(zero_copy_only=False))


    def undecided(self, violations, pending, unkeyed, run):
        """What the client's re-sends of a message whose own send-back failed on a stalled broker
        stored is undecided (``reports.stalls.resent_reclassify``), and so is the entry of a
        message whose owing attempt's missing delivery is (``reports.stalls.undelivered_entry_reclassify``,
        after NO_LOSS's rules)."""
        from hourglass.reports.stalls import resent_reclassify, undelivered_entry_reclassify

        violations, pending = resent_reclassify(violations, pending, unkeyed, run, self.name)
        return undelivered_entry_reclassify(violations, pending)

UNIT = DlqRouting()
