"""Due times and delivery windows: when an attempt may be stored for the consumer at the earliest,
and when at the latest, given the broker's outages.

An *outage* of the broker runs from ``kill``/``stop``/``pause`` to the ``ready`` that follows the
next ``start`` (or to ``resume`` after a pause). While the broker is down its schedule service
does not run: a message due in an outage is re-put after the restart, when the service's first
pass runs (ScheduleMessageService.FIRST_DELAY_TIME after start).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import Iterable, Mapping

from hourglass.reference.contract import BROKER_TARGETS, CONSUMER_STARTED_BY_SCENARIO, PROXY_TARGET

_DOWN = {"kill", "stop", "pause"}


def periods(faults: Iterable[Mapping], start: str, end: str, target: str) -> list[tuple[int, int | None, Mapping]]:
    """(start ts, end ts or None, the start event) of each period of ``target`` from a ``start``
    fault action to the ``end`` that follows it (a repeated start before its end is the same
    period; an end without a start is ignored), in time order: one owner of the pairing that the
    fault families' window effects share (a partition, a latency, a full disk, a stalled store)."""
    events = sorted((f for f in faults if f.get("target") == target and f.get("action") in (start, end)),
                    key=lambda f: f["ts_ms"])
    out: list[tuple[int, int | None, Mapping]] = []
    since: Mapping | None = None
    for f in events:
        if f["action"] == start and since is None:
            since = f
        elif f["action"] == end and since is not None:
            out.append((since["ts_ms"], f["ts_ms"], since))
            since = None
    if since is not None:
        out.append((since["ts_ms"], None, since))
    return out


@dataclass(frozen=True)
class Outage:
    """The broker did not serve from ``down_ms`` to ``up_ms`` (``None``: not back by the run's end)."""

    action: str  # kill / stop / pause; disk_full (reference.disk: its writes failed); partition /
    # latency (reference.network: for UNKNOWN sends only, until a retransmitted request is stored)
    down_ms: int
    up_ms: int | None
    note: str | None = None  # outages merged into this one (merge_outages): what each was

    def describe(self) -> str:
        if self.note:
            return self.note
        if self.action == "disk_full":
            end = "never freed" if self.up_ms is None else f"writable again by {self.up_ms}"
            return f"broker store full at {self.down_ms}, {end}"
        if self.action in ("partition", "latency"):
            what = "cut off from its clients (or losing packets)" if self.action == "partition" else "slow to its clients"
            end = "never healed" if self.up_ms is None else f"a retransmitted request stored by {self.up_ms}"
            return f"broker {what} at {self.down_ms}, {end}"
        end = "never ready again" if self.up_ms is None else f"ready at {self.up_ms}"
        return f"broker {self.action} at {self.down_ms}, {end}"


def merge_outages(outages: Iterable[Outage]) -> list[Outage]:
    """Outages of several kinds (a broker kill, a full store) as one disjoint, time-ordered list:
    overlapping ones become one, from the first down to the last up, described by both."""
    out: list[Outage] = []
    for o in sorted(outages, key=lambda o: o.down_ms):
        if out and (out[-1].up_ms is None or o.down_ms <= out[-1].up_ms):
            last = out[-1]
            up = None if last.up_ms is None or o.up_ms is None else max(last.up_ms, o.up_ms)
            out[-1] = Outage(last.action, last.down_ms, up, f"{last.describe()}; {o.describe()}")
        else:
            out.append(o)
    return out


@dataclass(frozen=True)
class DeliveryWindow:
    earliest_ms: int
    latest_ms: int | None  # None: the broker never came back, any time is on time
    widened_by: str | None


def cluster_outages(faults: Iterable[Mapping], targets: tuple[str, ...] = BROKER_TARGETS) -> list[Outage]:
    """The outages of the broker processes ``targets`` (every one by default: ``reference.cluster``,
    either broker of a cluster down widens a window no send says the broker of), merged."""
    faults = list(faults)
    return merge_outages([o for t in targets for o in broker_outages(faults, t)])


def consumer_outages(faults: Iterable[Mapping]) -> list[Outage]:
    """The consumers' outages (killed or paused): their re-consumes come later (``target: consumer``).
    A consumer reports no ``ready``: a killed one is back at its ``start`` (what it delivers after
    that is anchored at its own answers). One instance joining or leaving its group by the scenario
    (``cause: scenario``) is no outage: the group's other members go on (a rebalance,
    reference.expected's membership change)."""
    return broker_outages([f for f in faults if f.get("cause") != CONSUMER_STARTED_BY_SCENARIO],
                          target="consumer", ready_on_start=True)


def proxy_outages(faults: Iterable[Mapping]) -> list[Outage]:
    """5.x's proxy's outages (``target: proxy``, ready again at its ``ready``): the gRPC clients
    receive and answer nothing meanwhile (reference.pop.grpc_client_outages)."""
    return broker_outages(faults, target=PROXY_TARGET)


def broker_outages(faults: Iterable[Mapping], target: str = "broker", ready_on_start: bool = False) -> list[Outage]:
    """Outages of ``target`` from its ``fault`` events (any order), sorted by ``down_ms``.
    An outage ends at the first ``ready`` after a ``start`` (kill/stop) or at ``resume`` (pause);
    a second ``down`` while already down does not open a new outage, but a kill or stop of a paused
    target turns its pause into that outage (a ``resume`` no longer ends it: a slow start's pause
    and resume happen inside it)."""
    events = sorted(((f["ts_ms"], f["action"]) for f in faults if f.get("target") == target),
                    key=lambda e: e[0])
    out: list[Outage] = []
    down: tuple[str, int] | None = None
    started = False
    for ts, action in events:
        if action in _DOWN:
            if down is None:
                down, started = (action, ts), False
            elif down[0] == "pause" and action != "pause":  # killed or stopped while paused: it
                down, started = (action, down[1]), False    # is back only when a start is ready
        elif down is None:
            continue
        elif action == "start" and ready_on_start:
            out.append(Outage(down[0], down[1], ts))
            down = None
        elif action == "start":
            started = True
        elif (action == "ready" and (started or down[0] == "pause")) or (action == "resume" and down[0] == "pause"):
            out.append(Outage(down[0], down[1], ts))
            down = None
    if down is not None:
        out.append(Outage(down[0], down[1], None))
    return out


def window(anchor_ms: int, earliest_ms: int, latest_base_ms: int, outages: list[Outage],
           first_delay_ms: int, slack_ms: int) -> DeliveryWindow:
    """ScheduleMessageService.start (FIRST_DELAY_TIME): the window of an attempt due at
    ``earliest_ms`` whose on-time deadline without faults is ``latest_base_ms`` (due + slack,
    anchored at ``anchor_ms``, when the wait began). An outage that begins before the deadline and ends after the
    wait began pushes the deadline to its ready + first delay + slack; outages chain."""
    latest: int | None = latest_base_ms
    widened: list[str] = []
    for outage in outages:
        if latest is None:
            break
        if outage.down_ms > latest:
            break
        if outage.up_ms is not None and outage.up_ms < anchor_ms:
            continue
        if outage.up_ms is None:
            latest = None
            widened.append(outage.describe())
            break
        pushed = outage.up_ms + first_delay_ms + slack_ms
        if pushed > latest:
            latest = pushed
            widened.append(outage.describe())
    return DeliveryWindow(earliest_ms, latest, "; ".join(widened) if widened else None)


def period_outages(faults, start: str, end: str, targets, began: str, ended: str, never: str) -> list[Outage]:
    """A fault family's window effect of one kind: an :class:`Outage` per :func:`periods` of each
    target, noted "<target> <began> <ts>, <ended> <ts>" (or ", <never>" when it did not end)."""
    faults = list(faults)
    return [Outage(start, since, until, f"{target} {began} {since}, " + (never if until is None else f"{ended} {until}"))
            for target in targets for since, until, _ in periods(faults, start, end, target)]


class OutageIndex:
    """The outages of a run, indexed so that :meth:`widen` (the same result as :func:`window`)
    costs one bisection for the attempts that no outage touches: the expected table's hot path."""

    def __init__(self, outages: list[Outage], first_delay_ms: int, slack_ms: int):
        self.outages = outages
        self.ups = [o.up_ms if o.up_ms is not None else 2**62 for o in outages]
        self.first_delay_ms, self.slack_ms = first_delay_ms, slack_ms

    def touches(self, from_ms: int, to_ms: int) -> bool:
        """Whether an outage overlaps ``[from_ms, to_ms]``."""
        i = bisect_left(self.ups, from_ms)
        return i < len(self.ups) and self.outages[i].down_ms <= to_ms

    def widen(self, anchor_ms: int, earliest_ms: int, latest_base_ms: int) -> tuple[int | None, str | None]:
        i = bisect_left(self.ups, anchor_ms)  # outages are disjoint and in time order
        if i == len(self.ups) or self.outages[i].down_ms > latest_base_ms:
            return latest_base_ms, None
        w = window(anchor_ms, earliest_ms, latest_base_ms, self.outages[i:], self.first_delay_ms, self.slack_ms)
        return w.latest_ms, w.widened_by


def corrected_deliver_ms(now_ms: int, deliver_ms: int, level_delay_ms: int) -> int:
    """ScheduleMessageService.DeliverDelayedMessageTimerTask.correctDeliverTimestamp: a deadline
    further than one level's delay ahead of now (the clock went back, or a bad tags code) is
    corrected to now: the message is due at once."""
    return now_ms if deliver_ms > now_ms + level_delay_ms else deliver_ms
