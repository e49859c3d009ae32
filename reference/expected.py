"""The expected table: what a correct broker must do with each message of a run.

INTERFACE (agreed between the model and the checker; the model issue implements it, the checker
consumes it). Pure: no I/O, no clock. Inputs are the parsed ``run.json`` and the run's contract
events (any order); outputs are plain frozen dataclasses whose fields are flat scalars, so a Spark
job can turn them into rows (``dataclasses.asdict``) and join deliveries on
``(run_id, key, attempt)``.

- attempt k of a message is the set of deliveries with ``reconsume_times`` = k.
- Attempt 0 is anchored at the send (``born_ms`` for NOT_EARLY, the send's ``ts_ms`` for ON_TIME);
  attempt k >= 1 is anchored at the ``ts_ms`` of the first ``LATER`` delivery of attempt k-1 (an
  observation: when it is missing, ``earliest_ms``/``latest_ms`` are ``None``, the attempt cannot
  be judged for timing and the message is judged by NO_LOSS/RETRY_SCHEDULE instead).
- ``latest_ms`` already includes ``slack_ms`` and the widening by broker outages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping


@dataclass(frozen=True)
class ExpectedAttempt:
    run_id: str
    key: str
    attempt: int  # reconsume_times of this attempt
    topic: str  # the application topic the consumer must see
    queue_topic: str | None  # topic of the queue it must come from (None: the application topic)
    send_status: str  # SEND_OK / UNKNOWN / FAILED
    requested_level: int  # attempt 0: the send's delay_level; retry k: 3 + k - 1 (before clamping)
    level: int  # effective level after clamping; 0 = not delayed
    clamped: bool
    delay_ms: int  # delay of ``level`` (timer: deliver_at - born)
    earliest_ms: int | None  # NOT_EARLY: store_ms of the first delivery must be >= this
    latest_ms: int | None  # ON_TIME: store_ms of the first delivery must be <= this
    widened_by: str | None  # the outage that widened latest_ms, human-readable, or None
    final: bool  # the last attempt the plan leads to
    final_state: str  # of the message: "CONSUMED" or "DLQ"


@dataclass(frozen=True)
class DuplicateRuling:
    allowed: bool
    cause: str  # "scheduler" (new stored copy) or "consumer" (same stored copy redelivered)
    reason: str  # one sentence: which rule allowed or forbade it, and the fault involved


def build_expected(run: Mapping, events: Iterable[Mapping]) -> list[ExpectedAttempt]:
    """Expected attempts of every message sent in the run (FAILED sends yield attempt rows with
    ``send_status`` FAILED so the checker can flag deliveries of them).

    ``run`` is ``run.json`` as a dict; its ``profile`` is parsed with the model's profile parser
    (a bad field raises ``reference.contract.ContractError`` naming it)."""
    raise NotImplementedError  # implemented by the reference-model issue


def rule_duplicate(run: Mapping, faults: Iterable[Mapping], first: Mapping, second: Mapping) -> DuplicateRuling:
    """Rule on a second delivery ``second`` of the same (key, attempt) as ``first`` (both
    ``deliver`` events), given the run's ``fault`` events: NO_DUPLICATE of DESIGN.md."""
    raise NotImplementedError  # implemented by the reference-model issue
