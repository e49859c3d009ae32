"""Hourglass's own Java helpers (``adapters/rocketmq/java/*.java``), compiled against a
distribution's client jars on first use and cached next to them.

``helper_classes(dist_lib_dir) -> Path`` returns a directory to put on the client JVM's classpath.
The cache key is the helper sources' hash and the lib directory, so a new helper or another
version compiles once; concurrent callers wait on a lock file. Needs ``javac`` (a JDK, as
``.ci/bootstrap`` installs).
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
from pathlib import Path

from hourglass.adapters.base import AdapterError
from hourglass.adapters.rocketmq.provision import cache_root

JAVA_DIR = Path(__file__).resolve().parent / "java"


def java_sources() -> list[Path]:
    """The client helper's Java sources (shipped in the wheel: pyproject's package-data)."""
    return sorted(JAVA_DIR.glob("*.java"))


def helper_classes(lib_dir: Path) -> Path:
    lib_dir = Path(lib_dir).resolve()
    digest = hashlib.sha256()
    for src in java_sources():
        digest.update(src.name.encode() + b"\0" + src.read_bytes())
    digest.update(str(lib_dir).encode())
    out = cache_root() / "rocketmq" / "helpers" / digest.hexdigest()[:16]
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / (out.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (out / ".compiled").exists():
            return out
        javac = shutil.which("javac")
        if javac is None:
            raise AdapterError("compiling the client helper needs javac (a JDK): apt-get install openjdk-17-jdk-headless")
        partial = out.with_suffix(".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        proc = subprocess.run([javac, "-nowarn", "-encoding", "UTF-8", "-cp", str(lib_dir / "*"), "-d", str(partial),
                               *map(str, java_sources())], capture_output=True, text=True, timeout=300)
        if proc.returncode != 0:
            raise AdapterError(f"javac of {JAVA_DIR} against {lib_dir} failed (exit {proc.returncode}):\n"
                               f"{proc.stdout}{proc.stderr}"[-3000:])
        (partial / ".compiled").write_text("ok\n")
        shutil.rmtree(out, ignore_errors=True)
        partial.rename(out)
    return out
