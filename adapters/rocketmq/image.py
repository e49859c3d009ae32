"""Broker images for the container runtime, built locally without any registry.

Two layers, both cached:

* a **base image** with a JRE 17: ``debootstrap --variant=minbase --include=openjdk-17-jre-headless
  bookworm`` from the Debian mirror apt already uses, then ``docker import`` (~40 s, once per
  machine). Where a registry answers, ``HOURGLASS_BASE_IMAGE=eclipse-temurin:17-jre`` names a JRE
  image to use instead.
* a **distribution image**: ``docker/Dockerfile`` adds the distribution's ``lib/`` at
  ``/opt/rocketmq/lib``. Its tag is a hash of the jars' contents, the Dockerfile and the base name,
  so a second run (or a second version with the same jars) finds it and builds nothing.

An existing image can be used by name instead (e.g. the official ``apache/rocketmq:5.3.3``, jars
under ``$ROCKETMQ_HOME/lib``, JDK 8): :func:`named_image` finds its lib dir and Java version, and
the container runtime maps the launch classpath and JVM options onto it.

A third image, not for brokers: :func:`ensure_stock_image` makes a stock Debian 12 (minbase with
python3, sudo and ca-certificates, nothing else) on which a test proves README's set-up commands.

Builds hold a file lock (``<cache>/images/build.lock``), so concurrent harnesses build once.
``python -m hourglass.adapters.rocketmq.image rocketmq:4.9.7 rocketmq:latest`` builds ahead of a run.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from hourglass.adapters.base import AdapterError
from hourglass.adapters.phase import step
from hourglass.reference.rundir import slug

DOCKERFILE = Path(__file__).with_name("docker") / "Dockerfile"
IMAGE_LIB_DIR = "/opt/rocketmq/lib"
BASE_RECIPE = "bookworm-minbase-openjdk17-r1"  # bump when the base recipe below changes
BASE_IMAGE_NAME = f"hourglass/jre17:{BASE_RECIPE}"
BASE_JAVA_MAJOR = 17
DEBIAN_SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
#: a stock Debian 12 server as far as README's set-up commands care: python3 (PEP 668: its pip is
#: closed, and without python3-venv it makes no virtualenv), sudo, ca-certificates; no JDK, Maven,
#: python3-venv, pip or tox
STOCK_RECIPE = "bookworm-minbase-python3-sudo-r1"  # bump when ensure_stock_image's recipe changes
STOCK_IMAGE_NAME = f"hourglass/stock-debian12:{STOCK_RECIPE}"
STOCK_PACKAGES = ("python3", "sudo", "ca-certificates")
LABEL_LIB_DIR = "org.hourglass.lib-dir"
LABEL_JAVA_MAJOR = "org.hourglass.java-major"

Progress = Callable[[str], None]


def say(line: str) -> None:
    print(f"hourglass image: {line}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class ImageRef:
    tag: str  # what containers are created from
    lib_dir: str  # where the distribution's jars are inside the image
    java_major: int  # Java feature version of the image's `java` (8, 11, 17, ...)
    source: str  # "built" (now), "cached" (found by content hash), "named" (given by the user)


def engine() -> "docker.DockerClient":  # noqa: F821 - docker is imported lazily
    """A client of the Docker engine, or an :class:`AdapterError` saying none answers."""
    import docker

    where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except Exception as e:  # DockerException, requests' ConnectionError, FileNotFoundError
        raise AdapterError(
            f"no Docker engine answers at {where} ({type(e).__name__}: {e}); "
            "start one with `bash .ci/dockerd` or use --runtime process"
        ) from None
    return client


def cache_dir() -> Path:
    root = os.environ.get("HOURGLASS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "hourglass"
    )
    path = Path(root) / "images"
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def build_lock(progress: Progress = say) -> Iterator[None]:
    """One image build at a time on this machine (per cache dir)."""
    path = cache_dir() / "build.lock"
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip() or "unknown"
            progress(f"waiting for another image build to finish (lock {path}, held by pid {holder})")
            fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        try:
            yield
        finally:
            fh.seek(0)
            fh.truncate()
            fcntl.flock(fh, fcntl.LOCK_UN)


# --- base image ------------------------------------------------------------------------------


def debian_mirror(sources: tuple[Path, ...] = ()) -> str:
    """The Debian mirror apt uses here (``HOURGLASS_DEBIAN_MIRROR`` overrides): the first source
    serving the ``bookworm`` suite of a ``.../debian`` archive, one-line or deb822 format."""
    if os.environ.get("HOURGLASS_DEBIAN_MIRROR"):
        return os.environ["HOURGLASS_DEBIAN_MIRROR"]
    if not sources:
        apt = Path("/etc/apt")
        sources = (apt / "sources.list", *sorted((apt / "sources.list.d").glob("*")))
    for path in sources:
        try:
            text = path.read_text()
        except OSError:
            continue
        for stanza in re.split(r"\n\s*\n", text):
            uris = re.findall(r"^URIs:\s*(.+)$", stanza, re.M)
            suites = re.findall(r"^Suites:\s*(.+)$", stanza, re.M)
            if uris and suites and DEBIAN_SUITE in suites[0].split():
                for uri in uris[0].split():
                    if uri.rstrip("/").endswith("/debian"):
                        return uri.rstrip("/")
        for m in re.finditer(r"^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+(\S+)", text, re.M):
            if m.group(2) == DEBIAN_SUITE and m.group(1).rstrip("/").endswith("/debian"):
                return m.group(1).rstrip("/")
    return DEFAULT_MIRROR


def _image_exists(client, name: str) -> bool:
    import docker

    try:
        client.images.get(name)
        return True
    except docker.errors.ImageNotFound:
        return False


def ensure_base_image(client, progress: Progress = say) -> tuple[str, int | None]:
    """The JRE base image's name and Java version (None: unknown until probed)."""
    override = os.environ.get("HOURGLASS_BASE_IMAGE")
    if override:
        if not _image_exists(client, override):
            progress(f"pulling base image {override} (HOURGLASS_BASE_IMAGE)")
            try:
                with step(f"pulling image {override}"):
                    client.images.pull(override)
            except Exception as e:
                raise AdapterError(
                    f"HOURGLASS_BASE_IMAGE={override}: not found locally and the pull failed ({e}); "
                    "unset it to build the base with debootstrap"
                ) from None
        return override, None
    if _image_exists(client, BASE_IMAGE_NAME):
        return BASE_IMAGE_NAME, BASE_JAVA_MAJOR
    with build_lock(progress):
        if not _image_exists(client, BASE_IMAGE_NAME):  # another process may have built it
            with step(f"building image {BASE_IMAGE_NAME} (first use, about a minute)"):
                _debootstrap(client, BASE_IMAGE_NAME, ("openjdk-17-jre-headless",), progress,
                             "or set HOURGLASS_BASE_IMAGE to a JRE 17 image a registry serves (e.g. eclipse-temurin:17-jre)")
    return BASE_IMAGE_NAME, BASE_JAVA_MAJOR


def ensure_stock_image(client, progress: Progress = say) -> str:
    """The name of a stock Debian 12 image (:data:`STOCK_IMAGE_NAME`), made once with
    ``debootstrap --variant=minbase --include=python3,sudo,ca-certificates bookworm``: what a fresh
    Debian 12 server has that matters to ``.ci/bootstrap`` (suites/adapters/test_stock_bootstrap.py).
    Its apt sources are debootstrap's: the mirror apt uses here, ``bookworm main``."""
    if _image_exists(client, STOCK_IMAGE_NAME):
        return STOCK_IMAGE_NAME
    with build_lock(progress):
        if not _image_exists(client, STOCK_IMAGE_NAME):
            _debootstrap(client, STOCK_IMAGE_NAME, STOCK_PACKAGES, progress, "which .ci/bootstrap installs",
                         trim=("var/cache/apt/archives", "var/lib/apt/lists"))
    return STOCK_IMAGE_NAME


#: what a broker image does without: apt's downloads and lists, documentation
TRIM = ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man", "usr/share/locale",
        "usr/share/info")


def _debootstrap(client, name: str, include: tuple[str, ...], progress: Progress, otherwise: str,
                 trim: tuple[str, ...] = TRIM) -> None:
    """``debootstrap --variant=minbase --include=...`` of Debian 12 from :func:`debian_mirror`,
    ``docker import``-ed as ``name``; ``otherwise`` says what to do where debootstrap cannot run."""
    if shutil.which("debootstrap") is None:
        raise AdapterError(f"building the image {name} needs debootstrap (apt-get install debootstrap), {otherwise}")
    if os.geteuid() != 0:
        raise AdapterError(f"debootstrap needs root to build the image {name}; run once as root, {otherwise}")
    mirror = debian_mirror()
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="rootfs-", dir=cache_dir()))
    rootfs, log = work / "rootfs", work / "debootstrap.log"
    cmd = ["debootstrap", "--variant=minbase", f"--include={','.join(include)}",
           DEBIAN_SUITE, str(rootfs), mirror]
    try:
        progress(f"building image {name}: {' '.join(cmd)} (about a minute; log {log})")
        with open(log, "w") as out:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            packages = 0
            for line in proc.stdout:
                out.write(line)
                if line.startswith("I: Retrieving "):
                    packages += 1
                elif line.startswith(("I: Validating", "I: Extracting", "I: Unpacking", "I: Configuring")):
                    continue
                elif line.strip():
                    progress(f"  debootstrap: {line.rstrip()}")
            status = proc.wait()
        if status != 0:
            tail = "".join(log.read_text().splitlines(keepends=True)[-20:])
            raise AdapterError(f"debootstrap from {mirror} exited {status}; last lines of {log}:\n{tail}")
        progress(f"  debootstrap: {packages} packages in {time.monotonic() - started:.0f} s; trimming")
        for junk in trim:
            shutil.rmtree(rootfs / junk, ignore_errors=True)
        progress(f"  importing {rootfs} as {name}")
        tar = subprocess.Popen(["tar", "--numeric-owner", "-C", str(rootfs), "-c", "."],
                               stdout=subprocess.PIPE)
        repo, tag = name.split(":")
        try:
            client.api.import_image_from_stream(tar.stdout, repository=repo, tag=tag,
                                                changes=["ENV LANG=C.UTF-8"])
        finally:
            tar.stdout.close()
            tar_status = tar.wait()
        if tar_status != 0 or not _image_exists(client, name):
            raise AdapterError(f"docker import of {rootfs} failed (tar exited {tar_status})")
        progress(f"image {name} ready in {time.monotonic() - started:.0f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --- distribution image ----------------------------------------------------------------------


def lib_dir_of(distribution) -> Path:
    """The host directory holding a distribution's jars: an object with ``lib_dir`` (or ``home``
    / ``root`` holding ``lib/``), or a path to the lib dir or to a directory holding ``lib/``."""
    if isinstance(distribution, (str, os.PathLike)):  # first: a Path has a `root` attribute too
        path = Path(distribution)
        return path / "lib" if (path / "lib").is_dir() else path
    for attr in ("lib_dir", "lib"):
        value = getattr(distribution, attr, None)
        if isinstance(value, (str, os.PathLike)):
            return Path(value)
    for attr in ("home", "root", "path"):
        value = getattr(distribution, attr, None)
        if isinstance(value, (str, os.PathLike)) and (Path(value) / "lib").is_dir():
            return Path(value) / "lib"
    raise AdapterError(
        f"cannot tell where the jars of {distribution!r} are: expected a lib dir path or an object "
        "with a lib_dir attribute"
    )


def content_hash(lib_dir: Path, base: str) -> str:
    """sha256 over the jars (names and bytes), the Dockerfile and the base image's name."""
    jars = sorted(p for p in lib_dir.iterdir() if p.is_file() and p.suffix == ".jar")
    if not jars:
        raise AdapterError(f"{lib_dir}: expected the distribution's jars (*.jar), found none")
    digest = hashlib.sha256()
    digest.update(DOCKERFILE.read_bytes())
    digest.update(base.encode())
    for jar in jars:
        digest.update(jar.name.encode() + b"\0")
        with open(jar, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _tag_part(text: str) -> str:
    return slug(text, keep="_.-") or "dist"  # reference.rundir: the one rule of a name part


def ensure_image(distribution, client=None, progress: Progress = say) -> ImageRef:
    """The image with ``distribution``'s jars, built only when no image with the same content
    exists yet."""
    client = client or engine()
    lib_dir = lib_dir_of(distribution)
    if not lib_dir.is_dir():
        raise AdapterError(f"{lib_dir}: expected the distribution's lib directory, found nothing there")
    base, java_major = ensure_base_image(client, progress)
    version = _tag_part(str(getattr(distribution, "version", None) or "dist"))
    tag = f"hourglass/rocketmq:{version}-{content_hash(lib_dir, base)[:16]}"
    if _image_exists(client, tag):
        return ImageRef(tag, IMAGE_LIB_DIR, _java_major_label(client, tag), "cached")
    with build_lock(progress):
        if _image_exists(client, tag):
            return ImageRef(tag, IMAGE_LIB_DIR, _java_major_label(client, tag), "cached")
        with step(f"building image {tag} (first use)"):
            java_major = java_major or probe_java_major(client, base)
            _build(client, lib_dir, base, tag, java_major, progress)
    return ImageRef(tag, IMAGE_LIB_DIR, java_major, "built")


def _java_major_label(client, image: str) -> int:
    labels = (client.images.get(image).attrs.get("Config") or {}).get("Labels") or {}
    major = labels.get(LABEL_JAVA_MAJOR)
    return int(major) if major else probe_java_major(client, image)


def _build(client, lib_dir: Path, base: str, tag: str, java_major: int, progress: Progress) -> None:
    started = time.monotonic()
    jars = sorted(p for p in lib_dir.iterdir() if p.is_file() and p.suffix == ".jar")
    progress(f"building {tag} from {base} with {len(jars)} jars of {lib_dir}")
    with tempfile.TemporaryDirectory(prefix="context-", dir=cache_dir()) as ctx:
        (Path(ctx) / "lib").mkdir()
        for jar in jars:
            target = Path(ctx) / "lib" / jar.name
            try:
                os.link(jar, target)
            except OSError:
                shutil.copy2(jar, target)
        dockerfile = DOCKERFILE.read_text().replace("@JAVA_MAJOR@", str(java_major))
        (Path(ctx) / "Dockerfile").write_text(dockerfile)
        stream = client.api.build(path=ctx, tag=tag, buildargs={"BASE_IMAGE": base}, rm=True,
                                  forcerm=True, decode=True)
        for chunk in stream:
            if "error" in chunk:
                raise AdapterError(f"docker build of {tag} failed: {chunk['error'].strip()}")
            line = (chunk.get("stream") or "").strip()
            if line.startswith("Step "):
                progress(f"  {line}")
    progress(f"built {tag} in {time.monotonic() - started:.1f} s")


# --- images given by name --------------------------------------------------------------------


def named_image(name: str, client=None, progress: Progress = say) -> ImageRef:
    """An existing image (pulled if a registry serves it) holding a RocketMQ distribution: its
    jars under the label ``org.hourglass.lib-dir`` or ``$ROCKETMQ_HOME/lib``."""
    client = client or engine()
    import docker

    try:
        image = client.images.get(name)
    except docker.errors.ImageNotFound:
        progress(f"pulling {name}")
        try:
            with step(f"pulling image {name}"):
                image = client.images.pull(name)
        except Exception as e:
            raise AdapterError(f"image {name}: not found locally and the pull failed ({e})") from None
    config = image.attrs.get("Config") or {}
    labels = config.get("Labels") or {}
    env = dict(item.split("=", 1) for item in config.get("Env") or [] if "=" in item)
    lib_dir = labels.get(LABEL_LIB_DIR) or (env["ROCKETMQ_HOME"].rstrip("/") + "/lib" if "ROCKETMQ_HOME" in env else None)
    if not lib_dir:
        raise AdapterError(
            f"image {name}: cannot tell where RocketMQ's jars are; expected the label {LABEL_LIB_DIR} "
            f"or ROCKETMQ_HOME in its environment, found labels {sorted(labels)} and env {sorted(env)}"
        )
    major = labels.get(LABEL_JAVA_MAJOR)
    return ImageRef(name, lib_dir, int(major) if major else probe_java_major(client, name), "named")


def parse_java_major(version_output: str) -> int:
    """8 from ``openjdk version "1.8.0_392"``, 17 from ``openjdk version "17.0.9" ...``."""
    m = re.search(r'version "(\d+)(?:\.(\d+))?', version_output)
    if not m:
        raise AdapterError(f"cannot read a Java version from `java -version`: {version_output[:300]!r}")
    first, second = int(m.group(1)), int(m.group(2) or 0)
    return second if first == 1 else first


def probe_java_major(client, image: str) -> int:
    """Run ``java -version`` in the image once (cached by image id)."""
    image_id = client.images.get(image).id.split(":")[-1]
    cached = cache_dir() / f"java-{image_id[:24]}.json"
    if cached.exists():
        return int(json.loads(cached.read_text())["java_major"])
    output = client.containers.run(image, entrypoint=["java", "-version"], command=[],
                                   network_mode="none", remove=True, stdout=True, stderr=True,
                                   labels={"hourglass": "1", "hourglass.role": "probe"})
    major = parse_java_major(output.decode(errors="replace"))
    cached.write_text(json.dumps({"image": image, "java_major": major}))
    return major


def image_jars(client, image: ImageRef) -> tuple[str, ...]:
    """The jar names in an image's lib dir, listed once (cached by image id)."""
    image_id = client.images.get(image.tag).id.split(":")[-1]
    cached = cache_dir() / f"jars-{image_id[:24]}.json"
    if cached.exists():
        return tuple(json.loads(cached.read_text())["jars"])
    output = client.containers.run(image.tag, entrypoint=["ls", "-1", image.lib_dir], command=[],
                                   network_mode="none", remove=True, stdout=True, stderr=True,
                                   labels={"hourglass": "1", "hourglass.role": "probe"})
    jars = tuple(sorted(n for n in output.decode(errors="replace").split() if n.endswith(".jar")))
    cached.write_text(json.dumps({"image": image.tag, "lib_dir": image.lib_dir, "jars": list(jars)}))
    return jars


def main(argv: list[str]) -> int:
    """``python -m hourglass.adapters.rocketmq.image [SYSTEM ...]``: build (or find) the images of the given
    systems (default ``rocketmq:latest``) ahead of a run, and print how long that took."""
    from hourglass.adapters.rocketmq.provision import resolve

    client = engine()
    for system in argv or ["rocketmq:latest"]:
        started = time.monotonic()
        ref = ensure_image(resolve(system), client)
        size_mb = client.images.get(ref.tag).attrs.get("Size", 0) / 1e6
        print(f"{system}: {ref.tag} ({ref.source}, Java {ref.java_major}, {size_mb:.0f} MB) "
              f"in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except AdapterError as e:
        print(f"hourglass image: {e}", file=sys.stderr)
        sys.exit(2)
