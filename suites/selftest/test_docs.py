"""Every ``HOURGLASS_*`` environment variable the code, tox or CI reads is documented in
``docs/environment.md`` (issue 11: ~20 existed and none was documented)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAME = re.compile(r"\bHOURGLASS_[A-Z0-9_]*[A-Z0-9]\b")
SKIP_PARTS = {".git", ".tox", "build", "runs", "__pycache__"}


def names_in_code() -> dict[str, str]:
    """Variable name -> the first file that names it (Python, tox.ini, pyproject, .ci scripts)."""
    found: dict[str, str] = {}
    files = [p for p in ROOT.rglob("*") if p.is_file() and not SKIP_PARTS & set(p.relative_to(ROOT).parts)
             and (p.suffix in (".py", ".ini", ".toml") or p.parent.name == ".ci")]
    for path in sorted(files):
        for name in NAME.findall(path.read_text(errors="replace")):
            found.setdefault(name, str(path.relative_to(ROOT)))
    return found


def test_every_environment_variable_is_documented():
    documented = set(NAME.findall((ROOT / "docs" / "environment.md").read_text()))
    missing = {n: where for n, where in names_in_code().items() if n not in documented}
    assert not missing, f"document these in docs/environment.md (name, what it does, default, who reads it): {missing}"


def test_the_scan_finds_the_known_ones():
    names = names_in_code()
    assert {"HOURGLASS_SYSTEM", "HOURGLASS_CACHE", "HOURGLASS_REQUIRE_DOCKER", "HOURGLASS_SPARK_DRIVER_MEMORY"} <= set(names)


# --- the user docs against the code that owns each list (docs/invariants.md, docs/formats.md) ---

DOCS = ROOT / "docs"
#: formats.md's sections, each opened by its anchor, in the file's order
FORMAT_SECTIONS = ("baseline", "cmd", "faults", "scenario")


def _read(name: str) -> str:
    return (DOCS / name).read_text()


def section(text: str, anchor: str, ends: tuple[str, ...]) -> str:
    """The part of ``text`` from ``<a id="anchor">`` to the next of the ``ends`` anchors."""
    start = text.index(f'<a id="{anchor}"></a>')
    stops = [i for e in ends if e != anchor and (i := text.find(f'<a id="{e}"></a>', start + 1)) > start]
    return text[start:min(stops, default=len(text))]


def _formats(anchor: str) -> str:
    return section(_read("formats.md"), anchor, FORMAT_SECTIONS)


def test_every_invariant_has_its_section_and_its_summary_sentence():
    from hourglass.reference.contract import INVARIANT_SUMMARY, INVARIANTS

    assert set(INVARIANT_SUMMARY) == set(INVARIANTS), "reference.contract.INVARIANT_SUMMARY: one sentence per invariant"
    text = _read("invariants.md")
    ids = tuple(n.lower() for n in INVARIANTS)
    for name in INVARIANTS:
        assert f'<a id="{name.lower()}"></a>\n## {name}\n' in text, f"docs/invariants.md: no section '## {name}' anchored #{name.lower()}"
        own = section(text, name.lower(), ids)
        assert INVARIANT_SUMMARY[name] in own, f"docs/invariants.md #{name.lower()}: the summary sentence of {name} as " \
                                               "reference.contract.INVARIANT_SUMMARY has it"


def test_every_fault_step_kind_and_parameter_is_documented():
    from hourglass.reference import faults

    steps = section(_read("formats.md"), "fault-steps", FORMAT_SECTIONS + ("fault-steps",))
    missing = [s.action for s in faults.steps() if f"| `{s.action}` |" not in steps]
    missing += [p.name for p in faults.params() if f"`{p.name}`" not in steps]
    assert not missing, f"docs/formats.md (fault steps): document {missing}"


def test_every_cmd_key_and_placeholder_is_documented():
    from hourglass.adapters.rocketmq import cmd

    text = _formats("cmd")
    keys = [*cmd._TOP_KEYS, *(f"{c}.{k}" for c in cmd.COMPONENTS for k in cmd._COMPONENT_KEYS), *cmd.CAPABILITIES,
            *cmd.CONFIG_FORMATS]
    missing = [k for k in keys if f"`{k}`" not in text]
    missing += ["{" + p + "}" for p in cmd.PLACEHOLDERS if f"`{{{p}}}`" not in text]
    assert not missing, f"docs/formats.md#cmd: document {missing}"


def test_every_faults_file_and_baseline_field_is_documented():
    from dataclasses import fields

    from hourglass.adapters.rocketmq import external
    from hourglass.reports.baseline import Acceptance

    faults_text = _formats("faults")
    missing = [f"[{c}]" for c in external.COMPONENTS if f"`[{c}]`" not in faults_text]
    missing += [a for a in external.ACTIONS if f"`{a}`" not in faults_text]
    baseline_text = _formats("baseline")
    missing += [f.name for f in fields(Acceptance) if f"| `{f.name}` |" not in baseline_text]
    assert not missing, f"docs/formats.md#faults / #baseline: document {missing}"


def test_every_scenario_field_of_the_schema_is_documented():
    from hourglass.harness.scenario import scenario_schema

    schema = scenario_schema()
    text = _formats("scenario")
    objects = {"top level": schema["properties"], **{d: v.get("properties", {}) for d, v in schema["$defs"].items()}}
    missing = {where: [f for f in props if f"| `{f}` |" not in text] for where, props in objects.items()}
    missing = {k: v for k, v in missing.items() if v}
    assert not missing, f"docs/formats.md#scenario: document these fields: {missing}"


_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
_CODE = re.compile(r"`[^`\n]*`")


def anchors(text: str) -> set[str]:
    """The anchors a Markdown file has: explicit ``<a id>``s, and each heading's (GitHub's rule:
    lower case, punctuation but ``-`` and ``_`` dropped, spaces as ``-``)."""
    found = set(re.findall(r'<a id="([^"]+)"></a>', text))
    for heading in re.findall(r"^#{1,6} (.+)$", _FENCE.sub("", text), re.M):
        found.add(re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-"))
    return found


def relative_links(path: Path) -> list[tuple[str, str]]:
    """(target file, anchor) of each relative link of a Markdown file (code left out)."""
    text = _CODE.sub("", _FENCE.sub("", path.read_text()))
    out = []
    for target in _LINK.findall(text):
        if re.match(r"[a-z]+:", target):  # https:, mailto:, file:
            continue
        file, _, anchor = target.partition("#")
        out.append((file, anchor))
    return out


def test_every_relative_link_resolves_to_a_file_and_an_anchor():
    broken = []
    for doc in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]:
        for file, anchor in relative_links(doc):
            target = (doc.parent / file).resolve() if file else doc
            if not target.exists():
                broken.append(f"{doc.relative_to(ROOT)}: {file} (no such file)")
            elif anchor and target.suffix == ".md" and anchor not in anchors(target.read_text()):
                broken.append(f"{doc.relative_to(ROOT)}: {file}#{anchor} (no such anchor)")
    assert not broken, broken


def test_the_link_check_sees_links_and_anchors():
    links = relative_links(ROOT / "README.md")
    assert ("docs/invariants.md", "") in links and ("docs/formats.md", "cmd") in links
    assert {"no_loss", "reading-verdictjson"} <= anchors(_read("invariants.md"))
