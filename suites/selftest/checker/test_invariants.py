"""Each invariant on hand-made runs that keep it and runs that break it: the verdict and the
example's explanation (what users read first when CI goes red)."""

from __future__ import annotations

import json

from hourglass.reference.contract import INVARIANTS
from suites.selftest.checker.conftest import DATA
from suites.selftest.checker.runs import T0


def only_failure(verdict: dict) -> str:
    failed = [i for i, e in verdict["invariants"].items() if e["passed"] is False]
    assert len(failed) == 1, (failed, json.dumps(verdict, indent=1))
    return failed[0]


def example(verdict: dict, invariant: str) -> dict:
    entry = verdict["invariants"][invariant]
    assert entry["examples"], entry
    return entry["examples"][0]


def test_the_shared_example_gets_exactly_its_expected_verdict(verdicts):
    expected = json.loads((DATA / "run-small" / "expected-verdict.json").read_text())
    assert verdicts["example-small"] == expected


def test_every_invariant_appears_in_every_verdict(verdicts):
    for v in verdicts.values():
        assert list(v["invariants"]) == list(INVARIANTS)
        for entry in v["invariants"].values():
            assert entry["passed"] in (True, False, None)
            assert (entry["passed"] is None) or entry["checked"] > 0


def test_a_clean_run_passes_everything_it_exercises(verdicts):
    v = verdicts["clean-mix"]
    assert v["passed"] is True
    assert v["invariants"]["LEVEL_ORDER"]["checked"] == 1
    assert v["invariants"]["RETRY_SCHEDULE"]["checked"] == 1
    assert v["invariants"]["DLQ_ROUTING"]["passed"] is None
    assert (v["messages"], v["attempts"]) == (4, 5)


def test_a_message_never_delivered_is_lost(verdicts):
    v = verdicts["lost"]
    assert only_failure(v) == "NO_LOSS"
    e = example(v, "NO_LOSS")
    assert e["key"] == "gone" and e["attempt"] == 0
    assert e["expected_window"] == {"earliest_ms": T0 + 1000, "latest_ms": T0 + 5 + 1000 + 3000}
    assert "expected CONSUMED" in e["explanation"] and "neither an OK delivery nor a DLQ entry" in e["explanation"]


def test_a_window_still_open_at_the_end_is_undecided_not_lost(verdicts):
    v = verdicts["pending-at-end"]
    assert v["passed"] is None
    assert v["invariants"]["NO_LOSS"]["violations"] == 0
    assert v["invariants"]["NO_LOSS"]["undecided"] == 1
    assert v["undecided"]["examples"][0]["key"] == "late-sent"
    assert "after the run ended" in v["undecided"]["examples"][0]["reason"]


def test_indeterminate_sends_count_as_recovered_never_as_lost(verdicts):
    v = verdicts["unknown-sends"]
    assert v["passed"] is True
    assert v["recovered"] == 1
    assert v["invariants"]["NO_LOSS"]["checked"] == 1  # only the SEND_OK message


def test_an_early_attempt_names_its_window_and_how_early(verdicts):
    v = verdicts["early"]
    assert only_failure(v) == "NOT_EARLY"
    e = example(v, "NOT_EARLY")
    assert e["key"] == "hasty" and e["observed_ms"] == T0 + 2000
    assert e["expected_window"]["earliest_ms"] == T0 + 5000
    assert "3000 ms early" in e["explanation"] and "no fault overlaps" in e["explanation"]


def test_a_clamped_level_is_said_in_the_violation(verdicts):
    v = verdicts["early-clamped"]
    assert only_failure(v) == "NOT_EARLY"
    e = example(v, "NOT_EARLY")
    assert e["level"] == 3 and e["clamped_from"] == 5
    assert "requested 5, clamped" in e["explanation"]
    assert e["expected_window"]["earliest_ms"] == T0 + 10_000


def test_a_late_attempt_names_the_fault_that_overlaps(verdicts):
    v = verdicts["late-with-kill"]
    assert only_failure(v) == "ON_TIME"
    e = example(v, "ON_TIME")
    assert e["expected_window"]["latest_ms"] == T0 + 2000 + 1000 + 3000
    assert "broker kill at" in e["fault"] and "broker ready at" in e["fault"]
    assert "3000 ms late" in e["explanation"]


def test_a_late_attempt_without_faults(verdicts):
    v = verdicts["late-plain"]
    assert only_failure(v) == "ON_TIME"
    e = example(v, "ON_TIME")
    assert e["observed_ms"] == T0 + 5000 and e["fault"] is None


def test_level_order(verdicts):
    assert verdicts["level-order-kept"]["invariants"]["LEVEL_ORDER"] == {"checked": 1, "violations": 0, "examples": [], "passed": True}
    v = verdicts["level-order-broken"]
    assert only_failure(v) == "LEVEL_ORDER"
    e = example(v, "LEVEL_ORDER")
    assert e["key"] == "second" and e["other_key"] == "first"
    assert "before first" in e["explanation"]


def test_queue_order(verdicts):
    assert verdicts["queue-order-kept"]["invariants"]["QUEUE_ORDER"] == {"checked": 1, "violations": 0, "examples": [], "passed": True}
    v = verdicts["queue-order-broken"]
    assert only_failure(v) == "QUEUE_ORDER"
    e = example(v, "QUEUE_ORDER")
    assert e["key"] == "B" and e["other_key"] == "A" and "passed a message of its queue" in e["explanation"]


def test_an_unknown_send_stored_after_a_partition_bounds_no_later_message(verdicts):
    v = verdicts["level-order-unknown"]
    assert v["passed"] is True, v
    assert v["recovered"] == 1


def test_retry_schedule_gap_and_retry_after_ok(verdicts):
    v = verdicts["retry-gap"]
    assert "RETRY_SCHEDULE" in [i for i, e in v["invariants"].items() if e["passed"] is False]
    assert "attempt 1 was never delivered" in example(v, "RETRY_SCHEDULE")["explanation"]
    v = verdicts["retry-after-ok"]
    assert v["invariants"]["RETRY_SCHEDULE"]["passed"] is False
    assert "attempt 0 was never answered LATER" in example(v, "RETRY_SCHEDULE")["explanation"]
    v = verdicts["pop-revived-after-ok"]  # a POP copy's OK with no stall recorded: the broker lost the ack
    assert only_failure(v) == "RETRY_SCHEDULE"
    assert "attempt 0 was never answered LATER" in example(v, "RETRY_SCHEDULE")["explanation"]


def test_a_pop_gap_is_allowed_only_where_the_broker_recorded_reviving_that_very_copy(verdicts):
    # reference.pop.popped_unseen: pop.log's revive put attempt 2's copy, so attempt 1 was popped and never
    # reached the listener; without that record (or with another group's) the gap is the broker's
    assert verdicts["pop-popped-unseen"]["invariants"]["RETRY_SCHEDULE"]["passed"] is True
    v = verdicts["pop-gap-unrecorded"]
    assert v["invariants"]["RETRY_SCHEDULE"]["passed"] is False
    assert "attempt 1 was never delivered" in example(v, "RETRY_SCHEDULE")["explanation"]


def test_a_pop_copy_answered_after_its_invisible_time_may_come_again_before_that_answer(verdicts):
    # reference.pop.answered_after_revive: the broker revives an unanswered copy on its own at its revive time
    assert verdicts["pop-answered-after-revive"]["invariants"]["RETRY_SCHEDULE"]["passed"] is True
    v = verdicts["pop-popped-before-revive"]  # popped again before the revive time: not the revive's doing
    assert v["invariants"]["RETRY_SCHEDULE"]["passed"] is False
    assert "delivered before the LATER it should follow" in example(v, "RETRY_SCHEDULE")["explanation"]


def test_dlq_routing(verdicts):
    kept = verdicts["dlq-kept"]
    assert kept["passed"] is True and kept["invariants"]["DLQ_ROUTING"]["checked"] == 1
    v = verdicts["dlq-wrong-message"]
    assert only_failure(v) == "DLQ_ROUTING"
    assert "plan ends in CONSUMED" in example(v, "DLQ_ROUTING")["explanation"]
    v = verdicts["dlq-twice"]
    assert only_failure(v) == "DLQ_ROUTING"
    assert "exactly one DLQ entry, found 2" in example(v, "DLQ_ROUTING")["explanation"]


def test_duplicates_are_told_apart_by_stored_copy(verdicts):
    v = verdicts["consumer-duplicate"]
    assert only_failure(v) == "NO_DUPLICATE"
    e = example(v, "NO_DUPLICATE")
    assert e["cause"] == "consumer" and "no CRASH" in e["explanation"]
    assert verdicts["consumer-redelivery-after-crash"]["passed"] is True
    v = verdicts["scheduler-duplicate"]
    assert only_failure(v) == "NO_DUPLICATE"
    assert example(v, "NO_DUPLICATE")["cause"] == "scheduler"


def test_copies_of_an_attempt_are_timed_by_the_earliest_stored_one(verdicts):
    """A new copy that reaches the consumer before the old one is judged only as a duplicate: the
    attempt is timed (NOT_EARLY, ON_TIME, LEVEL_ORDER) by the old copy's re-put."""
    v = verdicts["reversed-arrival-allowed"]
    assert v["passed"] is True, json.dumps(v, indent=1)
    assert v["invariants"]["LEVEL_ORDER"]["passed"] is True and v["invariants"]["NO_DUPLICATE"]["checked"] == 2
    v = verdicts["reversed-arrival-persisted"]
    assert only_failure(v) == "NO_DUPLICATE"
    assert v["invariants"]["NO_DUPLICATE"]["violations"] == 1
    e = example(v, "NO_DUPLICATE")
    assert e["cause"] == "scheduler"
    # the cause lies between the two re-puts (1050 .. 40050): the broker kill, not the consumer kill
    # between the two deliveries
    assert f"broker kill -9 at {T0 + 30_000}" in e["explanation"]
    assert f"broker kill at {T0 + 30_000}" in e["fault"] and "consumer" not in e["fault"]


def test_integrity(verdicts):
    v = verdicts["integrity-topic"]
    assert only_failure(v) == "INTEGRITY"
    assert "topic %RETRY%g, expected T" in example(v, "INTEGRITY")["explanation"]
    v = verdicts["integrity-body"]
    assert only_failure(v) == "INTEGRITY"
    assert "body_crc 999, sent 1234" in example(v, "INTEGRITY")["explanation"]
    v = verdicts["integrity-unknown-key"]
    assert only_failure(v) == "INTEGRITY"
    e = example(v, "INTEGRITY")
    assert e["key"] == "stranger" and "never sent" in e["explanation"]


def test_a_torn_last_line_is_skipped_and_reported(verdicts):
    v = verdicts["torn-line"]
    assert v["passed"] is True
    assert len(v["torn_lines"]) == 1 and v["torn_lines"][0]["line"] == 3
    assert v["torn_lines"][0]["file"].endswith("torn-line/events.jsonl")


def test_parquet_events_give_the_same_verdict(verdicts):
    parquet = dict(verdicts["parquet-clean-mix"], run_id="clean-mix")
    assert parquet == verdicts["clean-mix"]


def test_timer_messages(verdicts):
    v = verdicts["timer-kept"]
    assert v["passed"] is True and v["invariants"]["NOT_EARLY"]["checked"] == 1
    v = verdicts["timer-too-far"]
    assert only_failure(v) == "INTEGRITY"
    e = example(v, "INTEGRITY")
    assert e["key"] == "far" and "must refuse" in e["explanation"]
    v = verdicts["timer-delay-sec"]
    assert v["passed"] is True and v["invariants"]["NOT_EARLY"]["checked"] == 1


def test_a_send_refused_as_illegal_is_judged_against_the_model(verdicts):
    """reference.limits: a send the broker (or the client's own check) refused as MESSAGE_ILLEGAL
    is a violation when a correct broker takes it, and checked when the model refuses it too."""
    v = verdicts["refused-accepted"]
    assert only_failure(v) == "INTEGRITY"
    e = example(v, "INTEGRITY")
    assert e["key"] == "ok-body" and "refused (MESSAGE_ILLEGAL), but a correct broker takes it" in e["explanation"]
    v = verdicts["refused-expected"]
    assert v["passed"] is True and v["invariants"]["INTEGRITY"]["checked"] >= 2
    assert v["invariants"]["NO_LOSS"]["checked"] == 1  # the refused send is not expected anywhere
