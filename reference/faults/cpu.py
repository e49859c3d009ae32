"""A broker short of CPU: its processes under a CPU quota (a cgroup's CFS bandwidth limit, a
container's ``--cpus``), ``cpu_permille`` thousandths of one CPU.

Unlike a pause (SIGSTOP: the JVM frozen, its timers with it), a quota lets every thread run, only
slower: the broker's periodic tasks keep firing on time while the work between them — loading the
store, recovering the commit log, re-putting — takes longer. That is what a large store, thousands
of queues or a slow disk do to a start, and what the start windows of the schedule service
depend on (``reference.persistence_axes.Start.THROTTLED``):

- ``throttled_start`` starts the broker under the quota and lifts it ``duration_ms`` after the
  start (or at its ready, whichever comes later). The first periodic persist of the schedule
  offsets is timed from the broker's construction, before the store is loaded, in 5.0.0–5.1.1
  (``ScheduleMessageService``'s constructor) and from its start elsewhere; a start whose load
  outlasts it is the state the step exists for (:mod:`reference.reach`'s ``slow_load`` checks the
  start outlasted that delay: necessary, not sufficient).
- ``cpu_throttle`` puts a running broker under the quota for ``duration_ms`` (0: to the end).

For the windows a throttled broker is a store outage (``store`` channel) while the quota is in
force: what falls due may be re-put late, never lost and never twice — the quota only slows it.
"""

from __future__ import annotations

from hourglass.reference.faults import OPTIONAL, REQUIRED, Family, Param, Primitive, StepKind
from hourglass.reference.faults.process import START

THROTTLE, UNTHROTTLE = "cpu_throttle", "cpu_unthrottle"
THROTTLED_START = "throttled_start"
#: the largest quota, in thousandths of one CPU (the CFS period is 100 ms: 10 = 1 ms of each)
MAX_CPU_PERMILLE = 1000


def _throttle(step) -> list:
    fields = {"cpu_permille": step.cpu_permille}
    return [(0, THROTTLE, fields)] + ([(step.duration_ms, UNTHROTTLE, {})] if step.duration_ms else [])


def _throttled_start(step) -> list:
    """Quota first, then the start (the new process is under it from its exec), lifted later."""
    return [(0, THROTTLE, {"cpu_permille": step.cpu_permille}), (0, START, {}), (step.duration_ms, UNTHROTTLE, {})]


def throttle_outages(faults, targets=("broker",)) -> list:
    """The ``store`` window effect: each target from a quota to its lift (None: never lifted)."""
    from hourglass.reference.windows import period_outages

    return period_outages(faults, THROTTLE, UNTHROTTLE, targets, "under a CPU quota from", "lifted at", "never lifted")


FAMILY = Family(
    name="cpu",
    rank=15,
    steps=(
        StepKind(THROTTLE, _throttle, OPTIONAL, params=("cpu_permille",), broker_only=True,
                 what="limits the broker's CPU", delays_deliveries=True,
                 description="cpu_throttle = run the broker under a CPU quota of cpu_permille thousandths of one "
                             "CPU for duration_ms (0: to the end)"),
        StepKind(THROTTLED_START, _throttled_start, REQUIRED, params=("cpu_permille",), broker_only=True,
                 what="starts the broker short of CPU", delays_deliveries=True,
                 description="throttled_start = start the (stopped) broker under a CPU quota of cpu_permille "
                             "thousandths of one CPU, lifted duration_ms (> 0) after the start or at its ready, "
                             "whichever is later"),
    ),
    primitives=(Primitive(THROTTLE, verb="throttle_cpu", args=("cpu_permille",), heals=UNTHROTTLE),
                Primitive(UNTHROTTLE, verb="unthrottle_cpu")),
    params=(Param("cpu_permille", 0, MAX_CPU_PERMILLE, "a quota",
                  f"the CPU quota in thousandths of one CPU, 1..{MAX_CPU_PERMILLE}",
                  "cpu_throttle and throttled_start only: the broker's CPU quota in thousandths of one CPU "
                  f"(1..{MAX_CPU_PERMILLE}; 200: a fifth of one CPU); must be 0 for the others."),),
    event_fields=(("cpu_permille", "int", "cpu_throttle: the quota, thousandths of one CPU"),),
    effects={"store": "hourglass.reference.faults.cpu:throttle_outages"},
    skip_words="limit the CPU of",
)
