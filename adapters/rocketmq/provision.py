"""Provisioning of RocketMQ versions: from a system name to runnable jars and a ``ROCKETMQ_HOME``.

Harness-facing API::

    dist = resolve("rocketmq:5.5.0")      # or "rocketmq:latest", "dist:/path", "jars:/path"
    dist.version, dist.major, dist.lib_dir
    home = dist.make_home(workdir / "home")  # conf/logback_*.xml the 4.9.x jars lack
    dist.jvm_opts("broker")                  # heap sized for 2 cores + the --add-opens JDK 17 needs

System names:

- ``rocketmq:<version>``: the broker, name server, tools and client jars of that version with
  their full transitive set, resolved from Maven Central through a generated pom and
  ``mvn -q dependency:copy-dependencies`` into ``~/.cache/hourglass/rocketmq/<version>/lib``
  (``HOURGLASS_CACHE`` moves the cache). Fetched once; concurrent resolutions of one version wait
  on a lock file. ``rocketmq-example`` (RocketMQ's benchmark producer) goes to ``example/`` when
  Maven Central has it for that version (only some versions: 4.7.0, 5.5.0 here).
- ``rocketmq:latest`` is :data:`LATEST`, the newest 5.x whose broker, name server, tools and
  client are all on Maven Central when this was written (5.5.1 has a broker but no name server).
  ``python -m hourglass.adapters.rocketmq.provision --list`` shows what Maven Central offers now.
- ``dist:/path``: a distribution directory as RocketMQ's build produces it (``bin/ conf/ lib/``).
- ``jars:/path``: a directory of jars (the full set).
- ``cmd:FILE``: any implementation, started by the commands a TOML file gives, driven by the
  client of the version it names (:mod:`adapters.rocketmq.cmd`).

The version of a local distribution is read from the broker jar (``pom.properties``, else its
file name).

JDK 17: the 4.9.x store unmaps files by reflection on ``java.nio.DirectByteBuffer`` /
``sun.nio.ch.DirectBuffer`` and, in the recovery after a kill -9 (index files), calls
``jdk.internal.ref.Cleaner.clean()``: without ``--add-opens java.base/jdk.internal.ref`` that
recovery fails with ``InaccessibleObjectException`` and the broker exits 253 on restart (found by
the kill -9 test). Every component gets :data:`JDK17_FLAGS` (harmless where not needed; 5.x
starts and recovers with them too). Versions not on Maven Central here: 4.9.8's broker and name
server (4.9.7 is the newest complete 4.9.x), 5.5.1's name server, tools and client.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from hourglass.adapters.base import AdapterError
from hourglass.adapters.phase import step
from hourglass.adapters.rocketmq.jvm import SHADED_NOP_STATUS_LISTENER

#: The newest 5.x with broker, namesrv, tools and client on Maven Central (checked 2026-11).
LATEST = "5.5.0"

GROUP_ID = "org.apache.rocketmq"
SERVER_ARTIFACTS = ("rocketmq-broker", "rocketmq-namesrv", "rocketmq-tools", "rocketmq-client")
EXAMPLE_ARTIFACT = "rocketmq-example"
#: 5.x's proxy (the gRPC endpoint of the 5.x clients): fetched with its own transitive set into
#: ``<version>/proxy`` the first time a run needs it (its 150 jars are not every run's)
PROXY_ARTIFACT = "rocketmq-proxy"
#: The 5.x gRPC Java client (apache/rocketmq-clients, its shaded jar: its gRPC, protobuf and netty
#: relocated, so it loads beside the remoting client): SimpleConsumer, PushConsumer.
GRPC_CLIENT_ARTIFACT, GRPC_CLIENT_VERSION = "rocketmq-client-java", "5.0.8"

JDK17_FLAGS: tuple[str, ...] = (
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    # 4.9.x MappedFile.clean() calls jdk.internal.ref.Cleaner.clean() by reflection: without this
    # the broker cannot unmap files, so recovery after a kill -9 (truncateDirtyFiles) fails and
    # the JVM hangs, and a graceful stop's shutdown hook dies before removing the abort file.
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
)

#: Heap and direct memory per component, sized for a 2-core, shared machine.
HEAP_BY_COMPONENT: dict[str, tuple[str, ...]] = {
    "broker": ("-Xms256m", "-Xmx768m", "-XX:MaxDirectMemorySize=512m"),
    "namesrv": ("-Xms64m", "-Xmx256m"),
    "proxy": ("-Xms128m", "-Xmx512m"),
    "client": ("-Xms64m", "-Xmx384m"),
    "tools": ("-Xms32m", "-Xmx256m"),
}

MAIN_CLASS = {
    "namesrv": "org.apache.rocketmq.namesrv.NamesrvStartup",
    "broker": "org.apache.rocketmq.broker.BrokerStartup",
    "proxy": "org.apache.rocketmq.proxy.ProxyStartup",
    "tools": "org.apache.rocketmq.tools.command.MQAdminStartup",
    "bench_producer": "org.apache.rocketmq.example.benchmark.Producer",
}

_VERSION_RE = re.compile(r"^\d+\.\d+\.\d+([.-][A-Za-z0-9.-]+)?$")


def valid_version(version: str) -> bool:
    """A release version string as Maven Central names them (``4.9.7``, ``5.5.0``)."""
    return bool(_VERSION_RE.match(version))


class ProvisionError(AdapterError):
    """A system name that cannot be turned into runnable jars; says what was tried and what to do."""


class NotOnCentral(ProvisionError):
    """Maven Central has no such artifact at that version (e.g. rocketmq-proxy 5.1.2 and 5.1.4)."""


@dataclass(frozen=True)
class Distribution:
    system: str  # as the user wrote it
    version: str
    lib_dir: Path
    example_dir: Path | None = None  # rocketmq-example jar(s), where Maven Central has them
    source: str = "maven"  # maven | dist | jars
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def major(self) -> int:
        return int(self.version.split(".", 1)[0])

    def example_classpath(self) -> tuple[str, ...] | None:
        if self.example_dir is None:
            return None
        return (str(self.example_dir / "*"), str(self.lib_dir / "*"))

    def jvm_opts(self, component: str) -> tuple[str, ...]:
        heap = HEAP_BY_COMPONENT.get(component, HEAP_BY_COMPONENT["tools"])
        common = ("-XX:+UseG1GC", "-XX:-OmitStackTraceInFastThrow", "-Djava.net.preferIPv4Stack=true",
                  "-Drocketmq.broker.diskSpaceWarningLevelRatio=0.98", "-Dtls.enable=false")
        if self.major >= 5:  # the shaded logback of 5.x prints its whole configuration on stdout
            common += (f"-Dlogback.statusListenerClass={SHADED_NOP_STATUS_LISTENER}",)
        return heap + common + JDK17_FLAGS

    @property
    def capabilities(self) -> frozenset[str]:
        """What its version can do beyond delay levels and retry (the family's rule:
        :func:`adapters.rocketmq.family.capabilities_of`)."""
        from hourglass.adapters.rocketmq.family import capabilities_of

        return frozenset(capabilities_of([self.version]))

    def command(self, component: str, values: dict[str, str]):
        """``(argv, env)`` that starts ``component`` instead of the JVM of its jars (a
        ``cmd:`` system), or None: a released version runs its main class."""
        return None

    def details(self) -> dict:
        """What run.json's ``system`` records about it beyond version and source."""
        return {}

    def make_home(self, home: Path) -> Path:
        """Write a ``ROCKETMQ_HOME`` with the conf files the jars lack (our own logback configs,
        logging to ``$ROCKETMQ_HOME/logs``). Idempotent."""
        conf = home / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        (home / "logs").mkdir(exist_ok=True)
        for component in ("broker", "namesrv", "tools", "proxy"):
            path = conf / f"logback_{component}.xml"
            if not path.exists():
                path.write_text(_logback_config(home / "logs" / f"{component}.log"))
        return home


def _logback_config(log_file: Path) -> str:
    # A small config of our own: one rolling-free file per component, INFO and up.
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>{log_file}</file>
    <append>true</append>
    <encoder><pattern>%d{{yyyy-MM-dd HH:mm:ss,SSS}} %-5level %logger{{32}} - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"""


def cache_root() -> Path:
    base = os.environ.get("HOURGLASS_CACHE")
    return Path(base) if base else Path.home() / ".cache" / "hourglass"


#: Systems that share one store, in turn (``rocketmq:4.9.7+5.5.0``, ``rocketmq:5.5.0+4.9.7``): the
#: broker starts as the first, and each later start of it launches the next one, wrapping around (an
#: upgrade, then a downgrade, across the same store). A part without a kind takes the one before it.
CHAIN_SEP = "+"


def split_chain(system: str) -> list[str]:
    """``rocketmq:4.9.7+5.5.0`` -> ``['rocketmq:4.9.7', 'rocketmq:5.5.0']``; one system -> itself
    (``cmd:FILE`` is never split: a path may hold a ``+``)."""
    if system.startswith("cmd:"):
        return [system]
    parts = [p.strip() for p in system.split(CHAIN_SEP)]
    out: list[str] = []
    for part in parts:
        if out and ":" not in part:
            part = out[-1].partition(":")[0] + ":" + part
        out.append(part)
    return out


def resolve_chain(system: str) -> tuple[Distribution, ...]:
    """Every distribution of ``system`` (one, or a chain: :data:`CHAIN_SEP`)."""
    return tuple(resolve(s) for s in split_chain(system))


def resolve(system: str) -> Distribution:
    """Turn ``rocketmq:<version>`` / ``rocketmq:latest`` / ``dist:/path`` / ``jars:/path`` /
    ``cmd:FILE`` into a :class:`Distribution`, fetching jars once where needed."""
    kind, sep, rest = system.partition(":")
    if not sep or not rest:
        raise ProvisionError(f"system {system!r}: expected 'rocketmq:<version>', 'dist:/path', 'jars:/path' or 'cmd:FILE'")
    if kind == "cmd":
        from hourglass.adapters.rocketmq.cmd import cmd_distribution

        return cmd_distribution(system)
    if kind == "rocketmq":
        version = LATEST if rest == "latest" else rest
        if not _VERSION_RE.match(version):
            raise ProvisionError(f"system {system!r}: expected a version like 4.9.4 or 5.3.3, found {version!r}")
        return _from_maven(system, version)
    if kind == "dist":
        root = Path(rest)
        lib = root / "lib"
        if not lib.is_dir():
            raise ProvisionError(f"system {system!r}: expected a distribution directory with lib/ (bin/ conf/ lib/), "
                                 f"found no directory {lib}")
        return Distribution(system, _version_of_jars(lib, system), lib, None, "dist", {"root": str(root)})
    if kind == "jars":
        lib = Path(rest)
        if not lib.is_dir():
            raise ProvisionError(f"system {system!r}: expected a directory of jars, found no directory {lib}")
        return Distribution(system, _version_of_jars(lib, system), lib, None, "jars")
    raise ProvisionError(f"system {system!r}: unknown kind {kind!r}; expected rocketmq:, dist:, jars: or cmd:")


def _version_of_jars(lib: Path, system: str) -> str:
    brokers = sorted(lib.glob("rocketmq-broker-*.jar"))
    if not brokers:
        raise ProvisionError(f"system {system!r}: expected a rocketmq-broker-<version>.jar in {lib}, found none")
    jar = brokers[0]
    try:
        with zipfile.ZipFile(jar) as zf:
            props = zf.read(f"META-INF/maven/{GROUP_ID}/rocketmq-broker/pom.properties").decode()
        for line in props.splitlines():
            if line.startswith("version="):
                return line.split("=", 1)[1].strip()
    except (KeyError, zipfile.BadZipFile):
        pass
    m = re.match(r"rocketmq-broker-(.+)\.jar$", jar.name)
    assert m
    return m.group(1)


def _pom(version: str, artifacts: tuple[str, ...]) -> str:
    deps = "\n".join(
        f"    <dependency><groupId>{GROUP_ID}</groupId><artifactId>{a}</artifactId><version>{version}</version></dependency>"
        for a in artifacts
    )
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>hourglass.provision</groupId>
  <artifactId>rocketmq-{version}</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
{deps}
  </dependencies>
</project>
"""


def _mvn(pom_dir: Path, *goals: str) -> subprocess.CompletedProcess:
    cmd = ["mvn", "-B", "-q", "-f", str(pom_dir / "pom.xml"), *goals]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    except FileNotFoundError:
        raise ProvisionError("provisioning rocketmq jars needs Maven ('mvn' on PATH): run .ci/bootstrap "
                             "or apt-get install maven") from None


#: a terminal escape sequence (colour, reset)
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _missing_artifacts(output: str, version: str) -> list[str]:
    found = set(re.findall(rf"{re.escape(GROUP_ID)}:(rocketmq-[a-z-]+):jar:{re.escape(version)}", output))
    found |= set(re.findall(rf"{re.escape(GROUP_ID)}:(rocketmq-[a-z-]+):(?:pom|jar)?:?{re.escape(version)}", output))
    return sorted(found)


def _from_maven(system: str, version: str) -> Distribution:
    vdir = cache_root() / "rocketmq" / version
    hint = (". Versions on Maven Central: 'python -m hourglass.adapters.rocketmq.provision --list'; a fork's own "
            "build works as 'dist:/path/to/distribution' or 'jars:/path/to/lib'")
    info = _fetch_once(vdir, SERVER_ARTIFACTS, version, f"RocketMQ {version} jars", system, hint=hint,
                       extra=lambda: {"example": _fetch_example(version, vdir)})
    example = vdir / "example" if info.get("example") else None
    return Distribution(system, version, vdir / "lib", example, "maven", info)


def _fetch_example(version: str, vdir: Path) -> bool:
    """The example jar only (its dependencies are client/common, already in lib); False when Maven
    Central lacks it at ``version``."""
    ex_build = vdir / "pom-example"
    ex_build.mkdir(exist_ok=True)
    (ex_build / "pom.xml").write_text(_pom(version, (EXAMPLE_ARTIFACT,)))
    ex = _mvn(ex_build, "dependency:copy-dependencies", f"-DoutputDirectory={vdir / 'example'}",
              f"-DincludeArtifactIds={EXAMPLE_ARTIFACT}")
    return ex.returncode == 0 and any((vdir / "example").glob("*.jar"))


def proxy_lib(dist: Distribution) -> Path:
    """The proxy's jars of ``dist``'s version (``rocketmq-proxy`` with its full transitive set),
    fetched from Maven Central once; a local distribution's own ``lib`` when it has the proxy jar."""
    if any(dist.lib_dir.glob(f"{PROXY_ARTIFACT}-*.jar")):
        return dist.lib_dir
    if dist.source != "maven":
        raise ProvisionError(f"system {dist.system!r}: its jars hold no {PROXY_ARTIFACT} jar (the gRPC proxy)")
    vdir = cache_root() / "rocketmq" / dist.version / "proxy"
    _fetch_once(vdir, (PROXY_ARTIFACT,), dist.version, f"RocketMQ {dist.version}'s proxy", dist.system)
    return vdir / "lib"


def grpc_client_lib() -> Path:
    """The gRPC Java client's jars (:data:`GRPC_CLIENT_ARTIFACT` and its API), fetched once."""
    vdir = cache_root() / GRPC_CLIENT_ARTIFACT / GRPC_CLIENT_VERSION
    _fetch_once(vdir, (GRPC_CLIENT_ARTIFACT,), GRPC_CLIENT_VERSION, f"the gRPC Java client {GRPC_CLIENT_VERSION}",
                f"{GRPC_CLIENT_ARTIFACT}:{GRPC_CLIENT_VERSION}")
    return vdir / "lib"


def _fetch_once(vdir: Path, artifacts: tuple[str, ...], version: str, what: str, system: str, *,
                hint: str = "", extra=None) -> dict:
    """Resolve the runtime set of ``artifacts`` at ``version`` into ``vdir/lib`` once and return
    ``vdir/resolved.json`` (written last, so a half-done download is redone; a lock file makes
    concurrent runs wait). ``extra()`` adds fields to it after the jars are in place."""
    vdir.mkdir(parents=True, exist_ok=True)
    marker = vdir / "resolved.json"
    with open(vdir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            with step(f"downloading {what}"):
                _copy_dependencies(vdir, artifacts, version, system, hint)
                info = {"version": version, "artifacts": list(artifacts),
                        "jars": len(list((vdir / "lib").glob("*.jar")))}
                info.update(extra() if extra else {})
                marker.write_text(json.dumps(info, indent=1))
        return json.loads(marker.read_text())


def _copy_dependencies(vdir: Path, artifacts: tuple[str, ...], version: str, system: str, hint: str) -> None:
    """Maven's ``dependency:copy-dependencies`` of ``artifacts`` into ``vdir/lib``; an artifact Maven
    Central lacks at ``version`` is :class:`NotOnCentral`, any other failure a ProvisionError with
    Maven's own error lines."""
    (vdir / "pom").mkdir(exist_ok=True)
    (vdir / "pom" / "pom.xml").write_text(_pom(version, artifacts))
    partial = vdir / "lib.partial"
    proc = _mvn(vdir / "pom", "dependency:copy-dependencies", f"-DoutputDirectory={partial}", "-DincludeScope=runtime")
    if proc.returncode != 0:
        out = _ANSI.sub("", proc.stdout + proc.stderr)  # Maven colours its output even in batch mode
        missing = _missing_artifacts(out, version)
        errors = [line for line in out.strip().splitlines() if line.startswith("[ERROR]")]
        said = "\n".join(errors[:6] or out.strip().splitlines()[-6:])
        if missing:
            raise NotOnCentral(f"system {system!r}: Maven Central has no {', '.join(missing)} {version}{hint}.\nmvn said:\n{said}")
        raise ProvisionError(f"system {system!r}: Maven could not resolve {', '.join(artifacts)} {version}{hint}.\nmvn said:\n{said}")
    if (vdir / "lib").exists():
        _rmtree(vdir / "lib")
    partial.rename(vdir / "lib")


def _rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


def central_versions() -> dict[str, list[str]]:
    """Versions Maven Central lists for each server artifact (its maven-metadata.xml, fetched by
    Maven itself through a version range)."""
    out: dict[str, list[str]] = {}
    work = cache_root() / "rocketmq" / "_list"
    work.mkdir(parents=True, exist_ok=True)
    for artifact in SERVER_ARTIFACTS:
        (work / "pom.xml").write_text(_pom("[4.0.0,)", (artifact,)).replace("rocketmq-[4.0.0,)", "list"))
        _mvn(work, "-U", "dependency:resolve", "-DexcludeTransitive=true")
        repo = Path.home() / ".m2" / "repository" / GROUP_ID.replace(".", "/") / artifact
        versions: list[str] = []
        for meta in repo.glob("maven-metadata-*.xml"):
            versions += re.findall(r"<version>([^<]+)</version>", meta.read_text())
        out[artifact] = sorted(set(versions), key=_version_key)
    return out


def _version_key(v: str) -> tuple:
    return tuple(int(x) if x.isdigit() else -1 for x in re.split(r"[.-]", v))


def newest_complete(versions: dict[str, list[str]], major: int = 5) -> str | None:
    common = set.intersection(*(set(v) for v in versions.values())) if versions else set()
    release = [v for v in common if re.fullmatch(rf"{major}\.\d+\.\d+", v)]
    return max(release, key=_version_key) if release else None


def main(argv: list[str]) -> int:
    if argv[:1] == ["--list"]:
        versions = central_versions()
        for artifact, vs in versions.items():
            print(f"{artifact}: {' '.join(vs)}")
        print(f"newest 5.x with all of {', '.join(SERVER_ARTIFACTS)}: {newest_complete(versions)} "
              f"(rocketmq:latest = {LATEST})")
        return 0
    for system in argv or [f"rocketmq:{LATEST}"]:
        d = resolve(system)
        print(f"{system}: version {d.version}, lib {d.lib_dir}, example {d.example_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
