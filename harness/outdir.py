"""What keeps the runs of an output tree (``--out``) apart: run ids that no other harness makes, and
one harness at a time writing the tree.

Two harnesses on one ``--out`` in the same second once made the same run ids and wrote both their
runs into the same directories (one events file with two senders: "duplicate send key"), and each
overwrote the other's summary. Now a run id carries the time to the millisecond and the pid of the
harness that made it, and the harness holds an exclusive lock on ``--out`` while it runs: a second
one on the same tree fails at once (exit 3, retry when the first is done), naming the directory and
the holder's pid.

When a batch has written its summary, ``latest`` beside the tree points to it (``runs/latest`` ->
``runs/main-<stamp>``): :func:`link_latest`.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from hourglass.reference.contract import ContractError

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


#: The link beside the output trees to the one whose batch completed last (``runs/latest``).
LATEST = "latest"


def link_latest(out: Path) -> Path | None:
    """After a batch wrote its summary into ``out``: ``latest`` in the parent of the output tree
    that holds ``out`` (the tree this process holds, :func:`lock_out`: ``runs/main-<stamp>`` for
    ``runs/main-<stamp>/simulated``) pointing to that tree, relative (the runs stay movable).
    Atomic: a link under a temporary name renamed over the old one, so a reader finds the old
    target or the new, never none. Nothing (None) when ``out`` lies in no tree this process holds,
    the parent cannot be written, or ``latest`` there is no symlink (a user's own file stays).
    Returns the link."""
    real = Path(os.path.realpath(out))
    held = [Path(k) for k in _held if real == Path(k) or Path(k) in real.parents]
    if not held:
        return None
    tree = max(held, key=lambda k: len(k.parts))  # the innermost: the tree of this batch
    parent, link = tree.parent, tree.parent / LATEST
    if parent == tree or not os.access(parent, os.W_OK | os.X_OK) or (os.path.lexists(link) and not link.is_symlink()):
        return None
    tmp = parent / f".{LATEST}.{os.getpid()}.tmp"
    try:
        if os.path.lexists(tmp):
            tmp.unlink()
        os.symlink(tree.name, tmp, target_is_directory=True)
        os.replace(tmp, link)
    except OSError:
        if os.path.lexists(tmp):
            tmp.unlink()
        return None
    return link
