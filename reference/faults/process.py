"""Process faults: kill -9, graceful stop, start, freeze (SIGSTOP) and thaw of a broker, a name
server, a proxy or the consumers (``reference.windows``: a broker process down or frozen is an
outage of its schedule service; ``reference.cluster``: a second broker's)."""

from __future__ import annotations

from hourglass.reference.faults import OPTIONAL, REQUIRED, Family, Primitive, StepKind

KILL, STOP, START, PAUSE, RESUME, READY = "kill", "stop", "start", "pause", "resume", "ready"
#: the end of a graceful stop: the process exited (its shutdown hooks ran from ``stop`` to here)
STOPPED = "stopped"
#: the first half of a ``slow_start``: start the target and pause it at once, before it is ready
#: (the ``resume`` that ends it waits until the target is ready); recorded as a start and a pause
START_PAUSED = "start_paused"


def _once(step) -> list:
    return [(0, step.action, {})]


def _then(first: str, second: str):
    def expand(step) -> list:
        return [(0, first, {}), (step.duration_ms, second, {})]
    return expand


def _pause(step) -> list:
    return _then(PAUSE, RESUME)(step) if step.duration_ms else _once(step)


FAMILY = Family(
    name="process",
    rank=10,
    steps=(
        StepKind(KILL, _once, delays_deliveries=True),
        StepKind(STOP, _once, delays_deliveries=True),
        StepKind(START, _once),
        StepKind(PAUSE, _pause, OPTIONAL, delays_deliveries=True, description="pause with a duration_ms resumes by itself"),
        StepKind(RESUME, _once),
        StepKind("restart", _then(STOP, START), OPTIONAL, delays_deliveries=True, description="restart = graceful stop, then start after duration_ms"),
        StepKind("kill_restart", _then(KILL, START), OPTIONAL, delays_deliveries=True, description="kill_restart = kill -9, then start after duration_ms"),
        StepKind("outage", _then(KILL, START), REQUIRED, delays_deliveries=True, description="outage = kill -9, down duration_ms (> 0), start"),
        StepKind("slow_start", _then(START_PAUSED, RESUME), REQUIRED, delays_deliveries=True, description="slow_start = start and pause it duration_ms (> 0) before it is ready"),
    ),
    primitives=(
        Primitive(KILL, heals=START), Primitive(STOP, heals=START), Primitive(START),
        Primitive(START_PAUSED, heals=RESUME, recorded=False),
        Primitive(PAUSE, heals=RESUME), Primitive(RESUME),
    ),
    event_only=(READY, STOPPED),
    effects={"store": "hourglass.reference.windows:cluster_outages", "consumer": "hourglass.reference.windows:consumer_outages",
             "proxy": "hourglass.reference.windows:proxy_outages"},
)
