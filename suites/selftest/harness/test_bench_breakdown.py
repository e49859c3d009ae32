"""The time-to-verdict benchmark's breakdown (``harness.bench``): where a run's time went, read
back from the run directory's own observations."""

from __future__ import annotations

import json

from hourglass.harness.bench import PHASES, breakdown, run_phases

T0 = 1_700_000_000_000


def _run(root, name, started, ended, setup, events):
    d = root / name
    (d / "events").mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"run_id": name, "scenario": name, "started_ms": started, "ended_ms": ended,
                                            "system": {"broker_setup_ms": setup}}))
    (d / "events" / "harness.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return d


def _events(consumers_up, sends, got, run_end):
    return ([{"type": "snapshot", "ts_ms": consumers_up, "source": "brokerStatus", "offsets": {}, "moment": "run_start"}]
            + [{"type": "send", "ts_ms": t, "key": f"k{t}"} for t in sends]
            + [{"type": "deliver", "ts_ms": t, "key": f"d{t}"} for t in got]
            + [{"type": "snapshot", "ts_ms": run_end, "source": "brokerStatus", "offsets": {}, "moment": "run_end"}])


def test_phases_are_the_spans_between_the_runs_observations(tmp_path):
    d = _run(tmp_path, "a", T0 + 10_000, T0 + 60_000, [T0, T0 + 9_000],
             _events(T0 + 14_000, [T0 + 14_500, T0 + 15_000], [T0 + 20_000, T0 + 45_000], T0 + 48_000))
    p = run_phases(d)
    assert [p[k] for k in PHASES] == [9.0, 0.0, 4.0, 1.0, 30.0, 3.0, 12.0]  # no setup turn recorded: none waited
    assert sum(p[k] for k in PHASES) == 9.0 + (60_000 - 10_000) / 1000
    # a shared system's run that waited 2.5 s for its setup turn (run.json setup_began_ms: harness.turns)
    run = json.loads((d / "run.json").read_text())
    (d / "run.json").write_text(json.dumps({**run, "setup_began_ms": T0 + 12_500}))
    p = run_phases(d)
    assert [p[k] for k in PHASES] == [9.0, 2.5, 1.5, 1.0, 30.0, 3.0, 12.0]


def test_the_critical_run_is_the_one_that_ended_last(tmp_path):
    _run(tmp_path, "short", T0 + 10_000, T0 + 30_000, [T0, T0 + 9_000],
         _events(T0 + 11_000, [T0 + 11_000], [T0 + 20_000], T0 + 29_000))
    _run(tmp_path, "long", T0 + 20_000, T0 + 90_000, [T0 + 5_000, T0 + 19_000],
         _events(T0 + 25_000, [T0 + 25_000], [T0 + 80_000], T0 + 85_000))
    b = breakdown(tmp_path)
    assert b["critical_run"] == "long"
    assert b["before_its_broker"] == 5.0 and b["broker_setup"] == 14.0 and b["until_last_delivery"] == 55.0
    assert set(b["runs"]) == {"short", "long"}
