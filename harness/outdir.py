"""What keeps the runs of an output tree (``--out``) apart: run ids that no other harness makes, and
one harness at a time writing the tree.

Two harnesses on one ``--out`` in the same second once made the same run ids and wrote both their
runs into the same directories (one events file with two senders: "duplicate send key"), and each
overwrote the other's summary. Now a run id carries the time to the millisecond and the pid of the
harness that made it, and the harness holds an exclusive lock on ``--out`` while it runs: a second
one on the same tree fails at once (exit 3, retry when the first is done), naming the directory and
the holder's pid.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from reference.contract import ContractError

#: The lock file inside ``--out``: ``flock``ed exclusively by the harness writing the tree, holding
#: its pid (the lock ends with the process, also a SIGKILLed one: the file alone locks nothing).
LOCK_FILE = ".hourglass.lock"

_held: dict[str, int] = {}  # the trees this process holds: real path -> the lock file's descriptor


def run_stamp() -> str:
    """The time part of run ids and default output directories: ``20261125T130308.123-4711``
    (local time to the millisecond, then this process's pid): sorts by time, unique across
    processes, readable."""
    now = time.time()
    return f"{time.strftime('%Y%m%dT%H%M%S', time.localtime(now))}.{int(now * 1000) % 1000:03d}-{os.getpid()}"


def lock_out(out: Path) -> None:
    """Hold the run tree ``out`` for this process until it exits; ContractError naming ``--out``,
    the directory and the holder's pid when another process holds it. Taken again by the same
    process, nothing happens (``harness main`` runs the pytest plugin in-process on its ``--out``)."""
    key = os.path.realpath(out)
    if key in _held:
        return
    fd = os.open(os.path.join(key, LOCK_FILE), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise ContractError("--out", None, "a directory no other harness is writing",
                            f"{key} (held by the harness with pid {holder}: wait for it, or give another --out)") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    _held[key] = fd
