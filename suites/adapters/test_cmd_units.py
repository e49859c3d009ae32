"""``cmd:FILE`` systems without a broker: the file's checks and errors, placeholder expansion, the
spec checks before anything runs, and the Apache-scripts distribution's pieces (the example it
writes, the zip it extracts). The process runtime on a launcher: ``test_process_groups.py``."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from hourglass.adapters.base import AdapterError
from hourglass.adapters.rocketmq import apache_dist, open_system
from hourglass.adapters.rocketmq.cmd import PLACEHOLDERS, cmd_distribution, expand, load_cmd_file
from hourglass.harness.cli import replay_system
from hourglass.harness.systems import SystemSpec
from hourglass.reference.contract import ContractError

GOOD = '''
version = "5.3.3-acme.1"
client = "rocketmq:5.3.3"

[capabilities]
timer = true

[env]
SHARED = "{home}"
BOTH = "top"

[namesrv]
command = ["{here}/bin/ns", "-c", "{conf}", "--port={port}"]

[broker]
command = "exec {here}/bin/broker -c {conf} --namesrv {namesrv} --store {store} >>{log} 2>&1 # ${{HOME}}"
env = { BOTH = "broker", PATHS = "{java_home}/bin:{env:HG_TEST_PATH}" }
'''

VALUES = {"conf": "/run/conf/broker.conf", "port": 19881, "namesrv": "127.0.0.1:19876", "store": "/run/my store",
          "home": "/run/home", "log": "/run/logs/broker.out"}


def _write(tmp_path: Path, text: str, name: str = "acme.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_good_file_reads_into_its_fields(tmp_path):
    cmd = load_cmd_file(_write(tmp_path, GOOD))
    assert cmd.version == "5.3.3-acme.1" and cmd.client == "rocketmq:5.3.3"
    assert cmd.config_format == "java-properties" and cmd.capabilities == {"timer"}
    assert cmd.path == tmp_path / "acme.toml"


def test_launch_expands_placeholders_per_component(tmp_path, monkeypatch):
    monkeypatch.setenv("HG_TEST_PATH", "/usr/bin")
    jdk = tmp_path / "jdk"
    (jdk / "bin").mkdir(parents=True)
    (jdk / "bin" / "java").write_text("")
    monkeypatch.setenv("JAVA_HOME", str(jdk))
    cmd = load_cmd_file(_write(tmp_path, GOOD))
    argv, env = cmd.launch("namesrv", {**VALUES, "conf": "/run/conf/namesrv.conf", "port": 19876})
    assert argv == (f"{tmp_path}/bin/ns", "-c", "/run/conf/namesrv.conf", "--port=19876")
    assert dict(env) == {"SHARED": "/run/home", "BOTH": "top"}
    argv, env = cmd.launch("broker", VALUES)
    # a string command runs through /bin/sh -c with every value shell-quoted; {{ }} are braces
    assert argv == ("/bin/sh", "-c", f"exec {tmp_path}/bin/broker -c /run/conf/broker.conf --namesrv 127.0.0.1:19876 "
                    "--store '/run/my store' >>/run/logs/broker.out 2>&1 # ${HOME}")
    assert dict(env) == {"SHARED": "/run/home", "BOTH": "broker", "PATHS": f"{jdk}/bin:/usr/bin"}


def test_expand_braces_and_environment(monkeypatch):
    monkeypatch.delenv("HG_UNSET_VAR", raising=False)
    assert expand("{{a}} {conf} [{env:HG_UNSET_VAR}]", {"conf": "x y"}) == "{a} x y []"
    assert expand("{conf}", {"conf": "x y"}, quote=True) == "'x y'"


BAD = [
    # (what is wrong, the file's text, the field the error names, words of the expectation)
    ("no version", GOOD.replace('version = "5.3.3-acme.1"\n', ""), "version", "the system's version string"),
    ("a version with a space", GOOD.replace('"5.3.3-acme.1"', '"5.3 acme"'), "version", "the system's version string"),
    ("no client", GOOD.replace('client = "rocketmq:5.3.3"\n', ""), "client", "the official client"),
    ("a client that is no version", GOOD.replace('"rocketmq:5.3.3"', '"rocketmq:five"'), "client", "rocketmq:<version>"),
    ("another config format", GOOD.replace('client =', 'config_format = "yaml"\nclient ='), "config_format",
     "java-properties (key=value lines: the only format"),
    ("an unknown top-level key", "verison = 1\n" + GOOD, "verison", "one of version, client"),
    ("an unknown capability", GOOD.replace("timer = true", "transactions = true"), "capabilities.transactions",
     "one of timer"),
    ("a capability that is no boolean", GOOD.replace("timer = true", 'timer = "yes"'), "capabilities.timer", "true or false"),
    ("no broker", GOOD.split("[broker]")[0], "broker", "a table [broker] with command"),
    ("a broker without a command", GOOD.split("[broker]")[0] + '[broker]\nenv = {A = "b"}\n', "broker.command",
     "the command that starts it"),
    ("an empty argv", GOOD.replace('command = ["{here}/bin/ns", "-c", "{conf}", "--port={port}"]', "command = []"),
     "namesrv.command", "an argv list"),
    ("an empty argument", GOOD.replace('"--port={port}"', '""'), "namesrv.command[3]", "a non-empty string"),
    ("an unknown placeholder", GOOD.replace("{conf}", "{config}", 1), "namesrv.command[2]", "placeholders among {conf}"),
    ("an env name with a dash", GOOD.replace('SHARED = "{home}"', '"my-var" = "x"'), "env.my-var",
     "an environment variable name"),
    ("an env value that is no string", GOOD.replace('BOTH = "top"', "BOTH = 3"), "env.BOTH", "a string"),
    ("an unknown component key", GOOD.replace("[namesrv]\n", "[namesrv]\nargs = []\n"), "namesrv.args",
     "one of command, env"),
]


@pytest.mark.parametrize("text,field,expected", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_each_mistake_is_one_line_naming_file_field_expected_found(tmp_path, text, field, expected):
    path = _write(tmp_path, text)
    with pytest.raises(ContractError) as e:
        load_cmd_file(path)
    msg = str(e.value)
    assert msg.startswith(f"{path}: field '{field}': expected ") and expected in msg and ", found " in msg
    assert "\n" not in msg


def test_unreadable_or_broken_toml_names_the_file(tmp_path):
    with pytest.raises(ContractError, match=r"missing\.toml: expected a readable TOML file"):
        load_cmd_file(tmp_path / "missing.toml")
    with pytest.raises(ContractError, match=r"broken\.toml: expected TOML, found"):
        load_cmd_file(_write(tmp_path, "version = ", "broken.toml"))


def test_every_placeholder_is_documented_in_the_module_and_the_example():
    import hourglass.adapters.rocketmq.cmd as cmd_module

    doc = cmd_module.__doc__
    example = apache_dist.EXAMPLE.read_text()
    for name in PLACEHOLDERS:
        assert "{" + name + "}" in doc
        assert "{" + name + "}" in example, f"the example's header lists {{{name}}}"


def test_the_shipped_example_checks_and_is_what_provisioning_writes(tmp_path):
    cmd = load_cmd_file(apache_dist.EXAMPLE)
    assert cmd.version == apache_dist.DEFAULT_VERSION and cmd.client == f"rocketmq:{apache_dist.DEFAULT_VERSION}"
    assert cmd.capabilities == {"timer"}
    assert cmd.components["broker"].command == ("{here}/bin/mqbroker", "-c", "{conf}")
    assert cmd.components["namesrv"].command == ("{here}/bin/mqnamesrv", "-c", "{conf}")
    assert apache_dist.example_for(apache_dist.DEFAULT_VERSION) == apache_dist.EXAMPLE.read_text()
    other = load_cmd_file(_write(tmp_path, apache_dist.example_for("5.4.0")))
    assert other.version == "5.4.0" and other.client == "rocketmq:5.4.0"


def test_the_source_release_extract_keeps_bin_and_conf_only_with_executable_scripts(tmp_path):
    archive = tmp_path / "src.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        top = "rocketmq-all-9.9.9/distribution/"
        zf.writestr(top + "bin/mqbroker", "#!/bin/sh\n")
        zf.writestr(top + "bin/dledger/fast-try.sh", "#!/bin/sh\n")
        zf.writestr(top + "conf/broker.conf", "brokerName=a\n")
        zf.writestr(top + "pom.xml", "<project/>")
        zf.writestr("rocketmq-all-9.9.9/broker/src/Main.java", "class Main {}")
    out = tmp_path / "dist"
    apache_dist._extract(archive, out, "9.9.9")
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == [
        "bin/dledger/fast-try.sh", "bin/mqbroker", "conf/broker.conf"]
    assert os.access(out / "bin" / "mqbroker", os.X_OK)
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("x/distribution/bin/mqbroker", "")
        zf.writestr("x/distribution/bin/../../../escape", "")
    with pytest.raises(AdapterError, match="unsafe path"):
        apache_dist._extract(bad, tmp_path / "bad", "9.9.9")


def test_lib_link_is_relative_and_replaced_when_stale(tmp_path):
    lib = tmp_path / "rocketmq" / "9.9.9" / "lib"
    lib.mkdir(parents=True)
    link = tmp_path / "apache-dist" / "9.9.9" / "lib"
    link.parent.mkdir(parents=True)
    link.symlink_to(tmp_path / "gone")
    apache_dist._link_lib(lib, link)
    assert os.readlink(link) == "../../rocketmq/9.9.9/lib" and link.resolve() == lib.resolve()


# --- the spec, checked before anything runs ---------------------------------------------------------

def test_a_cmd_spec_is_kept_with_its_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = SystemSpec("cmd:acme.toml", "process")
    assert spec.spec == f"cmd:{tmp_path}/acme.toml"
    assert replay_system({"system": {"adapter": "rocketmq", "version": "5.3.3-acme.1", "spec": spec.spec}}) == spec.spec


def _programs(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir(exist_ok=True)
    for name in ("ns", "broker"):
        (tmp_path / "bin" / name).write_text("#!/bin/sh\n")
        (tmp_path / "bin" / name).chmod(0o755)


def test_spec_check_names_the_file_and_the_field(tmp_path):
    _programs(tmp_path)
    path = _write(tmp_path, GOOD.replace("{conf}", "{cfg}", 1))
    with pytest.raises(ContractError, match=rf"^{path}: field 'namesrv.command\[2\]': expected placeholders among"):
        SystemSpec(f"cmd:{path}", "process").check()
    good = GOOD.replace('"rocketmq:5.3.3"', f'"{_fake_client(tmp_path)}"')  # the check fetches a release client
    SystemSpec(f"cmd:{_write(tmp_path, good)}", "auto").check()  # auto means process for a cmd: system


def test_spec_check_finds_a_program_that_is_not_there(tmp_path, monkeypatch):
    path = _write(tmp_path, GOOD)
    with pytest.raises(ContractError, match=rf"^{path}: field 'namesrv.command\[0\]': expected an executable program "
                       rf"\(a path, or a name on PATH\), found '{tmp_path}/bin/ns'$"):
        SystemSpec(f"cmd:{path}", "process").check()
    monkeypatch.setenv("HG_TEST_BIN", str(tmp_path / "elsewhere"))
    path = _write(tmp_path, GOOD.replace('"{here}/bin/ns"', '"{env:HG_TEST_BIN}/ns"').replace('"{here}/bin/broker', '"sh'))
    with pytest.raises(ContractError, match=f"found '{tmp_path}/elsewhere/ns'"):
        SystemSpec(f"cmd:{path}", "process").check()
    path = _write(tmp_path, GOOD.replace('"{here}/bin/ns"', '"no-such-program-hg"'))
    with pytest.raises(ContractError, match="found 'no-such-program-hg'"):
        SystemSpec(f"cmd:{path}", "process").check()
    # a program that is a placeholder of the launch, or in a shell string, is the launch's to find
    _programs(tmp_path)
    good = GOOD.replace('"rocketmq:5.3.3"', f'"{_fake_client(tmp_path)}"')  # the check fetches a release client
    SystemSpec(f"cmd:{_write(tmp_path, good.replace('{here}/bin/ns', '{home}/ns'))}", "process").check()


@pytest.mark.parametrize("runtime,image", [("container", None), ("external", None), ("process", "apache/rocketmq:5.3.3")])
def test_a_cmd_system_needs_the_process_runtime(tmp_path, runtime, image):
    path = _write(tmp_path, GOOD)  # refused before the file is read
    with pytest.raises(ContractError, match=r"expected --runtime process \(a cmd: system runs its own commands"):
        SystemSpec(f"cmd:{path}", runtime, image).check()


def test_a_cmd_system_takes_no_turns_in_a_chain(tmp_path):
    path = _write(tmp_path, GOOD)
    with pytest.raises(ContractError, match="a cmd: system cannot take turns"):
        SystemSpec(f"rocketmq:5.3.3+cmd:{path}", "process").check()


def test_a_client_directory_that_is_not_there_is_caught_by_the_check(tmp_path):
    _programs(tmp_path)
    path = _write(tmp_path, GOOD.replace('"rocketmq:5.3.3"', f'"jars:{tmp_path}/nope"'))
    with pytest.raises(ContractError, match=rf"^{path}: field 'client': expected a client the harness can run.* a "
                       "distribution or jar directory"):
        SystemSpec(f"cmd:{path}", "process").check()


def _fake_client(tmp_path: Path) -> str:
    lib = tmp_path / "client-lib"
    lib.mkdir()
    (lib / "rocketmq-broker-5.3.3.jar").write_bytes(b"")  # the version is read from the name
    return f"jars:{lib}"


def test_the_distribution_carries_version_client_and_capabilities(tmp_path):
    path = _write(tmp_path, GOOD.replace('"rocketmq:5.3.3"', f'"{_fake_client(tmp_path)}"'))
    dist = cmd_distribution(f"cmd:{path}")
    assert dist.system == f"cmd:{path}" and dist.version == "5.3.3-acme.1" and dist.source == "cmd"
    assert dist.lib_dir == tmp_path / "client-lib" and dist.capabilities == {"timer"}
    assert dist.details() == {"client": f"jars:{tmp_path}/client-lib", "client_version": "5.3.3",
                              "capabilities": ["timer"]}
    with pytest.raises(AdapterError, match="it needs --runtime process, found --runtime container"):
        open_system(f"cmd:{path}", runtime="container", workdir=tmp_path / "w")
