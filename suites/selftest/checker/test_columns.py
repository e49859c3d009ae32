"""The columnar judge (``reports.judge_columnar.judge_table``, what the Spark job runs) gives exactly the
judgements of the event-at-a-time reference path (``reports.judge_events.judge_bucket``).

The columnar judge takes the plain keys over whole columns and hands every other key to the dict
path; a wrong split would silently drop or invent findings. Each run below is judged both ways:
the hand-made cases, the simulator's runs of the conformance and chaos catalogues on the clean
broker and under every defect, generated chaos scenarios, and runs mutated at random (a delivery
dropped, duplicated, moved in time, re-routed, its body changed).
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hourglass.adapters.simulated.defects import Defect
from suites.selftest.harness.defect_runs import reaches, simulate
from hourglass.reference.profile import LOCAL_RETRY_DELAY_MS
from hourglass.reports.judge_columnar import judge_table
from hourglass.reports.judge_events import judge_bucket
from hourglass.reports.rows import table_from_events
from hourglass.harness.catalogue.generate import sample
from hourglass.harness.catalogue.chaos import NIGHTLY
from hourglass.harness.catalogue.conformance import CONFORMANCE
from suites.selftest.checker import cases

def _summary(rows: list[tuple]) -> dict:
    """Judgements, order-free: violations and pending as multisets, counts summed, plots merged."""
    out = {"v": Counter(), "p": Counter(), "c": Counter(), "s": Counter(), "lo": set(), "e": [],
           "plot": {"lateness": Counter(), "lateness_widened": Counter(), "lateness_timer": Counter(), "lateness_time": Counter(),
                    "gaps": Counter(),
                    "gap_expected": {}, "timeline": Counter(), "duplicates": Counter()}}
    for _run_id, _bucket, kind, key, level, store, send_ts, born, payload in rows:
        if kind in ("v", "p"):
            out[kind][json.dumps(json.loads(payload), sort_keys=True)] += 1
        elif kind in ("c", "s"):
            out[kind].update(json.loads(payload))
        elif kind == "lo":
            out["lo"].add((key, level, store, send_ts, born))
        elif kind == "e":
            out["e"].append(payload)
        elif kind == "plot":
            p = json.loads(payload)
            for part in ("lateness", "lateness_widened", "lateness_timer"):
                for lv, bins in p[part].items():
                    out["plot"][part].update({(lv, b): n for b, n in bins.items()})
            out["plot"]["lateness_time"].update({(b, late, w): n for b, late, w, n in p["lateness_time"]})
            for a, bins in p["gaps"].items():
                out["plot"]["gaps"].update({(a, b): n for b, n in bins.items()})
            out["plot"]["gap_expected"].update(p["gap_expected"])
            out["plot"]["timeline"].update({(b, o): n for b, o, n in p["timeline"]})
            out["plot"]["duplicates"].update(p["duplicates"])
    for k in ("c", "s"):
        out[k] = +out[k]
    return out


def _both(run: dict, events: list[dict]):
    ended = run.get("ended_ms") or None  # None: an interrupted run
    from hourglass.reports.plots import timeline_bin_ms

    width = timeline_bin_ms(run)
    reference = _summary(judge_bucket(run, events, ended, width))
    judged = judge_table(run, 0, table_from_events(events), ended, width).to_pylist()
    columnar = _summary([tuple(r.values()) for r in judged if r["kind"] not in ("u", "tg", "f")])
    return reference, columnar


def _assert_same(run: dict, events: list[dict]) -> None:
    reference, columnar = _both(run, events)
    for part in reference:
        assert columnar[part] == reference[part], f"{run['run_id']}: {part} differs"


@pytest.mark.parametrize("case", [n for n in dir(cases) if callable(getattr(cases, n)) and not n.startswith("_")
                                  and getattr(getattr(cases, n), "__module__", "") == cases.__name__])
def test_hand_made_cases_judged_alike(case):
    b = getattr(cases, case)()
    _assert_same(b.run_json(), b.events)


def _load(run_dir: Path) -> tuple[dict, list[dict]]:
    run = json.loads((run_dir / "run.json").read_text())
    events = [json.loads(line) for f in sorted(run_dir.glob("events*.jsonl")) + sorted(run_dir.glob("events/*.jsonl"))
              for line in f.read_text().splitlines() if line.strip()]
    return run, events


@pytest.fixture(scope="module")
def simulated_runs(tmp_path_factory) -> list[tuple[dict, list[dict]]]:
    scenarios = list(CONFORMANCE + NIGHTLY) + sample(seed=11, count=12)
    # each defect on the scenarios it can reach (the others are clean runs again)
    runs = simulate(scenarios, list(Defect), tmp_path_factory.mktemp("columns"), reaches=reaches)
    return [_load(Path(run_dir)) for rs in runs.values() for _, run_dir in rs]


def test_simulated_runs_judged_alike(simulated_runs):
    assert len(simulated_runs) >= 10 * 30
    for run, events in simulated_runs:
        _assert_same(run, events)


MUTATIONS = ("drop", "duplicate", "recopy", "shift", "retopic", "rebody", "reanswer", "restatus", "locally")


def _mutate(events: list[dict], picks: list[tuple[str, int, int]]) -> list[dict]:
    events = copy.deepcopy(events)
    for what, i, amount in picks:
        delivers = [e for e in events if e["type"] == "deliver"]
        sends = [e for e in events if e["type"] == "send"]
        if not delivers:
            return events
        d = delivers[i % len(delivers)]
        if what == "drop":
            events.remove(d)
        elif what == "duplicate":
            twin = dict(d, ts_ms=d["ts_ms"] + amount)
            if amount % 2:
                twin["store_ms"] = d["store_ms"] + amount
                twin["commit_log_offset"] = d.get("commit_log_offset", 0) + 10_000
            events.append(twin)
        elif what == "recopy":  # a later-stored copy (a scheduler re-put repeated) that arrives first
            twin = dict(d, ts_ms=d["ts_ms"] - 1 - amount % 50, store_ms=d["store_ms"] + 1 + amount,
                        commit_log_offset=d.get("commit_log_offset", 0) + 20_000, queue_offset=d["queue_offset"] + 20_000)
            events.append(twin)
        elif what == "shift":
            d["store_ms"] += amount * (1 if i % 2 else -1)
            d["ts_ms"] += amount * (1 if i % 3 else -1)
        elif what == "retopic":
            d["topic"] = "Elsewhere"
        elif what == "rebody":
            d["body_crc"] = (d.get("body_crc") or 0) + 1
        elif what == "reanswer":
            d["outcome"] = ("OK", "LATER", "CRASH")[amount % 3]
        elif what == "locally":  # a retry re-consumed from the stored copy its LATER answered (send-back failed)
            retries = [e for e in delivers if e["reconsume_times"] >= 1]
            if retries:
                r = retries[i % len(retries)]
                answered = [e for e in delivers if (e["key"], e["group"], e["reconsume_times"]) == (r["key"], r["group"], r["reconsume_times"] - 1)
                            and e["outcome"] == "LATER"]
                if answered:
                    a = answered[0]
                    r.update({n: a[n] for n in ("commit_log_offset", "queue_topic", "queue_id", "queue_offset", "store_ms", "topic") if n in a})
                    r["ts_ms"] = a["ts_ms"] + LOCAL_RETRY_DELAY_MS + amount % 6000  # inside the local window, or late
        elif what == "restatus" and sends:
            sends[i % len(sends)]["status"] = ("UNKNOWN", "FAILED", "SEND_OK")[amount % 3]
    return events


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(which=st.integers(0, 10_000),
       picks=st.lists(st.tuples(st.sampled_from(MUTATIONS), st.integers(0, 10_000), st.integers(0, 40_000)), min_size=1, max_size=4))
def test_mutated_runs_judged_alike(simulated_runs, which, picks):
    run, events = simulated_runs[which % len(simulated_runs)]
    _assert_same(run, _mutate(events, picks))
