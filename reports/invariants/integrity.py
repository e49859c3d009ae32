"""INTEGRITY: what is delivered was sent and not refused: a key that was sent, by a send that did
not FAIL, to the topic the model expects, with the body that was sent (``body_crc`` where both
say); a send the broker must refuse (``expected_rejection`` of the model) did not return SEND_OK;
and a send the model says a correct broker takes was not refused as illegal input (``send_refused``:
the broker, or the client's own check, answered MESSAGE_ILLEGAL)."""

from __future__ import annotations

import numpy as np
import pyarrow.compute as pc

from hourglass.reports.invariants.base import NULL, Attempt, Columns, Invariant, Message, Plain, x
from hourglass.reports.rows import Judgements


class Integrity(Invariant):
    name = "INTEGRITY"

    def attempt(self, out: Judgements, a: Attempt) -> None:
        send = a.send
        want_topic = x(a.row, "topic") or (send["topic"] if send else None)
        for d in a.deliveries:
            out.checked[self.name] += 1
            detail = None
            if send is None:
                detail = "delivered a key that was never sent"
            elif send["status"] == "FAILED":
                detail = "delivered a message whose send FAILED (certainly not stored)"
            elif d["topic"] != want_topic:
                detail = f"topic {d['topic']}, expected {want_topic}"
            elif d.get("body_crc") is not None and send.get("body_crc") is not None and d["body_crc"] != send["body_crc"]:
                detail = f"body_crc {d['body_crc']}, sent {send['body_crc']}"
            if detail:
                out.violation(self.name, a.key, group=a.group, attempt=a.attempt, observed_ms=d["ts_ms"], detail=detail)

    def message(self, out: Judgements, m: Message) -> None:
        if m.plain:
            return
        if m.refused is not None and m.rejection is None:
            out.checked[self.name] += 1
            out.violation(self.name, m.key, group=m.group or None, attempt=0,
                          detail=f"the send was refused ({m.refused}), but a correct broker takes it")
        elif m.rejection is not None and m.status in ("SEND_OK", "FAILED"):
            out.checked[self.name] += 1
            if m.status == "SEND_OK":
                out.violation(self.name, m.key, group=m.group or None, attempt=0,
                              detail=f"the send returned SEND_OK, but the broker must refuse it: {m.rejection}")

    def plain(self, c: Columns) -> Plain:
        first = c.first
        sent_crc = np.where(c.a_key < c.n_sends, c.s_crc[np.minimum(c.a_key, c.n_sends - 1)], NULL)  # rows exist: so do sends
        crc = c.d_crc[first]
        crc_ok = (crc == NULL) | (sent_crc == NULL) | (crc == sent_crc)
        return Plain(attempts=(c.d_topic[first] == c.e_topic[c.x]) & crc_ok,
                     rows=pc.is_null(c.e_rejection).to_numpy(zero_copy_only=False))

    def count(self, out: Judgements, c: Columns) -> None:
        out.checked[self.name] += int(c.plain_a.sum())  # a plain attempt: one delivery


UNIT = Integrity()
