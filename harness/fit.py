"""Fitting a scenario to a broker the harness did not configure (an external cluster).

A scenario is written against its own profile (``messageDelayLevel``, ``flushDelayOffsetInterval``).
On a cluster that runs something else, the scenario is judged against what the broker runs
(``getBrokerConfig``), with each message's level taken *by its role* in the scenario's table:

- 0 and below: not delayed (unchanged);
- above the scenario's maximum: as far above the broker's maximum (a clamping test stays one);
- the scenario's maximum: the broker's maximum ("the longest");
- any other level: the same level number where the broker has it (the number is what a producer
  sends), else the level at the same place in the broker's table ("a middle one");

and the anchors of its fault steps (re-puts of a level) follow their level. Then every message the
model says would not be done within ``max_wait_ms`` on the broker's table (its delay plus the delays
of the retries its plan asks for: retry levels are the broker's 3 + reconsumeTimes) is left out,
and the scenario says which and why. A scenario of which nothing fits, or whose fault step waits
for re-puts of a level that kept no message, is not run, with the reason. A staging cluster with the
default 18-level table (1s … 2h) so still gets the levels, retries and DLQ routes that fit in the
budget (``python -m hourglass run --max-wait``), not nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from hourglass.harness.scenario import FaultAnchor, Scenario
from hourglass.harness.summary import broker_outages_ms, message_wait_ms
from hourglass.reference.levels import parse_level_table
from hourglass.reference.profile import BROKER_CONFIG_KEYS, PASSED_THROUGH

#: default budget of one message on a table the harness did not choose: a conformance run on a
#: cluster with the default 18-level table takes about this long (its scenarios share the cluster)
MAX_WAIT_MS = 600_000


@dataclass(frozen=True)
class Fitted:
    scenario: Scenario | None  # None: nothing of it can run on this broker within the budget
    changes: tuple[str, ...] = ()  # what was taken from the broker instead of the scenario
    left_out: tuple[str, ...] = ()  # "key: why", one per message left out
    reason: str | None = None  # why it is not run (scenario None)

    def note(self) -> dict:
        """What ``run.json`` records (``fitted``) and the report shows."""
        return {"changes": list(self.changes), "left_out": list(self.left_out)}


def level_by_role(level: int, n_from: int, n_to: int) -> int:
    """Level ``level`` of an ``n_from``-level table, as the level with the same role in an
    ``n_to``-level table (see the module doc)."""
    if level <= 0:
        return level
    if level > n_from:
        return n_to + (level - n_from)
    if level == n_from:
        return n_to
    if level <= n_to:
        return level
    return max(1, min(n_to - 1, round(level * n_to / n_from)))


def _seconds(ms: int) -> str:
    if ms < 120_000:
        return f"{ms / 1000:.3g} s"
    return f"{ms / 60_000:.0f} min" if ms < 7_200_000 else f"{ms / 3_600_000:.1f} h"


def fit_to_broker(scenario: Scenario, broker_config: dict, max_wait_ms: int = MAX_WAIT_MS) -> Fitted:
    """``scenario`` as it can run on a broker that runs ``broker_config`` (getBrokerConfig keys)."""
    prof = scenario.profile
    table_key = BROKER_CONFIG_KEYS["message_delay_level"]
    flush_key = BROKER_CONFIG_KEYS["flush_delay_offset_interval_ms"]
    changes: list[str] = []
    new_prof = prof
    theirs = broker_config.get(table_key)
    ours = parse_level_table(prof.message_delay_level)
    table = ours
    if theirs is not None and str(theirs).split() != prof.message_delay_level.split():
        try:
            table = parse_level_table(str(theirs), "the broker's getBrokerConfig", table_key)
        except ValueError as e:
            return Fitted(None, reason=f"the broker's {table_key} cannot be read: {e}")
        new_prof = replace(new_prof, message_delay_level=" ".join(str(theirs).split()))
        changes.append(f"{table_key}: the broker's {table.max_level}-level table {' '.join(str(theirs).split())!r} "
                       f"instead of the scenario's {prof.message_delay_level!r}; levels taken by their role")
    flush = str(broker_config.get(flush_key, "")).strip()
    if flush.isdigit() and int(flush) != prof.flush_delay_offset_interval_ms:
        new_prof = replace(new_prof, flush_delay_offset_interval_ms=int(flush))
        changes.append(f"{flush_key}: the broker's {flush} ms instead of the scenario's {prof.flush_delay_offset_interval_ms} ms")
    for field in PASSED_THROUGH:  # the limits the model judges by are the broker's (reference.limits, reference.timer)
        key, asked = BROKER_CONFIG_KEYS[field], getattr(prof, field)
        value = str(broker_config.get(key, "")).strip()
        if value.isdigit() and int(value) != asked:
            new_prof = replace(new_prof, **{field: int(value)})
            changes.append(f"{key}: the broker's {value} instead of the scenario's {asked}")
    if not changes:
        return Fitted(scenario)

    def rebind(level: int) -> int:
        return level_by_role(level, ours.max_level, table.max_level)

    msgs = tuple(replace(m, delay_level=rebind(m.delay_level)) for m in scenario.messages)
    fitted = replace(scenario, messages=msgs, profile=new_prof)
    kept, left_out = [], []
    outages = broker_outages_ms(fitted, table)
    for m in msgs:
        wait = message_wait_ms(fitted, m, table, outages=outages)
        if wait > max_wait_ms:
            left_out.append(f"{m.key}: done after {_seconds(wait)} on the broker's table, over the budget of {_seconds(max_wait_ms)}")
        else:
            kept.append(m)
    if not kept:
        return Fitted(None, tuple(changes), tuple(left_out),
                      f"no message of it is done within {_seconds(max_wait_ms)} on the broker's table "
                      f"({left_out[0].split(': ', 1)[1] if left_out else 'no messages'})")
    faults = []
    for i, f in enumerate(scenario.faults):
        a = f.after
        if a is not None and a.event == "reput" and a.level > 0:
            level = table.clamp(rebind(a.level))
            if not any(table.clamp(m.delay_level) == level for m in kept):
                return Fitted(None, tuple(changes), tuple(left_out),
                              f"fault step {i} waits for re-puts of level {a.level} (the broker's {level}), "
                              f"which keeps no message within the budget")
            f = replace(f, after=FaultAnchor(a.event, level, a.count))
        faults.append(f)
    return Fitted(replace(fitted, messages=tuple(kept), faults=tuple(faults)), tuple(changes), tuple(left_out))

