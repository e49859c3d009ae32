"""What an invariant unit is, and what the two judging paths hand it.

A unit (one module per invariant of :data:`reference.contract.INVARIANTS` judged per key: see
:mod:`reports.invariants`) holds its rule twice, side by side: event at a time (:meth:`Invariant.attempt`
on each delivered attempt, :meth:`Invariant.message` on each (message, group) at the end), the
reference; and over whole columns (:meth:`Invariant.plain`: where it plainly holds, and
:meth:`Invariant.count`: what it checked there), the fast path. :mod:`reports.judge_events` builds
an :class:`Attempt` and a :class:`Message` view and calls every unit; :mod:`reports.judge_columnar`
builds one :class:`Columns` view per bucket, asks every unit where it holds, hands every other key
to the event-at-a-time path, and lets each unit count the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from hourglass.reference import stalls
from hourglass.reference.profile import profile_from_run
from hourglass.reports.rows import EXPECTED_COL, LATENESS_BIN_MS, LATENESS_RANGE_MS, Judgements

#: an absent integer in the columnar view
NULL = np.iinfo(np.int64).min
#: what an ON_TIME or NOT_EARLY violation of a local re-consume says (its time is the consumer's:
#: reference.stalls counts the consumer's stalls for it, not the broker's)
LOCAL_RECONSUME = "a local re-consume of the same stored copy"


def x(row: tuple | None, name: str):
    """A field of one of the model's expected rows (None: no row)."""
    return None if row is None else row[EXPECTED_COL[name]]


def clip_bin(value_ms: int, bin_ms: int = LATENESS_BIN_MS) -> int:
    lo, hi = LATENESS_RANGE_MS
    return (min(max(value_ms, lo), hi) // bin_ms) * bin_ms


def count_into(target: dict, groups: np.ndarray, values: np.ndarray) -> None:
    """target[group][value] += 1 for each pair (a plot's counts, from columns)."""
    if not len(groups):
        return
    low = int(values.min())
    width = int(values.max()) - low + 1
    uniq, counts = np.unique((groups - int(groups.min())) * width + (values - low), return_counts=True)
    base = int(groups.min())
    for u, c in zip(uniq.tolist(), counts.tolist()):
        target[base + u // width][low + u % width] += c


def path_of(run: dict, group: str | None, attempt: int | None, row: tuple | None) -> str:
    """The broker's path of an attempt (``reference.stalls.PATH_THREADS``: which threads' stalls can
    have held it): a POP group's, a 5.x timer message's first attempt, a delayed one (a delay level
    or a retry: the schedule service), or one not delayed."""
    if group in {g for g, _ in profile_from_run(run).pop_groups}:
        return stalls.POP
    if attempt == 0 and x(row, "deliver_at_ms") is not None:
        return stalls.TIMER
    return stalls.SCHEDULE if (x(row, "level") or 0) > 0 else stalls.DIRECT


def message_path(a: "Attempt") -> str:
    """Attempt ``a``'s path (:func:`path_of`)."""
    return path_of(a.run, a.group, a.attempt, a.row)


def window_violation(out: Judgements, invariant: str, a: "Attempt", detail: str) -> None:
    """A NOT_EARLY or ON_TIME violation of attempt ``a``: its window, where it came, and its path
    (``path``: what ``reports.stalls`` may weigh)."""
    how = f" ({LOCAL_RECONSUME}: judged by delivery time)" if a.local else ""
    out.violation(invariant, a.key, detail=detail + how, group=a.group, attempt=a.attempt, path=message_path(a),
                  requested_level=x(a.row, "requested_level"), level=x(a.row, "level"), clamped=x(a.row, "clamped"),
                  anchor_ms=x(a.row, "anchor_ms"), earliest_ms=a.earliest, latest_ms=a.latest, observed_ms=a.observed,
                  widened_by=x(a.row, "widened_by"))


@dataclass
class Attempt:
    """One delivered attempt of one (key, group), event at a time: its deliveries in time order
    grouped by stored copy (the earliest-stored first: its first delivery is the attempt's time),
    the previous attempt (its deliveries and first LATER), the model's row and the send."""

    run: dict
    faults: list[dict]
    key: str
    group: str
    attempt: int
    deliveries: list[dict]
    copies: list[list[dict]]
    prev: tuple[list[dict], dict | None] | None
    row: tuple | None
    send: dict | None
    local: bool  # a local re-consume of the stored copy the previous LATER answered
    observed: int  # its time: the first copy's store_ms, or a local re-consume's ts_ms
    timeline_bin_ms: int

    @property
    def earliest(self) -> int | None:
        return x(self.row, "local_earliest_ms" if self.local else "earliest_ms")

    @property
    def latest(self) -> int | None:
        return x(self.row, "local_latest_ms" if self.local else "latest_ms")


@dataclass
class Message:
    """One (message, group) at the end of the judging: the model's rows of it (by attempt), what
    was observed, and what is still pending (``ended_ms`` None: the run was interrupted)."""

    key: str
    group: str
    rows: list[tuple]
    dlqs: list[dict]
    consumed: bool  # an OK delivery
    got: set[int]  # the attempts delivered
    ended_ms: int | None
    status: str | None = None  # the send's
    final_state: str | None = None  # the plan's: CONSUMED or DLQ
    rejection: str | None = None  # the broker must refuse the send
    refused: str | None = None  # the send was refused as illegal input (its answer code's name)
    missing: tuple | None = None  # the first planned attempt not delivered
    final_attempt: int | None = None
    pending: bool = False
    send: dict | None = None  # the send event (its queue: reports.stalls weighs a lagging consumer by it)
    path: str | None = None  # the first missing attempt's path (:func:`path_of`)

    def missing_queue(self) -> dict:
        """Where the first missing attempt waits: its queue's topic, and for a first attempt the
        queue id and broker the send stored it in (a retry: any queue of its retry topic)."""
        row = self.missing
        out = {"queue_topic": x(row, "queue_topic") or x(row, "topic")}
        if self.send is not None and x(row, "attempt") == 0:
            out.update({k: self.send[k] for k in ("queue_id", "broker") if self.send.get(k) is not None})
        return out

    @property
    def plain(self) -> bool:
        """Consumed as planned, nowhere near the DLQ: the common case."""
        return self.consumed and not self.dlqs and self.status == "SEND_OK" and self.final_state == "CONSUMED"


class Columns(SimpleNamespace):
    """One bucket as the columnar path sees it (numpy arrays, set by :mod:`reports.judge_columnar`):
    ``d_*`` per delivery, ``e_*`` per row of the model, ``a_*`` per delivered attempt (``first``:
    its first delivery, ``x``: its model row, ``p_idx``: the previous attempt), keys and groups as
    integer codes (key codes: the sends' first, in the order of ``sends``; ``e_mg``: a row's (key,
    group)); the Arrow tables ``sends``, ``deliveries`` (row i: ``d_*[i]``) and ``dlqs`` for any
    other column. After the split ``plain_a`` marks the plain attempts and ``plain_messages``
    counts the plain (key, group)s."""


@dataclass
class Plain:
    """Where a unit holds plainly, at the level it judges (None: no condition there): over the
    delivered ``attempts``, the model's ``rows`` (per (key, group, attempt)) or the ``keys``."""

    attempts: np.ndarray | None = None
    rows: np.ndarray | None = None
    keys: np.ndarray | None = None


class Invariant:
    """One invariant judged per key. A unit overrides what its rule needs; each hook's default
    says nothing."""

    name: str = ""

    def attempt(self, out: Judgements, a: Attempt) -> None:
        """Event at a time: judge one delivered attempt (count into ``out.checked``, report)."""

    def message(self, out: Judgements, m: Message) -> None:
        """Event at a time: judge one (message, group) at the end."""

    def plain(self, c: Columns) -> Plain:
        """Columnar: where this invariant plainly holds, with the counts :meth:`count` adds; every
        key with an attempt, a row or a key code outside is judged event at a time."""
        return Plain()

    def count(self, out: Judgements, c: Columns) -> None:
        """Columnar: what this invariant checked on the plain attempts (``c.plain_a``) and
        (message, group)s (``c.plain_messages``), and its plots."""

    def undecided(self, violations: list[dict], pending: list[dict], unkeyed: list[dict], run: dict
                  ) -> tuple[list[dict], list[dict]]:
        """Once per run, after either judging path: ``violations`` and ``pending`` with those of this
        invariant's violations that the run's recorded circumstances (``unkeyed``: stalls, consume
        stats, the client's logged failures; ``run``: run.json) leave undecided moved to pending,
        each with its reason (:func:`reports.invariants.undecided`)."""
        return violations, pending
