"""A CPU quota for a component's processes (the ``cpu_throttle`` fault, ``reference.faults.cpu``):
a cgroup of the ``cpu`` controller with a CFS bandwidth limit, v1 (``cpu.cfs_quota_us`` over a
100 ms ``cpu.cfs_period_us``) or v2 (``cpu.max``).

The process runtime starts a throttled component inside its group from the exec on (the command
line is prefixed with a shell that writes its own pid to ``cgroup.procs`` and execs the JVM: the
pid stays the JVM's, no thread runs outside the quota), and moves a running one in. Lifting the
quota sets it to unlimited; the group is removed when its runtime closes. Each group is named after
its owner (``hourglass-<pid>_<start time>-<component>``), so a harness killed with SIGKILL leaves
only empty groups, which the next one removes (:func:`remove_leftovers`). Needs root and a
writable ``cpu`` controller; :func:`unavailable` says why not.
"""

from __future__ import annotations

import os
from pathlib import Path

from hourglass.adapters.base import AdapterError
from hourglass.adapters.rocketmq.process import owner_alive, owner_tag

ROOT = Path("/sys/fs/cgroup")
PERIOD_US = 100_000
_PREFIX = "hourglass-"


def _v1_root() -> Path | None:
    for name in ("cpu", "cpu,cpuacct"):
        if (ROOT / name / "cpu.cfs_quota_us").exists():
            return ROOT / name
    return None


def _v2_root() -> Path | None:
    try:
        controllers = (ROOT / "cgroup.controllers").read_text().split()
    except OSError:
        return None
    return ROOT if "cpu" in controllers else None


def _root() -> Path | None:
    """The cpu controller's hierarchy: v1's own, or the v2 root."""
    return _v1_root() or _v2_root()


def unavailable() -> str | None:
    """Why this machine cannot put a process under a CPU quota, or None."""
    if os.geteuid() != 0:
        return "a CPU quota (a cgroup's cpu controller) needs root"
    root = _root()
    if root is None:
        return f"no cpu cgroup controller under {ROOT} (cgroup v1 cpu/ or v2 with cpu in cgroup.controllers)"
    if not os.access(root, os.W_OK):
        return f"the cpu cgroup controller at {root} is read-only here"
    return None


class CpuGroup:
    """One component's cgroup under the cpu controller."""

    def __init__(self, component: str):
        why = unavailable()
        if why:
            raise AdapterError(f"cannot limit the CPU of {component}: {why}")
        self.v1 = _v1_root()
        self.root = self.v1 or ROOT
        self.path = self.root / f"{_PREFIX}{owner_tag().replace(':', '_')}-{component}"

    @property
    def procs_file(self) -> Path:
        return self.path / "cgroup.procs"

    def set(self, permille: int | None) -> None:
        """The quota, in thousandths of one CPU (None: unlimited); creates the group."""
        try:
            if self.v1 is None:  # v2: the root's children get the cpu controller
                control = (ROOT / "cgroup.subtree_control")
                if "cpu" not in control.read_text().split():
                    control.write_text("+cpu")
            self.path.mkdir(exist_ok=True)
            quota = -1 if permille is None else permille * PERIOD_US // 1000
            if self.v1 is not None:
                (self.path / "cpu.cfs_period_us").write_text(str(PERIOD_US))
                (self.path / "cpu.cfs_quota_us").write_text(str(quota))
            else:
                (self.path / "cpu.max").write_text(f"{'max' if quota < 0 else quota} {PERIOD_US}")
        except OSError as e:
            raise AdapterError(f"cannot set the CPU quota of {self.path}: {e}") from None

    def add(self, pids) -> None:
        """Move these processes (every thread of each) into the group."""
        for pid in pids:
            try:
                self.procs_file.write_text(str(pid))
            except ProcessLookupError:
                continue  # gone meanwhile
            except OSError as e:
                raise AdapterError(f"cannot move process {pid} into {self.path}: {e}") from None

    def exec_prefix(self) -> tuple[str, ...]:
        """A command prefix that joins the group, then execs the rest (the pid stays the command's)."""
        return ("sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.procs_file))

    def remove(self) -> None:
        """Move whatever is left back to the root and remove the group (idempotent)."""
        _remove(self.path, self.root)


def _remove(path: Path, root: Path) -> None:
    if not path.exists():
        return
    try:
        for pid in (path / "cgroup.procs").read_text().split():
            try:
                (root / "cgroup.procs").write_text(pid)
            except OSError:
                pass
        path.rmdir()
    except OSError:
        pass  # still busy (a process exiting): the next harness's sweep removes it


def remove_leftovers() -> list[str]:
    """Remove the groups of harnesses that are gone; returns their names."""
    root = _root()
    if root is None or unavailable():
        return []
    removed = []
    for path in root.glob(f"{_PREFIX}*"):
        owner = path.name[len(_PREFIX):].rsplit("-", 1)[0].replace("_", ":")
        if path.is_dir() and not owner_alive(owner):
            _remove(path, root)
            removed.append(path.name)
    return removed
