"""docs/ci.md: the commands it documents parse with the real CLI, its workflow's retry rule agrees
with ``reports.verdict`` (never retry 1, retry 2 and 3), and its exit table lists every code."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from hourglass.harness.cli import build_parser
from hourglass.reports.verdict import EXIT_CODES, EXIT_USAGE, VIOLATED

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "ci.md").read_text()


def _commands(prefix: str) -> list[list[str]]:
    """Every documented ``python -m hourglass`` command, continuation lines joined, shell variables
    replaced by a placeholder path."""
    joined = re.sub(r"\\\n\s*", " ", DOC)
    out = []
    for line in joined.splitlines():
        line = line.strip().removeprefix("|").strip()
        if line.startswith(prefix):
            line = re.sub(r'\$[({]?[a-z_]+[)}]?', "/tmp/dist", line.split("||")[0])
            out.append(shlex.split(line, comments=True)[len(prefix.split()):])
    return out


def test_the_documented_harness_commands_parse():
    commands = _commands("python -m hourglass")
    assert {c[0] for c in commands} >= {"list", "run"}
    for argv in commands:
        args = build_parser().parse_args(argv)  # a wrong option exits 64 here
        if args.cmd == "run":
            assert args.suite == ["conformance"] and args.baseline and args.system.startswith(("dist:", "cmd:"))


def test_the_exit_table_and_the_retry_rule_agree_with_the_verdict_module():
    for code in (*EXIT_CODES.values(), EXIT_USAGE):
        assert re.search(rf"^\| {code} \|", DOC, re.M), f"exit {code} missing from docs/ci.md"
    assert "never retry" in DOC.split(f"| {EXIT_CODES[VIOLATED]} |", 1)[1].splitlines()[0]
    retry = re.search(r"case \$code in\n\s*2\|3\)", DOC)
    assert retry, "the workflow retries exactly 2 and 3"


def test_the_documented_cmd_file_checks(tmp_path):
    from textwrap import dedent

    from hourglass.adapters.rocketmq.cmd import load_cmd_file

    block = DOC.split("`.hourglass/system.toml`:\n", 1)[1].split("\nand the step runs", 1)[0]
    path = tmp_path / "system.toml"
    path.write_text(dedent(block))
    cmd = load_cmd_file(path)
    assert cmd.client == "rocketmq:5.3.3" and cmd.capabilities == {"timer"}
    assert cmd.components["broker"].command == ("{env:FORK_DIST}/bin/mqbroker", "-c", "{conf}")
