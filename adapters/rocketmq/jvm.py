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
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable


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


#: JVM options of a process that must start fast and does little: the client compiler only, and
#: the serial collector (no GC threads). A consumer process is one JVM per consumer, and a suite
#: starts a dozen at once on two cores: with these each costs about half the CPU to start (the
#: conformance batch's consumers' start, 25 s -> 15 s: ``python -m hourglass.harness.bench suite``).
QUICK_START = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


#: 5.x ships logback shaded under RocketMQ's package (this jar): its status listener that prints
#: nothing keeps pages of logback's own status lines out of a client's or consumer's log (the
#: broker's JVM gets the same, adapters.rocketmq.provision). 4.9.x's plain logback never sees it.
SHADED_LOGBACK_JAR = "rocketmq-logback-classic"

#: The harness's own client (the client process: its producer and admin) keeps a channel whose
#: request timed out (NettySystemConfig ``com.rocketmq.remoting.client.closeSocketIfTimeout``,
#: true by default): it sends many requests at once on one channel, and a close for one starved
#: request failed every other in flight. The consumers under test keep RocketMQ's default.
KEEP_CHANNEL_ON_TIMEOUT = "-Dcom.rocketmq.remoting.client.closeSocketIfTimeout=false"
SHADED_NOP_STATUS_LISTENER = "org.apache.rocketmq.logging.ch.qos.logback.core.status.NopStatusListener"


def start_jvm(lib_dir: str, log_dir: str, heap: tuple[str, ...] = ("-Xms64m", "-Xmx384m"),
              extra_classpath: tuple[str, ...] = (), quick_start: bool = False, binary_headers: bool = True,
              extra_opts: tuple[str, ...] = ()) -> None:
    """The client's JVM in this process. ``binary_headers``: RocketMQ's binary request headers
    (``rocketmq.serialize.type=ROCKETMQ``, as its benchmark producer); not for POP, whose request
    codes (POP_MESSAGE 200050, ...) do not fit the binary header's 16-bit code: the broker reads
    200050 as 3442 and answers "request type 3442 not supported" (seen on 5.5.0)."""
    import jpype

    Path(log_dir).mkdir(parents=True, exist_ok=True)
    opts = [*heap, *(QUICK_START if quick_start else ("-XX:+UseG1GC",)), "-Djava.net.preferIPv4Stack=true",
            f"-Drocketmq.client.logRoot={log_dir}", "-Drocketmq.client.logLevel=WARN",
            f"-Duser.home={log_dir}", "-Drocketmq.client.logUseSlf4j=false",
            # rebalance every 2 s, not 20 s: a consumer picks up a new retry queue without delay
            "-Drocketmq.client.rebalance.waitInterval=2000",
            *(("-Drocketmq.serialize.type=ROCKETMQ",) if binary_headers else ()),
            "--add-opens=java.base/java.nio=ALL-UNNAMED", "--add-opens=java.base/java.lang=ALL-UNNAMED", *extra_opts]
    if any(Path(lib_dir).glob(f"{SHADED_LOGBACK_JAR}*.jar")):  # 5.x: its shaded logback prints its configuration
        opts.append(f"-Dlogback.statusListenerClass={SHADED_NOP_STATUS_LISTENER}")
    jpype.startJVM(*opts, classpath=[*extra_classpath, str(Path(lib_dir) / "*")], convertStrings=True)
    import jpype.imports  # noqa: F401 - makes Java packages importable (from org.apache... import X)


def serve_requests(chan: Channel, handlers: dict[str, Callable[[dict], dict]], workers: int,
                   error: Callable[[dict, BaseException], str]) -> None:
    """Answer the JSON requests on stdin until it ends or a ``shutdown`` request comes: each by the
    handler of its ``cmd``, concurrently (a slow request holds up no other), in a pool of ``workers``
    (bounded: each thread that calls into Java stays attached to the JVM); the reply carries the
    request's ``id``: ``{"ok": true, **result}``, or ``{"ok": false, "error": error(request, e)}``.
    Returns once every request taken is answered."""

    def answer(req: dict, handler: Callable[[dict], dict]) -> None:
        try:
            chan.write({"id": req.get("id"), "ok": True, **handler(req)})
        except Exception as e:  # noqa: BLE001 - every failure is reported to the parent
            chan.write({"id": req.get("id"), "ok": False, "error": error(req, e)})

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hg-request") as pool:
        for line in sys.stdin:
            if not line.strip():
                continue
            req = json.loads(line)
            cmd = req.get("cmd")
            if cmd == "shutdown":
                chan.write({"id": req.get("id"), "ok": True})
                break
            handler = handlers.get(cmd)
            if handler is None:
                chan.write({"id": req.get("id"), "ok": False, "error": f"unknown command {cmd!r}: expected one of "
                                                                        f"{', '.join(sorted(handlers))} or shutdown"})
                continue
            pool.submit(answer, req, handler)


def exit_now(code: int = 0) -> None:
    """End the process at once, once its Java side is shut down (its clients closed): JPype's own
    teardown at exit waits seconds for the JVM's lingering non-daemon threads (Netty's event loops),
    and nothing of the process is left to persist — its events are written and flushed line by line.
    Measured on 5.5.0: a consumer's shutdown 0.1 s, its process's exit after it 3.4 s; the client
    process's close 5.4 s, on every system's teardown."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    os._exit(code)


#: RemotingConnectException's message when it names no address: the 5.x client takes it from a
#: channel that never connected (RemotingHelper.parseChannelRemoteAddr answers "")
_UNNAMED_CONNECT = "connect to  failed"


def describe(exc: BaseException, target: str | None = None) -> str:
    """``Class: message`` of a Java (or Python) exception. A failed connection that names no address
    names ``target``, what the request went to, or says that no address was given."""
    try:
        text = f"{exc.getClass().getName()}: {exc.getMessage()}"  # type: ignore[attr-defined]
    except AttributeError:
        text = f"{type(exc).__name__}: {exc}"
    return text.replace(_UNNAMED_CONNECT, f"connect to {target} failed (the client's exception named no address)"
                        if target else "connect failed (the client's exception named no address)")
