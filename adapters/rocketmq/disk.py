"""A broker store on a size-limited filesystem, so the harness can fill it (the ``disk_full`` fault).

The store directory becomes a ``tmpfs`` of :data:`STORE_LIMIT_MB` (mounted before the broker's
first start, so a container's bind mount of the run directory sees it too). :func:`fill` leaves
:data:`FREE_AFTER_FILL_MB` free — the used ratio is then above every ``diskSpaceWarningLevelRatio``
the broker may run (the harness sets 0.98; 5.x caps it at 0.90), so the broker marks its store full
at its next disk check (``reference.disk``), while the few MB left keep the writes it makes before
noticing from hitting ENOSPC on a mapped page (a SIGBUS, which would be a crash, not a full disk).
:func:`free` removes the filler.

Mounting needs root (CAP_SYS_ADMIN). Each mount's source names its owner
(``hourglass-<pid>:<start time>``) so a harness killed with SIGKILL leaves nothing mounted for
long: :func:`remove_leftover_mounts` (run by the next process runtime) unmounts the stores whose
owner is gone. Linux only.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from hourglass.adapters.base import AdapterError

#: size of a fillable store: the broker's files are sparse (64 MB commit log files, small queues)
STORE_LIMIT_MB = 1024
#: what a fill leaves free (MB): room for what the broker writes before its disk check notices
FREE_AFTER_FILL_MB = 6
FILLER = "hourglass-disk-filler"
_SOURCE_PREFIX = "hourglass-"


def unavailable() -> str | None:
    """Why this machine cannot give a broker a fillable store, or None."""
    if not Path("/proc/mounts").exists():
        return "size-limited stores need Linux (tmpfs)"
    if os.geteuid() != 0:
        return "mounting a size-limited store (tmpfs) needs root"
    return None


def _run(*cmd: str) -> None:
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise AdapterError(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr.strip() or res.stdout.strip()}")


def mount_limited(path: Path, owner: str, size_mb: int = STORE_LIMIT_MB) -> None:
    """Mount an empty ``tmpfs`` of ``size_mb`` at ``path`` (created; it must be empty)."""
    why = unavailable()
    if why:
        raise AdapterError(why)
    path.mkdir(parents=True, exist_ok=True)
    if any(path.iterdir()):
        raise AdapterError(f"{path}: a size-limited store must start empty (it holds {sorted(p.name for p in path.iterdir())[:5]})")
    _run("mount", "-t", "tmpfs", "-o", f"size={size_mb}m,mode=0755", _SOURCE_PREFIX + owner, str(path))


def unmount(path: Path) -> None:
    """Unmount the store (lazily: a container or JVM still holding it lets go later)."""
    if is_mounted(path):
        _run("umount", "-l", str(path))


def _mounts() -> list[tuple[str, str]]:
    try:
        lines = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        parts = line.split()
        if len(parts) >= 3 and parts[2] == "tmpfs":
            out.append((parts[0], parts[1].replace("\\040", " ")))
    return out


def is_mounted(path: Path) -> bool:
    target = str(Path(path).resolve())
    return any(mnt == target and src.startswith(_SOURCE_PREFIX) for src, mnt in _mounts())


def fill(path: Path, keep_free_mb: int = FREE_AFTER_FILL_MB) -> int:
    """Fill the filesystem of ``path`` until ``keep_free_mb`` are left; returns the bytes added."""
    st = os.statvfs(path)
    return _add_filler(path, st.f_bavail * st.f_frsize - keep_free_mb * 1024 * 1024, "")


def _add_filler(path: Path, size: int, what: str) -> int:
    if size <= 0:
        return 0
    with open(Path(path) / FILLER, "ab") as f:
        try:
            os.posix_fallocate(f.fileno(), f.tell(), size)
        except OSError as e:
            raise AdapterError(f"filling {path}{what} ({size} bytes): {e}") from None
    return size


def fill_to(path: Path, percent: int) -> int:
    """Fill the filesystem of ``path`` until ``percent`` of it is used (UtilAll's ratio: (total -
    free) / total), leaving the rest free; returns the bytes added (0: already as full)."""
    st = os.statvfs(path)
    total, free_now = st.f_blocks * st.f_frsize, st.f_bfree * st.f_frsize
    return _add_filler(path, int(total * percent / 100) - (total - free_now), f" to {percent}%")


def free(path: Path) -> None:
    (Path(path) / FILLER).unlink(missing_ok=True)


def used_ratio(path: Path) -> float:
    """UtilAll.getDiskPartitionSpaceUsedPercent: (total - free) / total of the partition of ``path``."""
    st = os.statvfs(path)
    total = st.f_blocks * st.f_frsize
    return (total - st.f_bfree * st.f_frsize) / total if total else 0.0


def remove_leftover_mounts(owner_alive, say=None) -> list[str]:
    """Unmount the fillable stores whose owner (a harness process) is gone; returns their paths."""
    gone = []
    for src, mnt in _mounts():
        if src.startswith(_SOURCE_PREFIX) and not owner_alive(src[len(_SOURCE_PREFIX):]):
            try:
                _run("umount", "-l", mnt)
                gone.append(mnt)
            except AdapterError:
                pass
    if gone and say is not None:
        say(f"hourglass: unmounted stores left by harnesses that are gone: {', '.join(gone)}")
    return gone
