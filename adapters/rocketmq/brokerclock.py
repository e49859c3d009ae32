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

A drift (``clock_drift``) needs another launch (measured on JDK 17 with Debian's libfaketime
0.9.10: a ``Thread.sleep`` still waiting after 18 minutes): with the monotonic clock kept true, any
speed but x1 hangs every timed wait of the JVM; with the
monotonic clock faked along and the monotonic fix left to libfaketime, speeds work and nothing
spins, and the JVM's ``nanoTime`` drifts with the wall clock (its tasks tick at the rate: a host
whose whole clock drifts). libfaketime applies a speed from the process's start ``P``, not from the
change: ``+O xR`` reads ``t + O + (R - 1)(t - P)``, so :func:`write_rate` writes the ``O`` that keeps
the clock continuous (within a few ms: ``P`` from ``/proc``, :func:`process_start_ms`).
"""

from __future__ import annotations

import os
import re
import time
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


def environment(control: Path, drift: bool = False) -> tuple[tuple[str, str], ...]:
    """The broker JVM's environment under the clock control file ``control``; ``drift``: one that
    can run fast or slow (the monotonic clock drifts along, see the module's docstring)."""
    faked = (("LD_PRELOAD", str(library())), ("FAKETIME_TIMESTAMP_FILE", str(control)), ("FAKETIME_NO_CACHE", "1"))
    return faked if drift else faked + (("FAKETIME_DONT_FAKE_MONOTONIC", "1"), ("FAKETIME_FORCE_MONOTONIC_FIX", "0"))


def write_offset(control: Path, offset_ms: int) -> None:
    """The broker's clock ``offset_ms`` ahead of the true time from now on (seconds with a
    fraction: libfaketime has no millisecond unit), replaced atomically."""
    _write(control, f"{offset_ms / 1000:+.3f}")


def rate_spec(offset_ms: int, rate_permille: int, now_ms: float, start_ms: float) -> str:
    """The control line under which a process started at ``start_ms`` reads ``offset_ms`` ahead at
    ``now_ms`` and from then on runs ``rate_permille`` per mille fast: libfaketime's ``+O xR`` reads
    ``t + O + (R - 1)(t - start)`` (measured), so ``O = offset - r (now - start)``."""
    base = offset_ms - rate_permille * (now_ms - start_ms) / 1000
    return f"{base / 1000:+.3f} x{(1000 + rate_permille) / 1000:.3f}"


def write_rate(control: Path, offset_ms: int, rate_permille: int, start_ms: float) -> None:
    """From now on the broker's clock reads ``offset_ms`` ahead and runs at ``1 + rate/1000``
    times the true rate, continuous with what it read (a broker process started at ``start_ms``)."""
    _write(control, rate_spec(offset_ms, rate_permille, time.time() * 1000, start_ms))


def _write(control: Path, line: str) -> None:
    tmp = control.with_name(control.name + ".tmp")
    tmp.write_text(line + "\n")
    tmp.replace(control)


def process_start_ms(pid: int) -> float:
    """When process ``pid`` started (epoch ms, to the clock tick): ``/proc/<pid>/stat``'s
    starttime after boot, plus the boot's epoch time. libfaketime's own start is its load in the
    process, a few ms later at most."""
    ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    boot_s = time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)
    return (boot_s + ticks / os.sysconf("SC_CLK_TCK")) * 1000


def remove_leftovers(shm: Path = Path("/dev/shm")) -> None:
    """libfaketime's shared-memory files of processes that no longer run."""
    for path in shm.glob("*faketime_*"):
        m = re.search(r"faketime_(?:shm|sem)_(\d+)$", path.name)
        if m and not Path(f"/proc/{m.group(1)}").exists():
            try:
                path.unlink()
            except OSError:
                pass
