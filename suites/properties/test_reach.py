"""The states a scenario exists to reach (``reference.reach``): each proved from the run's events,
and a run that did not get there says why (the runner makes it broken)."""

from __future__ import annotations

from hypothesis import given, strategies as st

from hourglass.reference.levels import parse_level_table
from hourglass.reference.reach import DUE_DURING_STOP, SLOW_LOAD, unreached
from hourglass.reference.profile import FIRST_FLUSH_DELAY_MS

TABLE = parse_level_table("1s 2s 3s 4s 5s")


def fault(ts: int, action: str, **kw) -> dict:
    return {"type": "fault", "ts_ms": ts, "action": action, "target": "broker", **kw}


def send(born: int, acked: int, level: int, status: str = "SEND_OK") -> dict:
    return {"type": "send", "ts_ms": acked, "born_ms": born, "key": f"k{born}", "delay_level": level, "status": status}


@given(took=st.integers(0, 60_000))
def test_a_throttled_start_reaches_a_slow_load_only_if_it_outlasted_the_first_persist(took):
    events = [fault(1_000, "kill"), fault(2_000, "cpu_throttle", cpu_permille=100), fault(2_000, "start"),
              fault(2_000 + took, "ready"), fault(2_001 + took, "cpu_unthrottle")]
    why = unreached((SLOW_LOAD,), events, TABLE)
    assert (why is None) == (took >= FIRST_FLUSH_DELAY_MS)
    if why:
        assert why.startswith("slow_load: not reached") and f"ready {took} ms later" in why


def test_a_start_without_a_quota_or_the_setup_start_proves_no_slow_load():
    setup = [fault(0, "cpu_throttle", cpu_permille=100, cause="setup"), fault(0, "start", cause="setup"),
             fault(30_000, "ready", cause="setup")]
    plain = [fault(40_000, "kill"), fault(41_000, "start"), fault(70_000, "ready")]
    assert "no start of the broker under a CPU quota" in unreached((SLOW_LOAD,), setup + plain, TABLE)
    lifted = [fault(40_000, "cpu_throttle", cpu_permille=100), fault(40_500, "cpu_unthrottle"), *plain]
    assert unreached((SLOW_LOAD,), lifted, TABLE) is not None


@given(lead=st.integers(-3_000, 3_000), shutdown=st.integers(0, 3_000), in_flight=st.integers(0, 200))
def test_a_message_falls_due_during_a_graceful_stop_only_if_its_whole_due_range_is_inside(lead, shutdown, in_flight):
    """Level 3 (3 s): sent at [born, born + in_flight], due 3 s later; the stop at 10 s."""
    born = 10_000 - 3_000 + lead
    events = [send(born, born + in_flight, 3), fault(10_000, "stop"), fault(10_000 + shutdown, "stopped")]
    reached = unreached((DUE_DURING_STOP,), events, TABLE) is None
    assert reached == (born + 3_000 >= 10_000 and born + in_flight + 3_000 <= 10_000 + shutdown)


def test_kills_failed_sends_and_unfinished_stops_prove_nothing_fell_due_during_a_stop():
    due_at_10s = send(7_000, 7_001, 3)
    assert "no graceful stop" in unreached((DUE_DURING_STOP,), [due_at_10s, fault(9_900, "kill")], TABLE)
    assert "no graceful stop" in unreached((DUE_DURING_STOP,), [due_at_10s, fault(9_900, "stop")], TABLE)
    failed = send(7_000, 7_001, 3, status="FAILED")
    assert "no delayed message fell due" in unreached((DUE_DURING_STOP,), [failed, fault(9_900, "stop"),
                                                                           fault(11_000, "stopped")], TABLE)
    plain = {**due_at_10s, "delay_level": 0}
    assert unreached((DUE_DURING_STOP,), [plain, fault(9_900, "stop"), fault(11_000, "stopped")], TABLE) is not None
    assert unreached((DUE_DURING_STOP,), [due_at_10s, fault(9_900, "stop"), fault(11_000, "stopped")], TABLE) is None
