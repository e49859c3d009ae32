"""The consumer-plan vocabulary: what the consumer answers on each delivery of a message.

A plan is a sequence of ``OK`` / ``LATER`` / ``CRASH``, one per delivery, in order; a redelivery
after a ``CRASH`` takes the next entry; after the plan ends the consumer answers ``OK``. An empty
or absent plan is ``("OK",)``. ``LATER:<n>`` is a LATER that asks for the delay level of its retry
(ConsumeConcurrentlyContext.setDelayLevelWhenNextConsume: 0 the broker's choice, n > 0 level n,
n < 0 the DLQ at once). ``SLOW`` holds the message past the group's consumeTimeout: the client's
clean-up sends it back at level 3 (reference.timeout), so it is a LATER that asked for level 3, its
retry due a timeout later; the listener answers OK after (concurrent, one-message groups only).

A batch consumer (consumeMessageBatchMaxSize > 1) answers a batch with an ack index: it consumes
the batch in order and stops at the first message its plan does not answer OK; the ack index is
the last one it consumed, and ConsumeMessageConcurrentlyService.processConsumeResult sends back
every message after it. The messages after the first failing one are sent back without their
plan being asked (:func:`by_ack_index`): their plan entry waits for their next attempt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import re

from hourglass.reference.contract import CHOSEN_LEVEL_WORD, PLAN_WORDS, ContractError
from hourglass.reference.timeout import TIMEOUT_LEVEL

OK, LATER, CRASH, SLOW = "OK", "LATER", "CRASH", "SLOW"
#: ConsumeConcurrentlyContext.delayLevelWhenNextConsume is a Java int
_INT32 = (-2**31, 2**31 - 1)


def is_later(word: str) -> bool:
    """A word that sends the message back: ``LATER``, ``LATER:<n>``, or ``SLOW`` (the client's
    clean-up sends it back: reference.timeout)."""
    return word == LATER or word == SLOW or word.startswith(LATER + ":")


def later_level(word: str) -> int:
    """The delay level a LATER word asks for (ConsumeConcurrentlyContext.setDelayLevelWhenNextConsume;
    0: the broker's choice, the client's default; ``SLOW``: ProcessQueue.cleanExpiredMsg's 3)."""
    if word == SLOW:
        return TIMEOUT_LEVEL
    return int(word[len(LATER) + 1:]) if word.startswith(LATER + ":") else 0


def later_word(level: int) -> str:
    """The plan word of a LATER that asks for ``level`` (0: plain ``LATER``)."""
    return f"{LATER}:{level}" if level else LATER


def answer_word(word: str) -> str:
    """The ``outcome`` a ``deliver`` event records for a plan word (``LATER:<n>`` and ``SLOW`` are a LATER)."""
    return LATER if is_later(word) else word


def by_ack_index(delivery) -> bool:
    """A ``deliver`` event of a batch consumer sent back because it came after the batch's first
    failing message: its place is beyond ack index + 1 (the first failing one is at ack index + 1,
    answered by its own plan)."""
    i, ack = delivery.get("batch_index"), delivery.get("ack_index")
    return i is not None and ack is not None and i > ack + 1


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
        if word not in PLAN_WORDS and not (isinstance(word, str) and re.fullmatch(CHOSEN_LEVEL_WORD, word)
                                           and _INT32[0] <= later_level(word) <= _INT32[1]):
            raise ContractError(where, f"{field}[{i}]", "one of " + "/".join(PLAN_WORDS)
                                + " or LATER:<delay level, a Java int>", word)
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
    asked: tuple[tuple[int, int], ...] = ()  # (attempt, the level its LATER asked for) of the repeated ones


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
        return later_word(dict(cursor.asked).get(reconsume_times, 0)), cursor, False
    word = answer(plan, cursor.used)
    settled, repeat = cursor.settled, cursor.repeat
    if word != CRASH:
        settled = settled | {reconsume_times}
    if reconsume_times - 1 in repeat and word != CRASH:  # the local re-consume was answered: settled now
        repeat, settled = repeat - {reconsume_times - 1}, settled | {reconsume_times - 1}
    return word, PlanCursor(cursor.used + 1, settled, repeat), True


def later_not_stored(cursor: PlanCursor, reconsume_times: int, level: int = 0) -> PlanCursor:
    """DefaultMQPushConsumerImpl.sendMessageBack failed and so did the client's re-send: the retry
    exists only as the consumer's local re-consume, lost if the consumer dies, so a redelivery of
    this attempt must answer LATER again (asking for the same ``level``)."""
    asked = cursor.asked + ((reconsume_times, level),) if level else cursor.asked
    return PlanCursor(cursor.used, cursor.settled - {reconsume_times}, cursor.repeat | {reconsume_times}, asked)


def sent_back_unasked(cursor: PlanCursor, reconsume_times: int) -> PlanCursor:
    """A batch consumer sent attempt ``reconsume_times`` back by its ack index without asking the
    plan (:func:`by_ack_index`): the attempt is settled (its retry is stored), no entry is taken, and
    a redelivery of it is acknowledged OK like any settled attempt's (no second retry chain)."""
    return PlanCursor(cursor.used, cursor.settled | {reconsume_times}, cursor.repeat, cursor.asked)


def orderly_later(cursor: PlanCursor, reconsume_times: int) -> PlanCursor:
    """ConsumeMessageOrderlyService.processConsumeResult (reference.orderly): an orderly consumer's
    LATER suspends the queue and the retry is the same stored copy re-consumed by this consumer,
    never stored: a redelivery of this attempt (the consumer died, the queue moved) must answer
    LATER again, as :func:`later_not_stored`'s does."""
    return later_not_stored(cursor, reconsume_times)


def orderly_next(plan: tuple[str, ...], cursor: PlanCursor, reconsume_times: int,
                 max_reconsume_times: int) -> tuple[str, PlanCursor, bool]:
    """:func:`next_answer` for an orderly consumer (reference.orderly): its retries are local
    re-consumes of one stored copy, and a death loses the whole chain (the stored copy comes back
    with count 0), so an attempt it answered LATER is not settled by the attempt after it: a
    redelivery answers every such attempt LATER again (no entry taken) and the plan goes on where
    it stopped. Each LATER is :func:`orderly_later`. Once the chain ended — an OK, or a LATER at
    ``max_reconsume_times``, which checkReconsumeTimes sends to the DLQ — every attempt is settled:
    a redelivery is acknowledged OK (a second DLQ entry would be the consumer's doing)."""
    word, new, taken = next_answer(plan, cursor, reconsume_times)
    new = PlanCursor(new.used, new.settled - cursor.repeat, new.repeat | cursor.repeat, new.asked)
    outcome = answer_word(word)
    if outcome == CRASH:
        return word, new, taken
    if outcome == LATER and reconsume_times < max_reconsume_times:
        return word, orderly_later(new, reconsume_times), taken
    return word, PlanCursor(new.used, new.settled | new.repeat | {reconsume_times}, frozenset(), ()), taken


def replay_cursor(plan: tuple[str, ...], delivered, orderly_max: int | None = None) -> PlanCursor:
    """The cursor after the given deliveries, in order: how a restarted consumer rebuilds its plan
    positions from its own events file. Each is its reconsume_times, or (reconsume_times, True) for
    one sent back by a batch's ack index (:func:`sent_back_unasked`); ``orderly_max``: an orderly
    consumer's, with its maxReconsumeTimes (:func:`orderly_next`)."""
    cursor = PlanCursor()
    for item in delivered:
        rt, unasked = item if isinstance(item, tuple) else (item, False)
        if unasked:
            cursor = sent_back_unasked(cursor, rt)
        elif orderly_max is not None:
            cursor = orderly_next(plan, cursor, rt, orderly_max)[1]
        else:
            cursor = next_answer(plan, cursor, rt)[1]
    return cursor


@dataclass(frozen=True)
class BatchAnswer:
    """How the harness's consumer answers one call of its listener (:func:`answer_batch`): each
    message's recorded outcome and plan cursor after it (up to and including a CRASH: the rest of
    the call is never answered), the delay level the failing LATER asked for, the ack index
    (ConsumeConcurrentlyContext.ackIndex: the last message consumed, -1 none), whether it died, and
    whether the failing word was ``SLOW``: the listener holds the call past consumeTimeout (the
    client's clean-up sends the message back: reference.timeout) and then answers it consumed."""

    outcomes: tuple[str, ...]
    cursors: tuple[PlanCursor, ...]
    level: int
    ack_index: int
    crashed: bool
    held: bool = False


def answer_batch(batch, orderly_max: int | None = None) -> BatchAnswer:
    """ConsumeMessageConcurrentlyService.processConsumeResult as the harness's consumers (the real
    one and the simulator's) answer a call of the listener with ``batch``, a sequence of (plan,
    cursor, reconsume_times[, key]): each message by its plan, in order, until one is not answered OK
    (a key met twice in one call — two stored copies of it pulled together, a scheduler duplicate —
    is answered the second time from the cursor its first answer left: a redelivery); a
    LATER (``LATER:n``: asking for level n) ends the answers there and the ack index is the message
    before it; every message after it is sent back without its plan being asked (recorded LATER:
    :func:`sent_back_unasked`); a CRASH ends the call. ``orderly_max``: an orderly consumer's
    maxReconsumeTimes (its LATER's retry is its own: :func:`orderly_next`)."""
    outcomes: list[str] = []
    cursors: list[PlanCursor] = []
    failed_at, level, held = None, 0, False
    left: dict = {}  # key -> the cursor its last answer in this call left
    for i, (plan, cursor, reconsume_times, *key) in enumerate(batch):
        cursor = left.get(key[0], cursor) if key else cursor
        if failed_at is None:
            word, cursor, _ = (next_answer(plan, cursor, reconsume_times) if orderly_max is None
                               else orderly_next(plan, cursor, reconsume_times, orderly_max))
            outcome = answer_word(word)
            if outcome not in (OK, LATER, CRASH):
                outcome = OK
            if outcome == LATER:
                failed_at, level, held = i, later_level(word), word == SLOW
        else:
            outcome, cursor = LATER, sent_back_unasked(cursor, reconsume_times)
        outcomes.append(outcome)
        cursors.append(cursor)
        if key:
            left[key[0]] = cursor
        if outcome == CRASH:
            return BatchAnswer(tuple(outcomes), tuple(cursors), level, i - 1, True)
    if held:  # the listener answers OK after the clean-up sent the message back
        return BatchAnswer(tuple(outcomes), tuple(cursors), level, len(outcomes) - 1, False, True)
    ack = (len(outcomes) if failed_at is None else failed_at) - 1
    return BatchAnswer(tuple(outcomes), tuple(cursors), level, ack, False)


@dataclass(frozen=True)
class PlanOutcome:
    """Where a plan leads under ``max_reconsume_times`` (the broker's DLQ rule applied).

    ``last_attempt``: the reconsume_times of the last attempt delivered; ``final_state``:
    ``CONSUMED`` or ``DLQ``; ``crashes[k]``: the CRASH answers given on attempt k; ``asked[k - 1]``:
    the delay level the LATER of attempt k - 1 asked for retry k (0: the broker's choice);
    ``timed_out``: the attempts answered ``SLOW`` (sent back by the client's clean-up a consume
    timeout after their delivery: reference.timeout)."""

    last_attempt: int
    final_state: str
    crashes: tuple[int, ...]
    asked: tuple[int, ...] = ()
    timed_out: frozenset[int] = frozenset()


def plan_outcome(plan: tuple[str, ...], max_reconsume_times: int) -> PlanOutcome:
    """SendMessageProcessor.asyncConsumerSendMsgBack (4.9.x; consumerSendMsgBack 5.x): a LATER on
    an attempt whose reconsume_times >= maxReconsumeTimes, or one that asked for a delay level below
    0, sends the message to the DLQ instead of a retry."""
    attempt = 0
    crashes = [0]
    asked: list[int] = []
    slow: set[int] = set()
    for word in plan:
        if is_later(word):
            if word == SLOW:
                slow.add(attempt)
            if attempt >= max_reconsume_times or later_level(word) < 0:
                return PlanOutcome(attempt, "DLQ", tuple(crashes), tuple(asked), frozenset(slow))
            asked.append(later_level(word))
            attempt += 1
            crashes.append(0)
        elif word == CRASH:
            crashes[attempt] += 1
        else:
            break
    return PlanOutcome(attempt, "CONSUMED", tuple(crashes), tuple(asked), frozenset(slow))


def with_ack_laters(plan: tuple[str, ...], sent_back: dict[int, int]) -> tuple[str, ...]:
    """The answers a batch consumer gave a message: its plan, with a LATER asking for the level
    ``sent_back[k]`` put in at each attempt k that was sent back by the ack index (:func:`by_ack_index`:
    no plan entry taken; the plan goes on at the next attempt)."""
    if not sent_back:
        return plan
    out: list[str] = []
    attempt, i = 0, 0
    while True:
        if attempt in sent_back:
            out.append(later_word(sent_back[attempt]))
            attempt += 1
            continue
        if i >= len(plan):
            return tuple(out)  # after the plan ends the consumer answers OK
        word = plan[i]
        i += 1
        out.append(word)
        if is_later(word):
            attempt += 1
        elif word != CRASH:
            return tuple(out)


def resent_instead(plan: tuple[str, ...], attempt: int) -> tuple[str, ...]:
    """The answers of a message whose send-back of ``attempt`` failed and the client re-sent it
    (DefaultMQPushConsumerImpl.sendMessageBack's fallback: reference.retry.send_back_route): the
    re-send asks for 3 + reconsumeTimes whatever the LATER asked, so a ``LATER:-1`` there is a
    plain LATER (a retry, not the DLQ at once) and the plan goes on at the next attempt."""
    out, seen = list(plan), 0
    for i, word in enumerate(plan):
        if is_later(word):
            if seen == attempt:
                out[i] = LATER
                return tuple(out)
            seen += 1
    return plan
