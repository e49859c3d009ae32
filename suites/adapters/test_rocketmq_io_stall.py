"""The ``io_stall`` fault on real brokers: the store on a loop-mounted ext4 the harness freezes
while delayed messages fall due, retries are sent back and sends go on, then thaws.

What the test holds a broker to is the model's (``reference.faults.io``): sends may time out or be
refused in the stall, due messages are re-put after the thaw, late but never dropped, no duplicate
— the chaos scenario ``io-stall-while-due`` judged by the checker. It also checks the stall was
real (a send in it did not succeed at once, and nothing was stored in it) and that no loop device
is left after the run.
"""

from __future__ import annotations

import pytest

from hourglass.adapters.rocketmq import iostall
from hourglass.harness.catalogue.chaos import io_stall_while_due
from hourglass.harness.verdicts import describe
from suites.adapters.conftest import run_and_check

pytestmark = [pytest.mark.realbroker, pytest.mark.slow]  # nightly: about a minute per version


@pytest.mark.skipif(iostall.unavailable() is not None, reason=str(iostall.unavailable()))
@pytest.mark.parametrize("system_name", ["rocketmq:4.9.7", "rocketmq:latest"])
def test_a_stalled_store_delays_but_loses_nothing(system_name, tmp_path):
    sc = io_stall_while_due()
    _, verdict, run, events = run_and_check(sc, system_name, "process", tmp_path)
    faults = {e["action"]: e["ts_ms"] for e in events if e["type"] == "fault" and e["target"] == "broker"}
    stall, thaw = faults["io_stall"], faults["io_resume"]
    in_stall = [e for e in events if e["type"] == "send" and stall + 1_000 < e["ts_ms"] < thaw]
    stored_in_stall = [e for e in events if e["type"] == "deliver" and stall + 1_000 < e.get("store_ms", 0) < thaw - 1_000]
    print(f"\n{system_name}: {sum(e['status'] != 'SEND_OK' for e in in_stall)} of {len(in_stall)} sends in the stall "
          f"did not succeed; {len(stored_in_stall)} deliveries stored in it")
    assert in_stall and all(e["status"] != "SEND_OK" for e in in_stall), in_stall
    assert not stored_in_stall, stored_in_stall[:3]  # the store took nothing while frozen
    assert verdict["passed"] is True, describe(verdict)
    assert not [d for d in iostall._loops() if str(tmp_path) in d["back-file"]]  # detached with the system
