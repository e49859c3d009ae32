"""Clock faults of the broker (``reference.clock``): its wall clock stepped, or drifting, under
libfaketime."""

from __future__ import annotations

from hourglass.reference.faults import OPTIONAL, REQUIRED, Family, Param, Primitive, StepKind, steps

CLOCK = "clock"
#: the scenario step that makes the broker's clock run fast or slow for a while (recorded as
#: ``clock`` events with a ``rate_permille``)
CLOCK_DRIFT = "clock_drift"
#: the scenario steps that move the broker's clock
CLOCK_STEP_ACTIONS = (CLOCK, CLOCK_DRIFT)
#: the largest drift either way, per mille of the true rate: the broker's clock runs at least
#: 0.1 times the true rate, so it stays strictly increasing and a reading maps back to one true moment
MAX_CLOCK_RATE_PERMILLE = 900
#: the largest step a scenario takes: a larger one would outlive the broker's 120 s channel expiry
#: (ClientHousekeepingService) and the name server's broker expiry in the broker's own clock,
#: which this rule does not state
MAX_CLOCK_STEP_MS = 60_000
#: what its system must be set up for: the broker's wall clock under the harness's control, and
#: (a drift) able to run fast or slow
OWN_CLOCK, DRIFTING_CLOCK = "own_clock", "drifting_clock"


def _step(step) -> list:
    return [(0, CLOCK, {"offset_ms": step.offset_ms})] + ([(step.duration_ms, CLOCK, {"offset_ms": 0})]
                                                           if step.duration_ms else [])


def _drift(step) -> list:
    return [(0, CLOCK, {"rate_permille": step.rate_permille}), (step.duration_ms, CLOCK, {"rate_permille": 0})]


def _drift_duration(step, raw) -> str | None:
    duration, rate = raw.get("duration_ms", "missing"), raw.get("rate_permille", 0)
    if duration == "missing" or duration <= 0 or abs(rate) * duration > MAX_CLOCK_STEP_MS * 1000:
        return ("how long the drift lasts, > 0, with |rate_permille| * duration_ms / 1000 "
                f"at most {MAX_CLOCK_STEP_MS} (the offset it reaches: reference.clock)")
    return None


def _beside_late_faults(faults: list, i: int, fail) -> None:
    """A step back, the step back ending a step ahead, and the heal of a fast drift: a store time
    the clock read twice is told apart by when it was delivered, so no fault that delays
    deliveries may run beside it (reference.clock.BrokerClock.true_ms)."""
    f = faults[i]
    duration, offset, rate = f.get("duration_ms", "missing"), f.get("offset_ms", 0), f.get("rate_permille", 0)
    if (f["action"] == CLOCK and (offset < 0 or duration not in (0, "missing"))) or (f["action"] == CLOCK_DRIFT and rate > 0):
        delaying = {s.action for s in steps() if s.delays_deliveries}
        late = [j for j, g in enumerate(faults) if g["action"] in delaying]
        if late:
            fail(f"faults[{late[0]}].action", "no fault that delays deliveries beside a step back of the broker's "
                 f"clock (faults[{i}]): a store time the clock read twice is told apart by when it was delivered "
                 "(reference.clock)", faults[late[0]]["action"])


_CLOCK = dict(broker_only=True, what="moves the broker's clock")

FAMILY = Family(
    name="clock",
    rank=40,
    steps=(
        StepKind(CLOCK, _step, OPTIONAL, params=("offset_ms",), setup=frozenset({OWN_CLOCK}), **_CLOCK,
                 description="clock = step the broker's wall clock by offset_ms for duration_ms (0: to the end)"),
        StepKind(CLOCK_DRIFT, _drift, REQUIRED, params=("rate_permille",), check_duration=_drift_duration,
                 setup=frozenset({OWN_CLOCK, DRIFTING_CLOCK}), asks=(CLOCK_DRIFT,), **_CLOCK,
                 description="clock_drift = run the broker's wall clock rate_permille per mille fast (< 0: slow) for "
                             "duration_ms (> 0), then at the true rate"),
    ),
    primitives=(Primitive(CLOCK, heals=CLOCK),),
    params=(
        Param("offset_ms", -MAX_CLOCK_STEP_MS, MAX_CLOCK_STEP_MS, "an offset",
              f"the step of the broker's clock, non-zero, -{MAX_CLOCK_STEP_MS}..{MAX_CLOCK_STEP_MS}",
              f"clock only: the step of the broker's wall clock, ahead (> 0) or back (< 0), at most "
              f"{MAX_CLOCK_STEP_MS} ms either way; must be 0 for the others."),
        Param("rate_permille", -MAX_CLOCK_RATE_PERMILLE, MAX_CLOCK_RATE_PERMILLE, "a rate",
              f"how fast the broker's clock drifts, non-zero, -{MAX_CLOCK_RATE_PERMILLE}..{MAX_CLOCK_RATE_PERMILLE} "
              "per mille",
              "clock_drift only: how much faster the broker's wall clock runs than the true time, "
              f"per mille (500: 1.5 times; -500: half speed), at most {MAX_CLOCK_RATE_PERMILLE} "
              "either way (the clock keeps increasing); must be 0 for the others."),
    ),
    event_fields=(("offset_ms", "int", "clock: the broker's clock reads this far ahead of true time from now on"),
                  ("settled_ms", "int", "clock: by when the broker's process took the step (reference.clock)"),
                  ("waiting_levels", "str", "clock: the levels holding entries at the step (\"3,8\")"),
                  ("rate_permille", "int", "clock: from ts_ms the offset grows this much per 1000 ms (a drift)")),
    skip_words="move the clock of",
    check=_beside_late_faults,
)
