"""Whether a run observed enough to be judged: interrupted runs, runs that recorded nothing, runs
that recorded fewer sends than their scenario lists. No observation, no pass.

A run is *interrupted* when run.json has no end (``ended_ms`` missing or 0: the harness was killed
before it completed run.json) or says ``interrupted`` (the reason the runner writes when it is
stopped by SIGINT/SIGTERM, maybe with ``last_observed_ms``). It is judged up to its last
observation; whatever depends on an absence is pending (undecided), never a violation.
"""

from __future__ import annotations

from dataclasses import dataclass

from hourglass.reference.rundir import interruption


def judging_end_ms(run: dict) -> int | None:
    """The end the judges use: run.json's ``ended_ms``; None for an interrupted run (no window is
    closed by an end that was never observed)."""
    return None if interruption(run) else int(run["ended_ms"])


@dataclass(frozen=True)
class Completeness:
    """What a run's judging found about the run itself: ``broken`` (exit 3) or ``interrupted``
    (undecided unless a violation was observed), each a sentence; both None for a complete run."""

    broken: str | None = None
    interrupted: str | None = None


def assess(run: dict, event_files: list[str], events: int, sends: int, last_ts_ms: int | None) -> Completeness:
    """``events``/``sends``: how many the judging saw; ``last_ts_ms``: the latest ``ts_ms`` among them."""
    if events == 0:
        return Completeness(broken=f"no events recorded in {', '.join(event_files)}: the harness recorded nothing")
    stopped = interruption(run)
    planned = run.get("planned_sends")
    short = None
    if isinstance(planned, int) and not isinstance(planned, bool) and sends < planned:
        short = f"the harness recorded {sends} of {planned} sends"
    elif planned is None and sends == 0:
        short = f"the harness recorded 0 sends ({events} other events) in {', '.join(event_files)}"
    if stopped is None:
        if run.get("error"):  # the harness could not carry the run out: no verdict on the broker
            return Completeness(broken=f"the harness could not carry the run out: {run['error']}")
        return Completeness(broken=short) if short else Completeness()
    if planned is None and sends == 0:
        return Completeness(broken=short)
    end = run.get("last_observed_ms") or last_ts_ms
    text = f"{stopped}: judged up to the last observed event at {end}"
    return Completeness(interrupted=f"{text}; {short}" if short else text)
