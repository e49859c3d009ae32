"""Writing one run's outputs: verdict.json, violations/ (Parquet), junit.xml, report.html (linking the
run's copied logs, ``RUN/logs/``)."""

from __future__ import annotations

import json
from pathlib import Path

from hourglass.reference.rundir import JUNIT_XML, REPORT_HTML, RUN_JSON, VERDICT_JSON, VIOLATIONS_DIR, local_path, scenario_json
from hourglass.reports.html import report_html
from hourglass.reports.junit import junit_xml
from hourglass.reports.logs import RunLogs


def write_run_outputs(target: Path, verdict: dict, violations, plot_data, run, faults=None, logs: RunLogs | None = None,
                      scenario: dict | None = None) -> None:
    """``violations``: pandas frame of the run's violation rows (None for a broken run); ``logs``:
    the run's logs as the report links them (:func:`reports.logs.run_logs`; None: no section);
    ``scenario``: the run's ``scenario.json`` (:func:`scenario_data`; None: the report shows the
    fault steps as the events carried them out)."""
    target.mkdir(parents=True, exist_ok=True)
    (target / VERDICT_JSON).write_text(json.dumps(verdict, indent=1) + "\n")
    (target / JUNIT_XML).write_text(junit_xml(verdict, run))
    if violations is not None:
        _write_violations(target / VIOLATIONS_DIR, violations)
    (target / REPORT_HTML).write_text(report_html(verdict, violations, plot_data, run, faults or [], logs, scenario))
    if run is not None and not (target / RUN_JSON).exists():  # the matrix reads scenario and system from it
        (target / RUN_JSON).write_text(json.dumps(run, indent=1) + "\n")


def scenario_data(run_dir) -> dict | None:
    """The scenario a run recorded (``scenario.json``) as data, or None: not a local directory, a
    run made by another tool, an unreadable file (the report then goes without it)."""
    local = local_path(run_dir)
    if local is None:
        return None
    try:
        return json.loads(Path(scenario_json(local)).read_text())
    except (OSError, ValueError):
        return None


def _write_violations(directory: Path, violations) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.glob("*.parquet"):
        old.unlink()
    table = pa.Table.from_pandas(violations.reset_index(drop=True), preserve_index=False)
    pq.write_table(table, directory / "part-00000.parquet")
