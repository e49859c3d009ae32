"""What a client does after its send-back failed while the host starved the broker is undecided,
never a violation (``reference.stalls.explain_resent``, ``reports.stalls.resent_reclassify``): its
producer's re-sends store copies with their reconsume count dropped, an orderly consumer consumes
past its maximum when its DLQ send fails. Seen on 5.5.0 in CI (the broker's run queue stalled up to
29.8 s): a %RETRY% copy with reconsume_times 0 (NO_DUPLICATE) and an orderly attempt past the
maximum (RETRY_SCHEDULE, DLQ_ROUTING)."""

from __future__ import annotations

from hourglass.reference.contract import SEND_BACK_FAILED
from hourglass.reference.stalls import HOST_NOT_OBSERVED, HOST_OBSERVED
from hourglass.reports.stalls import HOST_STALL_CAUSE, resent_reclassify

T0 = 1_795_817_200_000
FAILED_AT = T0 + 50_000
RUN = {"started_ms": T0, "ended_ms": T0 + 120_000, "host": {HOST_OBSERVED: ["run-queue"]}}


def _violation(invariant: str, key: str = "K", group: str = "G", observed: int = FAILED_AT + 8_000) -> dict:
    return {"invariant": invariant, "key": key, "group": group, "attempt": 1, "observed_ms": observed, "detail": "x"}


def _failure(key: str | None = "K", group: str = "G", at: int = FAILED_AT) -> dict:
    return {"type": "fault", "ts_ms": at, "action": SEND_BACK_FAILED, "target": "consumer", "group": group,
            **({"key": key} if key else {})}


def _stall(from_ms: int, stalled_ms: int, subject: str = "broker") -> dict:
    return {"type": "stall", "ts_ms": from_ms + stalled_ms, "source": "run-queue", "subject": subject,
            "from_ms": from_ms, "stalled_ms": stalled_ms}


def test_a_resent_copy_after_a_failure_in_a_broker_stall_is_undecided_by_the_host():
    violations = [_violation("NO_DUPLICATE"), _violation("RETRY_SCHEDULE"), _violation("DLQ_ROUTING")]
    keep, pending = resent_reclassify(violations, [], [_failure(), _stall(FAILED_AT - 4_000, 3_000)], RUN)
    assert keep == []
    assert [(p["invariant"], p["cause"]) for p in pending] == [(v["invariant"], HOST_STALL_CAUSE) for v in violations]
    assert "the client's send-back failed while the broker stalled (run-queue: 3000 ms)" in pending[0]["detail"]


def test_a_failure_the_line_logged_without_a_key_covers_its_groups_keys():
    keep, pending = resent_reclassify([_violation("NO_DUPLICATE")], [], [_failure(key=None), _stall(FAILED_AT - 2_000, 900)], RUN)
    assert keep == [] and len(pending) == 1


def test_without_a_recorded_stall_or_a_failure_of_its_own_the_violation_stands():
    v = _violation("NO_DUPLICATE")
    assert resent_reclassify([v], [], [_failure()], RUN) == ([v], [])  # nothing stalled: the broker's
    far = _stall(FAILED_AT - 60_000, 3_000)  # long over before the send-back waited
    assert resent_reclassify([v], [], [_failure(), far], RUN) == ([v], [])
    stall = _stall(FAILED_AT - 2_000, 3_000)
    assert resent_reclassify([v], [], [_failure(key="other"), stall], RUN) == ([v], [])
    assert resent_reclassify([v], [], [_failure(group="other"), stall], RUN) == ([v], [])
    assert resent_reclassify([v], [], [_failure(at=v["observed_ms"] + 5_000), stall], RUN) == ([v], [])  # failed after it
    consumer_only = _stall(FAILED_AT - 2_000, 3_000, subject="consumer G-0")  # the client's own stall is no broker's
    assert resent_reclassify([v], [], [_failure(), consumer_only], RUN) == ([v], [])


def test_only_what_re_sends_break_and_never_an_accepted_one_or_on_an_unobserved_host():
    stall, failure = _stall(FAILED_AT - 2_000, 3_000), _failure()
    for invariant in ("NO_LOSS", "ON_TIME", "NOT_EARLY", "INTEGRITY"):
        v = _violation(invariant)
        assert resent_reclassify([v], [], [failure, stall], RUN) == ([v], [])
    accepted = dict(_violation("NO_DUPLICATE"), accepted="upstream")
    assert resent_reclassify([accepted], [], [failure, stall], RUN) == ([accepted], [])
    blind = dict(RUN, host={HOST_NOT_OBSERVED: "no /proc/pressure"})
    v = _violation("NO_DUPLICATE")
    assert resent_reclassify([v], [], [failure, stall], blind) == ([v], [])
