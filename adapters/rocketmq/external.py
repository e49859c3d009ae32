"""The external runtime: an existing cluster (e.g. staging before an upgrade), reached through its
name server, with faults the user supplies as shell commands.

Harness-facing API::

    open_system("rocketmq:5.3.3", runtime="external", workdir=run_dir / "system",
                namesrv_addr="10.0.0.5:9876",
                fault_commands={"kill:broker": "ssh b1 'pkill -9 -f BrokerStartup'",
                                "start:broker": "ssh b1 'systemctl start rocketmq-broker'"})

Keys are ``<action>:<component>`` with action ``start``/``stop``/``kill``/``pause``/``resume``
(``disk_full``/``disk_free``: fill the broker's store above its disk-full ratio, and free it) and
component ``broker``/``namesrv``/``proxy`` (the 5.x proxy ``--proxy`` names). A fault without a command raises :class:`AdapterError` naming the
key it looked for. The harness starts nothing here, so ``close()`` stops nothing; the client and
consumer processes are still the harness's own and are cleaned up by the system.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

from hourglass.adapters.base import AdapterError
from hourglass.adapters.parts import PROCESS_ACTIONS
from hourglass.adapters.rocketmq.runtime import LaunchSpec
from hourglass.reference.contract import PROXY_TARGET, ContractError, OptionError
from hourglass.reference.disk import DISK_ACTIONS

ACTIONS = (*PROCESS_ACTIONS, *DISK_ACTIONS)
COMPONENTS = ("broker", "namesrv", PROXY_TARGET)


def load_fault_commands(path) -> dict[str, str]:
    """A ``--faults`` file (TOML) as ``{"<action>:<component>": command}``::

        [broker]
        kill = "ssh b1 'pkill -9 -f BrokerStartup'"
        start = "ssh b1 'systemctl start rocketmq-broker'"
        [namesrv]
        stop = "ssh n1 'systemctl stop rocketmq-namesrv'"

    Errors name the file and the table/key (:class:`ContractError`)."""
    where = str(path)
    try:
        data = tomllib.loads(Path(path).read_text())
    except OSError as e:
        raise ContractError(where, None, "a readable TOML file of fault commands", e.strerror or str(e)) from None
    except tomllib.TOMLDecodeError as e:
        raise ContractError(where, None, "TOML", str(e)) from None
    out = {}
    for component, table in data.items():
        if component not in COMPONENTS or not isinstance(table, dict):
            raise ContractError(where, component, f"a table named one of {', '.join(COMPONENTS)}", table)
        for action, cmd in table.items():
            if action not in ACTIONS:
                raise ContractError(where, f"{component}.{action}", f"one of {', '.join(ACTIONS)}", action)
            if not isinstance(cmd, str) or not cmd.strip():
                raise ContractError(where, f"{component}.{action}", "a shell command (a non-empty string)", cmd)
            out[f"{action}:{component}"] = cmd
    return out


#: one name server address: a host name or IPv4 address, a port 1..65535 (the client's own form)
_NAMESRV = re.compile(r"(?P<host>[A-Za-z0-9._-]+):(?P<port>\d{1,5})")


def check_namesrv(addr: str | None, option: str = "--namesrv", expected: str | None = None) -> str:
    """``--namesrv``: HOST:PORT (several separated by ';', as the client takes them); ``--proxy``
    (``option``) one HOST:PORT. A malformed one is a usage error (:class:`OptionError`) naming the
    address at fault."""
    expected = expected or "HOST:PORT of the cluster's name server, port 1..65535, several separated by ';' (required by --runtime external)"
    if not addr:
        raise OptionError(option, None, expected, "none")
    for a in addr.split(";") if option == "--namesrv" else (addr,):
        m = _NAMESRV.fullmatch(a)
        if not m or not 1 <= int(m["port"]) <= 65535:
            raise OptionError(option, None, expected, a)
    return addr


class ExternalRuntime:
    name = "external"

    def __init__(self, fault_commands: dict[str, str], timeout_s: float = 120.0):
        for key in fault_commands:
            action, _, component = key.partition(":")
            if action not in ACTIONS or not component:
                raise AdapterError(f"fault_commands: key {key!r}: expected '<action>:<component>' with action "
                                   f"one of {', '.join(ACTIONS)}")
        self.commands = dict(fault_commands)
        self.timeout_s = timeout_s
        self._last_output: dict[str, str] = {}

    def cannot(self, action: str, component: str) -> str | None:
        """Why not: the user gave no command for ``action`` on ``component``; None when they did."""
        key = f"{action}:{component}"
        if key in self.commands:
            return None
        return f"no fault command for {key!r} (given: {', '.join(sorted(self.commands)) or 'none'}; give them in --faults)"

    def run(self, action: str, component: str) -> None:
        why = self.cannot(action, component)
        if why:
            raise AdapterError(f"external runtime: {why}")
        key = f"{action}:{component}"
        cmd = self.commands[key]
        proc = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=self.timeout_s)
        self._last_output[component] = (proc.stdout + proc.stderr)[-4000:]
        if proc.returncode != 0:
            raise AdapterError(f"external runtime: {key} command exited {proc.returncode}: {cmd}\n"
                               f"{self._last_output[component]}")

    def ships(self, artifact: str) -> bool:
        return False  # it launches nothing: the cluster's proxy is the user's (--proxy)

    def launch(self, spec: LaunchSpec) -> None:
        raise AdapterError(f"external runtime: the cluster is not started by the harness (asked to launch {spec.component})")

    def start(self, component: str) -> None:
        self.run("start", component)

    def stop(self, component: str, timeout_s: float = 60.0) -> None:
        self.run("stop", component)

    def kill(self, component: str) -> None:
        self.run("kill", component)

    def pause(self, component: str) -> None:
        self.run("pause", component)

    def resume(self, component: str) -> None:
        self.run("resume", component)

    def cannot_throttle(self, component: str) -> str | None:
        return f"the external runtime has no command to limit the CPU of {component}"

    def throttle_cpu(self, component: str, permille: int | None) -> None:
        raise AdapterError(self.cannot_throttle(component))

    def running(self, component: str) -> bool:
        return True  # the harness cannot tell; readiness round trips can

    def exit_code(self, component: str) -> int | None:
        return None

    def log_tail(self, component: str, lines: int = 60) -> str:
        out = self._last_output.get(component)
        return f"(external {component}: last fault command output)\n{out}" if out else f"(external {component}: no log)"

    def pid(self, component: str) -> int | None:
        return None  # it runs on a host of its own

    def processes(self, component: str) -> list[tuple[int, str]]:
        return []

    def note(self, component: str, text: str) -> None:
        """No log of the component here to write into."""

    def use_distribution(self, distribution) -> None:
        """The cluster runs what it runs."""

    def close(self) -> None:
        pass
