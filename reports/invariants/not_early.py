"""NOT_EARLY: an attempt is not stored (re-put) before its window opens (``earliest_ms`` of the
model; a local re-consume: its delivery, ``local_earliest_ms``). Also draws the lateness plots:
how far after its earliest moment each attempt came, per delay level, and a 5.x timer message's
first attempt (parked in the wheel: ``timer_slot_ms``) apart, by the delay it asked for
(``lateness_timer``: deliver time - born, ``delay_ms`` of ``reference.expected``)."""

from __future__ import annotations

import numpy as np

from hourglass.reports.invariants.base import NULL, Attempt, Columns, Invariant, Plain, clip_bin, count_into, window_violation, x
from hourglass.reports.rows import LATENESS_BIN_MS, LATENESS_RANGE_MS, LATENESS_TIME_BIN_MS, Judgements


class NotEarly(Invariant):
    name = "NOT_EARLY"

    def attempt(self, out: Judgements, a: Attempt) -> None:
        lo = a.earliest
        if lo is None:
            return
        out.checked[self.name] += 1
        level, widened = x(a.row, "level"), not a.local and x(a.row, "widened_by") is not None
        late = a.observed - lo
        if x(a.row, "timer_slot_ms") is not None:  # attempt 0 of a timer message parked in the wheel
            out.plot["lateness_timer"][x(a.row, "delay_ms")][clip_bin(late)] += 1
        else:
            out.plot["lateness"][level][clip_bin(late)] += 1
        if widened:
            out.plot["lateness_widened"][level][clip_bin(late)] += 1
        time_bin = (a.observed - int(a.run.get("started_ms") or 0)) // a.timeline_bin_ms
        out.plot["lateness_time"][(time_bin, clip_bin(late, LATENESS_TIME_BIN_MS), int(widened))] += 1
        if a.observed < lo:
            window_violation(out, self.name, a, "arrived before its window opened")

    def plain(self, c: Columns) -> Plain:
        return Plain(attempts=(c.lo != NULL) & (c.observed >= c.lo))

    def count(self, out: Judgements, c: Columns) -> None:
        p = c.plain_a
        if not p.any():
            return
        out.checked[self.name] += int(p.sum())
        lv = c.e_level[c.x[p]]
        lo_r, hi_r = LATENESS_RANGE_MS
        late = np.clip(c.observed[p] - c.lo[p], lo_r, hi_r)
        late_bin = (late // LATENESS_BIN_MS) * LATENESS_BIN_MS
        timer = c.e_timer_slot_ms[c.x[p]] != NULL
        count_into(out.plot["lateness"], lv[~timer], late_bin[~timer])
        count_into(out.plot["lateness_timer"], c.e_delay_ms[c.x[p]][timer], late_bin[timer])
        widened = c.e_widened[c.x[p]] & ~c.local[p]
        count_into(out.plot["lateness_widened"], lv[widened], late_bin[widened])
        over_time = np.stack([(c.observed[p] - c.started_ms) // c.timeline_bin_ms,
                              (late // LATENESS_TIME_BIN_MS) * LATENESS_TIME_BIN_MS, widened.astype(np.int64)])
        combos, n_each = np.unique(over_time, axis=1, return_counts=True)
        for (b, late_ms, w), n in zip(combos.T.tolist(), n_each.tolist()):
            out.plot["lateness_time"][(b, late_ms, w)] += n


UNIT = NotEarly()
