"""The per-key invariants are units that both judging paths iterate (``reports.invariants``): found
by their catalogue name, one per invariant not judged per run, each holding its event-at-a-time
rule and its columnar fast path; and the stored copy is one rule (``reference.stored_copy``) on both
paths."""

from __future__ import annotations

import numpy as np
import pytest

from hourglass.reference.contract import INVARIANTS
from hourglass.reference.stored_copy import same_stored_copy, stored_copy_key
from hourglass.reports.invariants import PER_RUN, UNITS
from hourglass.reports.invariants.base import Invariant
from hourglass.reports.judge_columnar import DELIVER_FIELDS, _same_copy
from hourglass.reports.rows import table_from_events


def test_every_catalogue_invariant_has_a_unit_or_a_per_run_module():
    assert [u.name for u in UNITS] == [n for n in INVARIANTS if n not in PER_RUN]
    assert set(PER_RUN) < set(INVARIANTS)


@pytest.mark.parametrize("unit", UNITS, ids=lambda u: u.name)
def test_each_unit_holds_both_paths(unit):
    cls = type(unit)
    assert cls.__module__ == f"hourglass.reports.invariants.{unit.name.lower()}"
    assert cls.attempt is not Invariant.attempt or cls.message is not Invariant.message, "no event-at-a-time rule"
    assert cls.plain is not Invariant.plain, "no columnar fast path"


def _deliver(**fields) -> dict:
    d = {"type": "deliver", "ts_ms": 1, "key": "k", "group": "g", "topic": "T", "queue_id": 0, "queue_offset": 5,
         "msg_id": "m", "reconsume_times": 0, "born_ms": 0, "store_ms": 1, "outcome": "OK"}
    d.update(fields)
    return {k: v for k, v in d.items() if v is not None}


PAIRS = [
    ({"commit_log_offset": 7}, {"commit_log_offset": 7}, True),
    ({"commit_log_offset": 7}, {"commit_log_offset": 8}, False),
    ({"commit_log_offset": 7, "broker": "a"}, {"commit_log_offset": 7, "broker": "a"}, True),
    ({"commit_log_offset": 7, "broker": "a"}, {"commit_log_offset": 7, "broker": "b"}, False),
    ({"commit_log_offset": 7, "broker": "a"}, {"commit_log_offset": 7}, False),  # no broker name: a broker of its own
    ({}, {}, True),  # no offsets: the queue position
    ({}, {"queue_offset": 6}, False),
    ({"queue_topic": "T"}, {}, True),  # no queue topic: the topic's own queue
    ({"queue_topic": "%RETRY%g"}, {}, False),
    ({"commit_log_offset": 7}, {}, False),  # an offset names the copy; a position without one is another key
]


@pytest.mark.parametrize("one,other,same", PAIRS)
def test_one_stored_copy_rule_on_both_paths(one, other, same):
    a, b = _deliver(**one), _deliver(**other)
    assert same_stored_copy(a, b) is same and (stored_copy_key(a) == stored_copy_key(b)) is same
    table = table_from_events([a, b]).select([n for n in DELIVER_FIELDS if n != "type"] + ["type"])
    assert _same_copy(table, np.array([0]), np.array([1])).tolist() == [same]
