"""README's set-up commands on a stock Debian 12: ``bash .ci/bootstrap && .ci/tox -e main`` (and
``-e tests``, the same tox env) where nothing of the project's is installed yet.

The machine is a container of :func:`adapters.rocketmq.image.ensure_stock_image` (debootstrap
``--variant=minbase`` of bookworm with python3, sudo and ca-certificates: PEP 668 closes its python3
to pip, it has no python3-venv, JDK, Maven, Docker or tox; built once, ~1 min). Into a fresh
container, once as root and once as a user with passwordless sudo, go this working tree's files
(``git ls-files --cached --others --exclude-standard``: what the next commit holds), then:

* ``bash .ci/bootstrap`` exits 0 and says the container runtime is unavailable (no engine can run in
  an unprivileged container); run again under ``HOURGLASS_REQUIRE_DOCKER=1`` (as ``.ci/run``) it
  installs nothing and exits 1, saying why;
* the system python3 is as closed as before: still no pip, ``EXTERNALLY-MANAGED`` in place, pip
  aimed at it refuses (``externally-managed-environment``), nothing in its site directories;
* ``.ci/tox --version`` is tox 4, ``.ci/tox -e main --notest`` makes the tox env (all dependencies,
  pyspark included), whose ``python -m hourglass --help`` lists the subcommands, and
  ``.ci/tox -e main -- --help`` (README command one, asking for its usage) exits 0.

The root case runs bootstrap as it is (the Apache-scripts distribution included: Maven Central, ~40 s);
the sudo case skips that step (``HOURGLASS_BOOTSTRAP_SKIP=apache-dist``: the same code as the user).

Shared with the host, so each download happens once per machine and not per case: apt's archives
(``<cache>/apt``), pip's cache (``<cache>/pip-stock``) and Maven's repository (``<cache>/m2-stock``);
every package is still installed, every jar still resolved, in the container. The container gets this host's trust of the network too: the CAs the host added
(``/usr/local/share/ca-certificates``) and ``/etc/pip.conf``, where TLS is intercepted (here it is).

Containers are removed at the end, also on failure. Under ``CI`` (or ``HOURGLASS_REQUIRE_DOCKER=1``)
a missing engine or debootstrap fails the test with the reason instead of skipping it. Each step's
wall time is printed (live) and recorded as a junit property.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import tarfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from hourglass.adapters.base import AdapterError
from hourglass.adapters.rocketmq import image as img

pytestmark = [pytest.mark.container]

REPO = Path(__file__).resolve().parents[2]
USER, UID = "hg", 1000
APT_ARCHIVES = "/var/cache/apt/archives"
PIP_CACHE = "/var/cache/hourglass-pip"
M2_REPO = "/var/cache/hourglass-m2"
#: a case stuck longer than this is killed (cold: image ~1 min, apt ~30 s, Maven ~40 s, pip ~2 min)
CASE_LIMIT_S = 1200


def _required() -> bool:
    return bool(os.environ.get("CI")) or os.environ.get("HOURGLASS_REQUIRE_DOCKER") == "1"


def _unavailable(why: str):
    if _required():
        pytest.fail(f"{why} (under CI this test must run)")
    pytest.skip(why)


@pytest.fixture(scope="module")
def client():
    try:
        client = img.engine()
    except AdapterError as e:
        _unavailable(str(e))
    client.api.timeout = CASE_LIMIT_S  # one exec's output may pause for minutes (pip installing pyspark)
    return client


@pytest.fixture(scope="module")
def stock_image(client):
    started = time.monotonic()
    try:
        name = img.ensure_stock_image(client)
    except AdapterError as e:
        _unavailable(f"cannot build the stock Debian 12 image: {e}")
    return name, {"image": time.monotonic() - started}  # the first case reports it (popped)


def _tree_tar() -> bytes:
    """The working tree's files a commit would hold, as ``hourglass/<path>``."""
    try:
        listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                                check=True, capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.fail(f"cannot list the repository's files with git: {e}")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in sorted(set(listed.decode().split("\0")) - {""}):
            if os.path.lexists(REPO / name):  # a tracked file deleted in the working tree is not
                tar.add(REPO / name, arcname=f"hourglass/{name}", recursive=False)
    return buf.getvalue()


def _host_trust_tar() -> bytes | None:
    """The CAs this host added and its pip.conf, or None when it has neither."""
    cas = sorted(Path("/usr/local/share/ca-certificates").rglob("*.crt"))
    pip_conf = Path("/etc/pip.conf")
    if not cas and not pip_conf.is_file():
        return None
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for ca in cas:
            tar.add(ca, arcname=f"usr/local/share/ca-certificates/{ca.name}")
        if pip_conf.is_file():
            tar.add(pip_conf, arcname="etc/pip.conf")
    return buf.getvalue()


@dataclass
class Done:
    code: int
    out: str
    wall_s: float


class Machine:
    """A container of the stock image; ``sh`` runs a bash command line in it as root or the user."""

    def __init__(self, container, case: str, say):
        self.container, self.case, self.say = container, case, say
        self.api = container.client.api

    def sh(self, command: str, *, user: str = "root", env: dict[str, str] | None = None, quiet: bool = False) -> Done:
        home = "/root" if user == "root" else f"/home/{user}"
        environment = {"HOME": home, "USER": user, **(env or {})}
        exec_id = self.api.exec_create(self.container.id, ["bash", "-c", command], user=user,
                                       environment=environment, workdir=home)["Id"]
        started = time.monotonic()
        chunks: list[str] = []
        pending = ""
        for chunk in self.api.exec_start(exec_id, stream=True):
            text = chunk.decode(errors="replace")
            chunks.append(text)
            if not quiet:
                pending += text
                *lines, pending = pending.split("\n")
                for line in lines:
                    self.say(f"[{self.case}] {line}")
        if pending and not quiet:
            self.say(f"[{self.case}] {pending}")
        return Done(self.api.exec_inspect(exec_id)["ExitCode"], "".join(chunks), time.monotonic() - started)


@pytest.fixture
def say(capsys):
    def say(line: str) -> None:
        with capsys.disabled():  # live in the CI log, not after the test
            print(f"stock-bootstrap {line}", flush=True)
    return say


# CI proves the root case (README's commands as root: about 2.5 min cold, the image build included);
# the sudo case (the same script through sudo as a user) runs nightly: CI's hour is shared
@pytest.mark.parametrize("case", ["root", pytest.param("sudo", marks=pytest.mark.slow)])
def test_readme_setup_on_a_stock_debian_12(case, client, stock_image, say, record_property):
    image, built = stock_image
    times: dict[str, float] = {**built}
    built.clear()
    user = "root" if case == "root" else USER
    home = "/root" if case == "root" else f"/home/{USER}"
    cache = img.cache_dir().parent
    (cache / "apt").mkdir(parents=True, exist_ok=True)
    for shared in ("pip-stock", "m2-stock"):
        (cache / shared).mkdir(parents=True, exist_ok=True)

    started = time.monotonic()
    container = client.containers.run(
        image, ["sleep", "infinity"], detach=True, remove=True, init=True, network_mode="host",
        volumes={str(cache / "apt"): {"bind": APT_ARCHIVES, "mode": "rw"},
                 str(cache / "pip-stock"): {"bind": PIP_CACHE, "mode": "rw"},
                 str(cache / "m2-stock"): {"bind": M2_REPO, "mode": "rw"}},
        labels={"hourglass": "1", "hourglass.role": "stock-bootstrap"})
    watchdog = threading.Timer(CASE_LIMIT_S, container.kill)
    watchdog.start()
    try:
        m = Machine(container, case, say)
        trust = _host_trust_tar()
        if trust:
            container.put_archive("/", trust)
            assert m.sh("update-ca-certificates", quiet=True).code == 0
        if case == "sudo":
            made = m.sh(f"useradd -m -u {UID} -s /bin/bash -G sudo {USER} && "
                        f"echo '{USER} ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/{USER} && chmod 440 /etc/sudoers.d/{USER}")
            assert made.code == 0, made.out
        container.put_archive(home, _tree_tar())
        # pip's cache and Maven's repository where they look (tox passes HOME, not PIP_CACHE_DIR), on the host's
        owned = m.sh(f"chown -R {user}: {home}/hourglass {PIP_CACHE} {M2_REPO} && "
                     f"install -d -o {user} -g {user} {home}/.cache {home}/.m2 && "
                     f"ln -s {PIP_CACHE} {home}/.cache/pip && ln -s {M2_REPO} {home}/.m2/repository", quiet=True)
        assert owned.code == 0, owned.out
        times["container"] = time.monotonic() - started

        # stock: nothing of the project's there yet, python3 closed to pip and without venv
        stock = m.sh("for c in javac mvn dockerd debootstrap stress-ng tox; do command -v $c; done; "
                     "python3 -c 'import ensurepip' 2>/dev/null && echo has-ensurepip; "
                     "python3 -m pip --version 2>/dev/null && echo has-pip; "
                     "python3 -c 'import os, sys, sysconfig; sys.exit(not os.path.isfile("
                     "os.path.join(sysconfig.get_path(\"stdlib\"), \"EXTERNALLY-MANAGED\")))' || echo not-PEP-668; true",
                     user=user, quiet=True)
        assert stock.out.strip() == "", f"not a stock Debian 12: {stock.out}"
        site = ("python3 -c 'import site, sysconfig; print(sysconfig.get_path(\"stdlib\")); print(site.getusersitepackages())' "
                "| { read -r stdlib; read -r usersite; ls -1 \"$stdlib/EXTERNALLY-MANAGED\"; "
                "ls -1A /usr/local/lib/python3*/dist-packages \"$usersite\" 2>&1; }")
        site_before = m.sh(site, user=user, quiet=True).out

        env = {} if case == "root" else {"HOURGLASS_BOOTSTRAP_SKIP": "apache-dist"}
        boot = m.sh("cd hourglass && bash .ci/bootstrap", user=user, env=env)
        times["bootstrap"] = boot.wall_s
        assert boot.code == 0, f"bash .ci/bootstrap exited {boot.code}:\n{boot.out[-3000:]}"
        assert "the container runtime is unavailable" in boot.out
        if case == "root":
            assert re.search(r"^apache-dist 5\.3\.3: ", boot.out, re.M), boot.out[-3000:]
        else:
            assert "not making the Apache-scripts distribution" in boot.out
        for tool in ("javac", "mvn", "debootstrap", "stress-ng"):
            assert m.sh(f"command -v {tool}", user=user, quiet=True).code == 0, f"bootstrap did not install {tool}"

        again = m.sh("cd hourglass && bash .ci/bootstrap", user=user,
                     env={"HOURGLASS_REQUIRE_DOCKER": "1", "HOURGLASS_BOOTSTRAP_SKIP": "apache-dist"})
        times["bootstrap-again"] = again.wall_s
        assert again.code == 1 and "none can start here" in again.out, again.out
        assert "installing" not in again.out, f"a second bootstrap installed again:\n{again.out}"

        # the system Python as closed and as empty as before
        assert m.sh("python3 -m pip --version", user=user, quiet=True).code != 0, "bootstrap put pip into the system python3"
        refused = m.sh("~/.cache/hourglass/tools/bin/python -m pip --python /usr/bin/python3 install --dry-run packaging",
                       user=user, quiet=True)
        assert refused.code != 0 and "externally-managed-environment" in refused.out, refused.out
        assert m.sh(site, user=user, quiet=True).out == site_before

        version = m.sh("cd hourglass && .ci/tox --version", user=user)
        assert version.code == 0 and re.match(r"4\.\d+", version.out.strip()), version.out
        assert f"{home}/.cache/hourglass/tools/" in version.out, version.out  # the user's own, not the system's

        env_made = m.sh("cd hourglass && .ci/tox -e main --notest", user=user)
        times["tox-env"] = env_made.wall_s
        assert env_made.code == 0, env_made.out[-3000:]
        helped = m.sh("cd hourglass && .tox/hourglass/bin/python -m hourglass --help", user=user, quiet=True)
        commands = re.search(r"\{([a-z,]+)\}", helped.out)
        assert helped.code == 0 and commands, helped.out
        assert {"main", "run", "matrix", "list", "replay"} <= set(commands.group(1).split(",")), helped.out
        main_help = m.sh("cd hourglass && .ci/tox -e main -- --help", user=user, quiet=True)
        times["tox-main-help"] = main_help.wall_s
        assert main_help.code == 0 and "usage:" in main_help.out, main_help.out[-3000:]
    finally:
        watchdog.cancel()
        try:
            container.remove(force=True)
        except Exception:  # noqa: BLE001 - gone already (remove=True)
            pass
        times["total"] = time.monotonic() - started
        summary = ", ".join(f"{k} {v:.0f} s" for k, v in times.items())
        say(f"[{case}] wall times: {summary}")
        for k, v in times.items():
            record_property(f"{k}_s", round(v, 1))
