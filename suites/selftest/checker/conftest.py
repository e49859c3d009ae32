"""One SparkSession for the checker's tests, and all hand-made runs checked in one call (one job)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from suites.selftest.checker import cases

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="session")
def spark():
    from hourglass.reports.spark import get_spark, stop_spark

    session = get_spark("local[2]")
    yield session
    stop_spark()


@pytest.fixture(scope="session")
def case_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("checker-runs")
    for make in cases.ALL:
        make().write(root)
    shutil.copytree(DATA / "run-small", root / "run-small")
    torn = cases.RunBuilder("torn-line").send("a", 0).deliver("a", 10)
    torn.write(root, lines=['{"type": "deliver", "ts_ms": 17638000'])
    _as_parquet(cases.clean_mix(), "parquet-clean-mix", root)
    return root


def _as_parquet(builder, run_id: str, root: Path) -> None:
    """The same run with its events as Parquet (events/part-0.parquet) instead of JSONL."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    builder.run_id = run_id
    d = builder.write(root)
    (d / "events.jsonl").unlink()
    (d / "events").mkdir()
    names = sorted({k for e in builder.events for k in e})
    pq.write_table(pa.Table.from_pylist([{n: e.get(n) for n in names} for e in builder.events]), d / "events" / "part-0.parquet")


@pytest.fixture(scope="session")
def checked(spark, case_root, tmp_path_factory) -> tuple[dict[str, dict], Path]:
    """run_id -> verdict of every hand-made run, and the output directory."""
    from hourglass.reports.check import check_runs

    out = tmp_path_factory.mktemp("checker-out")
    verdicts = check_runs([case_root], out_dir=out)
    return {v["run_id"]: v for v in verdicts}, out


@pytest.fixture
def verdicts(checked) -> dict[str, dict]:
    return checked[0]
