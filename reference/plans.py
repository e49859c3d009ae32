"""The consumer-plan vocabulary: what the consumer answers on each delivery of a message.

A plan is a sequence of ``OK`` / ``LATER`` / ``CRASH``, one per delivery, in order; a redelivery
after a ``CRASH`` takes the next entry; after the plan ends the consumer answers ``OK``. An empty
or absent plan is ``("OK",)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reference.contract import PLAN_WORDS, ContractError

OK, LATER, CRASH = "OK", "LATER", "CRASH"


def parse_plan(plan: Any, where: str = "send", field: str = "plan") -> tuple[str, ...]:
    """A plan from a list of words (or a comma-separated string, as the ``HG_PLAN`` property
    carries it); an unknown word raises ContractError naming it and its position."""
    if plan is None:
        return (OK,)
    if isinstance(plan, str):
        plan = [w for w in plan.split(",")] if plan else []
    if not isinstance(plan, (list, tuple)):
        raise ContractError(where, field, "a list of " + "/".join(PLAN_WORDS), plan)
    for i, word in enumerate(plan):
        if word not in PLAN_WORDS:
            raise ContractError(where, f"{field}[{i}]", "one of " + "/".join(PLAN_WORDS), word)
    return tuple(plan) if plan else (OK,)


def format_plan(plan: tuple[str, ...]) -> str:
    """The ``HG_PLAN`` property value (inverse of :func:`parse_plan` on a string)."""
    return ",".join(plan)


def answer(plan: tuple[str, ...], delivery_index: int) -> str:
    """The answer to the ``delivery_index``-th delivery (0-based) of a message."""
    return plan[delivery_index] if delivery_index < len(plan) else OK


@dataclass(frozen=True)
class PlanCursor:
    """A consumer group's progress through one message's plan: ``used`` entries answered from
    the plan, the attempts already ``settled`` (answered OK, or LATER with the retry stored), and
    the attempts whose LATER must be ``repeat``-ed (the send-back failed: the retry lives only in
    the consumer's memory as a local re-consume)."""

    used: int = 0
    settled: frozenset[int] = frozenset()
    repeat: frozenset[int] = frozenset()


def next_answer(plan: tuple[str, ...], cursor: PlanCursor, reconsume_times: int) -> tuple[str, PlanCursor, bool]:
    """The answer to a delivery of attempt ``reconsume_times``: (answer, new cursor, from_plan).

    ConsumeMessageConcurrentlyService (4.9.x) redelivers, after a consumer dies, every message
    consumed since the last offset commit, including attempts already answered. The harness's
    consumer is idempotent: a redelivery of a settled attempt is acknowledged ``OK`` without taking
    a plan entry (answering LATER again would fork a second retry chain); a redelivery of an
    attempt whose retry was never stored (:func:`later_not_stored`) answers LATER again; every other
    delivery — the first of an attempt, or one after this attempt's own CRASH — takes the next entry."""
    if reconsume_times in cursor.settled:
        return OK, cursor, False
    if reconsume_times in cursor.repeat:
        return LATER, cursor, False
    word = answer(plan, cursor.used)
    settled, repeat = cursor.settled, cursor.repeat
    if word != CRASH:
        settled = settled | {reconsume_times}
    if reconsume_times - 1 in repeat and word != CRASH:  # the local re-consume was answered: settled now
        repeat, settled = repeat - {reconsume_times - 1}, settled | {reconsume_times - 1}
    return word, PlanCursor(cursor.used + 1, settled, repeat), True


def later_not_stored(cursor: PlanCursor, reconsume_times: int) -> PlanCursor:
    """DefaultMQPushConsumerImpl.sendMessageBack failed and so did the client's re-send: the retry
    exists only as the consumer's local re-consume, lost if the consumer dies, so a redelivery of
    this attempt must answer LATER again."""
    return PlanCursor(cursor.used, cursor.settled - {reconsume_times}, cursor.repeat | {reconsume_times})


def replay_cursor(plan: tuple[str, ...], delivered_reconsume_times) -> PlanCursor:
    """The cursor after the given deliveries (their reconsume_times, in order): how a restarted
    consumer rebuilds its plan positions from its own events file."""
    cursor = PlanCursor()
    for rt in delivered_reconsume_times:
        _, cursor, _ = next_answer(plan, cursor, rt)
    return cursor


@dataclass(frozen=True)
class PlanOutcome:
    """Where a plan leads under ``max_reconsume_times`` (the broker's DLQ rule applied).

    ``last_attempt``: the reconsume_times of the last attempt delivered; ``final_state``:
    ``CONSUMED`` or ``DLQ``; ``crashes[k]``: the CRASH answers given on attempt k."""

    last_attempt: int
    final_state: str
    crashes: tuple[int, ...]


def plan_outcome(plan: tuple[str, ...], max_reconsume_times: int) -> PlanOutcome:
    """SendMessageProcessor.asyncConsumerSendMsgBack (4.9.x): a LATER on an attempt whose
    reconsume_times >= maxReconsumeTimes sends the message to the DLQ instead of a retry."""
    attempt = 0
    crashes = [0]
    for word in plan:
        if word == LATER:
            if attempt >= max_reconsume_times:
                return PlanOutcome(attempt, "DLQ", tuple(crashes))
            attempt += 1
            crashes.append(0)
        elif word == CRASH:
            crashes[attempt] += 1
        else:
            break
    return PlanOutcome(attempt, "CONSUMED", tuple(crashes))
