"""The container runtime's pure parts and its errors; no Docker engine needed."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from hourglass.adapters.base import AdapterError
from hourglass.adapters.rocketmq import image as img
from hourglass.adapters.rocketmq.container import ContainerRuntime, jvm_opts_for, map_classpath, outermost


def test_no_docker_engine_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    with pytest.raises(AdapterError, match=r"no Docker engine answers at unix://.*no-engine\.sock.*--runtime process"):
        ContainerRuntime(tmp_path / "lib", tmp_path)


@pytest.mark.parametrize("output, major", [
    ('openjdk version "1.8.0_392"\nOpenJDK Runtime Environment', 8),
    ('openjdk version "17.0.13" 2024-10-15', 17),
    ('java version "21" 2023-09-19', 21),
])
def test_java_major_from_version_output(output, major):
    assert img.parse_java_major(output) == major


def test_unreadable_java_version_says_what_it_found():
    with pytest.raises(AdapterError, match="cannot read a Java version.*exec failed"):
        img.parse_java_major("exec failed: java: not found")


def test_debian_mirror_from_deb822_and_one_line_sources(tmp_path, monkeypatch):
    monkeypatch.delenv("HOURGLASS_DEBIAN_MIRROR", raising=False)
    deb822 = tmp_path / "debian.sources"
    deb822.write_text("Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n\n"
                      "Types: deb\nURIs: http://mirror.example/debian/\nSuites: bookworm bookworm-updates\n")
    one_line = tmp_path / "sources.list"
    one_line.write_text("deb [arch=amd64] http://other.example/debian bookworm main\n")
    assert img.debian_mirror((deb822,)) == "http://mirror.example/debian"
    assert img.debian_mirror((tmp_path / "missing", one_line)) == "http://other.example/debian"
    assert img.debian_mirror((tmp_path / "missing",)) == img.DEFAULT_MIRROR
    monkeypatch.setenv("HOURGLASS_DEBIAN_MIRROR", "http://local/debian")
    assert img.debian_mirror((deb822,)) == "http://local/debian"


def test_classpath_under_the_distribution_maps_to_the_image(tmp_path):
    lib, example = tmp_path / "lib", tmp_path / "example"
    lib.mkdir()
    example.mkdir()
    mapped, extra = map_classpath((f"{lib}/*", f"{lib}/a.jar", str(lib), f"{example}/*"), lib, "/opt/rocketmq/lib")
    assert mapped == ["/opt/rocketmq/lib/*", "/opt/rocketmq/lib/a.jar", "/opt/rocketmq/lib", f"{example}/*"]
    assert extra == [example]


def test_jvm_options_for_a_jdk8_image_drop_module_flags_and_pin_user_home():
    opts = ("-Xmx768m", "--add-opens=java.base/java.nio=ALL-UNNAMED", "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED")
    assert jvm_opts_for(opts, 8, Path("/w")) == ["-Xmx768m", "-Duser.home=/w"]
    assert jvm_opts_for(opts, 17, Path("/w")) == [*opts, "-Duser.home=/w"]
    assert jvm_opts_for(("-Duser.home=/h",), 17, Path("/w")) == ["-Duser.home=/h"]


def test_outermost_mounts_only(tmp_path):
    a, b = tmp_path / "run", tmp_path / "run" / "store"
    assert sorted(outermost([b, a, a, tmp_path / "other"])) == sorted([a, tmp_path / "other"])


def test_a_distribution_without_jars_is_refused(tmp_path):
    with pytest.raises(AdapterError, match=r"expected the distribution's jars \(\*\.jar\), found none"):
        img.content_hash(tmp_path, "base")
    with pytest.raises(AdapterError, match="cannot tell where the jars of 42 are"):
        img.lib_dir_of(42)
    assert img.lib_dir_of(SimpleNamespace(lib_dir=tmp_path)) == tmp_path


def test_content_hash_follows_the_jars_bytes(tmp_path):
    (tmp_path / "a.jar").write_bytes(b"one")
    first = img.content_hash(tmp_path, "base")
    assert img.content_hash(tmp_path, "base") == first
    assert img.content_hash(tmp_path, "other-base") != first
    (tmp_path / "a.jar").write_bytes(b"two")
    assert img.content_hash(tmp_path, "base") != first


class FakeImages:
    def __init__(self, attrs):
        self.attrs = attrs

    def get(self, name):
        return SimpleNamespace(attrs=self.attrs, id="sha256:" + "0" * 64)


def test_named_image_finds_jars_under_rocketmq_home():
    # the official apache/rocketmq images: no label, ROCKETMQ_HOME in the environment
    attrs = {"Config": {"Labels": {img.LABEL_JAVA_MAJOR: "8"},
                        "Env": ["PATH=/usr/bin", "ROCKETMQ_HOME=/home/rocketmq/rocketmq-5.3.3"]}}
    ref = img.named_image("apache/rocketmq:5.3.3", SimpleNamespace(images=FakeImages(attrs)))
    assert (ref.lib_dir, ref.java_major, ref.source) == ("/home/rocketmq/rocketmq-5.3.3/lib", 8, "named")


def test_named_image_without_a_lib_dir_says_what_it_looked_for():
    attrs = {"Config": {"Labels": None, "Env": ["PATH=/usr/bin"]}}
    with pytest.raises(AdapterError, match=r"image busybox: cannot tell where RocketMQ's jars are.*ROCKETMQ_HOME.*\['PATH'\]"):
        img.named_image("busybox", SimpleNamespace(images=FakeImages(attrs)))


def test_a_base_image_by_name_that_cannot_be_pulled_says_how_to_fall_back(monkeypatch):
    import docker

    class NoRegistry:
        def get(self, name):
            raise docker.errors.ImageNotFound(name)

        def pull(self, name):
            raise docker.errors.APIError("registry unreachable")

    monkeypatch.setenv("HOURGLASS_BASE_IMAGE", "eclipse-temurin:17-jre")
    with pytest.raises(AdapterError, match=r"HOURGLASS_BASE_IMAGE=eclipse-temurin:17-jre: not found locally and the "
                                           r"pull failed.*registry unreachable.*unset it to build the base with debootstrap"):
        img.ensure_base_image(SimpleNamespace(images=NoRegistry()), progress=lambda line: None)


class _FreezerContainer:
    """A container whose freezer fails ``fails`` times, as runc's does on a busy host."""

    def __init__(self, fails: int):
        self.fails, self.attrs = fails, {"State": {"Running": True, "Paused": False, "Status": "running"}}

    def reload(self):
        pass

    def pause(self):
        import docker

        if self.fails:
            self.fails -= 1
            raise docker.errors.APIError("500", explanation="Cannot pause container 670da: OCI runtime pause "
                                                            "failed: unable to freeze: unknown")
        self.attrs["State"].update(Paused=True, Status="paused")


def _runtime_with(container) -> ContainerRuntime:
    runtime = ContainerRuntime.__new__(ContainerRuntime)
    runtime._containers = {"broker": container}
    return runtime


def test_a_pause_the_freezer_refuses_on_a_busy_host_is_tried_again(monkeypatch):
    import hourglass.adapters.rocketmq.container as ct

    monkeypatch.setattr(ct.time, "sleep", lambda s: None)
    container = _FreezerContainer(fails=2)
    _runtime_with(container).pause("broker")
    assert container.attrs["State"]["Paused"] and container.fails == 0


def test_a_freezer_that_never_freezes_breaks_the_run_with_runcs_words(monkeypatch):
    import hourglass.adapters.rocketmq.container as ct

    monkeypatch.setattr(ct, "PAUSE_RETRY_S", 0.0)
    with pytest.raises(AdapterError, match="pause broker: .*unable to freeze"):
        _runtime_with(_FreezerContainer(fails=10**6)).pause("broker")
