"""A full store (``reference.disk``): write outages from ``disk_full``/``disk_free`` events, merged
with broker outages into disjoint windows; a message due while the store is full is late, never
allowed to be duplicated or lost."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hourglass.reference.disk import DISK_CHECK_MS, write_outages
from hourglass.reference.expected import build_expected
from hourglass.reference.persistence import scheduler_duplicate_allowed
from hourglass.reference.windows import Outage, merge_outages

T0 = 1_763_800_000_000


def fault(ts, action, target="broker"):
    return {"type": "fault", "ts_ms": ts, "action": action, "target": target}


def test_a_full_store_refuses_writes_until_the_broker_notices_it_was_freed():
    faults = [fault(T0 + 9_000, "disk_free"), fault(T0 + 1_000, "disk_full"), fault(T0 + 20_000, "disk_full"),
              fault(T0 + 5_000, "kill"), fault(T0 + 1_000, "disk_full", "consumer")]
    assert write_outages(faults) == [Outage("disk_full", T0 + 1_000, T0 + 9_000 + DISK_CHECK_MS),
                                     Outage("disk_full", T0 + 20_000, None)]  # never freed: no deadline


@st.composite
def intervals(draw):
    out = []
    for _ in range(draw(st.integers(0, 6))):
        down = T0 + draw(st.integers(0, 100_000))
        up = None if draw(st.booleans()) and not out else down + draw(st.integers(1, 30_000))
        out.append(Outage(draw(st.sampled_from(["kill", "pause", "disk_full"])), down, up))
    return out


@given(intervals())
def test_merged_outages_are_disjoint_ordered_and_cover_every_input(outs):
    merged = merge_outages(outs)
    for a, b in zip(merged, merged[1:]):
        assert a.up_ms is not None and a.up_ms < b.down_ms
    for o in outs:
        assert any(m.down_ms <= o.down_ms and (m.up_ms is None or (o.up_ms is not None and o.up_ms <= m.up_ms))
                   for m in merged)


def _run(faults, delay_level=2):
    run = {"run_id": "r", "profile": {"message_delay_level": "1s 2s 3s", "slack_ms": 1_000, "max_reconsume_times": 16,
                                     "flush_delay_offset_interval_ms": 10_000}}
    send = {"type": "send", "ts_ms": T0, "born_ms": T0, "key": "k", "topic": "T", "delay_level": delay_level,
            "status": "SEND_OK"}
    return build_expected(run, [send, *faults])


def test_a_message_due_while_the_store_is_full_may_come_after_it_was_noticed_free():
    (row,) = _run([fault(T0 + 1_000, "disk_full"), fault(T0 + 6_000, "disk_free")])
    assert row.earliest_ms == T0 + 2_000  # never early
    assert row.latest_ms > T0 + 6_000 + DISK_CHECK_MS and "store full" in row.widened_by
    (row,) = _run([fault(T0 + 5_000, "disk_full"), fault(T0 + 6_000, "disk_free")])
    assert row.latest_ms == T0 + 2_000 + 1_000 and row.widened_by is None  # due and done before the fill


def test_a_full_store_restores_no_offset_so_it_allows_no_scheduler_duplicate():
    faults = [fault(T0 + 1_000, "disk_full"), fault(T0 + 6_000, "disk_free")]
    allowed, reason = scheduler_duplicate_allowed(faults, T0 + 2_000, T0 + 7_000, 10_000, 10_000, 50)
    assert not allowed and "no broker kill -9" in reason
