"""In a client process: start the JVM of the official RocketMQ client through JPype, and the
JSON-lines plumbing of client and consumer processes.

One JVM per OS process (JPype cannot restart one), so each client process and each consumer
process calls :func:`start_jvm` once. The protocol channel is the process's original stdout;
fd 1 is pointed at stderr before the JVM starts, so whatever Java prints lands in the log file and
never corrupts the protocol.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Channel:
    """Newline-delimited JSON on the process's original stdout (thread safe)."""

    def __init__(self) -> None:
        self._out = os.fdopen(os.dup(1), "w", buffering=1)
        os.dup2(2, 1)  # Java's System.out and stray prints go to the log (stderr)
        sys.stdout = sys.stderr
        self._lock = threading.Lock()

    def write(self, obj: dict) -> None:
        line = json.dumps(obj, separators=(",", ":"))
        with self._lock:
            self._out.write(line + "\n")
            self._out.flush()


def start_jvm(lib_dir: str, log_dir: str, heap: tuple[str, ...] = ("-Xms64m", "-Xmx384m")) -> None:
    import jpype

    Path(log_dir).mkdir(parents=True, exist_ok=True)
    opts = [*heap, "-XX:+UseG1GC", "-Djava.net.preferIPv4Stack=true",
            f"-Drocketmq.client.logRoot={log_dir}", "-Drocketmq.client.logLevel=WARN",
            f"-Duser.home={log_dir}", "-Drocketmq.client.logUseSlf4j=false",
            # rebalance every 2 s, not 20 s: a consumer picks up a new retry queue without delay
            "-Drocketmq.client.rebalance.waitInterval=2000",
            "--add-opens=java.base/java.nio=ALL-UNNAMED", "--add-opens=java.base/java.lang=ALL-UNNAMED"]
    jpype.startJVM(*opts, classpath=[str(Path(lib_dir) / "*")], convertStrings=True)
    import jpype.imports  # noqa: F401 - makes Java packages importable (from org.apache... import X)


def exception_chain(exc: BaseException) -> list[str]:
    """Java class names of a JPype exception and its causes, outermost first."""
    names = []
    cur = exc
    seen = 0
    while cur is not None and seen < 10:
        seen += 1
        try:
            names.append(str(cur.getClass().getName()))
            cur = cur.getCause()
        except AttributeError:
            names.append(type(cur).__name__)
            break
    return names


def describe(exc: BaseException) -> str:
    try:
        return f"{exc.getClass().getName()}: {exc.getMessage()}"  # type: ignore[attr-defined]
    except AttributeError:
        return f"{type(exc).__name__}: {exc}"
