"""What a client does after the send-back of a message failed while the host starved the broker is
undecided, never a violation (``reference.stalls.explain_resent``, ``reports.stalls.resent_reclassify``):
its producer's re-sends store copies with their reconsume count dropped, an orderly consumer consumes
past its maximum when its DLQ send fails. Seen on 5.5.0 in CI (the broker's run queue stalled up to
29.8 s): a %RETRY% copy with reconsume_times 0 (NO_DUPLICATE) and an orderly attempt past the
maximum (RETRY_SCHEDULE, DLQ_ROUTING). The excuse reaches only the message whose own send-back
failed (one of its LATERs', ``reports.judge_events``), never the rest of its group."""

from __future__ import annotations

from hourglass.reference.contract import SEND_BACK_FAILED
from hourglass.reference.stalls import HOST_CPUS, HOST_NOT_OBSERVED, HOST_OBSERVED
from hourglass.reports import judge_run
from hourglass.reports.rows import SEND_BACK_FAILED_FIELD
from hourglass.reports.stalls import HOST_STALL_CAUSE, resent_reclassify
from suites.selftest.checker.runs import RunBuilder

T0 = 1_795_817_200_000
FAILED_AT = T0 + 50_000
RUN = {"started_ms": T0, "ended_ms": T0 + 120_000, "host": {HOST_OBSERVED: ["run-queue"], HOST_CPUS: 2}}


def _violation(invariant: str, key: str = "K", group: str = "G", observed: int = FAILED_AT + 8_000,
               failed: int | None = FAILED_AT) -> dict:
    v = {"invariant": invariant, "key": key, "group": group, "attempt": 1, "observed_ms": observed, "detail": "x"}
    return v if failed is None else dict(v, **{SEND_BACK_FAILED_FIELD: failed})


def _stall(from_ms: int, stalled_ms: int, subject: str = "broker", thread: str = "SendMessageThre") -> list[dict]:
    """A thread's wait, and the host's CPU pressure that saw it."""
    return [{"type": "stall", "ts_ms": from_ms + stalled_ms, "source": "run-queue", "subject": subject,
             "from_ms": from_ms, "stalled_ms": stalled_ms, "detail": f"thread {thread}"},
            {"type": "stall", "ts_ms": from_ms + stalled_ms, "source": "psi-cpu", "subject": "host",
             "from_ms": from_ms, "stalled_ms": stalled_ms, "full_ms": 0}]


def test_a_resent_copy_after_its_own_failure_in_a_broker_stall_is_undecided_by_the_host():
    violations = [_violation("NO_DUPLICATE"), _violation("RETRY_SCHEDULE"), _violation("DLQ_ROUTING")]
    keep, pending = resent_reclassify(violations, [], _stall(FAILED_AT - 4_000, 3_000), RUN)
    assert keep == []
    assert [(p["invariant"], p["cause"]) for p in pending] == [(v["invariant"], HOST_STALL_CAUSE) for v in violations]
    assert ("the client's send-back of this message failed while the broker stalled (run-queue: 3000 ms, thread "
            "SendMessageThre)") in pending[0]["detail"]


def test_without_a_failure_of_its_own_or_a_stall_on_the_brokers_path_the_violation_stands():
    stall = _stall(FAILED_AT - 2_000, 3_000)
    other = _violation("NO_DUPLICATE", failed=None)  # the same group, no send-back of its own failed
    assert resent_reclassify([other], [], stall, RUN) == ([other], [])
    v = _violation("NO_DUPLICATE")
    assert resent_reclassify([v], [], [], RUN) == ([v], [])  # nothing stalled: the broker's
    far = _stall(FAILED_AT - 60_000, 3_000)  # long over before the send-back waited
    assert resent_reclassify([v], [], far, RUN) == ([v], [])
    consumer_only = _stall(FAILED_AT - 2_000, 3_000, subject="consumer G-0", thread="ConsumeMessageThr")
    assert resent_reclassify([v], [], consumer_only, RUN) == ([v], [])  # the client's own stall is no broker's
    compiler = _stall(FAILED_AT - 2_000, 3_000, thread="C2 CompilerThre")  # off every message's path
    assert resent_reclassify([v], [], compiler, RUN) == ([v], [])
    refuted = _stall(FAILED_AT - 2_000, 3_000)[:1]  # a wait the host's pressure does not corroborate
    assert resent_reclassify([v], [], refuted, RUN) == ([v], [])


def test_only_what_re_sends_break_and_never_an_accepted_one_or_on_an_unobserved_host():
    stall = _stall(FAILED_AT - 2_000, 3_000)
    for invariant in ("NO_LOSS", "ON_TIME", "NOT_EARLY", "INTEGRITY"):
        v = _violation(invariant)
        assert resent_reclassify([v], [], stall, RUN) == ([v], [])
    accepted = dict(_violation("NO_DUPLICATE"), accepted="upstream")
    assert resent_reclassify([accepted], [], stall, RUN) == ([accepted], [])
    blind = dict(RUN, host={HOST_NOT_OBSERVED: "no /proc/pressure"})
    v = _violation("NO_DUPLICATE")
    assert resent_reclassify([v], [], stall, blind) == ([v], [])


def test_the_judging_marks_only_the_message_whose_own_send_back_failed():
    # one failure line without a key (4.9.x), logged 5 s after K1's LATER: K1's send-back is the one
    # that may have failed; K2 of the same group answered LATER 39 s later, its duplicates are its own
    b = RunBuilder("r")
    b.send("K1", 0, plan=["LATER"]).deliver("K1", 10, outcome="LATER", at=1000)
    for stored in (11_000, 11_100, 11_200):
        b.deliver("K1", stored, attempt=1)
    b.send("K2", 39_000, plan=["LATER"]).deliver("K2", 39_010, outcome="LATER", at=40_000)
    for stored in (50_000, 50_100, 50_200):
        b.deliver("K2", stored, attempt=1)
    b.fault(6000, SEND_BACK_FAILED, target="consumer", group="g")
    found = judge_run.violations(b.run_json(), b.events)["NO_DUPLICATE"]
    marked = {v["key"]: v.get(SEND_BACK_FAILED_FIELD) for v in found}
    assert marked == {"K1": b.events[-1]["ts_ms"], "K2": None}
    # a failure logged after the violation was observed explains nothing of it
    late = RunBuilder("r2").send("K1", 0, plan=["LATER"]).deliver("K1", 10, outcome="LATER", at=1000)
    for stored in (2_000, 2_100, 2_200):
        late.deliver("K1", stored, attempt=1)
    late.fault(6000, SEND_BACK_FAILED, target="consumer", group="g")
    assert all(v.get(SEND_BACK_FAILED_FIELD) is None for v in judge_run.violations(late.run_json(), late.events)["NO_DUPLICATE"])
