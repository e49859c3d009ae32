"""Broker images are built locally, once per content, and can be named instead.

Each test builds from a small distribution of its own (one jar with unique bytes), so the build
path runs every time; the JRE base image is built with debootstrap when missing (about a minute,
once per machine). Built images are removed at the end.
"""

from __future__ import annotations

import threading
import uuid
import zipfile

import pytest

from hourglass.adapters.rocketmq import image as img
from hourglass.adapters.rocketmq.container import ContainerRuntime
from suites.adapters.test_container_runtime import engine_or_skip

pytestmark = [pytest.mark.container]


@pytest.fixture
def client():
    return engine_or_skip()


@pytest.fixture
def unique_lib(tmp_path, client):
    """A lib dir whose content hash no image has yet; its images are removed afterwards."""
    lib = tmp_path / "lib"
    lib.mkdir()
    with zipfile.ZipFile(lib / "hourglass-marker.jar", "w") as jar:
        jar.writestr("marker.txt", uuid.uuid4().hex)
    tags: list[str] = []
    yield lib, tags
    for tag in set(tags):
        client.images.remove(tag, force=True)


def test_distribution_image_is_built_once_then_reused(unique_lib, client):
    lib, tags = unique_lib
    first_progress: list[str] = []
    first = img.ensure_image(lib, client, first_progress.append)
    tags.append(first.tag)
    assert first.source == "built" and any(line.startswith("built ") for line in first_progress)

    second_progress: list[str] = []
    second = img.ensure_image(lib, client, second_progress.append)
    assert (second.tag, second.source, second.java_major) == (first.tag, "cached", 17)
    assert second_progress == []  # nothing built, nothing to say
    labels = client.images.get(first.tag).attrs["Config"]["Labels"]
    assert labels[img.LABEL_LIB_DIR] == img.IMAGE_LIB_DIR and labels[img.LABEL_JAVA_MAJOR] == "17"


def test_concurrent_builds_of_one_distribution_build_once(unique_lib, client):
    lib, tags = unique_lib
    progress: list[str] = []
    refs: list[img.ImageRef] = []
    errors: list[BaseException] = []

    def build():
        try:
            refs.append(img.ensure_image(lib, img.engine(), progress.append))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=build) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    tags.extend(ref.tag for ref in refs)
    assert len({ref.tag for ref in refs}) == 1
    assert sorted(ref.source for ref in refs) == ["built", "cached"]
    assert sum(line.startswith("built ") for line in progress) == 1


def test_an_image_given_by_name_is_used_as_it_is(unique_lib, client, tmp_path):
    lib, tags = unique_lib
    built = img.ensure_image(lib, client, lambda line: None)
    tags.append(built.tag)
    named = img.named_image(built.tag, client)
    assert (named.tag, named.lib_dir, named.java_major, named.source) == (built.tag, img.IMAGE_LIB_DIR, 17, "named")
    rt = ContainerRuntime(lib, tmp_path, image=built.tag)
    try:
        assert rt.ensure_image() == named
    finally:
        rt.close()


def test_a_base_image_by_name_is_probed_for_its_java(unique_lib, client, monkeypatch):
    # as HOURGLASS_BASE_IMAGE=eclipse-temurin:17-jre where a registry answers; here a local re-tag
    base, _ = img.ensure_base_image(client)
    named_base = f"hourglass-test/jre:{uuid.uuid4().hex[:8]}"
    client.images.get(base).tag(named_base)
    lib, tags = unique_lib
    tags.append(named_base)
    monkeypatch.setenv("HOURGLASS_BASE_IMAGE", named_base)
    ref = img.ensure_image(lib, client, lambda line: None)
    tags.append(ref.tag)
    assert (ref.source, ref.java_major) == ("built", 17)  # `java -version` in it (once per image id)
    assert client.images.get(ref.tag).attrs["Config"]["Labels"][img.LABEL_JAVA_MAJOR] == "17"


def test_a_named_image_with_the_proxy_runs_its_own_proxy(unique_lib, client, tmp_path):
    """A user's image holding rocketmq-proxy (the official 5.x images do, a fork's its own build):
    the proxy runs from the image's lib, not from Maven Central's jars of the release."""
    from hourglass.adapters.rocketmq.provision import PROXY_ARTIFACT, Distribution
    from hourglass.adapters.rocketmq.proxy import proxy_jars

    lib, tags = unique_lib
    with zipfile.ZipFile(lib / f"{PROXY_ARTIFACT}-0.0.0-fork.jar", "w") as jar:
        jar.writestr("proxy.txt", "a fork's proxy")
    built = img.ensure_image(lib, client, lambda line: None)
    tags.append(built.tag)
    assert f"{PROXY_ARTIFACT}-0.0.0-fork.jar" in img.image_jars(client, img.named_image(built.tag, client))
    host = Distribution("rocketmq:5.5.0", "5.5.0", tmp_path / "host-lib")  # the release's jars, no proxy among them
    named = ContainerRuntime(lib, tmp_path / "named", image=built.tag)
    own = ContainerRuntime(lib, tmp_path / "own")  # an image built here from the distribution
    try:
        assert named.ships(PROXY_ARTIFACT) and not named.ships("rocketmq-nothing")
        assert proxy_jars(host, named) == host.lib_dir  # mapped to the image's lib by the container runtime
        assert not own.ships(PROXY_ARTIFACT)
    finally:
        named.close()
        own.close()
