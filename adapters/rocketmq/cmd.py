"""``cmd:FILE``: any implementation of RocketMQ's protocol as the system under test, started by the
commands a TOML file gives (a fork with its own launcher, a broker written from scratch, an Apache
release through its own ``bin/`` scripts).

Harness-facing API::

    cmd = load_cmd_file("acme.toml")          # ContractError naming file, field, expected, found
    dist = cmd_distribution("cmd:/abs/acme.toml")   # a Distribution: the client's jars, the commands
    argv, env = dist.command("broker", {"conf": ..., "port": ..., ...})

The file (``adapters/rocketmq/examples/apache-scripts.toml`` is a complete one)::

    version = "5.3.3-acme.1"            # system.version in run.json; baselines match on it
    client = "rocketmq:5.3.3"           # the official client that drives it (rocketmq:, dist:, jars:)
    config_format = "java-properties"   # what the harness writes into {conf} (the only format so far)

    [capabilities]
    timer = true                        # 5.x timer messages; absent = false (those scenarios skip)
    async_deliver = true                # enableScheduleAsyncDeliver (4.9.3+); absent = false
    pop = true                          # 5.x POP consumption; absent = false

    [env]                               # added to the harness's environment, for every component
    HOME = "{home}"

    [namesrv]
    command = ["{here}/bin/mqnamesrv", "-c", "{conf}"]   # argv; a string runs through /bin/sh -c
    env = { JAVA_OPT_EXT = "-Xmx256m" }                  # this component only (wins over [env])

    [broker]
    command = "exec {here}/bin/acme-broker --config {conf} >>{log} 2>&1"

Placeholders (:data:`PLACEHOLDERS` says what each holds) may appear in commands and env values:
``{conf}`` ``{port}`` ``{namesrv}`` ``{store}`` ``{home}`` ``{log}`` ``{here}`` ``{java_home}``
``{env:NAME}``; ``{{`` and ``}}`` are literal braces (a shell's ``${{HOME}}``). In a string command each value is shell-quoted. The
harness writes the component's config into ``{conf}`` before each launch (the same keys as for a
released version: ``listenPort``, ``namesrvAddr``, ``storePathRootDir``, ``messageDelayLevel``, ...),
runs the command in a process group of its own with stdout and stderr appended to ``{log}``, and
applies faults to the whole group (SIGTERM, SIGKILL, SIGSTOP/SIGCONT): a launcher that leaves its
server running in the group (a script, ``sh -c``, a background ``&``) is fine; one that daemonizes
into a new session escapes the harness. Readiness is a round trip through the client, as for every
system. Only ``--runtime process``.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from hourglass.adapters.base import AdapterError
from hourglass.adapters.rocketmq.provision import Distribution, resolve, valid_version
from hourglass.reference.contract import CAPABILITIES as SYSTEM_CAPABILITIES
from hourglass.reference.contract import ContractError

KIND = "cmd:"
COMPONENTS = ("namesrv", "broker")
CONFIG_FORMATS = ("java-properties",)
CAPABILITIES = SYSTEM_CAPABILITIES  # reference.contract owns the vocabulary

#: every placeholder: what it stands for (the error for an unknown one lists them)
PLACEHOLDERS = {
    "conf": "the config file the harness writes for this component",
    "port": "this component's listen port (the broker also takes port-2 and port+1)",
    "namesrv": "host:port of the name server",
    "store": "the store root directory (storePathRootDir): kept across kill -9 and restarts",
    "home": "a ROCKETMQ_HOME-like directory the harness makes (conf/, logs/)",
    "log": "the file this component's stdout and stderr are appended to",
    "here": "the directory of this cmd file",
    "java_home": "the JDK the harness runs ($JAVA_HOME, else the one of java on PATH)",
    "env:NAME": "the harness's environment variable NAME (empty when unset)",
}
#: the placeholders whose values the system gives at each launch
SYSTEM_VALUES = ("conf", "port", "namesrv", "store", "home", "log")

_TOP_KEYS = ("version", "client", "config_format", "capabilities", "env", *COMPONENTS)
_COMPONENT_KEYS = ("command", "env")
_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _placeholders(text: str) -> list[str]:
    return [m.group(1) for m in _TOKEN.finditer(text) if m.group(1) is not None]


def _known(name: str) -> bool:
    if name.startswith("env:"):
        return bool(_ENV_NAME.fullmatch(name[4:]))
    return name in PLACEHOLDERS and name != "env:NAME"


def expand(text: str, values: dict[str, str], quote: bool = False) -> str:
    """``text`` with each ``{name}`` replaced by ``values[name]`` (``{env:NAME}`` from the
    environment), ``{{``/``}}`` by a brace; ``quote``: each value shell-quoted."""
    def one(m: re.Match) -> str:
        if m.group(0) in ("{{", "}}"):
            return m.group(0)[0]
        name = m.group(1)
        value = os.environ.get(name[4:], "") if name.startswith("env:") else values[name]
        return shlex.quote(value) if quote else value

    return _TOKEN.sub(one, text)


def java_home() -> str:
    """The JDK the harness runs: ``$JAVA_HOME`` when it has ``bin/java``, else the one of ``java`` on PATH."""
    env = os.environ.get("JAVA_HOME")
    if env and (Path(env) / "bin" / "java").exists():
        return env
    java = shutil.which("java")
    if java is None:
        raise AdapterError("{java_home}: no JAVA_HOME with bin/java and no java on PATH")
    return str(Path(os.path.realpath(java)).parent.parent)


@dataclass(frozen=True)
class ComponentCommand:
    command: tuple[str, ...]  # argv, or one shell string when ``shell``
    shell: bool
    env: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class CmdFile:
    path: Path  # absolute
    version: str
    client: str
    config_format: str
    capabilities: frozenset[str]
    env: tuple[tuple[str, str], ...]
    components: dict[str, ComponentCommand] = field(compare=False)

    def launch(self, component: str, values: dict[str, str]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
        """The command line and the environment ``component`` runs with, placeholders expanded."""
        missing = [k for k in SYSTEM_VALUES if k not in values]
        if missing:
            raise AdapterError(f"{self.path}: no value for {', '.join('{' + k + '}' for k in missing)}")
        values = {k: str(v) for k, v in values.items()}
        values["here"] = str(self.path.parent)
        used = {p for s in (*self.components[component].command, *(v for _, v in self.env),
                            *(v for _, v in self.components[component].env)) for p in _placeholders(s)}
        if "java_home" in used:
            values["java_home"] = java_home()
        comp = self.components[component]
        if comp.shell:
            argv = ("/bin/sh", "-c", expand(comp.command[0], values, quote=True))
        else:
            argv = tuple(expand(a, values) for a in comp.command)
        env = dict(self.env)
        env.update(comp.env)
        return argv, tuple((k, expand(v, values)) for k, v in env.items())

    def check_programs(self) -> None:
        """Each argv command's program is there and executable, where its path can be told before
        a launch (placeholders ``{here}``, ``{java_home}``, ``{env:NAME}`` only): a typo shows
        before anything runs. A shell string is the shell's to check."""
        for name, comp in self.components.items():
            used = _placeholders(comp.command[0])
            if comp.shell or any(p in SYSTEM_VALUES for p in used):
                continue
            values = {"here": str(self.path.parent), **({"java_home": java_home()} if "java_home" in used else {})}
            program = expand(comp.command[0], values)
            found = (os.path.isfile(program) and os.access(program, os.X_OK)) if "/" in program else shutil.which(program)
            if not found:
                raise ContractError(str(self.path), f"{name}.command[0]", "an executable program (a path, or a name "
                                    "on PATH)", program)


def _check_text(where: str, name: str, value, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ContractError(where, name, what, value)
    for p in _placeholders(value):
        if not _known(p):
            raise ContractError(where, name, "placeholders among " + ", ".join("{" + k + "}" for k in PLACEHOLDERS)
                                + " ({{ and }} for a literal brace)", "{" + p + "}")
    return value


def _check_env(where: str, name: str, table) -> tuple[tuple[str, str], ...]:
    if not isinstance(table, dict):
        raise ContractError(where, name, "a table of environment variables (NAME = \"value\")", table)
    out = []
    for key, value in table.items():
        if not _ENV_NAME.fullmatch(key):
            raise ContractError(where, f"{name}.{key}", "an environment variable name ([A-Za-z_][A-Za-z0-9_]*)", key)
        if not isinstance(value, str):
            raise ContractError(where, f"{name}.{key}", "a string", value)
        if value:
            _check_text(where, f"{name}.{key}", value, "a string")
        out.append((key, value))
    return tuple(out)


def _check_component(where: str, name: str, table) -> ComponentCommand:
    if not isinstance(table, dict):
        raise ContractError(where, name, f"a table [{name}] with command = [\"...\"] (and optional env)", table)
    for key in table:
        if key not in _COMPONENT_KEYS:
            raise ContractError(where, f"{name}.{key}", f"one of {', '.join(_COMPONENT_KEYS)}", key)
    command = table.get("command")
    if command is None:
        raise ContractError(where, f"{name}.command", "the command that starts it: an argv list, or a string "
                            "for /bin/sh -c (required)", "missing")
    if isinstance(command, str):
        return ComponentCommand((_check_text(where, f"{name}.command", command, "a non-empty shell command"),), True,
                                _check_env(where, f"{name}.env", table.get("env", {})))
    if not isinstance(command, list) or not command:
        raise ContractError(where, f"{name}.command", "an argv list of strings, or a string for /bin/sh -c", command)
    argv = tuple(_check_text(where, f"{name}.command[{i}]", a, "a non-empty string") for i, a in enumerate(command))
    return ComponentCommand(argv, False, _check_env(where, f"{name}.env", table.get("env", {})))


def _check_client(where: str, client) -> str:
    what = "the official client that drives it: rocketmq:<version> (e.g. rocketmq:5.3.3), dist:/path or jars:/path"
    if not isinstance(client, str):
        raise ContractError(where, "client", what + " (required)", "missing" if client is None else client)
    kind, _, rest = client.partition(":")
    if kind == "rocketmq" and (rest == "latest" or valid_version(rest)):
        return client
    if kind in ("dist", "jars") and rest:
        return client
    raise ContractError(where, "client", what, client)


def load_cmd_file(path) -> CmdFile:
    """Read and check a cmd file; every error is one :class:`ContractError` naming the file, the
    field, what was expected and what was found."""
    path = Path(os.path.abspath(os.path.expanduser(str(path))))
    where = str(path)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as e:
        raise ContractError(where, None, "a readable TOML file giving the system's commands", e.strerror or str(e)) from None
    except tomllib.TOMLDecodeError as e:
        raise ContractError(where, None, "TOML", str(e)) from None
    for key in data:
        if key not in _TOP_KEYS:
            raise ContractError(where, key, f"one of {', '.join(_TOP_KEYS)}", key)
    version = data.get("version")
    if not isinstance(version, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._+-]*", version):
        raise ContractError(where, "version", "the system's version string, e.g. \"5.3.3\" or \"5.3.3-acme.1\" "
                            "(reported as system.version; baselines match on it) (required)",
                            "missing" if version is None else version)
    client = _check_client(where, data.get("client"))
    config_format = data.get("config_format", "java-properties")
    if config_format not in CONFIG_FORMATS:
        raise ContractError(where, "config_format", "java-properties (key=value lines: the only format the harness "
                            "writes so far)", config_format)
    caps = data.get("capabilities", {})
    if not isinstance(caps, dict):
        raise ContractError(where, "capabilities", "a table of capability = true/false", caps)
    for key, value in caps.items():
        if key not in CAPABILITIES:
            raise ContractError(where, f"capabilities.{key}", f"one of {', '.join(CAPABILITIES)}", key)
        if not isinstance(value, bool):
            raise ContractError(where, f"capabilities.{key}", "true or false", value)
    env = _check_env(where, "env", data.get("env", {}))
    components = {}
    for name in COMPONENTS:
        if name not in data:
            raise ContractError(where, name, f"a table [{name}] with command = [\"...\"] (required)", "missing")
        components[name] = _check_component(where, name, data[name])
    return CmdFile(path, version, client, config_format, frozenset(k for k, v in caps.items() if v), env, components)


@dataclass(frozen=True)
class CommandDistribution(Distribution):
    """A ``cmd:`` system as the RocketMQ system sees a distribution: the client's jars drive it,
    its own commands start its name server and broker."""

    cmd: CmdFile | None = None
    client: Distribution | None = None

    @property
    def major(self) -> int:  # the protocol generation the client speaks
        assert self.client is not None
        return self.client.major

    @property
    def capabilities(self) -> frozenset[str]:
        assert self.cmd is not None
        return self.cmd.capabilities

    def command(self, component: str, values: dict[str, str]):
        assert self.cmd is not None
        return self.cmd.launch(component, values)

    def details(self) -> dict:
        assert self.cmd is not None and self.client is not None
        return {"client": self.client.system, "client_version": self.client.version,
                "capabilities": sorted(self.cmd.capabilities)}


def cmd_path(system: str) -> Path:
    """``cmd:FILE`` -> the absolute path of FILE."""
    return Path(os.path.abspath(os.path.expanduser(system[len(KIND):])))


def cmd_distribution(system: str) -> CommandDistribution:
    """The distribution of ``cmd:FILE``: the file checked, the client's jars fetched once."""
    cmd = load_cmd_file(cmd_path(system))
    client = resolve(cmd.client)
    return CommandDistribution(KIND + str(cmd.path), cmd.version, client.lib_dir, None, "cmd",
                               {"file": str(cmd.path)}, cmd=cmd, client=client)
