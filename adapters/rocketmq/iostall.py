"""A broker store whose writes the harness can stall (the ``io_stall`` fault, ``reference.faults.io``).

The store directory becomes an ext4 filesystem on a loop device backed by a sparse image file
(mounted before the broker's first start, so a container's bind mount sees it too). A stall
freezes it (``fsfreeze -f``, the FIFREEZE ioctl: every write, and every first write to a mapped
page, waits in the kernel until the thaw) and a resume thaws it (``fsfreeze -u``). The thaw comes
first in every exit path: a process blocked on a frozen filesystem cannot even be killed.

Mounting needs root and loop devices. The image is named after its owner
(``hourglass-store-<pid>_<start time>.img``) so a harness killed with SIGKILL leaves nothing frozen
or mounted for long: :func:`remove_leftovers` (run by the next harness that stalls a store) thaws,
unmounts and detaches the loop devices of owners that are gone. Linux only.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from hourglass.adapters.base import AdapterError
from hourglass.adapters.rocketmq.disk import STORE_LIMIT_MB
from hourglass.adapters.rocketmq.process import owner_alive, owner_tag

_IMAGE_PREFIX = "hourglass-store-"
NOT_FREEZABLE = "not a store on a filesystem the harness can freeze"
_SWEPT: list[bool] = []


def unavailable() -> str | None:
    """Why this machine cannot give a broker a freezable store, or None."""
    if not Path("/dev/loop-control").exists():
        return "a freezable store needs Linux loop devices (/dev/loop-control)"
    if os.geteuid() != 0:
        return "mounting a freezable store (a loop-mounted ext4) needs root"
    missing = [tool for tool in ("fsfreeze", "mkfs.ext4", "losetup") if shutil.which(tool) is None]
    return f"missing {', '.join(missing)} (util-linux, e2fsprogs)" if missing else None


def _run(*cmd: str, timeout_s: float = 60.0) -> str:
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise AdapterError(f"{' '.join(cmd)} did not return within {timeout_s:.0f} s") from None
    if res.returncode != 0:
        raise AdapterError(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr.strip() or res.stdout.strip()}")
    return res.stdout


def _loops() -> list[dict]:
    """The loop devices whose image is one of ours: ``name``, ``back-file``."""
    try:
        listed = json.loads(_run("losetup", "--json", "--list", "--output", "NAME,BACK-FILE") or "{}")
    except (AdapterError, json.JSONDecodeError):
        return []
    return [d for d in listed.get("loopdevices", []) if Path(d.get("back-file") or "").name.startswith(_IMAGE_PREFIX)]


def _mount_point(device: str) -> str | None:
    for line in Path("/proc/mounts").read_text().splitlines():
        parts = line.split()
        if parts and parts[0] == device:
            return parts[1].replace("\\040", " ")
    return None


def _release(device: str, mount_point: str | None) -> None:
    if mount_point:
        subprocess.run(["fsfreeze", "-u", mount_point], capture_output=True)  # not frozen: refused, harmless
        subprocess.run(["umount", "-l", mount_point], capture_output=True)
    subprocess.run(["losetup", "-d", device], capture_output=True)


def remove_leftovers(say=None) -> list[str]:
    """Thaw, unmount and detach the freezable stores whose owner (a harness process) is gone."""
    gone = []
    for loop in _loops():
        owner = Path(loop["back-file"]).name[len(_IMAGE_PREFIX):].removesuffix(".img").replace("_", ":", 1)
        if not owner_alive(owner):
            _release(loop["name"], _mount_point(loop["name"]))
            Path(loop["back-file"]).unlink(missing_ok=True)
            gone.append(loop["back-file"])
    if gone and say is not None:
        say(f"hourglass: removed {len(gone)} freezable store(s) left by harnesses that are gone: {', '.join(gone)}")
    return gone


class FreezableStore:
    """The store on a loop-mounted ext4 the harness can freeze, or the reason it is not (also in
    ``info.details['io_faults']``; then scenarios that stall it are skipped)."""

    def __init__(self, store_dir: Path):
        self.store_dir = store_dir
        self.device: str | None = None
        self.image: Path | None = None
        self.frozen = False
        self.why = NOT_FREEZABLE

    def mount(self, details: dict) -> None:
        why = unavailable()
        if why:
            details["io_faults"] = self.why = why
            return
        if not _SWEPT:
            _SWEPT.append(True)
            remove_leftovers(lambda line: print(line, file=sys.stderr, flush=True))
        self.store_dir.mkdir(parents=True, exist_ok=True)
        if any(self.store_dir.iterdir()):
            raise AdapterError(f"{self.store_dir}: a freezable store must start empty")
        self.image = self.store_dir.parent / f"{_IMAGE_PREFIX}{owner_tag().replace(':', '_')}.img"
        with open(self.image, "wb") as f:
            f.truncate(STORE_LIMIT_MB * 1024 * 1024)  # sparse: the broker's files are sparse too
        _run("mkfs.ext4", "-q", "-F", str(self.image))
        self.device = _run("losetup", "--find", "--show", str(self.image)).strip()
        _run("mount", self.device, str(self.store_dir))
        atexit.register(self.close)  # idempotent: teardown closes it first
        details["freezable_store"] = {"device": self.device, "image": str(self.image)}

    def cannot(self, action: str) -> str | None:
        return None if self.device else self.why

    def stall_io(self) -> None:
        self.frozen = True  # before: a freeze that times out may still take
        _run("fsfreeze", "-f", str(self.store_dir), timeout_s=30)

    def resume_io(self) -> None:
        if self.frozen:
            _run("fsfreeze", "-u", str(self.store_dir), timeout_s=30)
            self.frozen = False

    def thaw(self) -> None:
        """Before any process of the broker is stopped: a frozen store would hold it."""
        if self.frozen:
            subprocess.run(["fsfreeze", "-u", str(self.store_dir)], capture_output=True)
            self.frozen = False

    def close(self) -> None:
        self.thaw()
        if self.device:
            _release(self.device, str(self.store_dir))
            self.device = None
        if self.image is not None:
            self.image.unlink(missing_ok=True)
            self.image = None
