"""The pytest plugin: scenarios as tests, run together, checked together.

A suite test names a scenario and asks for its verdict::

    @pytest.mark.parametrize("scenario", CONFORMANCE, ids=lambda s: s.name)
    def test_rule(scenario, hg_verdict):
        assert_conforms(hg_verdict)

At the first ``hg_verdict`` the plugin runs *every* collected scenario of that system as one batch
(shared brokers, concurrency: ``harness.batch``) and checks all runs in one Spark job
(``reports.check.check_runs``); each test then asserts on its own verdict. Options pick the system
(``--hg-system``, comma-separated for a matrix), the runtime, the output directory and a baseline
of accepted violations. A test may pin its system with ``@pytest.mark.hg_system("simulated[...]")``.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from reference.rundir import REPORT_HTML, run_json
from harness.outdir import run_stamp
from reports.spark import conf_item

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

DEFAULT_SYSTEM = "rocketmq:latest"


def pytest_addoption(parser):
    from harness.fit import MAX_WAIT_MS

    g = parser.getgroup("hourglass")
    g.addoption("--hg-system", default=os.environ.get("HOURGLASS_SYSTEM", DEFAULT_SYSTEM),
                help="system(s) under test, comma-separated: rocketmq:<version>, dist:/path, jars:/path, cmd:FILE, simulated[defects]")
    g.addoption("--hg-runtime", default=os.environ.get("HOURGLASS_RUNTIME", "auto"), choices=("auto", "container", "process", "external"))
    g.addoption("--hg-image", default=os.environ.get("HOURGLASS_IMAGE"), help="an existing broker image (e.g. apache/rocketmq:5.3.3)")
    g.addoption("--hg-namesrv", default=os.environ.get("HOURGLASS_NAMESRV"),
                help="--hg-runtime external: HOST:PORT of the existing cluster's name server")
    g.addoption("--hg-faults", default=os.environ.get("HOURGLASS_FAULTS"),
                help="--hg-runtime external: TOML file of fault commands (see python -m harness run --help)")
    g.addoption("--hg-out", default=os.environ.get("HOURGLASS_OUT"), help="where run directories and reports go (default: runs/<timestamp>)")
    g.addoption("--hg-baseline", default=os.environ.get("HOURGLASS_BASELINE"), help="file of accepted violations")
    g.addoption("--hg-max-systems", type=int, default=int(os.environ.get("HOURGLASS_MAX_SYSTEMS", "2")),
                help="real systems running at once (default 2 on a 2-core machine)")
    g.addoption("--hg-master", default=os.environ.get("HOURGLASS_SPARK_MASTER"), help="Spark master for the checker")
    g.addoption("--hg-spark-conf", action="append", type=conf_item, default=[], metavar="KEY=VALUE",
                help="a Spark property for the checker's session (repeatable)")
    g.addoption("--hg-progress", default=os.environ.get("HOURGLASS_PROGRESS", "auto"), choices=("auto", "always", "off"),
                help="progress lines on the real stderr while a batch runs, not captured (auto: real systems only; "
                     "always: virtual-time systems too)")
    g.addoption("--hg-progress-interval", type=float, default=float(os.environ.get("HOURGLASS_PROGRESS_INTERVAL_S", "5")),
                help="seconds between progress lines (default 5)")
    g.addoption("--hg-suite-systems", action="append", default=[], metavar="SUITE=SYSTEM[,SYSTEM...]",
                help="run SUITE's scenarios (conformance, chaos, persistence) on these of the --hg-system systems "
                     "only; the others' are deselected (repeatable; CI's hour: tox -e tests)")
    g.addoption("--hg-max-wait", type=float, default=float(os.environ.get("HOURGLASS_MAX_WAIT_S", MAX_WAIT_MS / 1000)),
                help="on a cluster that runs another delay table: leave out messages not done within this many "
                     f"seconds on its table (default {MAX_WAIT_MS // 1000})")


def pytest_configure(config):
    for line in (
        "conformance: a rule of the model run as a scenario against the system under test",
        "chaos: a scenario with faults",
        "persistence: a scenario of the persistence suite (the schedule offset's life at a stop)",
        "slow: takes minutes of broker time",
        "realbroker: needs a real RocketMQ broker",
        "container: needs a Docker engine",
        "hg_system(spec): pin the system a scenario test runs against",
        "main: part of the main job (conformance suite + short chaos run)",
    ):
        config.addinivalue_line("markers", line)
    out = config.getoption("--hg-out") or f"runs/{run_stamp()}"
    config._hourglass = HgSession(config, Path(out).resolve())
    if config.getoption("--hg-progress-interval") <= 0:
        raise pytest.UsageError("--hg-progress-interval (HOURGLASS_PROGRESS_INTERVAL_S) must be more than 0 seconds")
    config._hourglass.progress_out = _uncaptured_stderr()
    config.pluginmanager.register(JunitNames(config), "hourglass-junit-names")


def _uncaptured_stderr():
    """A duplicate of the real stderr, taken at ``pytest_configure`` while pytest's capture is
    suspended: a batch runs inside a fixture, where fd 2 (and ``sys.__stderr__`` with it) is
    captured until the test ends — progress written here reaches the CI log as it happens."""
    try:
        return open(os.dup(2), "w", buffering=1, encoding="utf-8", errors="replace", closefd=True)
    except OSError:
        return None


def pytest_unconfigure(config):
    hs = getattr(config, "_hourglass", None)
    out = getattr(hs, "progress_out", None)
    if out is not None:
        hs.progress_out = None
        out.close()


def _systems(config) -> list[str]:
    return [s.strip() for s in config.getoption("--hg-system").split(",") if s.strip()]


def pytest_generate_tests(metafunc):
    if "hg_system" in metafunc.fixturenames and metafunc.definition.get_closest_marker("hg_system") is None:
        metafunc.parametrize("hg_system", _systems(metafunc.config))


@pytest.fixture
def hg_system(request):
    """The system spec a scenario test runs against: its ``hg_system`` marker, else ``--hg-system``."""
    m = request.node.get_closest_marker("hg_system")
    return m.args[0] if m else getattr(request, "param", _systems(request.config)[0])


def _item_system(item) -> str | None:
    m = item.get_closest_marker("hg_system")
    if m:
        return m.args[0]
    cs = getattr(item, "callspec", None)
    return cs.params.get("hg_system") if cs else None


def _suite_systems(config) -> dict[str, set[str]]:
    """``--hg-suite-systems``: suite -> the systems it runs on (a suite not named: every system)."""
    out: dict[str, set[str]] = {}
    for entry in config.getoption("--hg-suite-systems"):
        suite, sep, systems = entry.partition("=")
        picked = {s.strip() for s in systems.split(",") if s.strip()}
        if not sep or not suite.strip() or not picked:
            raise pytest.UsageError(f"--hg-suite-systems: expected SUITE=SYSTEM[,SYSTEM...], found {entry!r}")
        unknown = picked - set(_systems(config))
        if unknown:
            raise pytest.UsageError(f"--hg-suite-systems {entry}: {', '.join(sorted(unknown))} not among --hg-system "
                                    f"{config.getoption('--hg-system')}")
        out.setdefault(suite.strip(), set()).update(picked)
    return out


@pytest.hookimpl(trylast=True)  # after -m/-k deselection: only selected scenarios run
def pytest_collection_modifyitems(session, config, items):
    hs: HgSession = config._hourglass
    only = _suite_systems(config)
    if only:
        from harness.catalogue import suite_of

        keep, dropped = [], []
        for item in items:
            cs = getattr(item, "callspec", None)
            scenario = cs.params.get("scenario") if cs and "hg_verdict" in getattr(item, "fixturenames", ()) else None
            suite = suite_of(scenario.name) if scenario is not None else None
            system = _item_system(item) or _systems(config)[0]
            (dropped if suite in only and system not in only[suite] else keep).append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = keep
    for item in items:
        if "hg_verdict" not in getattr(item, "fixturenames", ()):
            continue
        cs = getattr(item, "callspec", None)
        scenario = cs.params.get("scenario") if cs else None
        system = _item_system(item) or _systems(config)[0]
        if scenario is not None:
            hs.register(system, scenario)
            hs.junit_names[item.nodeid] = (system, scenario.name, junit_case(item, system, scenario.name))
            if system.startswith(("rocketmq:", "dist:", "jars:", "cmd:")):
                item.add_marker(pytest.mark.realbroker)


@pytest.fixture
def hg_verdict(request, scenario, hg_system):
    """The checker's verdict (a dict, ``verdict.json``) of ``scenario`` run on ``hg_system``."""
    return request.config._hourglass.verdict(hg_system, scenario)


class HgSession:
    """All scenarios of a pytest session, run and checked in batches per system."""

    def __init__(self, config, out_dir: Path):
        self.config = config
        self.out_dir = out_dir
        self.pending: dict[str, dict[str, object]] = {}  # system -> scenario name -> scenario
        self.verdicts: dict[tuple[str, str], dict] = {}
        self.batches: list[dict] = []
        self.progress_out = None  # the real stderr, duplicated before capture (pytest_configure)
        self.junit_names: dict[str, tuple[str, str, tuple[str, str]]] = {}  # nodeid -> system, scenario, (classname, name)

    def register(self, system: str, scenario) -> None:
        """Queue ``scenario`` for ``system``'s batch; a scenario that breaks the schema or its
        cross-checks stops the session before anything runs, naming the scenario and field."""
        from harness.scenario import validate_scenario
        from reference.contract import ContractError

        try:
            validate_scenario(scenario)
        except ContractError as e:
            raise pytest.UsageError(f"hourglass: {e}") from None
        self.pending.setdefault(system, {})[scenario.name] = scenario

    def verdict(self, system: str, scenario) -> dict:
        if (system, scenario.name) not in self.verdicts:
            self.register(system, scenario)
            self._run(system)
        return self.verdicts[(system, scenario.name)]

    def run_seconds(self, system: str, scenario_name: str) -> float:
        """The run's own duration (run.json ``started_ms`` to ``ended_ms``), 0 without a run."""
        from adapters.rundir import read_run_json
        from reports.junit import run_seconds

        run_dir = self.verdicts.get((system, scenario_name), {}).get("run_dir")
        try:
            return run_seconds(read_run_json(Path(run_dir))) if run_dir else 0.0
        except (OSError, ValueError):
            return 0.0

    def verdict_now(self, system: str, scenario) -> dict:
        """Run one scenario now, alone, under a fresh name (hypothesis examples, generated on the fly)."""
        from dataclasses import replace

        self._n = getattr(self, "_n", 0) + 1
        named = replace(scenario, name=f"{scenario.name}-{self._n:04d}")
        self.pending.setdefault(system, {})
        saved, self.pending[system] = self.pending[system], {named.name: named}
        try:
            self._run(system, record=False)
        finally:
            self.pending[system] = saved
        return self.verdicts.pop((system, named.name))

    def _run(self, system: str, record: bool = True) -> None:
        from harness.batch import BatchOptions, run_batch
        from harness.outdir import lock_out
        from harness.systems import SystemSpec

        scenarios = list(self.pending.pop(system, {}).values())
        if not scenarios:
            return
        c = self.config
        spec = SystemSpec(system, c.getoption("--hg-runtime"), c.getoption("--hg-image"), c.getoption("--hg-namesrv"),
                          c.getoption("--hg-faults"))
        sys_dir = self.out_dir / _dirname(system)
        sys_dir.mkdir(parents=True, exist_ok=True)
        lock_out(self.out_dir)
        started = time.monotonic()
        mode = c.getoption("--hg-progress")
        results, errors = run_batch(scenarios, BatchOptions(
            spec, sys_dir, c.getoption("--hg-max-systems"), progress=mode != "off", progress_interval_s=c.getoption("--hg-progress-interval"),
            progress_out=self.progress_out, progress_virtual=mode == "always",
            max_wait_ms=int(c.getoption("--hg-max-wait") * 1000)))
        wall_s = time.monotonic() - started
        by_name = batch_verdicts(scenarios, results, errors, c.getoption("--hg-baseline"), c.getoption("--hg-master"),
                                 dict(c.getoption("--hg-spark-conf")))
        check_s = time.monotonic() - started - wall_s
        for sc in scenarios:
            self.verdicts[(system, sc.name)] = by_name[sc.name]
        if not record:
            return
        self.batches.append({"system": system, "dir": str(sys_dir), "wall_s": round(wall_s, 1), "check_s": round(check_s, 1),
                             "scenarios": len(scenarios)})
        write_summary(sys_dir, system, [self.verdicts[(system, s.name)] for s in scenarios], wall_s, scenarios, check_s)


def junit_case(item, system: str, scenario_name: str) -> tuple[str, str]:
    """(classname, name) of a scenario test in ``--junitxml``: ``suite`` and ``scenario[system]``
    (read together: ``suite.scenario[system]``), the same every run so CI keeps the history. The
    suite is the catalogue's, else the test module's name without ``test_``."""
    from harness.catalogue import suite_of

    suite = suite_of(scenario_name) or item.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
    return suite, f"{scenario_name}[{system}]"


class JunitNames:
    """Registered per session: before junitxml records a scenario test's report, the stable names,
    and — at teardown, just before the case is written — the run's own duration instead of the
    phases' (the first test's setup runs the whole batch). junitxml adds the teardown's own
    duration on top: we leave room for it."""

    def __init__(self, config):
        self.config = config

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report):
        from _pytest.junitxml import xml_key

        hs = getattr(self.config, "_hourglass", None)
        xml = self.config.stash.get(xml_key, None)
        if hs is None or xml is None or report.nodeid not in hs.junit_names:
            return
        system, name, (classname, case) = hs.junit_names[report.nodeid]
        reporter = xml.node_reporter(report)
        reporter.add_attribute("classname", classname)
        reporter.add_attribute("name", case)
        if report.when == "teardown":
            reporter.duration = max(0.0, hs.run_seconds(system, name) - float(getattr(report, "duration", 0.0)))


def _dirname(system: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in system)


def batch_verdicts(scenarios, results, errors: dict[str, str], baseline, master: str | None,
                   spark_conf: dict[str, str] | None = None) -> dict[str, dict]:
    """A verdict for every scenario of a batch, by name, from one checker job over all its runs:
    the checker's verdict, marked broken where the harness could not carry the run out; a
    scenario the system cannot run (``skipped``) gets no verdict on the broker."""
    from reports.check import check_runs
    from reports.verdict import mark_broken

    by_result = {r.scenario.name: r for r in results}
    runs = [r for r in results if not r.skipped and run_json(r.run_dir).exists()]
    checked = check_runs([r.run_dir for r in runs], out_dir=None, master=master, baseline=baseline,
                         spark_conf=spark_conf) if runs else []
    by_id = {v["run_id"]: v for v in checked}
    out: dict[str, dict] = {}
    for sc in scenarios:
        r = by_result.get(sc.name)
        if r is not None and r.skipped:
            out[sc.name] = {"run_id": r.run_id, "scenario": sc.name, "skipped": r.skipped, "passed": None, "invariants": {}}
            continue
        v = dict(by_id.get(r.run_id) if r is not None and r.run_id in by_id else
                 {"run_id": r.run_id if r is not None else sc.name, "passed": None, "invariants": {}})
        v["scenario"] = sc.name
        if r is not None and run_json(r.run_dir).exists():
            v["run_dir"] = str(r.run_dir)
            v["report"] = str(Path(r.run_dir) / REPORT_HTML)
            if not r.drained:
                v.setdefault("pending", list(r.pending[:20]))
        reason = errors.get(sc.name) or (r.error if r is not None else None)
        if reason:  # the run could not be carried out: broken (an observed violation still stands)
            v = mark_broken(v, reason)
        elif r is None or r.run_id not in by_id:
            v = mark_broken(v, "the harness produced no run directory the checker could judge")
        out[sc.name] = v
    return out


def write_summary(sys_dir: Path, system: str, verdicts: list[dict], wall_s: float, scenarios, check_s: float | None = None) -> None:
    """``wall_s``: the batch's runs; ``check_s``: their check (None: not measured)."""
    from harness.summary import write_index, write_markdown

    longest_wait_s = max((expected_wait_s(s) for s in scenarios), default=0)
    sys_dir.mkdir(parents=True, exist_ok=True)
    (sys_dir / "summary.json").write_text(json.dumps({
        "system": system, "wall_s": round(wall_s, 1), "check_s": None if check_s is None else round(check_s, 1),
        "longest_scenario_wait_s": round(longest_wait_s, 1),
        "ratio": round(wall_s / longest_wait_s, 2) if longest_wait_s else None,
        "verdicts": verdicts,
    }, indent=1, default=str))
    write_index(sys_dir, system, verdicts, wall_s, longest_wait_s)
    write_markdown(sys_dir, system, verdicts, wall_s, check_s)


def expected_wait_s(scenario) -> float:
    from harness.summary import scenario_wait_ms

    return scenario_wait_ms(scenario) / 1000


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    from harness.summary import batch_seconds

    hs: HgSession = getattr(config, "_hourglass", None)
    if not hs or not hs.batches:
        return
    tr = terminalreporter
    tr.section("hourglass")
    for b in hs.batches:
        tr.write_line(f"{b['system']}: {b['scenarios']} scenarios in {batch_seconds(b['wall_s'], b['check_s'])} -> {b['dir']}/index.html")
