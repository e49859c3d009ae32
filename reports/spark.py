"""The one SparkSession a process shares: sized for a 2-core / 24 GiB machine by default.

Driver memory only takes effect before the JVM starts, so it is set here, on the first call;
later calls return the same session whatever they ask for. ``conf`` (``--conf key=value``) is
passed to the session's builder after the defaults, so it wins over them.

On a cluster (any master but ``local``/``local[...]``) the session ships the project's code to the
executors and proves they import it before it is returned (:mod:`reports.shipping`). The
executors' Python is ``spark.pyspark.python`` (or ``spark.executorEnv.PYSPARK_PYTHON``, or
``PYSPARK_PYTHON``); a local session's is the driver's own.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import threading
from contextlib import contextmanager

DEFAULT_MASTER = "local[*]"
#: Driver memory of a local session (the executors live in the driver's JVM).
DEFAULT_DRIVER_MEMORY = os.environ.get("HOURGLASS_SPARK_DRIVER_MEMORY", "6g")
DEFAULT_SHUFFLE_PARTITIONS = 8

_lock = threading.Lock()
_session = None
_shipped: list = []  # the code zips of this process's sessions (removed when the session stops)


#: Ship the project's code to a cluster's executors (off only to show what happens without it).
SHIP_CODE = True


def is_local(master: str) -> bool:
    """Whether ``master`` runs the executors inside the driver's JVM, with the driver's Python."""
    return master == "local" or master.startswith("local[")


def get_spark(master: str | None = None, conf: dict[str, str] | None = None):
    """Return the process-wide SparkSession, starting it on the first call (~5 s; on a cluster,
    plus the executors' start and a probe of what they import)."""
    global _session
    with _lock:
        if _session is not None:
            return _session
        from pyspark.sql import SparkSession

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
        with _environ("PYSPARK_PYTHON", python or os.environ.get("PYSPARK_PYTHON") or (sys.executable if is_local(master) else None)):
            session = builder.getOrCreate()  # the context takes its workers' Python from PYSPARK_PYTHON
        session.sparkContext.setLogLevel("ERROR")
        if not is_local(master):
            from reports import shipping

            try:
                if SHIP_CODE:
                    _shipped.append(shipping.ship(session))
                shipping.probe(session)
            except BaseException:
                session.stop()
                raise
        _session = session
        return _session


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

    from reference.contract import ContractError

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
