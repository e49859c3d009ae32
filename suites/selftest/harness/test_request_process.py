"""The client process and the consumer host take requests concurrently
(``adapters.rocketmq.clientlink._RequestProcess``): a run's slow request (a DLQ read, a consumer's
start) holds up no other run's, each reply reaches the request that carries its id, a request the
process never answers times out alone, and the process's end fails every request in flight at once.
The process here is a stand-in speaking the same protocol; no broker runs."""

from __future__ import annotations

import threading
import time

import pytest

from hourglass.adapters.base import AdapterError
from hourglass.adapters.rocketmq.clientlink import ClientError, ClientProcess, _RequestProcess

STAND_IN = r"""
import json, sys, threading, time
print(json.dumps({"id": None, "ok": True, "hello": True}), flush=True)
lock = threading.Lock()
def answer(req):
    if req["cmd"] == "slow":
        time.sleep(req["s"])
    if req["cmd"] == "never":
        return
    if req["cmd"] == "die":
        import os; os._exit(3)
    reply = {"id": req["id"], "ok": req["cmd"] != "fail", "cmd": req["cmd"], "error": "refused"}
    with lock:
        print(json.dumps(reply), flush=True)
for line in sys.stdin:
    threading.Thread(target=answer, args=(json.loads(line),)).start()
"""


class StandIn(ClientProcess):
    def __init__(self, tmp_path):
        script = tmp_path / "stand_in.py"
        script.write_text(STAND_IN)
        _RequestProcess.__init__(self, [str(script)], tmp_path / "stand-in.log", "stand-in", 30)


@pytest.fixture
def stand_in(tmp_path):
    proc = StandIn(tmp_path)
    yield proc
    proc.kill()


def test_a_slow_request_holds_up_no_other(stand_in):
    done = {}

    def slow():
        done["slow"] = stand_in.request("slow", timeout_s=30, s=3)["cmd"], time.monotonic()

    t = threading.Thread(target=slow)
    t.start()
    time.sleep(0.3)  # the slow one is in flight
    fast = stand_in.request("fast", timeout_s=30)
    fast_at = time.monotonic()
    t.join()
    assert fast["cmd"] == "fast" and done["slow"][0] == "slow"
    assert fast_at < done["slow"][1], "the fast request waited for the slow one"


def test_a_refusal_is_the_clients_error_and_an_unanswered_request_times_out_alone(stand_in):
    with pytest.raises(ClientError, match="refused"):
        stand_in.request("fail", timeout_s=10)
    with pytest.raises(AdapterError, match="no answer within 1 s"):
        stand_in.request("never", timeout_s=1)
    assert stand_in.request("fast", timeout_s=10)["cmd"] == "fast"


def test_the_end_of_the_process_fails_every_request_in_flight(stand_in):
    errors = []

    def waiting():
        try:
            stand_in.request("never", timeout_s=60)
        except AdapterError as e:
            errors.append(str(e))

    waiters = [threading.Thread(target=waiting) for _ in range(3)]
    for w in waiters:
        w.start()
    time.sleep(0.3)
    started = time.monotonic()
    with pytest.raises(AdapterError, match="exited with status 3"):
        stand_in.request("die", timeout_s=60)
    for w in waiters:
        w.join(10)
    assert len(errors) == 3 and all("exited with status 3" in e for e in errors), errors
    assert time.monotonic() - started < 10, "the requests in flight waited for their timeouts"
    with pytest.raises(AdapterError, match="not running"):
        stand_in.request("fast", timeout_s=10)


def test_a_start_that_times_out_leaves_no_process_behind(tmp_path):
    """Proof C: a consumer whose start timed out on a starved host went on running, unknown to the
    harness (a second member of its group beside its replacement) until the harness exited."""
    import os

    script = tmp_path / "mute.py"
    script.write_text("import os, sys, time\nprint(os.getpid(), file=sys.stderr, flush=True)\ntime.sleep(60)\n")
    with pytest.raises(AdapterError, match="no answer within 1 s"):
        _RequestProcess([str(script)], tmp_path / "mute.log", "mute", 1)
    pid = int((tmp_path / "mute.log").read_text().split()[0])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        os.kill(pid, 9)
        pytest.fail(f"the process {pid} of a start that timed out is still running")
