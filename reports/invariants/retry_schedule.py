"""RETRY_SCHEDULE: attempt k >= 1 follows attempt k-1 as the plan says: k-1 was delivered and
answered LATER before it, and the plan leads to k. Also draws the gaps plot: how far each retry
came from its schedule (its anchor plus the retry level's delay)."""

from __future__ import annotations

import numpy as np

from hourglass.reference import pop
from hourglass.reference.profile import profile_from_run
from hourglass.reports.invariants.base import Attempt, Columns, Invariant, Plain, clip_bin, count_into, x
from hourglass.reports.rows import ACKED_FIELD, LATENESS_BIN_MS, LATENESS_RANGE_MS, REVIVE_FIELD, Judgements


class RetrySchedule(Invariant):
    name = "RETRY_SCHEDULE"

    def attempt(self, out: Judgements, a: Attempt) -> None:
        if a.attempt < 1:
            return
        anchor, delay = x(a.row, "anchor_ms"), x(a.row, "delay_ms")
        if anchor is not None:
            out.plot["gaps"][a.attempt][clip_bin(a.observed - anchor - delay)] += 1  # offset from the schedule
            _expect(out, a.attempt, delay)
        out.checked[self.name] += 1
        prev, later = a.prev if a.prev is not None else (None, None)
        detail = None
        if a.prev is None:
            detail = f"attempt {a.attempt - 1} was never delivered: a gap in reconsume_times"
        elif later is None:
            detail = f"attempt {a.attempt - 1} was never answered LATER"
        elif later["ts_ms"] > a.deliveries[0]["ts_ms"] and _revived_unanswered(a, later) is None:
            detail = "delivered before the LATER it should follow"
        elif a.row is None:
            detail = "the plan does not lead to this attempt"
        if detail and (prev is None or later is None) and _unplanned(a, prev) is not None:
            detail = None  # a lost ack or a lost pop (reference.pop.unplanned_attempt): counted with the duplicates
            out.plot["duplicates"][f"POP {'ack' if prev else 'pop'} lost allowed"] += 1
        if detail:
            out.violation(self.name, a.key, group=a.group, attempt=a.attempt, observed_ms=a.deliveries[0]["ts_ms"],
                          anchor_ms=later["ts_ms"] if later else None, detail=detail, **_revived_after_ok(a, prev, later))

    def plain(self, c: Columns) -> Plain:
        retry = c.a_att >= 1
        return Plain(attempts=~retry | (c.p_found & c.a_has_later[c.p_idx] & (c.d_ts[c.a_later[c.p_idx]] <= c.d_ts[c.first])))

    def count(self, out: Judgements, c: Columns) -> None:
        p = c.plain_a
        if not p.any():
            return
        att = c.a_att[p]
        r = att >= 1
        out.checked[self.name] += int(r.sum())
        if r.any():
            xa = c.x[p][r]
            lo_r, hi_r = LATENESS_RANGE_MS
            gap = c.observed[p][r] - c.e_anchor_ms[xa] - c.e_delay_ms[xa]
            count_into(out.plot["gaps"], att[r], (np.clip(gap, lo_r, hi_r) // LATENESS_BIN_MS) * LATENESS_BIN_MS)
            for k, delay in zip(att[r].tolist(), c.e_delay_ms[xa].tolist()):
                _expect(out, k, delay)

    def undecided(self, violations, pending, unkeyed, run):
        """What the client's re-sends of a message whose own send-back failed on a stalled broker
        stored is undecided (``reports.stalls.resent_reclassify``), and the revive of a POP copy
        whose ack the broker's stalled POP path may have held past its checkpoint
        (``reports.stalls.held_ack_reclassify``)."""
        from hourglass.reports.stalls import held_ack_reclassify, resent_reclassify

        violations, pending = resent_reclassify(violations, pending, unkeyed, run, self.name)
        return held_ack_reclassify(violations, pending, unkeyed, run)


def _unplanned(a: Attempt, prev: list | None) -> str | None:
    """In a POP group: why attempt ``a`` may come though its previous one was never delivered or
    answered OK (reference.pop.unplanned_attempt, reference.pop.popped_unseen), or None."""
    profile = profile_from_run(a.run)
    popping = profile.pop_group(a.group)
    if popping is None:
        return None
    refused = [d for d in prev or () if d.get("outcome") == "OK" and d.get("ack_failed")]
    if refused:  # the consumer saw its ack fail: the checkpoint was never acked, and revived
        return f"the ack of the OK at {refused[0]['ts_ms']} failed ({refused[0]['ack_failed']}): the copy was revived"
    oks = [d["ts_ms"] for d in prev or () if d.get("outcome") == "OK"]
    if prev and not oks:
        return None
    if not prev:  # the broker's own record that it popped the copy that never came (reference.pop.popped_unseen)
        unseen = pop.popped_unseen(a.faults, a.group, a.deliveries)
        if unseen is not None:
            return unseen
    outages = pop.pop_outages(popping.mode, a.faults, profile.proxy_mode)
    # any OK of it (a broker kill may have popped its copy twice: reference.expected._consumer_redelivery)
    whys = (pop.unplanned_attempt(outages, ok, a.deliveries[0]["ts_ms"]) for ok in oks or (None,))
    return next((why for why in whys if why is not None), None)


def _revived_unanswered(a: Attempt, later: dict) -> str | None:
    """In a POP group: why attempt ``a`` may come before the ``LATER`` of its previous one (that
    answer came after the copy's invisible time ran out: reference.pop.answered_after_revive), or None."""
    popping = profile_from_run(a.run).pop_group(a.group)
    first = a.deliveries[0]
    if popping is None or later.get("pop_ms") is None:
        return None
    return pop.answered_after_revive(int(later["pop_ms"]), popping.invisible_ms, int(later["ts_ms"]),
                                     int(first.get("pop_ms") or first["ts_ms"]))


def _revived_after_ok(a: Attempt, prev: list | None, later) -> dict:
    """A POP copy answered OK and revived all the same: when its last OK came and when its
    checkpoint was due (the OK'd delivery's pop time + the group's invisible time), for
    ``reports.stalls.held_ack_reclassify``; else nothing."""
    if later is not None or not prev:
        return {}
    popping = profile_from_run(a.run).pop_group(a.group)
    oks = [d for d in prev if d.get("outcome") == "OK" and d.get("pop_ms") is not None]
    if popping is None or not oks:
        return {}
    ok = max(oks, key=lambda d: d["ts_ms"])
    return {ACKED_FIELD: ok["ts_ms"], REVIVE_FIELD: pop.revive_time_ms(int(ok["pop_ms"]), popping.invisible_ms)}


def _expect(out: Judgements, attempt: int, delay: int) -> None:
    """The gaps plot's scale of retry ``attempt``: the longest delay its retries were due after
    (one level per attempt, unless consumers asked for their own: LATER:n)."""
    out.plot["gap_expected"][attempt] = max(delay, out.plot["gap_expected"].get(attempt, delay))


UNIT = RetrySchedule()
