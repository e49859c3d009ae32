"""The ``partition``, ``latency`` and ``loss`` faults on real brokers (process runtime; the container
runtime nightly: its container starts without a network and gets the veth after each start): the
broker runs in a network namespace of its own and is cut off from every client and the name server for
8 s while delayed messages fall due (``partition-while-due``), everything it sends is delayed by
300 ms for 8 s (``latency-while-due``), or 30 % of its packets are dropped for 8 s
(``loss-while-due``; CI runs it on 4.9.7).

What the test holds a broker to is the model's (``reference.network``): sends in the partition time
out (UNKNOWN, some stored after the heal) or cannot connect (FAILED), the schedule service re-puts on
time (windows unchanged), deliveries come after the heal, nothing is lost, no duplicate — judged by
the checker. It also checks that the fault was real (no send in the partition succeeded and no
consumer received anything in it while messages were re-put; every answer in the latency came late)
and that no namespace or veth is left after the run.
"""

from __future__ import annotations

import subprocess

import pytest

from hourglass.adapters.rocketmq import netns
from hourglass.harness.catalogue.chaos import latency_while_due, loss_while_due, partition_while_due
from hourglass.harness.verdicts import describe
from suites.adapters.conftest import process_first_runtimes, run_and_check

#: CI's hour: a cut moves no re-put on either line; CI runs it on 4.9.7 (with packet loss), 5.x nightly
pytestmark = [pytest.mark.realbroker, pytest.mark.ci_system("rocketmq:4.9.7")]


def _ours() -> tuple[list[str], list[str]]:
    """Our namespaces and veths on this host now."""
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    veths = [line.split(":")[1].strip().split("@")[0] for line in links.splitlines() if ": hgnet" in line]
    return [n for n in netns.namespaces() if netns.owner_of(n)], veths


@pytest.mark.skipif(netns.unavailable() is not None, reason=str(netns.unavailable()))
@pytest.mark.parametrize("runtime", process_first_runtimes())
def test_a_partition_delays_deliveries_but_moves_no_re_put(system_name, runtime, tmp_path):
    before = _ours()
    _, verdict, run, events = run_and_check(partition_while_due(), system_name, runtime, tmp_path)
    cut = [e["ts_ms"] for e in events if e["type"] == "fault" and e["action"] in ("partition", "partition_end")]
    assert len(cut) == 2, cut
    start, end = cut
    in_cut = [e for e in events if e["type"] == "send" and start < e["born_ms"] < end]
    delivered = [e for e in events if e["type"] == "deliver"]
    print(f"\n{system_name} ({runtime}, netns {run['system'].get('broker_network')}): partition {end - start} ms; "
          f"sends in it: {[e['status'] for e in in_cut]}; deliveries in it: "
          f"{sum(start < e['ts_ms'] < end for e in delivered)}, re-puts in it: "
          f"{sum(start < e['store_ms'] < end for e in delivered)}; recovered {verdict.get('recovered')}; "
          f"verdict passed {verdict['passed']}; run {(run['ended_ms'] - run['started_ms']) / 1000:.0f} s")
    # the cut was real: the first send timed out (UNKNOWN), the next could not connect (FAILED)
    assert in_cut and "SEND_OK" not in {e["status"] for e in in_cut} and in_cut[0]["status"] == "UNKNOWN", in_cut
    assert not any(start + 500 < e["ts_ms"] < end for e in delivered)  # nothing reached a consumer in it
    assert any(start < e["store_ms"] < end for e in delivered)  # while the schedule service re-put on time
    assert verdict["passed"] is True, describe(verdict)
    assert _ours() == before  # the namespace and its veth went with the system


@pytest.mark.skipif(netns.unavailable() is not None, reason=str(netns.unavailable()))
def test_latency_delays_what_the_broker_sends_but_moves_no_re_put(system_name, tmp_path):
    before = _ours()
    _, verdict, run, events = run_and_check(latency_while_due(), system_name, "process", tmp_path, skip_if_skipped=True)
    (slow,) = [e for e in events if e["type"] == "fault" and e["action"] == "latency"]
    (fast,) = [e for e in events if e["type"] == "fault" and e["action"] == "latency_end"]
    round_trips = sorted(e["ts_ms"] - e["born_ms"] for e in events
                         if e["type"] == "send" and slow["ts_ms"] < e["born_ms"] < fast["ts_ms"] - 1_000)
    print(f"\n{system_name} (process): latency {slow['delay_ms']} ms for {fast['ts_ms'] - slow['ts_ms']} ms; "
          f"send round trips in it (ms): min {round_trips[0]}, median {round_trips[len(round_trips) // 2]}; "
          f"verdict passed {verdict['passed']}; run {(run['ended_ms'] - run['started_ms']) / 1000:.0f} s")
    assert round_trips and round_trips[0] >= slow["delay_ms"]  # every answer came delay_ms late: the delay was real
    assert verdict["passed"] is True, describe(verdict)
    assert _ours() == before


@pytest.mark.skipif(netns.unavailable() is not None, reason=str(netns.unavailable()))
@pytest.mark.parametrize("runtime", process_first_runtimes())
@pytest.mark.parametrize("system", [pytest.param("rocketmq:4.9.7", id="4.9.7", marks=pytest.mark.slow),
                                    pytest.param("rocketmq:latest", id="latest", marks=pytest.mark.slow)])
def test_packet_loss_slows_the_broker_s_answers_but_moves_no_re_put(system, runtime, tmp_path):
    before = _ours()
    _, verdict, run, events = run_and_check(loss_while_due(), system, runtime, tmp_path)
    (lossy,) = [e for e in events if e["type"] == "fault" and e["action"] == "loss"]
    (clean,) = [e for e in events if e["type"] == "fault" and e["action"] == "loss_end"]
    in_loss = [e for e in events if e["type"] == "send" and lossy["ts_ms"] < e["born_ms"] < clean["ts_ms"]]
    slow = [e for e in in_loss if e["status"] != "SEND_OK" or e["ts_ms"] - e["born_ms"] >= 200]  # a retransmission
    print(f"\n{system} ({runtime}): {lossy['loss_percent']} % loss for {clean['ts_ms'] - lossy['ts_ms']} ms; sends in it: "
          f"{len(in_loss)}, {len(slow)} retransmitted or timed out ({[e['status'] for e in in_loss]}); "
          f"verdict passed {verdict['passed']}; run {(run['ended_ms'] - run['started_ms']) / 1000:.0f} s")
    assert lossy["loss_percent"] == 30
    assert slow, "no send in the loss came late: were packets dropped?"
    assert verdict["passed"] is True, describe(verdict)
    assert _ours() == before
