"""An Apache RocketMQ release laid out as Apache ships it (``bin/ conf/ lib/``), to run as a
``cmd:`` system through its own scripts (``bin/mqnamesrv``, ``bin/mqbroker``).

Harness-facing API::

    cmd_file = provision_apache_dist("5.3.3")   # <cache>/apache-dist/5.3.3/hourglass.toml
    # then: python -m hourglass run --system cmd:<cmd_file> --runtime process

    python -m hourglass.adapters.rocketmq.apache_dist [VERSION]   # the same from a shell (.ci/bootstrap runs it)

Maven Central has the jars but not the binary distribution; it has the source release
(``org.apache.rocketmq:rocketmq-all:<version>:zip:source-release``: 5.3.3 has one, 4.9.7 and 5.5.0
have none). Its ``distribution/bin`` and ``distribution/conf``, fetched once by Maven (checksums
checked), and the version's jars the harness resolves anyway (``lib`` is a link to
``<cache>/rocketmq/<version>/lib``) make the distribution, in ``<cache>/apache-dist/<version>/``
(``HOURGLASS_CACHE`` moves the cache). Next to it goes ``hourglass.toml``: the packaged
``examples/apache-scripts.toml`` for this version. Nothing of it is kept in this repository.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import sys
import zipfile
from pathlib import Path

from hourglass.adapters.rocketmq.provision import (GROUP_ID, ProvisionError, _mvn, _pom, cache_root, resolve,
                                         valid_version)

DEFAULT_VERSION = "5.3.3"
EXAMPLE = Path(__file__).parent / "examples" / "apache-scripts.toml"
CMD_FILE = "hourglass.toml"
#: the parts of the source release's ``distribution/`` that make the layout (lib/ comes from the jars)
PARTS = ("bin", "conf")


def dist_root(version: str = DEFAULT_VERSION) -> Path:
    return cache_root() / "apache-dist" / version


def cmd_file(version: str = DEFAULT_VERSION) -> Path:
    """Where :func:`provision_apache_dist` writes the cmd file (whether it has yet or not)."""
    return dist_root(version) / CMD_FILE


def example_for(version: str) -> str:
    """The packaged example with ``version`` as the system's version and the client's."""
    text = EXAMPLE.read_text()
    text = re.sub(r'^version = "[^"]*"', f'version = "{version}"', text, count=1, flags=re.M)
    return re.sub(r'^client = "rocketmq:[^"]*"', f'client = "rocketmq:{version}"', text, count=1, flags=re.M)


def provision_apache_dist(version: str = DEFAULT_VERSION) -> Path:
    """Make (once) the Apache-layout distribution of ``version`` and return its cmd file."""
    if not valid_version(version):
        raise ProvisionError(f"apache-dist {version!r}: expected a release version like 5.3.3")
    root = dist_root(version)
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not all((root / part).is_dir() for part in PARTS) or not (root / "bin" / "mqbroker").exists():
            _fetch_scripts(version, root)
        _link_lib(resolve(f"rocketmq:{version}").lib_dir, root / "lib")
        path = root / CMD_FILE
        text = example_for(version)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
    return path


def _fetch_scripts(version: str, root: Path) -> None:
    work = root.parent / f"{version}.partial"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "pom.xml").write_text(_pom(version, ()))
    artifact = f"{GROUP_ID}:rocketmq-all:{version}:zip:source-release"
    proc = _mvn(work, "-C", "dependency:copy", f"-Dartifact={artifact}", f"-DoutputDirectory={work / 'download'}")
    zips = sorted((work / "download").glob("*.zip"))
    if proc.returncode != 0 or not zips:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-6:])
        raise ProvisionError(f"apache-dist {version}: Maven could not fetch {artifact} (Maven Central has a source "
                             f"release for some versions only: 5.3.3 yes, 4.9.7 and 5.5.0 no).\nmvn said:\n{tail}")
    out = work / "dist"
    _extract(zips[0], out, version)
    shutil.rmtree(root, ignore_errors=True)
    out.rename(root)
    shutil.rmtree(work, ignore_errors=True)


def _extract(archive: Path, out: Path, version: str) -> None:
    """``<top>/distribution/{bin,conf}/**`` of the source release into ``out/{bin,conf}``; the
    scripts made executable (the zip does not keep the mode)."""
    with zipfile.ZipFile(archive) as zf:
        names = zf.namelist()
        marker = next((n for n in names if n.endswith("/distribution/bin/mqbroker")), None)
        if marker is None:
            raise ProvisionError(f"apache-dist {version}: {archive.name} has no distribution/bin/mqbroker")
        prefix = marker[: -len("bin/mqbroker")]
        for name in names:
            rel = name[len(prefix):] if name.startswith(prefix) else None
            if rel is None or rel.split("/", 1)[0] not in PARTS or name.endswith("/"):
                continue
            if ".." in rel.split("/") or rel.startswith("/"):
                raise ProvisionError(f"apache-dist {version}: {archive.name}: unsafe path {name!r}")
            target = out / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(zf.read(name))
            if rel.startswith("bin/"):
                target.chmod(0o755)


def _link_lib(lib_dir: Path, link: Path) -> None:
    """``link`` -> ``lib_dir`` (relative, so the cache can move as a whole)."""
    want = os.path.relpath(lib_dir, link.parent)
    if link.is_symlink() and os.readlink(link) == want and link.is_dir():
        return
    if link.is_symlink() or link.is_file():
        link.unlink()
    elif link.is_dir():
        shutil.rmtree(link)
    link.symlink_to(want, target_is_directory=True)


def main(argv: list[str]) -> int:
    if len(argv) > 1 or argv[:1] in (["-h"], ["--help"]):
        print(__doc__)
        return 0 if argv[:1] in (["-h"], ["--help"]) else 64
    version = argv[0] if argv else DEFAULT_VERSION
    try:
        path = provision_apache_dist(version)
    except ProvisionError as e:
        print(f"apache-dist: {e}", file=sys.stderr)
        return 3
    print(f"apache-dist {version}: {path.parent} (bin/ conf/ from the source release, lib/ -> "
          f"{(path.parent / 'lib').resolve()})")
    print(f"  python -m hourglass run --suite conformance --system cmd:{path} --runtime process")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
