"""The broker's wall clock under libfaketime, for the ``clock`` fault (:mod:`reference.clock`).

Debian's libfaketime (``apt-get install faketime``) is preloaded into the broker's JVM only, and
reads its offset from a control file the harness rewrites (``FAKETIME_TIMESTAMP_FILE``, read at
every call: ``FAKETIME_NO_CACHE``; a change lands within 0.3–0.5 ms, measured). The monotonic
clock stays true (``FAKETIME_DONT_FAKE_MONOTONIC``), so the JVM's scheduled executors keep their
pace; ``FAKETIME_FORCE_MONOTONIC_FIX=0`` is required: with the fix glibc 2.36 turns on, every
timed wait of the JVM returns at once and spins (an idle 4.9.7 broker took 8–12 s of CPU per 10 s).
The multi-threaded library is used (the other flapped the clock in one of three runs).
``currentTimeMillis`` costs 1.6 µs instead of 34 ns under it. libfaketime leaves
``/dev/shm/faketime_shm_<pid>`` and ``sem.faketime_sem_<pid>`` after its process dies:
:func:`remove_leftovers` deletes those of processes that are gone.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

LIBRARY = "libfaketimeMT.so.1"
LIBRARY_DIRS = ("/usr/lib/x86_64-linux-gnu/faketime", "/usr/lib/aarch64-linux-gnu/faketime", "/usr/lib/faketime",
                "/usr/local/lib/faketime")
#: how long after the control file is replaced the broker may still read the old clock
SETTLE_MS = 5
CONTROL_FILE = "broker.faketime"


def library() -> Path | None:
    for d in LIBRARY_DIRS:
        p = Path(d) / LIBRARY
        if p.exists():
            return p
    return None


def unavailable(runtime: str) -> str | None:
    """Why this machine and runtime cannot step the broker's clock, or None."""
    if runtime != "process":
        return f"the broker's clock is stepped by preloading libfaketime on the process runtime only (not {runtime})"
    if library() is None:
        return f"libfaketime is not installed ({LIBRARY} not in {', '.join(LIBRARY_DIRS)}; Debian: apt-get install faketime)"
    return None


def environment(control: Path) -> tuple[tuple[str, str], ...]:
    """The broker JVM's environment under the clock control file ``control``."""
    return (("LD_PRELOAD", str(library())), ("FAKETIME_TIMESTAMP_FILE", str(control)), ("FAKETIME_NO_CACHE", "1"),
            ("FAKETIME_DONT_FAKE_MONOTONIC", "1"), ("FAKETIME_FORCE_MONOTONIC_FIX", "0"))


def write_offset(control: Path, offset_ms: int) -> None:
    """The broker's clock ``offset_ms`` ahead of the true time from now on (seconds with a
    fraction: libfaketime has no millisecond unit), replaced atomically."""
    tmp = control.with_name(control.name + ".tmp")
    tmp.write_text(f"{offset_ms / 1000:+.3f}\n")
    tmp.replace(control)


def remove_leftovers(shm: Path = Path("/dev/shm")) -> None:
    """libfaketime's shared-memory files of processes that no longer run."""
    for path in shm.glob("*faketime_*"):
        m = re.search(r"faketime_(?:shm|sem)_(\d+)$", path.name)
        if m and not Path(f"/proc/{m.group(1)}").exists():
            try:
                path.unlink()
            except OSError:
                pass
