"""Runs the steps of ``action.yml`` (the composite GitHub Action) here, as a workflow would: what
``.ci/action-steps`` executes (it picks a Python with PyYAML; this file needs nothing else).

    .ci/action-steps [--with NAME=VALUE ...] [--state DIR] [--workdir DIR]
    .ci/action-steps --dump            # the parsed action.yml as JSON (its structure test reads it)

Each ``run:`` step runs in order, as GitHub runs ``shell: bash`` (``bash --noprofile --norc -eo
pipefail FILE``), in ``--workdir`` (the workspace), with its ``env:`` evaluated, after its ``if:``.
Expressions are the few this action uses: ``${{ inputs.X }}``, ``${{ github.action_path }}`` /
``github.workspace``, ``${{ runner.os }}`` / ``runner.temp``, ``${{ steps.ID.outputs.X }}``; an
``if:`` is ``always()``, ``success()``, ``failure()`` or ``REF == 'literal'`` / ``!=``, joined by
``&&``. Anything else stops it (exit 3): the action and this file change together.

Not run, replaced by what this machine has: the ``uses:`` steps (setup-python and setup-java: the
active virtualenv and the host's JDK; cache: nothing) and the step with ``id: install`` (pip install
of the action's checkout: the active virtualenv has the package, editable). An upload
(``actions/upload-artifact``) is not uploaded: the files its ``path`` patterns select are listed in
``<state>/artifacts/<name>.txt`` (paths relative to the workspace), with the patterns'
semantics (a directory takes everything under it; ``!`` excludes; ``**`` any number of directories).

``<state>`` holds ``GITHUB_STEP_SUMMARY`` (``step-summary.md``), each step's ``GITHUB_OUTPUT`` and
``result.json`` (every step's status and exit code, the outputs, the artifacts). The exit code is
the first failed step's (the run step's is the harness's), 0 when none failed.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
#: steps (by id) a workflow runs and this machine replaces: the active virtualenv has the package
LOCAL = {"install": "the active virtualenv has the package (editable)"}
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
REF = re.compile(r"^(inputs|github|runner|steps)\.([A-Za-z0-9_.-]+)$")
COMPARE = re.compile(r"^([A-Za-z0-9_.-]+)\s*(==|!=)\s*'([^']*)'$")


class ActionError(Exception):
    """action.yml uses something this runner does not evaluate."""


def load(path: Path) -> dict:
    action = yaml.safe_load(path.read_text())
    if not isinstance(action, dict) or (action.get("runs") or {}).get("using") != "composite":
        raise ActionError(f"{path}: expected a composite action (runs.using: composite)")
    return action


def resolve(ref: str, ctx: dict) -> str:
    m = REF.match(ref)
    if not m:
        raise ActionError(f"expression {ref!r}: only inputs.*, github.*, runner.*, steps.*.outputs.* are evaluated")
    scope, name = m.groups()
    if scope == "steps":
        step_id, _, output = name.partition(".outputs.")
        return ctx["steps"].get(step_id, {}).get(output, "")
    if name not in ctx[scope]:
        raise ActionError(f"expression {ref!r}: no {name!r} in {scope} (has: {', '.join(sorted(ctx[scope]))})")
    return ctx[scope][name]


def expand(text, ctx: dict) -> str:
    return EXPR.sub(lambda m: resolve(m.group(1), ctx), str(text))


def condition(text, ctx: dict, failed: bool) -> bool:
    """An ``if:``; without one, ``success()``."""
    expr = str(text if text is not None else "success()").strip()
    m = re.fullmatch(r"\$\{\{\s*(.*?)\s*\}\}", expr)
    expr = m.group(1) if m else expr
    result = True
    for term in (t.strip() for t in expr.split("&&")):
        if term == "always()":
            value = True
        elif term in ("success()", "failure()"):
            value = (term == "failure()") == failed
        elif COMPARE.match(term):
            ref, op, literal = COMPARE.match(term).groups()
            value = (resolve(ref, ctx) == literal) == (op == "==")
        else:
            raise ActionError(f"if: {text!r}: the term {term!r} is not evaluated here")
        result = result and value
    status_named = any(f in expr for f in ("always()", "failure()", "success()"))
    return result and (status_named or not failed)  # GitHub adds success() unless a status function is named


def read_outputs(path: Path) -> dict[str, str]:
    """``NAME=value`` lines and ``NAME<<DELIM`` blocks of a GITHUB_OUTPUT file."""
    out, lines = {}, path.read_text().splitlines() if path.exists() else []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            end = lines.index(delim, i + 1)
            out[name] = "\n".join(lines[i + 1:end])
            i = end
        elif "=" in line:
            name, value = line.split("=", 1)
            out[name] = value
        i += 1
    return out


def _match(parts: list[str], path: list[str]) -> bool:
    if not parts:
        return not path
    if parts[0] == "**":
        return any(_match(parts[1:], path[i:]) for i in range(len(path) + 1))
    return bool(path) and fnmatch.fnmatchcase(path[0], parts[0]) and _match(parts[1:], path[1:])


def selects(pattern: str, rel: str) -> bool:
    """Whether a path pattern takes the file ``rel``: it or a directory above it matches."""
    parts = [p for p in pattern.strip("/").split("/") if p not in ("", ".")]
    path = rel.split("/")
    return any(_match(parts, path[:n]) for n in range(1, len(path) + 1))


def artifact_files(patterns: str, workdir: Path) -> list[str]:
    """The files (relative to ``workdir``) an upload-artifact ``path`` selects."""
    lines = [line.strip() for line in patterns.splitlines() if line.strip() and not line.strip().startswith("#")]
    include = [line for line in lines if not line.startswith("!")]
    exclude = [line[1:] for line in lines if line.startswith("!")]
    files = []
    for root, _dirs, names in os.walk(workdir):
        for name in names:
            rel = os.path.relpath(os.path.join(root, name), workdir)
            if any(selects(p, rel) for p in include) and not any(selects(p, rel) for p in exclude):
                files.append(rel)
    return sorted(files)


def replace_uses(step: dict, ctx: dict, state: Path, workdir: Path) -> str:
    """What stands in for a ``uses:`` step here; an upload lists the files it would take."""
    uses = step["uses"]
    if uses.startswith("actions/upload-artifact@"):
        with_ = {k: expand(v, ctx) for k, v in (step.get("with") or {}).items()}
        files = artifact_files(with_["path"], workdir)
        manifest = state / "artifacts" / f"{with_['name']}.txt"
        manifest.parent.mkdir(exist_ok=True)
        manifest.write_text("".join(f + "\n" for f in files))
        return f"listed {len(files)} files in {manifest}"
    return "replaced by this machine's (the active virtualenv, the host's JDK, no cache)"


def run_step(step: dict, index: int, ctx: dict, state: Path, workdir: Path) -> int:
    script = state / f"step-{index:02d}.sh"
    script.write_text(step["run"])
    output = state / f"output-{index:02d}"
    output.touch()
    env = {**os.environ, **{k: expand(v, ctx) for k, v in (step.get("env") or {}).items()},
           "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": ctx["files"]["summary"],
           "GITHUB_ENV": str(state / "github-env"), "GITHUB_PATH": str(state / "github-path"),
           "GITHUB_WORKSPACE": str(workdir), "GITHUB_ACTION_PATH": ctx["github"]["action_path"],
           "RUNNER_TEMP": ctx["runner"]["temp"], "RUNNER_OS": ctx["runner"]["os"], "GITHUB_ACTIONS": "true"}
    code = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=workdir,
                          env=env).returncode
    if step.get("id"):
        ctx["steps"][step["id"]] = read_outputs(output)
    return code


def run(action: dict, inputs: dict[str, str], state: Path, workdir: Path) -> dict:
    (state / "tmp").mkdir(parents=True, exist_ok=True)
    summary = state / "step-summary.md"
    summary.touch()
    ctx = {"inputs": inputs, "steps": {}, "files": {"summary": str(summary)},
           "github": {"action_path": str(REPO), "workspace": str(workdir)},
           "runner": {"os": "Linux", "temp": str(state / "tmp")}}
    failed_code, results = 0, []
    for i, step in enumerate(action["runs"]["steps"]):
        name = step.get("name") or step.get("id") or f"step {i}"
        if not condition(step.get("if"), ctx, failed_code != 0):
            results.append({"name": name, "status": "skipped"})
            continue
        if "uses" in step or step.get("id") in LOCAL:
            what = replace_uses(step, ctx, state, workdir) if "uses" in step else LOCAL[step["id"]]
            say(f"{name}: not run ({step.get('uses') or 'run'}): {what}")
            results.append({"name": name, "status": "replaced", "note": what})
            continue
        say(f"{name}: running")
        code = run_step(step, i, ctx, state, workdir)
        results.append({"name": name, "status": "failed" if code else "passed", "code": code})
        if code and not failed_code:
            failed_code = code
    artifacts = {p.stem: p.read_text().splitlines() for p in sorted((state / "artifacts").glob("*.txt"))}
    return {"exit_code": failed_code, "steps": results, "outputs": ctx["steps"], "summary": str(summary),
            "artifacts": artifacts}


def say(line: str) -> None:
    print(f"action-steps: {line}", file=sys.stderr, flush=True)


def parse_inputs(action: dict, given: list[str]) -> dict[str, str]:
    declared = action.get("inputs") or {}
    inputs = {name: str(spec.get("default", "")) for name, spec in declared.items()}
    for item in given:
        name, sep, value = item.partition("=")
        if not sep or name not in declared:
            raise ActionError(f"--with {item}: expected NAME=VALUE with NAME one of {', '.join(declared)}")
        inputs[name] = value
    return inputs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=".ci/action-steps", description=__doc__.split("\n\n")[0])
    ap.add_argument("--action", type=Path, default=REPO / "action.yml")
    ap.add_argument("--with", dest="inputs", action="append", default=[], metavar="NAME=VALUE", help="an input (repeatable)")
    ap.add_argument("--state", type=Path, default=None, help="where the step summary, outputs and result.json go")
    ap.add_argument("--workdir", type=Path, default=Path.cwd(), help="the workspace (default: here)")
    ap.add_argument("--dump", action="store_true", help="print action.yml as JSON and exit")
    args = ap.parse_args(argv)
    try:
        action = load(args.action)
        if args.dump:
            print(json.dumps(action, indent=1))
            return 0
        inputs = parse_inputs(action, args.inputs)
        state = (args.state or Path(tempfile.mkdtemp(prefix="action-steps-"))).resolve()
        state.mkdir(parents=True, exist_ok=True)
        result = run(action, inputs, state, args.workdir.resolve())
    except (ActionError, OSError, yaml.YAMLError) as e:
        say(str(e))
        return 3
    (state / "result.json").write_text(json.dumps(result, indent=1) + "\n")
    say(f"exit {result['exit_code']}; step summary {result['summary']}; result {state / 'result.json'}")
    return result["exit_code"]


if __name__ == "__main__":
    sys.exit(main())
