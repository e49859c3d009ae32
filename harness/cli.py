"""``python -m hourglass``: run suites or scenarios against a system, compare versions, replay runs,
and the main job.

    python -m hourglass main [--system rocketmq:latest] [--runtime auto]
    python -m hourglass run --suite conformance --system rocketmq:4.9.7 --runtime process --out runs/x
    python -m hourglass run --scenario my-scenario.json --system simulated
    python -m hourglass run --suite conformance --system cmd:my-broker.toml --runtime process   # any implementation
    python -m hourglass matrix --systems rocketmq:4.9.7,rocketmq:latest --suite conformance --out runs/m
    python -m hourglass matrix --systems rocketmq:4.9.7,rocketmq:5.5.0 --across-store   # persistence, upgrade + back
    python -m hourglass replay runs/x/<run-id> [--system rocketmq:5.5.0]
    python -m hourglass list [--suite chaos]
    python -m hourglass history runs/ [--out site/]          # pass/fail per scenario x invariant across nights
    python -m hourglass run --suite chaos --scenario-name 'kill9-*' --system simulated

Exit codes (``reports.verdict``, the same as the checker's): 0 no violation, 1 a violation (wins
over everything: never retry it), 2 undecided, 3 the run or the input is broken (a bad scenario
file, baseline or cmd: file, unwritable --out, unreachable Spark master, an interrupted run),
64 a usage error (unknown option or suite, missing argument, a --system or --namesrv naming
nothing, an option the command would ignore). Every input is checked before
anything runs; a failure is one line naming the file or option, the field, what was expected and
what was found (``--debug`` adds the traceback).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

from hourglass.reference.contract import ContractError  # noqa: E402 - after the testcontainers switch
from hourglass.reference.contract import OptionError  # noqa: E402
from hourglass.reports.command import Parser, add_version, UsageError, positive, run_command, writable_dir  # noqa: E402
from hourglass.reports.spark import conf_item  # noqa: E402
from hourglass.reports.verdict import EXIT_CODES, EXIT_USAGE, BROKEN, exit_code  # noqa: E402
from hourglass.harness import families  # noqa: E402
from hourglass.harness.fit import MAX_WAIT_MS  # noqa: E402

#: suite name -> (module, attribute) of its scenario catalogue; catalogues ship in the package
#: (``harness.catalogue``), never in ``suites`` (tests only: not installed)
SUITES = {
    "conformance": ("hourglass.harness.catalogue.conformance", "CONFORMANCE"),
    "chaos": ("hourglass.harness.catalogue.chaos", "SHORT"),
    "nightly": ("hourglass.harness.catalogue.chaos", "NIGHTLY"),
    "persistence": ("hourglass.harness.catalogue.persistence", "SHORT"),
    "persistence-full": ("hourglass.harness.catalogue.persistence", "FULL"),
    "persistence-async": ("hourglass.harness.catalogue.persistence", "FULL_ASYNC"),
    "timer": ("hourglass.harness.catalogue.timer", "SHORT"),
    "timer-full": ("hourglass.harness.catalogue.timer", "FULL"),
}
SUITE_NAMES = (*SUITES, "generated")
#: the generated suite's seed and size when --seed/--count are not given
GENERATED_SEED, GENERATED_COUNT = 0, 10


def load_suite(name: str, seed: int | None = None, count: int | None = None):
    if name == "generated":
        from hourglass.reference.cluster import CLUSTERS  # real brokers run every topology (the simulator skips clusters)

        return list(importlib.import_module("hourglass.harness.catalogue.generate").sample(
            GENERATED_SEED if seed is None else seed, GENERATED_COUNT if count is None else count, CLUSTERS))
    mod, attr = SUITES[name]
    return list(getattr(importlib.import_module(mod), attr))


def _scenarios(args, default: tuple[str, ...] = ("conformance", "nightly")) -> list:
    """The scenarios of ``--suite``/``--scenario``, filtered by ``--scenario-name``; with only
    ``--scenario-name``, picked from the ``default`` suites."""
    from hourglass.harness.scenario import Scenario, validate_scenario

    out = []
    suites = args.suite or ([] if args.scenario or not args.scenario_name else list(default))
    if "generated" not in suites and (args.seed is not None or args.count is not None):
        raise UsageError(f"{'--seed' if args.seed is not None else '--count'}: only the generated suite takes it "
                         "(--suite generated)")
    for s in suites:
        out += load_suite(s, args.seed, args.count)
    for f in args.scenario or []:
        out.append(Scenario.load(Path(f)))
    if args.scenario_name:
        out = pick_by_name(out, args.scenario_name)
    if not out:
        raise UsageError("nothing to run: give --suite and/or --scenario")
    for sc in out:
        validate_scenario(sc)
    names = [s.name for s in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ContractError("the scenarios given", "name", "unique scenario names", ", ".join(dup))
    return out


def pick_by_name(scenarios: list, patterns: list[str]) -> list:
    """The scenarios whose name matches one of ``patterns`` (shell globs, ``fnmatch``), in catalogue
    order; a pattern that matches nothing is a usage error naming it and what there is."""
    from fnmatch import fnmatchcase

    unmatched = [p for p in patterns if not any(fnmatchcase(s.name, p) for s in scenarios)]
    if unmatched:
        raise UsageError(f"--scenario-name {', '.join(unmatched)}: no such scenario in the selected suites "
                         f"(there are: {', '.join(s.name for s in scenarios) or 'none'}; see python -m hourglass list)")
    return [s for s in scenarios if any(fnmatchcase(s.name, p) for p in patterns)]


def cmd_list(args) -> int:
    """Each suite, its scenarios, each one's own wait (``harness.summary.scenario_wait_ms``),
    whether it faults and what it requires of the system."""
    from hourglass.harness.summary import scenario_wait_ms

    for suite in args.suite or SUITE_NAMES:
        scenarios = load_suite(suite, args.seed, args.count)
        print(f"{suite}: {len(scenarios)} scenarios" + (f" (seed {args.seed})" if suite == "generated" else ""))
        for s in scenarios:
            faults = "faults: " + ("yes" if s.faults else "no")
            print(f"  {s.name:<28} wait {scenario_wait_ms(s) / 1000:6.1f} s  {faults:<11} requires: {requirements(s)}")
    return 0


def requirements(scenario) -> str:
    """What ``scenario`` needs of the system, as ``harness list`` says it: its capabilities, a
    cluster other than a single broker, and each fault family its steps use (the families a
    runtime or host may refuse: network needs root and namespaces, clock libfaketime, ...; a
    system that refuses one skips the scenario, :func:`harness.runner.skip_reason`)."""
    from hourglass.reference import faults as kinds
    from hourglass.reference.cluster import SINGLE

    needs = list(scenario.requires)
    if scenario.profile.cluster != SINGLE:
        needs.append(f"a {scenario.profile.cluster} cluster")
    used = {kinds.family_of(a).name for a, _ in kinds.primitives_needed(scenario.faults)}
    needs += [f"{f.name} faults" for f in kinds.families() if f.name in used]
    return ", ".join(needs) or "-"


def _common(p: argparse.ArgumentParser) -> None:
    """The options of every command that runs scenarios; each is used by all of them (an option a
    command would ignore is not offered: argparse refuses it, exit 64)."""
    p.add_argument("--runtime", default=os.environ.get("HOURGLASS_RUNTIME", "auto"), choices=families.runtimes())
    p.add_argument("--image", default=os.environ.get("HOURGLASS_IMAGE"), help="an existing broker image, e.g. apache/rocketmq:5.3.3")
    p.add_argument("--namesrv", default=os.environ.get("HOURGLASS_NAMESRV"),
                   help="--runtime external: HOST:PORT of the existing cluster's name server")
    p.add_argument("--proxy", default=os.environ.get("HOURGLASS_PROXY"),
                   help="--runtime external: HOST:PORT of the cluster's 5.x proxy (its gRPC port): its gRPC scenarios run")
    p.add_argument("--faults", default=os.environ.get("HOURGLASS_FAULTS"),
                   help="--runtime external: TOML file of fault commands ([broker] kill = \"...\", stop, start, pause, "
                        "resume; [namesrv] ...); scenarios needing a fault without a command are skipped")
    p.add_argument("--out", default=None, help="output directory (default runs/<timestamp>)")
    p.add_argument("--baseline", default=os.environ.get("HOURGLASS_BASELINE"), help="file of accepted violations")
    p.add_argument("--max-systems", type=positive(), default=2, help="real systems running at once")
    p.add_argument("--master", default=None, help="Spark master for the checker (default local[*])")
    p.add_argument("--conf", action="append", type=conf_item, default=[], metavar="KEY=VALUE",
                   help="a Spark property for the checker's session (repeatable; docs/spark.md)")
    p.add_argument("--max-wait", type=positive(float), default=os.environ.get("HOURGLASS_MAX_WAIT_S", str(MAX_WAIT_MS / 1000)),
                   metavar="SECONDS", help="on a cluster that runs another delay table than a scenario's: leave out the "
                   f"messages not done within this on its table (default {MAX_WAIT_MS // 1000}; harness.fit)")
    p.add_argument("--debug", action="store_true", help="print the traceback of an error")


def _generated(p: argparse.ArgumentParser) -> None:
    """``--seed``/``--count`` of the generated suite (None when not given: given without that
    suite, they would be ignored, a usage error)."""
    p.add_argument("--seed", type=int, default=None, help=f"seed of the generated suite (default {GENERATED_SEED})")
    p.add_argument("--count", type=positive(), default=None,
                   help=f"scenarios in the generated suite (default {GENERATED_COUNT})")


def system_spec(args, system: str):
    from hourglass.harness.systems import SystemSpec

    return SystemSpec(system, args.runtime, args.image, args.namesrv, args.faults, args.proxy)


def check_inputs(args, systems: list[str], option: str = "--system") -> Path:
    """Everything the command was given, checked before anything starts: the system specs (named
    as ``option`` gave them) and the options they use, the baseline, the Spark master, and that
    ``--out`` is a directory we can write and no other harness is writing (held until this process
    exits: :func:`harness.outdir.lock_out`). Returns ``--out``."""
    from hourglass.harness.outdir import lock_out, run_stamp
    from hourglass.harness.systems import check_options_used
    from hourglass.reports import baseline as baseline_mod
    from hourglass.reports.spark import check_master

    specs = [system_spec(args, system) for system in systems]
    for spec in specs:
        spec.check(option)
    check_options_used(specs, option)
    if args.baseline:
        baseline_mod.load(args.baseline)
    check_master(args.master)
    out = writable_dir(Path(args.out or f"runs/{args.cmd}-{run_stamp()}").resolve(), "Hourglass")
    lock_out(out)
    return out


def run_system(system: str, scenarios: list, args, out: Path) -> list[dict]:
    from hourglass.harness.batch import BatchOptions
    from hourglass.harness.session import run_and_check, write_summary
    from hourglass.harness.summary import batch_seconds
    from hourglass.harness.verdicts import describe

    spec = system_spec(args, system)
    batch = run_and_check(scenarios, BatchOptions(spec, out, args.max_systems, max_wait_ms=int(args.max_wait * 1000)),
                          args.baseline, args.master, dict(args.conf))
    wall_s, check_s = batch.wall_s, batch.check_s
    verdicts = [batch.verdicts[sc.name] for sc in scenarios]
    for v in verdicts:
        print(f"skipped {v['scenario']}: {v['skipped']}" if v.get("skipped") else describe(v))
    write_summary(out, system, verdicts, wall_s, scenarios, check_s)
    skipped = sum(1 for v in verdicts if v.get("skipped"))
    print(f"\n{system}: {len(verdicts) - skipped} runs" + (f", {skipped} skipped" if skipped else "")
          + f" in {batch_seconds(wall_s, check_s)}; report: {out / 'index.html'}")
    return judged(system, verdicts)


def judged(system: str, verdicts: list[dict]) -> list[dict]:
    """The verdicts of a batch minus the skipped scenarios; when every one was skipped nothing was
    observed, so nothing passed: one undecided verdict saying so."""
    verdicts = [v for v in verdicts if not v.get("skipped")]
    if not verdicts:
        print(f"{system}: every scenario was skipped: no verdict on the broker", file=sys.stderr)
        verdicts.append({"run_id": f"{system}: nothing ran", "passed": None, "invariants": {},
                         "undecided": {"messages": 0, "examples": [], "reason": "every scenario was skipped"}})
    return verdicts


def cmd_run(args) -> int:
    scenarios = _scenarios(args)
    out = check_inputs(args, [args.system])
    if args.repeat <= 1:
        return exit_code(run_system(args.system, scenarios, args, out))
    rounds = [run_system(args.system, scenarios, args, out / f"repeat-{i:02d}") for i in range(1, args.repeat + 1)]
    summary = repeat_summary(rounds)
    (out / "repeats.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(f"\n{args.system}: {args.repeat} repeats of {len(scenarios)} scenarios")
    for name, s in summary["scenarios"].items():
        failed = ", ".join(f"{inv} {n}/{s['runs']}" for inv, n in s["failed_invariants"].items())
        print(f"  {name}: {s['passed']}/{s['runs']} passed" + (f"; failed: {failed}" if failed else "")
              + (f"; broken {s['broken']}" if s["broken"] else "")
              + (f"; undecided, the host stalled: {s['host_stalled']}" if s["host_stalled"] else ""))
    print(f"  in all: {summary['passed']}/{summary['runs']} runs passed; {out / 'repeats.json'}")
    return exit_code([v for r in rounds for v in r])


def repeat_summary(rounds: list[list[dict]]) -> dict:
    """Per scenario over repeated rounds: runs, passed, broken, and how often each invariant failed
    (a failure in some rounds only is flaky: the broker or the harness, the examples say which)."""
    from hourglass.reports.verdict import PASSED, UNDECIDED, UNDECIDED_BY_HOST, status

    per: dict[str, dict] = {}
    for verdicts in rounds:
        for v in verdicts:
            s = per.setdefault(v.get("scenario") or v["run_id"],
                               {"runs": 0, "passed": 0, "broken": 0, "host_stalled": 0, "failed_invariants": {}})
            s["runs"] += 1
            s["passed"] += status(v) == PASSED
            s["broken"] += status(v) == BROKEN
            # undecided because the host stalled (reports.stalls): no failure, and no sign of flakiness
            s["host_stalled"] += status(v) == UNDECIDED and any(e.get(UNDECIDED_BY_HOST) for e in v.get("invariants", {}).values())
            for inv, entry in v.get("invariants", {}).items():
                if entry.get("passed") is False:
                    s["failed_invariants"][inv] = s["failed_invariants"].get(inv, 0) + 1
    return {"runs": sum(s["runs"] for s in per.values()), "passed": sum(s["passed"] for s in per.values()), "scenarios": per}


#: what ``matrix`` runs when given no --suite/--scenario: the states where versions differ in how
#: they keep their schedule offsets (an upgrade's risk)
MATRIX_DEFAULT_SUITES = ("persistence",)


def matrix_systems(systems: list[str], across_store: bool) -> list[str]:
    """The columns of a matrix: each system alone and, ``across_store``, each pair of consecutive
    ones on one store both ways (``A+B``: A, then B after the broker's first restart, then A again;
    ``B+A``: the downgrade first), as the first one's family chains them."""
    if not across_store:
        return systems
    pairs = [(a, b) for a, b in zip(systems, systems[1:])]
    return systems + [families.family_of(x).chain(x, y) for a, b in pairs for x, y in ((a, b), (b, a))]


def check_across_store(systems: list[str]) -> None:
    """``--across-store``: every system can take turns with the others on one store, as its family
    says (a system no family claims is refused later, by :func:`check_inputs`)."""
    claimed = [(s, families.family_of(s)) for s in systems]
    refused = {why: None for s, f in claimed if f is not None and (why := f.across_store(s))}
    mixed = len({f.name for _, f in claimed if f is not None}) > 1
    if refused or mixed:
        why = "; ".join(refused) or "systems of one family"
        raise UsageError(f"--across-store needs systems that can take turns on one store ({why})")


def cmd_matrix(args) -> int:
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if len(systems) < 2:
        raise UsageError("--systems needs at least two systems, comma-separated")
    twice = sorted({s for s in systems if systems.count(s) > 1})
    if twice:
        raise OptionError("--systems", None, "each system once (one column each; --repeat of run measures flakiness)",
                          ", ".join(twice))
    if args.across_store:
        check_across_store(systems)
    if not (args.suite or args.scenario):
        args.suite = list(MATRIX_DEFAULT_SUITES) if not args.scenario_name else None
    scenarios = _scenarios(args, MATRIX_DEFAULT_SUITES)
    systems = matrix_systems(systems, args.across_store)
    out = check_inputs(args, systems, "--systems")
    from hourglass.harness.session import system_dirname

    by_system = {}
    for system in systems:
        by_system[system] = run_system(system, scenarios, args, out / system_dirname(system))
    from hourglass.reports.matrix import summary_text, write_matrix

    checked = [v["run_dir"] for vs in by_system.values() for v in vs if v.get("run_dir")]
    m = write_matrix(checked, str(out))  # old -> new: the order of --systems
    print("\n" + summary_text(m, out / "matrix.html"))
    return exit_code([v for vs in by_system.values() for v in vs])


def replay_system(run: dict) -> str:
    """The exact system a run was made on, from its ``run.json``: the spec it recorded
    (``simulated[early-delivery]``, ``dist:/path``, ``rocketmq:5.5.0`` — ``rocketmq:latest``
    pinned to the version it resolved to), as the family of the spec (or, for runs made before
    the spec was recorded, of the adapter) says."""
    system = run.get("system") or {}
    spec = system.get("spec")
    given = isinstance(spec, str) and spec
    family = families.family_of(spec) if given else families.family_for_adapter(system.get("adapter"))
    if family is not None:
        return family.replay_spec(system)
    if given:
        return spec
    raise ContractError("run.json", "system.spec", f"the system the run was made on ({families.spec_help()})",
                        system.get("adapter"))


def cmd_replay(args) -> int:
    from hourglass.adapters.rundir import read_run_json
    from hourglass.reference.rundir import scenario_json
    from hourglass.harness.scenario import Scenario, validate_scenario

    run_dir = Path(args.run_dir)
    scenario = Scenario.load(scenario_json(run_dir))
    validate_scenario(scenario)
    run = read_run_json(run_dir)
    system = args.system or replay_system(run)
    out = check_inputs(args, [system])
    print(f"replaying {scenario.name} (seed {scenario.seed}) from {run_dir} on {system}")
    return exit_code(run_system(system, [scenario], args, out))


class _Verdicts:
    """A pytest plugin keeping the verdicts the Hourglass session judged (``harness.session``), so the
    main job exits by the project's rule instead of pytest's "some test failed"."""

    def __init__(self):
        self.verdicts: list[dict] = []

    def pytest_sessionfinish(self, session):
        hs = getattr(session.config, "_hourglass", None)
        self.verdicts = list(hs.verdicts.values()) if hs is not None else []


def cmd_main(args) -> int:
    """README command one: the conformance suite and a short chaos run against a real broker,
    checked, with the report. Exits by :func:`reports.verdict.exit_code` over the runs' verdicts."""
    import pytest

    out = check_inputs(args, [args.system])
    print(f"hourglass main job: {args.system} ({args.runtime} runtime) -> {out}", flush=True)
    from hourglass.harness import main_job

    argv = [
        main_job.__file__, "-p", "no:cacheprovider", "-q",
        # the installed plugin's packages are imported already (this process): nothing to rewrite
        "-W", "ignore::pytest.PytestAssertRewriteWarning",
        f"--hg-system={args.system}", f"--hg-runtime={args.runtime}", f"--hg-out={out}",
        f"--hg-max-systems={args.max_systems}", f"--hg-max-wait={args.max_wait}", f"--junitxml={out / 'junit-suite.xml'}",
    ]
    for option, value in (("image", args.image), ("baseline", args.baseline), ("master", args.master),
                          ("namesrv", args.namesrv), ("faults", args.faults), ("proxy", args.proxy)):
        if value:
            argv.append(f"--hg-{option}={value}")
    argv.extend(f"--hg-spark-conf={key}={value}" for key, value in args.conf)
    from hourglass.harness.bench import footprint_words
    from hourglass.harness.footprint import Footprint

    kept = _Verdicts()
    with Footprint() as footprint:  # the harness's own weight beside the broker's (harness.footprint)
        code = int(pytest.main(argv, plugins=[kept]))
    indexes = sorted(out.glob("*/index.html"))
    print(f"\n{footprint_words(footprint.figures())}")
    print("\nreports:")
    for i in indexes:
        print(f"  {i}")
    print(f"  {out / 'junit-suite.xml'}")
    return main_exit_code(code, kept.verdicts, args.system)


def main_exit_code(pytest_code: int, verdicts: list[dict], system: str) -> int:
    """The main job's exit code: the project's rule over its verdicts (a broken run 3, an undecided
    one 2, a violation 1; every scenario skipped: undecided). Of pytest's own codes only what says
    the session itself went wrong counts: interrupted or an internal error (3), a usage error or
    nothing collected (64), a failed test without a verdict that fails (the harness failed: 3)."""
    if pytest_code in (0, 1):
        code = exit_code(judged(system, verdicts))
        return EXIT_CODES[BROKEN] if pytest_code == 1 and code == 0 else code
    return {4: EXIT_USAGE, 5: EXIT_USAGE}.get(pytest_code, EXIT_CODES[BROKEN])


def build_parser() -> argparse.ArgumentParser:
    ap = Parser(prog="python -m hourglass", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_version(ap)
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=Parser)
    p = sub.add_parser("main", help="the conformance suite + a short chaos run against a real broker, with the report")
    _system(p)
    _common(p)
    p.set_defaults(fn=cmd_main)
    p = sub.add_parser("run", help="run suites/scenarios against one system and check them")
    _system(p)
    p.add_argument("--suite", action="append", choices=SUITE_NAMES, help="a suite (repeatable)")
    p.add_argument("--scenario", action="append", help="a scenario JSON file (repeatable)")
    _scenario_name(p)
    _common(p)
    _generated(p)
    p.add_argument("--repeat", type=positive(), default=1, help="run the scenarios this many times: a summary of "
                   "how often each scenario passed and each invariant failed (flakiness)")
    p.set_defaults(fn=cmd_run)
    p = sub.add_parser("matrix", help="the same seeded scenarios on several systems, side by side")
    p.add_argument("--systems", required=True, help="comma-separated, e.g. rocketmq:4.9.7,rocketmq:latest")
    p.add_argument("--suite", action="append", choices=SUITE_NAMES,
                   help="a suite (repeatable; default: " + ", ".join(MATRIX_DEFAULT_SUITES) + ")")
    p.add_argument("--across-store", action="store_true",
                   help="also run each pair of consecutive systems on one store, both ways (OLD+NEW: "
                        "OLD until the broker's first restart, then NEW, then OLD again; NEW+OLD)")
    p.add_argument("--scenario", action="append")
    _scenario_name(p)
    _common(p)
    _generated(p)
    p.set_defaults(fn=cmd_matrix)
    p = sub.add_parser("list", help="the suites, their scenarios, each one's wait, faults and requirements")
    p.add_argument("--suite", action="append", choices=SUITE_NAMES, help="only this suite (repeatable)")
    p.add_argument("--seed", type=int, default=GENERATED_SEED, help="seed of the generated suite")
    p.add_argument("--count", type=positive(), default=GENERATED_COUNT, help="scenarios in the generated suite")
    p.set_defaults(fn=cmd_list)
    p = sub.add_parser("replay", help="run a run directory's scenario again, on the exact system it recorded")
    p.add_argument("run_dir")
    p.add_argument("--system", default=None, help="default: the system of the original run")
    _common(p)
    p.set_defaults(fn=cmd_replay)
    p = sub.add_parser("history", help="the outcome of each scenario and invariant across the batches (nights) of "
                       "directories of runs: history.html, history.json")
    p.add_argument("dirs", nargs="+", metavar="DIR", help="a directory of runs (searched at any depth)")
    p.add_argument("--out", default=None, help="where to write history.html and history.json (default: the first DIR)")
    p.add_argument("--debug", action="store_true", help="print the traceback of an error")
    p.set_defaults(fn=cmd_history)
    return ap


def cmd_history(args) -> int:
    """The history page (:mod:`reports.history`): 0 when it is written; nothing checked found, or
    --out not writable: a ContractError naming the directories (exit 3)."""
    from hourglass.harness.outdir import LOCK_FILE
    from hourglass.reports.history import build_history, summary_text, write_pages

    out = Path(args.out or args.dirs[0]).absolute()
    h = build_history(args.dirs, out, LOCK_FILE)
    write_pages(h, writable_dir(out, "Hourglass"))
    print(summary_text(h))
    return 0


def _system(p: argparse.ArgumentParser) -> None:
    default = os.environ.get("HOURGLASS_SYSTEM", families.default_system())
    p.add_argument("--system", default=default, help=f"the system under test: {families.spec_help()} (default {default})")


def _scenario_name(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scenario-name", action="append", metavar="NAME",
                   help="only the scenarios of the selected suites (default: conformance and nightly) whose name "
                        "matches (shell glob, repeatable; python -m hourglass list shows them)")


def main(argv: list[str] | None = None) -> int:
    return run_command(build_parser(), argv, "hourglass",
                       on_interrupt="interrupted: the runs record it and check as undecided; every system started was torn down")


if __name__ == "__main__":
    sys.exit(main())
