"""The one SparkSession a process shares: sized for a 2-core / 24 GiB machine by default.

Driver memory only takes effect before the JVM starts, so it is set here, on the first call;
later calls return the same session whatever they ask for.
"""

from __future__ import annotations

import os
import threading

DEFAULT_MASTER = "local[*]"
#: Driver memory of a local session (the executors live in the driver's JVM).
DEFAULT_DRIVER_MEMORY = os.environ.get("HOURGLASS_SPARK_DRIVER_MEMORY", "6g")
DEFAULT_SHUFFLE_PARTITIONS = 8

_lock = threading.Lock()
_session = None


def get_spark(master: str | None = None):
    """Return the process-wide SparkSession, starting it on the first call (~5 s)."""
    global _session
    with _lock:
        if _session is not None:
            return _session
        os.environ.setdefault("PYSPARK_PYTHON", _python())
        from pyspark.sql import SparkSession

        builder = (
            SparkSession.builder.appName("hourglass-checker")
            .master(master or os.environ.get("HOURGLASS_SPARK_MASTER", DEFAULT_MASTER))
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
        _session = builder.getOrCreate()
        _session.sparkContext.setLogLevel("ERROR")
        return _session


def stop_spark() -> None:
    """Stop the shared session (the next :func:`get_spark` starts a new one)."""
    global _session
    with _lock:
        if _session is not None:
            _session.stop()
            _session = None


def _python() -> str:
    import sys

    return sys.executable


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
