"""Broadcasting in the model (reference.broadcast, reference.modes): a plan's end in one instance,
the units a broadcasting group stands for, and the run.json field that names them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hourglass.reference.broadcast import DROPPED, broadcast_outcome
from hourglass.reference.contract import ContractError
from hourglass.reference.expected import build_expected
from hourglass.reference.modes import group_of, unit_group
from hourglass.reference.plans import CRASH, LATER, OK
from hourglass.reference.profile import parse_profile, profile_to_json

T0 = 1_763_800_000_000
PROFILE = {"message_delay_level": "1s 2s 3s", "max_reconsume_times": 16, "flush_delay_offset_interval_ms": 10_000,
           "slack_ms": 3000, "broadcasting_groups": {"g": 3}}


@given(st.lists(st.sampled_from([OK, LATER, CRASH, "LATER:4"]), max_size=6))
def test_the_first_answer_that_is_not_a_crash_ends_a_broadcast_message(plan):
    out = broadcast_outcome(tuple(plan))
    first = next((w for w in plan if w != CRASH), OK)
    assert out.last_attempt == 0
    assert out.final_state == ("CONSUMED" if first == OK else DROPPED)
    assert out.crashes == (plan.index(first) if first in plan else len(plan),)


def test_a_unit_names_its_group_and_instance():
    assert unit_group("cg-news", 2) == "cg-news@2" and group_of("cg-news@2") == "cg-news" and group_of("cg") == "cg"


def test_every_instance_owes_every_message_even_one_that_delivered_nothing():
    send = {"type": "send", "ts_ms": T0 + 5, "key": "k", "topic": "T", "status": "SEND_OK", "born_ms": T0, "plan": [LATER]}
    seen = {"type": "deliver", "ts_ms": T0 + 20, "key": "k", "group": "g@1", "topic": "T", "queue_id": 0, "queue_offset": 0,
            "msg_id": "m", "reconsume_times": 0, "born_ms": T0, "store_ms": T0 + 10, "outcome": LATER}
    rows = build_expected({"run_id": "r", "profile": PROFILE}, [send, seen])
    assert sorted((r.group, r.attempt, r.final_state, r.final) for r in rows) == [
        ("g@0", 0, DROPPED, True), ("g@1", 0, DROPPED, True), ("g@2", 0, DROPPED, True)]


def test_the_profile_names_broadcasting_groups_with_their_instances():
    prof = parse_profile(PROFILE)
    assert prof.broadcast_units("g") == ("g@0", "g@1", "g@2") and prof.broadcast_units("h") is None
    assert profile_to_json(prof)["broadcasting_groups"] == {"g": 3}
    with pytest.raises(ContractError) as e:
        parse_profile({**PROFILE, "broadcasting_groups": {"g": 0}})
    assert e.value.field == "g"
