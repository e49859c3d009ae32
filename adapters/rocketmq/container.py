"""The container runtime: each RocketMQ component is a JVM in its own Docker container.

Harness-facing API: :class:`ContainerRuntime` implements :class:`adapters.rocketmq.runtime.Runtime`::

    rt = ContainerRuntime(dist, workdir)          # AdapterError when no Docker engine answers
    rt.launch(spec)                               # creates and starts the component's container
    rt.kill("broker"); rt.start("broker")         # the same container, SIGKILL then started again
    rt.close()                                    # removes every container of this runtime

How (FIELD-NOTES "Docker without a registry"): testcontainers 4.x creates each container once, with
host networking, ``--init`` (tini forwards SIGTERM to the JVM; a SIGKILL of the container kills the
JVM with it), the harness's uid:gid (files in the store stay readable and removable on the host)
and every directory the JVM touches bind-mounted at its host path, so configs mean the same inside
and a kill -9 loses nothing on disk. Faults go to the same container through the docker SDK
(testcontainers' ``stop()`` would remove it). A shell wrapper appends the JVM's stdout/stderr to
``spec.log_file`` on the bind mount, so the log outlives the container.

Containers carry labels ``hourglass=1``, the run id, this runtime's id and the harness's pid and
start time; a new runtime removes the containers of harnesses that are gone.
"""

from __future__ import annotations

import os
import socket
import sys
import time
import uuid
from pathlib import Path

from hourglass.adapters.base import AdapterError
from hourglass.adapters.rocketmq import process as _process
from hourglass.adapters.rocketmq.process import process_start_time
from hourglass.adapters.rocketmq.image import ImageRef, engine, ensure_image, image_jars, lib_dir_of, named_image
from hourglass.adapters.rocketmq.runtime import LaunchSpec, StartsItsComponents

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")  # before testcontainers is imported

LABEL = "hourglass"
LABEL_RUN = "hourglass.run"
LABEL_RUNTIME = "hourglass.runtime"
LABEL_COMPONENT = "hourglass.component"
LABEL_PID = "hourglass.harness-pid"
LABEL_PID_START = "hourglass.harness-start"
LABEL_HOST = "hourglass.harness-host"
#: how long a pause retries runc's "unable to freeze" (a busy host's, not the broker's) before the
#: run is broken with it
PAUSE_RETRY_S = 20.0
#: the CFS period of a container's CPU quota (cpu_throttle), as the kernel's default
CPU_PERIOD_US = 100_000

# The entrypoint of every container: append a marker and then the JVM's output to the log file
# ($0); run the image's own Java ($JAVA_HOME/bin/java where the image sets it, else `java`).
WRAPPER = (
    'echo "==== hourglass: container start $(date -u +%Y-%m-%dT%H:%M:%SZ): java $*" >>"$0"; '
    # a container with a network of its own: the JVM starts once the harness plumbed its interface
    'if [ -n "$HG_WAIT_IF" ]; then i=0; while ! grep -q "$HG_WAIT_IF" /proc/net/dev && [ $i -lt 1200 ]; '
    'do sleep 0.05; i=$((i+1)); done; fi; '
    'if [ -n "$JAVA_HOME" ] && [ -x "$JAVA_HOME/bin/java" ]; then exec "$JAVA_HOME/bin/java" "$@" >>"$0" 2>&1; fi; '
    'exec java "$@" >>"$0" 2>&1'
)
# JVM options the JDK 8 of older official images rejects outright.
JDK9_ONLY_PREFIXES = ("--add-opens", "--add-exports", "--add-modules", "--illegal-access", "-Xlog:")


def harness_alive(labels: dict) -> bool:
    try:
        pid = int(labels.get(LABEL_PID, ""))
    except ValueError:
        return False
    started = process_start_time(pid)
    return started is not None and started == labels.get(LABEL_PID_START, started)


def say_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def remove_leftovers(client, say=say_stderr) -> list[str]:
    """Remove the hourglass containers on this engine whose harness (on this host) is gone."""
    import docker

    removed = []
    for container in client.containers.list(all=True, filters={"label": f"{LABEL}=1"}):
        labels = container.labels or {}
        if labels.get(LABEL_HOST, socket.gethostname()) != socket.gethostname():
            continue  # another machine's harness on a shared engine: not ours to judge
        if LABEL_PID in labels and harness_alive(labels):
            continue
        if LABEL_PID not in labels and container.status == "running":
            continue  # e.g. a probe of a live harness: short-lived, removes itself
        try:
            container.remove(force=True, v=True)
            removed.append(container.name)
        except docker.errors.NotFound:
            pass
    if removed:
        say(f"hourglass container: removed leftovers of harnesses that are gone: {', '.join(removed)}")
    return removed


def jvm_opts_for(opts: tuple[str, ...], java_major: int, user_home: Path) -> list[str]:
    """The launch's JVM options as the image's Java accepts them; ``user.home`` pinned to a
    bind-mounted dir (the container's uid may have no home, where the JVM would say ``?``)."""
    out = [o for o in opts if java_major >= 9 or not o.startswith(JDK9_ONLY_PREFIXES)]
    if not any(o.startswith("-Duser.home=") for o in out):
        out.append(f"-Duser.home={user_home}")
    return out


def map_classpath(classpath: tuple[str, ...], host_lib: Path, image_lib: str) -> tuple[list[str], list[Path]]:
    """Classpath entries under the distribution's host lib dir point to the image's lib dir; the
    others stay as they are and their directories are returned to be bind-mounted read-only."""
    mapped, extra_dirs = [], []
    host_lib = host_lib.resolve()
    for entry in classpath:
        path = Path(entry)
        parent = path.parent if path.name == "*" or path.suffix == ".jar" else path
        if parent.resolve() == host_lib:
            mapped.append(str(Path(image_lib) / path.name) if parent != path else image_lib)
        else:
            mapped.append(entry)
            extra_dirs.append(parent)
    return mapped, extra_dirs


def outermost(dirs: list[Path]) -> list[Path]:
    """The given directories without those nested in another one of them."""
    unique = sorted({d.resolve() for d in dirs}, key=lambda p: (len(p.parts), str(p)))
    kept: list[Path] = []
    for d in unique:
        if not any(d == k or k in d.parents for k in kept):
            kept.append(d)
    return kept


class ContainerRuntime(StartsItsComponents):
    name = "container"

    def __init__(self, distribution, workdir: Path, image: str | None = None, labels: dict | None = None,
                 say=say_stderr):
        self.distribution = distribution
        self.workdir = Path(workdir).resolve()
        self.image_name = image
        self.say = say
        self.client = engine()
        self.runtime_id = uuid.uuid4().hex[:12]
        extra = {str(k): str(v) for k, v in (labels or {}).items()}
        run_id = extra.pop("run_id", None) or extra.get(LABEL_RUN) or self.runtime_id
        self.labels = {
            **extra,
            LABEL: "1",
            LABEL_RUN: run_id,
            LABEL_RUNTIME: self.runtime_id,
            LABEL_PID: str(os.getpid()),
            LABEL_PID_START: process_start_time(os.getpid()) or "",
            LABEL_HOST: socket.gethostname(),
        }
        self._image: ImageRef | None = None
        self._specs: dict[str, LaunchSpec] = {}
        self._containers: dict[str, object] = {}  # component -> docker Container
        self._closed = False
        self._owner_pid = os.getpid()
        remove_leftovers(self.client, say)
        _process._LIVE.add(self)  # closed at exit and on SIGINT/SIGTERM with the process runtimes
        _process.install_cleanup_handlers()

    # --- image ---------------------------------------------------------------------------------

    def ships(self, artifact: str) -> bool:
        """A named image (the user's, e.g. ``apache/rocketmq:5.3.3``) runs its own jars of
        ``artifact`` when its lib has them; an image built here holds the distribution's only."""
        return bool(self.image_name) and any(j.startswith(f"{artifact}-") and j.endswith(".jar")
                                             for j in image_jars(self.client, self.ensure_image()))

    def ensure_image(self) -> ImageRef:
        if self._image is None:
            if self.image_name:
                self._image = named_image(self.image_name, self.client)
            else:
                self._image = ensure_image(self.distribution, self.client)
        return self._image

    def use_distribution(self, distribution) -> None:
        """Launch the next components from ``distribution`` (an across-store chain: its own image)."""
        if distribution != self.distribution:
            self.distribution = distribution
            self._image = None

    # --- lifecycle -----------------------------------------------------------------------------

    def launch(self, spec: LaunchSpec) -> None:
        from testcontainers.core.container import DockerContainer

        if self._closed:
            raise AdapterError("container runtime: closed")
        if spec.command is not None:
            raise AdapterError(f"container runtime: {spec.component} is launched by a command of its own "
                               f"({spec.command[0]}): a cmd: system needs --runtime process")
        old = self._containers.get(spec.component)
        if old is not None:
            if self.running(spec.component):
                raise AdapterError(f"container runtime: {spec.component} is already running "
                                   f"(container {old.name})")
            self._remove(spec.component)
        image = self.ensure_image()
        classpath, extra_dirs = map_classpath(spec.classpath, lib_dir_of(self.distribution), image.lib_dir)
        command = [str(spec.log_file), *jvm_opts_for(spec.jvm_opts, image.java_major, self.workdir),
                   "-cp", ":".join(classpath), spec.main_class, *spec.args]
        host_lib = lib_dir_of(self.distribution).resolve()
        # the image has the jars: the host lib dir needs no mount (classpath is mapped above)
        mounts = [m for m in spec.mounts if Path(m).resolve() != host_lib]
        writable = outermost([self.workdir, spec.log_file.parent, *mounts])
        for d in writable:
            d.mkdir(parents=True, exist_ok=True)  # else docker creates it, owned by root
        readonly = [d for d in outermost(extra_dirs)
                    if not any(d == w or w in d.parents for w in writable)]
        env = {k: v for k, v in spec.env if k != "JAVA_HOME"}  # a host path means nothing inside
        if spec.wait_for_interface:
            env["HG_WAIT_IF"] = spec.wait_for_interface
        labels = {**self.labels, **{str(k): str(v) for k, v in spec.labels.items()},
                  LABEL_COMPONENT: spec.component}
        name = f"hourglass-{spec.component}-{self.runtime_id}"
        container = DockerContainer(image.tag, command=command, env=env, name=name)
        for d in writable:
            container.with_volume_mapping(str(d), str(d), "rw")
        for d in readonly:
            container.with_volume_mapping(str(d), str(d), "ro")
        container.with_kwargs(network_mode="none" if spec.wait_for_interface else "host", init=True, labels=labels,
                              entrypoint=["sh", "-c", WRAPPER],
                              user=f"{os.getuid()}:{os.getgid()}", working_dir=str(self.workdir))
        self._specs[spec.component] = spec
        try:
            container.start()
        except Exception as e:
            self._remove_by_name(name)
            raise AdapterError(f"container runtime: could not start {spec.component} from {image.tag}: {e}") from None
        self._containers[spec.component] = container.get_wrapped_container()

    def pid(self, component: str) -> int:
        """The host pid of the component's main process (its network namespace is the container's)."""
        pid = int(self._state(component).get("Pid") or 0)
        if pid <= 0:
            raise AdapterError(f"container runtime: {component} is not running (no pid)")
        return pid

    def _container(self, component: str):
        if component not in self._containers:
            raise AdapterError(f"container runtime: no component {component!r} launched "
                               f"(launched: {sorted(self._containers) or 'none'})")
        container = self._containers[component]
        self._docker(component, "inspect", container.reload)
        return container

    def _state(self, component: str) -> dict:
        return self._container(component).attrs.get("State") or {}

    def _docker(self, component: str, verb: str, call) -> None:
        import docker
        import requests

        try:
            call()
        except docker.errors.APIError as e:
            raise AdapterError(f"container runtime: {verb} {component}: {e.explanation or e}") from None
        except (docker.errors.DockerException, requests.exceptions.RequestException) as e:
            raise AdapterError(f"container runtime: {verb} {component}: the Docker engine did not answer "
                               f"({type(e).__name__}: {e})") from None

    def start(self, component: str) -> None:
        container = self._container(component)
        if (container.attrs.get("State") or {}).get("Running"):
            return  # already running (or paused): start is idempotent
        self._docker(component, "start", container.start)

    def stop(self, component: str, timeout_s: float = 60.0) -> None:
        import requests

        state = self._state(component)
        if not state.get("Running"):
            return
        container = self._containers[component]
        if state.get("Paused"):
            self._docker(component, "unpause", container.unpause)  # a frozen JVM cannot run its hooks
        self._docker(component, "stop", lambda: container.kill(signal="SIGTERM"))
        try:
            container.wait(timeout=timeout_s)
        except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
            self.kill(component)
            raise AdapterError(f"{component} did not exit within {timeout_s:.0f} s of SIGTERM; killed it. "
                               f"Log tail:\n{self.log_tail(component)}") from None

    def kill(self, component: str) -> None:
        state = self._state(component)
        if not state.get("Running"):
            return
        container = self._containers[component]
        self._docker(component, "kill", lambda: container.kill(signal="SIGKILL"))
        self._docker(component, "wait for the exit of", lambda: container.wait(timeout=60))

    def pause(self, component: str) -> None:
        # runc freezes a cgroup v1 by writing FROZEN and polling for about 200 ms; a busy host
        # (a thread in uninterruptible I/O, a throttled quota) outlasts that and runc thaws and
        # reports "unable to freeze". That is the host, not the broker: try again for a while.
        deadline = time.monotonic() + PAUSE_RETRY_S
        while True:
            try:
                self._docker(component, "pause", self._container(component).pause)
                break
            except AdapterError as e:
                if "unable to freeze" not in str(e) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.5)
        state = self._state(component)
        if not state.get("Paused"):  # the engine said yes: check the freezer did freeze it
            raise AdapterError(f"container runtime: pause {component}: the engine reports it "
                               f"{state.get('Status')!r} after a successful pause, expected 'paused'")

    def resume(self, component: str) -> None:
        container = self._container(component)
        if (container.attrs.get("State") or {}).get("Paused"):
            self._docker(component, "unpause", container.unpause)

    def cannot_throttle(self, component: str) -> str | None:
        return None

    def throttle_cpu(self, component: str, permille: int | None) -> None:
        """The container's CFS quota (``docker update``; it holds across its next starts too)."""
        quota = -1 if permille is None else permille * CPU_PERIOD_US // 1000
        container = self._container(component)
        self._docker(component, "limit the CPU of", lambda: container.update(cpu_period=CPU_PERIOD_US, cpu_quota=quota))

    def running(self, component: str) -> bool:
        return component in self._containers and bool(self._state(component).get("Running"))

    def paused(self, component: str) -> bool:
        return component in self._containers and bool(self._state(component).get("Paused"))

    def exit_code(self, component: str) -> int | None:
        if component not in self._containers:
            return None
        state = self._state(component)
        if state.get("Running") or state.get("Status") == "created":
            return None
        return int(state.get("ExitCode", 0))

    def processes(self, component: str) -> list[tuple[int, str]]:
        """None listed: the container's processes are its engine's to show."""
        return []

    def note(self, component: str, text: str) -> None:
        _process.note_in_log(self._specs.get(component), text)

    def container_id(self, component: str) -> str:
        return self._container(component).id

    def log_tail(self, component: str, lines: int = 60) -> str:
        spec = self._specs.get(component)
        if spec is None:
            return f"(no component {component!r})"
        tail = _process.tail_file(spec.log_file, lines)
        try:  # what the wrapper printed before its redirection (e.g. an unwritable log file)
            own = self._containers[component].logs(tail=lines).decode("utf-8", "replace").strip()
        except Exception:
            own = ""
        return f"{tail}\n(container output:)\n{own}" if own else tail

    # --- cleanup -------------------------------------------------------------------------------

    def _remove_by_name(self, name: str) -> None:
        import docker

        try:
            self.client.containers.get(name).remove(force=True, v=True)
        except docker.errors.NotFound:
            pass

    def _remove(self, component: str) -> None:
        import docker

        container = self._containers.pop(component, None)
        if container is not None:
            try:
                container.remove(force=True, v=True)
            except docker.errors.NotFound:
                pass

    def close(self) -> None:
        """Remove every container this runtime created (found by label, so also one whose
        creation was interrupted). Idempotent."""
        import docker

        if self._closed or os.getpid() != self._owner_pid:
            return  # a forked child (its atexit) must not remove its parent's containers
        self._closed = True
        self._containers.clear()
        try:
            found = self.client.containers.list(all=True, filters={"label": f"{LABEL_RUNTIME}={self.runtime_id}"})
        except Exception as e:  # the engine went away: leftovers are removed by the next runtime
            self.say(f"hourglass container: could not list containers to remove ({e})")
            found = []
        for container in found:
            try:
                container.remove(force=True, v=True)
            except docker.errors.NotFound:
                pass
            except Exception as e:  # noqa: BLE001 - the next runtime removes what is left
                self.say(f"hourglass container: could not remove {container.name}: {e}")
        _process._LIVE.discard(self)
