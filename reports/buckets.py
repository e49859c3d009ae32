"""Buckets of keys for runs too big to judge in one task, carried as Arrow IPC blobs.

A big run's files are parsed in Python tasks (:func:`reports.run_files.parse_file`, the same
parser and contract check as runs judged whole); each parsed file is cut by bucket of keys into
Arrow IPC streams, and Spark moves those blobs — a few large binary rows per file and bucket,
never a row per event — to the task that judges the (run, bucket). No JSON parse in the JVM, no
conversion of every event between Arrow and Spark rows.

Each keyed event (send, deliver, dlq) goes to the bucket of its key; the run's faults and
snapshots, and its CRASH answers (a consumer fault every bucket's duplicate rulings need), go to
every bucket, marked ``echo`` except in their own bucket (0), so each event is counted once. A file
holding a row that breaks the contract sends one marker row (``bad_file``) to bucket 0: the judge
reports the file (kind ``f``) and the driver rescans it line by line.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hourglass.reports.rows import transport_schema

UNKEYED_TYPES = ("fault", "snapshot", "stall")
_P = np.uint64(0x100000001B3)  # FNV's 64-bit prime: the polynomial base of the key hash


def key_hash(keys: pa.Array) -> np.ndarray:
    """A 64-bit hash of each key's UTF-8 bytes, the same in every process (Python's ``hash`` of a
    string is not); a null key hashes as the empty string. Vectorised by byte position: one pass
    over the keys per position, on the keys that long."""
    keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    keys = pc.fill_null(keys.cast(pa.string()), "")
    n = len(keys)
    h = np.zeros(n, dtype=np.uint64)
    if n == 0:
        return h
    offsets = np.frombuffer(keys.buffers()[1], dtype=np.int32, count=n + 1, offset=keys.offset * 4).astype(np.int64)
    data = np.frombuffer(keys.buffers()[2], dtype=np.uint8) if keys.buffers()[2] is not None else np.zeros(1, np.uint8)
    starts, lengths = offsets[:-1], np.diff(offsets)
    live = np.arange(n)
    with np.errstate(over="ignore"):
        for j in range(int(lengths.max())):
            live = live[lengths[live] > j]  # the keys longer than j bytes
            byte = data[starts[live] + j].astype(np.uint64) + np.uint64(1)
            h[live] = h[live] * _P + byte
        # splitmix64's finaliser: every input bit moves every output bit
        h ^= h >> np.uint64(30)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(27)
        h *= np.uint64(0x94D049BB133111EB)
        h ^= h >> np.uint64(31)
    return h


def key_buckets(keys: pa.Array, buckets: int) -> np.ndarray:
    """The bucket of each key, in ``[0, buckets)``."""
    return (key_hash(keys) % np.uint64(buckets)).astype(np.int64)


def split(table: pa.Table, buckets: int, only: set[int] | None = None):
    """The rows of one parsed file (:func:`reports.rows.transport_schema`) by bucket: yield
    ``(bucket, table)`` for each bucket that gets rows (of ``only``, when given)."""
    if not len(table):
        return
    kind = table.column("type")
    unkeyed = pc.fill_null(pc.is_in(kind, pa.array(UNKEYED_TYPES)), False).to_numpy(zero_copy_only=False)
    crash = pc.fill_null(pc.and_(pc.equal(kind, "deliver"), pc.equal(table.column("outcome"), "CRASH")), False)
    everywhere = unkeyed | crash.to_numpy(zero_copy_only=False)
    own = np.where(unkeyed, 0, key_buckets(table.column("key"), buckets))
    echo_col = table.schema.get_field_index("echo")
    for b in range(buckets) if only is None else sorted(only):
        parts = []
        mine = own == b
        if mine.any():
            parts.append(table.filter(pa.array(mine)))
        copies = everywhere & ~mine
        if copies.any():
            c = table.filter(pa.array(copies))
            parts.append(c.set_column(echo_col, "echo", pa.array(np.ones(len(c), dtype=bool))))
        if parts:
            yield b, pa.concat_tables(parts) if len(parts) > 1 else parts[0]


def bad_file_marker(uri: str) -> pa.Table:
    """One row that only names ``uri`` as holding a row that breaks the contract."""
    schema = transport_schema()
    cols = [pa.array([uri], type=pa.string()) if f.name == "bad_file" else pa.array([False]) if f.name == "echo"
            else pa.nulls(1, type=f.type) for f in schema]
    return pa.Table.from_arrays(cols, schema=schema)


#: The blobs' compression: the transport layout has many columns a bucket leaves null (8 bytes a row
#: each for an integer), and every byte of a blob crosses into the JVM, the shuffle and back.
IPC_OPTIONS = pa.ipc.IpcWriteOptions(compression="lz4")


def to_ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema, options=IPC_OPTIONS) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def from_ipc(blobs) -> pa.Table:
    """The blobs of one (run, bucket), as one table."""
    return pa.concat_tables([pa.ipc.open_stream(b).read_all() for b in blobs])
