"""A run's files parsed in the Python task that judges the run whole.

Most histories are many runs of a moderate size (a nightly chaos history: hundreds of runs of up
to a few million events). For those, shuffling every parsed event by key costs more than the
judging: Spark parses each JSON line into typed columns, shuffles them, and converts them back to
Arrow for Python. A run small enough for one task (:data:`WHOLE_RUN_MAX_EVENTS`) instead travels
as its files' bytes (Spark's ``binaryFile`` source, so any path Spark reads), one run per task,
and is parsed here by Arrow's JSON or Parquet reader straight into columns. Bigger runs take the
bucketed path of :func:`reports.spark_jobs.judged_table`; both end in
:func:`reports.judge_columnar.judge_table`, so a run's verdict does not depend on the path.

The contract is checked here as Spark checks it on the bucketed path: a row that breaks it (a
line that does not parse, a wrong type, a missing field, an unknown choice) is left out and its
file is reported (kind ``f``); the driver re-reads that file line by line to name line and field,
or to recognise a torn last line.
"""

from __future__ import annotations

import io
import json
import time

import pyarrow as pa
import pyarrow.compute as pc

from hourglass.reference.contract import EVENT_FIELDS, EVENT_TYPES, INT64, ContractError, int_range, validate_event
from hourglass.reference.rundir import decode_line
from hourglass.reports.judge_columnar import judge_or_error
from hourglass.reports.level_order import judge_run as judge_run_level_order
from hourglass.reports.rows import JSON_FIELDS, error_row, rows_table, table_from_events, timing_row, transport_schema

#: Runs up to this many (estimated) events are judged whole, in one task.
WHOLE_RUN_MAX_EVENTS = 1_000_000


def _parse_schema() -> pa.Schema:
    """Every contract field but the JSON objects (``offsets``, ``max_offsets``: inferred as structs)."""
    fields = [f for f in transport_schema() if f.name not in (*JSON_FIELDS, "plan", "bad_file", "echo")]
    return pa.schema(fields + [("plan", pa.list_(pa.string()))])


def parse_file(uri: str, content: bytes) -> tuple[pa.Table, bool]:
    """One events file as a table of contract-valid rows in :func:`reports.rows.transport_schema`
    layout, and whether some row was left out (the file is reported for a line-by-line rescan)."""
    if uri.endswith(".parquet"):
        import pyarrow.parquet as pq

        table = pq.read_table(io.BytesIO(content))
        if not _valid_utf8(table):
            return table_from_events([]), True  # the rescan names the row
        return _conform(table, uri)
    import pyarrow.json as pj

    try:
        table = pj.read_json(io.BytesIO(content), read_options=pj.ReadOptions(block_size=16 << 20),
                             parse_options=pj.ParseOptions(explicit_schema=_parse_schema(), unexpected_field_behavior="infer"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return _line_by_line(content), True  # a torn or broken line, a wrong type, a lone surrogate: find the good lines
    if not _valid_utf8(table):  # Arrow's JSON reader does not check the bytes of strings
        return _line_by_line(content), True
    return _conform(table, uri)


def _valid_utf8(table: pa.Table) -> bool:
    try:
        table.validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _line_by_line(content: bytes) -> pa.Table:
    """The lines of ``content`` that are UTF-8 JSON objects without lone surrogates (the others are
    left out: the driver's rescan names them)."""
    events = []
    for line in content.split(b"\n"):
        if line.strip():
            try:
                event = decode_line(line.decode("utf-8"))  # a key named twice is left out too
                json.dumps(event, ensure_ascii=False).encode("utf-8")  # a lone surrogate escape does not encode
            except (ValueError, UnicodeError):
                continue
            events.append(event)
    return _valid_events(events)


def _valid_events(events) -> pa.Table:
    """The events (dicts, absent fields left out) that keep the contract, as a table."""
    good = []
    for event in events:
        try:
            validate_event(event, "")
        except ContractError:
            continue
        good.append(event)
    return table_from_events(good)


def _conform(table: pa.Table, uri: str) -> tuple[pa.Table, bool]:
    """Cast to the transport layout (absent columns as nulls) and drop rows that break the contract."""
    n = table.num_rows
    have = set(table.column_names)
    cols = []
    for field in transport_schema():
        name = field.name
        if name == "echo":
            cols.append(pa.array([False] * n, type=pa.bool_()))
        elif name not in have or name == "bad_file":
            cols.append(pa.nulls(n, type=field.type))
        elif name == "plan":
            col = table.column(name)
            cols.append(pc.binary_join(col, ",") if pa.types.is_list(col.type) else col.cast(pa.string()))
        elif name in JSON_FIELDS:
            col = table.column(name)
            cols.append(_json_strings(col))
        else:
            try:
                cols.append(table.column(name).cast(field.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                return _valid_events({k: v for k, v in row.items() if v is not None} for row in table.to_pylist()), True
    out = pa.Table.from_arrays(cols, schema=transport_schema())
    plans = table.column("plan") if "plan" in have and pa.types.is_list(table.column("plan").type) else None
    ok = contract_mask(out, plans)
    if pc.all(ok).as_py() is not False:
        return out, False
    return out.filter(ok), True


def _json_strings(col) -> pa.Array:
    values = []
    for v in col.to_pylist():
        if v is None:
            values.append(None)
        else:
            pairs = v.items() if isinstance(v, dict) else v
            values.append(json.dumps({k: x for k, x in pairs if x is not None}))
    return pa.array(values, type=pa.string())


def contract_mask(table: pa.Table, plans=None) -> pa.Array:
    """True where a row keeps the contract: a known type, ``ts_ms``, the type's required fields,
    known choices (:class:`reference.contract.Field`)."""
    kind = table.column("type")
    ok = pc.and_(pc.is_in(kind, pa.array(EVENT_TYPES)), _in_range(table.column("ts_ms"), "ts_ms"))
    per_type = pa.array([False] * table.num_rows)
    for etype, specs in EVENT_FIELDS.items():
        cond = pc.equal(kind, etype)
        for f in specs:
            if f.name not in table.column_names:
                continue
            c = table.column(f.name)
            if f.required:
                cond = pc.and_(cond, pc.is_valid(c))
            if f.kind == "int" and int_range(f.name) != INT64:
                cond = pc.and_(cond, pc.fill_null(_in_range(c, f.name), True))
            if f.choices and f.kind == "list[str]":
                cond = pc.and_(cond, _choices_kept(plans, f, table.num_rows) if plans is not None
                               else _joined_choices_kept(c, f))
            elif f.choices:
                cond = pc.and_(cond, pc.or_(pc.is_null(c), pc.is_in(c, pa.array(f.choices))))
        per_type = pc.or_(per_type, pc.fill_null(cond, False))
    return pc.fill_null(pc.and_(ok, per_type), False)


def _in_range(col, name: str) -> pa.Array:
    """Where ``col`` holds a value :func:`reference.contract.int_range` allows (null where null)."""
    lo, hi = int_range(name)
    return pc.and_(pc.greater_equal(col, lo), pc.less_equal(col, hi))


def _choices_kept(lists, f, n, extra: tuple[str, ...] = ()) -> pa.Array:
    """Where every word of each list is one ``f`` keeps (:meth:`reference.contract.Field.kept`)."""
    flat = pc.list_flatten(lists)
    if not len(flat):
        return pa.array([True] * n)
    parents = pc.list_parent_indices(lists)
    kept = pc.is_in(flat, pa.array(f.choices + extra))
    if f.pattern:
        kept = pc.or_(kept, pc.match_substring_regex(flat, f"^(?:{f.pattern})$"))
    bad = pc.filter(parents, pc.invert(pc.fill_null(kept, False)))
    mask = [True] * n
    for i in bad.to_pylist():
        mask[i] = False
    return pa.array(mask)


def _joined_choices_kept(col, f) -> pa.Array:
    return _choices_kept(pc.split_pattern(pc.fill_null(col, ""), ","), f, len(col), ("",))


def judge_runs(files_by_run: dict[int, list[tuple[str, bytes]]], runs: list[dict], ended_ms: dict, timeline_bin_ms: dict):
    """Judge each run of one task whole (bucket 0); yield Arrow tables of judgements."""
    for run_ix, files in sorted(files_by_run.items()):
        run = runs[run_ix]
        run_id = run["run_id"]
        try:
            yield _judge_run(run, files, ended_ms[run_id], timeline_bin_ms[run_id])
        except Exception as e:  # noqa: BLE001 - one run's files never stop the others: the driver rescans them
            yield rows_table([error_row(run_id, 0, f"{type(e).__name__}: {e}", rescan=True)])


def _judge_run(run: dict, files: list[tuple[str, bytes]], ended_ms: int | None, timeline_bin_ms: int) -> pa.Table:
    run_id = run["run_id"]
    parts, bad = [], []
    t0 = time.perf_counter()
    for uri, content in sorted(files):
        table, broken = parse_file(uri, content)
        parts.append(table)
        if broken:
            bad.append(uri)
    table = pa.concat_tables(parts)  # a run has files: discover_runs breaks one without
    t1 = time.perf_counter()
    judged = judge_or_error(run, 0, table, ended_ms, timeline_bin_ms)
    t2 = time.perf_counter()
    judged = judge_run_level_order(judged)  # it holds every message of the run
    judged = pa.concat_tables([judged, rows_table([timing_row(run_id, 0, {"read: parse files": t1 - t0,
                                                                          "level order": time.perf_counter() - t2})])])
    if bad:
        judged = pa.concat_tables([judged, rows_table([(run_id, 0, "f", None, None, None, None, None, json.dumps(uri))
                                                       for uri in bad])])
    return judged
