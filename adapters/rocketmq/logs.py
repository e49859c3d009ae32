"""The logs of a RocketMQ system (:class:`~adapters.base.LogFiles`): the JVM console outputs and
the client and consumer processes' logs in the system's ``logs/``, and, where the harness started
the servers, RocketMQ's own logs from each server's ``$ROCKETMQ_HOME/logs``; and a failed
server's evidence (its output's tail, the first errors of its own log)."""

from __future__ import annotations

import re
from pathlib import Path

from hourglass.adapters.rocketmq import config as cfg
from hourglass.adapters.rocketmq.process import tail_file
from hourglass.adapters.rocketmq.runtime import Runtime

#: where 5.x's own logback configuration writes the servers' logs, under ``${user.home}/logs``
SERVER_LOG_FOLDER = "rocketmqlogs"
#: each kind of server's own logs under its home's ``logs/``
SERVER_LOGS = {"broker": ("broker.log", f"{SERVER_LOG_FOLDER}/broker.log", f"{SERVER_LOG_FOLDER}/store.log"),
               "namesrv": ("namesrv.log", f"{SERVER_LOG_FOLDER}/namesrv.log")}

_ERROR_LINE = re.compile(r"\bERROR\b|Exception\b")


def first_errors(path: Path, limit: int = 8, context: int = 2) -> str:
    """The first ``limit`` ERROR/exception lines of a log with ``context`` lines after each."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    picked: list[str] = []
    found = 0
    for i, line in enumerate(lines):
        if _ERROR_LINE.search(line) and not line.lstrip().startswith("at "):
            picked += lines[i:i + 1 + context]
            found += 1
            if found >= limit:
                break
    return "\n".join(picked)


def files_under(folder: Path) -> list[Path]:
    """The files below ``folder`` (none if it does not exist), sorted."""
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []


def server_log_tail(runtime: Runtime, component: str, kind: str, home: Path, lines: int = 40) -> str:
    """A server's console output's tail, and the first errors and tail of its own logs."""
    parts = [f"--- {component} JVM output ---", runtime.log_tail(component, lines)]
    for rel in SERVER_LOGS.get(kind, ()):
        path = home / "logs" / rel
        if path.exists():
            errors = first_errors(path)
            if errors:
                parts += [f"--- first errors in {path} ---", errors]
            parts += [f"--- {path} (tail) ---", tail_file(path, lines // 2)]
    return "\n".join(parts)


def client_log_files(logs: Path) -> dict[str, Path]:
    """The JVM console outputs (``broker.out``, ``namesrv.out``) and the client and consumer
    processes' logs (``client-process.log``, ``consumer-<name>.log``, ``rocketmq_client.log``) by
    their own names, the client JVMs' own log folders under ``clients/``."""
    files: dict[str, Path] = {}
    for path in files_under(logs):
        rel = path.relative_to(logs).parts
        if len(rel) == 1:
            files[rel[0]] = path
        else:  # a client JVM's own logs (user.home is the logs folder: 5.x writes logs/rocketmqlogs/)
            files["/".join(("clients",) + (rel[1:] if rel[0] == "logs" else rel))] = path
    return files


def server_log_files(files: dict[str, Path], layouts: list[tuple[str, cfg.StoreLayout]]) -> dict[str, Path]:
    """``files`` and RocketMQ's own logs from each server home's ``logs/`` (``broker.log``,
    ``namesrv.log``, 5.x's ``store.log``, ``remoting.log``, …: the ``rocketmqlogs/`` folder of 5.x
    is flattened, so the broker's log is ``broker.log`` on every version), each under its
    ``prefix`` (the second broker's own logs under ``broker-2/``)."""
    for prefix, layout in layouts:
        home_logs = layout.home_dir / "logs"
        for path in files_under(home_logs):
            rel = path.relative_to(home_logs).parts
            name = prefix + "/".join(rel[1:] if rel[0] == SERVER_LOG_FOLDER and len(rel) > 1 else rel)
            files[name if name not in files else "server/" + prefix + "/".join(rel)] = path
    return files
