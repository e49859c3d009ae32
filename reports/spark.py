"""The one SparkSession a process shares: sized for a 2-core / 24 GiB machine by default.

Driver memory only takes effect before the JVM starts, so it is set here, on the first call;
later calls return the same session whatever they ask for. ``conf`` (``--conf key=value``) is
passed to the session's builder after the defaults, so it wins over them.

The session's JVM (pyspark's gateway: ``spark-submit`` → java) runs in a process group of its own,
known from the moment it is spawned: an interruption (Ctrl-C, SIGTERM) while it starts or while it
works kills that group (:func:`kill_spark`). pyspark alone leaks it: interrupted before the gateway
answers, it deletes the directory the JVM was to report its port in, and the JVM's gateway thread
then runs for good.

On a cluster (any master but ``local``/``local[...]``) the session ships the project's code to the
executors and proves they import it before it is returned (:mod:`reports.shipping`). The
executors' Python is ``spark.pyspark.python`` (or ``spark.executorEnv.PYSPARK_PYTHON``, or
``PYSPARK_PYTHON``); a local session's is the driver's own.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
from contextlib import contextmanager

from hourglass.reference.stalls import CHECKER_NICE, niced

DEFAULT_MASTER = "local[*]"
#: Driver memory of a local session (the executors live in the driver's JVM).
DEFAULT_DRIVER_MEMORY = os.environ.get("HOURGLASS_SPARK_DRIVER_MEMORY", "6g")
DEFAULT_SHUFFLE_PARTITIONS = 8

_lock = threading.Lock()
_session = None
_shipped: list = []  # the code zips of this process's sessions (removed when the session stops)
_jvms: list[subprocess.Popen] = []  # the gateway JVMs this process launched (each its process group)
_dead_gateway = False  # a Ctrl-C killed the JVMs already (_on_sigint): pyspark's record of them still to forget
_interrupted = False  # Ctrl-C while the session lived: py4j's records of the calls it broke are noise
_sigint_before = None  # the SIGINT handler in place before the session's (main thread)
_killed = 0  # how many times kill_spark ran: a start begun before the last kill must not live on
_starting = -1  # _killed when the start under way began (-1: none under way)
_warming: threading.Thread | None = None  # warm_spark's start, in the background


#: Ship the project's code to a cluster's executors (off only to show what happens without it).
SHIP_CODE = True


def is_local(master: str) -> bool:
    """Whether ``master`` runs the executors inside the driver's JVM, with the driver's Python."""
    return master == "local" or master.startswith("local[")


def get_spark(master: str | None = None, conf: dict[str, str] | None = None):
    """Return the process-wide SparkSession, starting it on the first call (~5 s; on a cluster,
    plus the executors' start and a probe of what they import)."""
    global _session, _interrupted
    with _lock:
        if _session is not None:
            return _session
        from pyspark.sql import SparkSession

        _interrupted = False
        began = _starting_now()

        master = master or os.environ.get("HOURGLASS_SPARK_MASTER", DEFAULT_MASTER)
        conf = dict(conf or {})
        builder = (
            SparkSession.builder.appName("hourglass-checker")
            .master(master)
            .config("spark.driver.memory", DEFAULT_DRIVER_MEMORY)
            .config("spark.sql.shuffle.partitions", str(DEFAULT_SHUFFLE_PARTITIONS))
            .config("spark.default.parallelism", str(DEFAULT_SHUFFLE_PARTITIONS))
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            .config("spark.sql.adaptive.enabled", "true")
            .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
        )
        for key, value in conf.items():
            builder = builder.config(key, value)
        python = conf.get("spark.pyspark.python") or conf.get("spark.executorEnv.PYSPARK_PYTHON")
        try:
            with _environ("PYSPARK_PYTHON", python or os.environ.get("PYSPARK_PYTHON") or (sys.executable if is_local(master) else None)), \
                    _gateway_tracked(), _own_sigint():
                session = builder.getOrCreate()  # the context takes its workers' Python from PYSPARK_PYTHON
            session.sparkContext.setLogLevel("ERROR")
            if not is_local(master):
                from hourglass.reports import shipping

                try:
                    if SHIP_CODE:
                        _shipped.append(shipping.ship(session))
                    shipping.probe(session)
                except BaseException:
                    session.stop()
                    raise
        except BaseException as e:
            if not isinstance(e, Exception):  # Ctrl-C, SIGTERM: nothing of the start may outlive us
                kill_spark()
            raise
        finally:
            _done_starting()
        if began != _killed:  # killed while it started (a warm-up when the batch was interrupted)
            kill_spark()
            raise RuntimeError("the Spark session was killed while it started")
        _session = session
        return _session


def _starting_now() -> int:
    global _starting
    _starting = _killed
    return _starting


def _done_starting() -> None:
    global _starting
    _starting = -1


def warm_spark(master: str | None = None, conf: dict[str, str] | None = None) -> None:
    """Start the session in a background thread, so that it is warm when a check wants it (the
    check's :func:`get_spark` waits for this start, or starts anew if it failed). Called from the
    main thread, it puts in place the Ctrl-C handling a start there would (:func:`_own_sigint`):
    an interruption meanwhile kills the JVM as it would kill a session started by the check."""
    global _warming
    if _session is not None or (_warming is not None and _warming.is_alive()):
        return
    guard_interrupts()

    def start() -> None:
        try:
            _first_job(get_spark(master, conf))
        except Exception:  # noqa: BLE001 - the check starts it again and says what is wrong
            pass

    _warming = threading.Thread(target=start, daemon=True, name="hg-spark-warm")
    _warming.start()


def guard_interrupts() -> None:
    """From the main thread: the Ctrl-C handling a session's start needs (:func:`_own_sigint`), in
    place before :func:`warm_spark` is called from another thread (a batch starts the session
    once its runs are under way: ``harness.batch.BatchOptions.when_settled``)."""
    global _sigint_before
    if threading.current_thread() is threading.main_thread() and _sigint_before is None:
        _sigint_before = signal.getsignal(signal.SIGINT)
        signal.signal(signal.SIGINT, _on_sigint)


def _first_job(session) -> None:
    """A small job of the kinds a check runs (an aggregation with a shuffle, a collect through
    Arrow): a session's first job loads and compiles most of what later ones use (~7 s of a
    check's first job on the 2-core machine), done here while the runs go on."""
    df = session.createDataFrame([(i, f"k{i % 3}") for i in range(100)], "x long, k string")
    df.groupBy("k").count().collect()
    df.toPandas()


def spark_state() -> str:
    """``warm`` (a session is up), ``starting`` (a start is under way) or ``cold``."""
    if _session is not None:
        return "warm"
    return "starting" if _starting >= 0 or (_warming is not None and _warming.is_alive()) else "cold"


class _GroupedPopen(subprocess.Popen):
    """pyspark's spawn of the gateway JVM, in a session (and process group) of its own, niced, and
    recorded as soon as it exists (pyspark hands the process out only once the gateway answered)."""

    def __init__(self, args, *rest, **kwargs):
        kwargs.setdefault("start_new_session", True)  # a session (and process group) of its own: niced alone
        # niced: a run's broker gets the CPU first (reference.stalls.CHECKER_NICE)
        super().__init__(niced(list(args), CHECKER_NICE) if isinstance(args, (list, tuple)) else args, *rest, **kwargs)
        _jvms.append(self)
        if _starting != _killed:  # kill_spark ran since this start began: it may have missed us
            _kill_jvms()


@contextmanager
def _gateway_tracked():
    """pyspark's ``launch_gateway`` spawning through :class:`_GroupedPopen` for the duration."""
    from pyspark import java_gateway

    spawn = java_gateway.Popen
    java_gateway.Popen = _GroupedPopen
    try:
        yield
    finally:
        java_gateway.Popen = spawn


@contextmanager
def _own_sigint():
    """Ctrl-C while the session lives does what it did before (the handler the context installs
    asks the JVM to cancel its jobs from inside the interrupted call: py4j's "reentrant call", and
    tracebacks of both sides), and whoever catches it kills the JVM (:func:`kill_spark`). py4j
    still logs, with tracebacks, how the interrupted call and its connection ended: those records
    are dropped (the command says in one line that it was interrupted)."""
    global _sigint_before
    main = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGINT) if main else None
    try:
        yield
    finally:
        if main:
            signal.signal(signal.SIGINT, _on_sigint)
            if before is not _on_sigint:  # warm_spark put it in place already
                _sigint_before = before
        for name in ("", "py4j.java_gateway", "py4j.clientserver"):  # py4j logs on the root logger too
            logging.getLogger(name).addFilter(_not_after_an_interrupt)


def _on_sigint(signum, frame):
    global _interrupted, _dead_gateway
    _interrupted = True
    if _jvms:  # first: a JVM that sees py4j's socket close as the interrupt unwinds shuts down by
        _kill_jvms()  # itself, printing Java stack traces (RejectedExecutionException) to the user
        _dead_gateway = True
    if callable(_sigint_before):
        _sigint_before(signum, frame)
    elif _sigint_before != signal.SIG_IGN:
        raise KeyboardInterrupt


def interrupted() -> bool:
    """Whether a Ctrl-C reached the session since it started: a call it broke may surface as any
    Spark or py4j error (a cancelled job's "Block rdd_5_0 does not exist") before the
    KeyboardInterrupt itself does, and is still the interruption (``reports.command``)."""
    return _interrupted


def clear_interrupted() -> None:
    """A new command starts: an earlier command's interruption is not this one's."""
    global _interrupted
    _interrupted = False


def _restore_sigint() -> None:
    global _sigint_before
    if _sigint_before is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _sigint_before)
        _sigint_before = None


def _not_after_an_interrupt(record: logging.LogRecord) -> bool:
    return not (_interrupted and f"{os.sep}py4j{os.sep}" in record.pathname)


def kill_spark() -> None:
    """Kill the session's JVM (its whole process group) without asking it anything, and forget the
    session (the next :func:`get_spark` starts a new one). For an interrupted check: a graceful
    stop would wait on the very calls being interrupted; the JVM writes nothing worth keeping."""
    global _session, _interrupted, _killed, _dead_gateway
    _interrupted = True
    _killed += 1
    if _jvms or _dead_gateway:
        _kill_jvms()
        _forget_gateway()
        _dead_gateway = False
    _restore_sigint()
    _session = None
    while _shipped:
        shutil.rmtree(_shipped.pop().parent, ignore_errors=True)


def _kill_jvms() -> None:
    """SIGKILL each gateway JVM's group and reap it; a second Ctrl-C or SIGTERM meanwhile is held
    until this is done."""
    held = threading.current_thread() is threading.main_thread()
    if held:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        while _jvms:
            proc = _jvms.pop()
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    finally:
        if held:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


def _forget_gateway() -> None:
    """pyspark's record of a killed gateway reset, so that nothing calls the dead JVM."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    gateway, SparkContext._gateway, SparkContext._jvm = SparkContext._gateway, None, None
    SparkContext._active_spark_context = None
    SparkSession._instantiatedSession = SparkSession._activeSession = None
    if gateway is not None:
        try:
            gateway.close()
        except Exception:  # noqa: BLE001 - its peer is gone; the sockets close with the process
            pass


@contextmanager
def _environ(name: str, value: str | None):
    """``name`` set to ``value`` (unchanged when None) for the duration."""
    old = os.environ.get(name)
    if value is not None:
        os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = old


def conf_item(text: str) -> tuple[str, str]:
    """``--conf key=value`` (argparse ``type``): the pair, or a one-line usage error."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected key=value (a Spark property), found {text!r}")
    return key.strip(), value


def stop_spark() -> None:
    """Stop the shared session (the next :func:`get_spark` starts a new one)."""
    global _session
    with _lock:
        _restore_sigint()
        if _session is not None:
            _session.stop()
            _session = None
        while _shipped:
            shutil.rmtree(_shipped.pop().parent, ignore_errors=True)


def check_master(master: str | None, timeout_s: float = 5.0) -> None:
    """Fail fast on a Spark master that cannot work: an unknown URL form, or a standalone master
    (``spark://host:port[,host:port]``) none of whose addresses accepts a connection. Raises
    :class:`reference.contract.ContractError` naming the option."""
    import re
    import socket

    from hourglass.reference.contract import ContractError

    if master is None or re.fullmatch(r"local(\[(\*|\d+)(,\d+)?\])?|yarn|k8s://.+|local-cluster\[.+\]", master):
        return
    m = re.fullmatch(r"spark://(.+)", master)
    if not m:
        raise ContractError("--master", None, "local[*], local[N], spark://HOST:PORT, yarn or k8s://URL", master)
    errors = []
    for hostport in m.group(1).split(","):
        host, _, port = hostport.rpartition(":")
        if not host or not port.isdigit():
            raise ContractError("--master", None, "spark://HOST:PORT", master)
        try:
            socket.create_connection((host, int(port)), timeout=timeout_s).close()
            return
        except OSError as e:
            errors.append(f"{hostport}: {e.strerror or e}")
    raise ContractError("--master", None, "a reachable Spark master", f"{master} ({'; '.join(errors)})")
