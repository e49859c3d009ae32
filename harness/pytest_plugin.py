"""The pytest plugin: scenarios as tests, run together, checked together.

A suite test names a scenario and asks for its verdict::

    @pytest.mark.parametrize("scenario", CONFORMANCE, ids=lambda s: s.name)
    def test_rule(scenario, hg_verdict):
        assert_conforms(hg_verdict)

At the first ``hg_verdict`` the plugin runs *every* collected scenario of that system as one batch
(shared brokers, concurrency: ``harness.batch``) and checks all runs in one Spark job
(``reports.check.check_runs``); each test then asserts on its own verdict. The session itself is
the library the CLI uses too (``harness.session``): this module holds the hooks and fixtures only. Options pick the system
(``--hg-system``, comma-separated for a matrix), the runtime, the output directory and a baseline
of accepted violations. A test may pin its system with ``@pytest.mark.hg_system("simulated[...]")``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hourglass.harness import families
from hourglass.harness.outdir import run_stamp
from hourglass.harness.session import Session, SessionOptions
from hourglass.reference.contract import ContractError
from hourglass.reports.spark import conf_item

os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")


def pytest_addoption(parser):
    from hourglass.harness.fit import MAX_WAIT_MS

    g = parser.getgroup("hourglass")
    g.addoption("--hg-system", default=os.environ.get("HOURGLASS_SYSTEM", families.default_system()),
                help="system(s) under test, comma-separated: " + families.spec_help())
    g.addoption("--hg-runtime", default=os.environ.get("HOURGLASS_RUNTIME", "auto"), choices=families.runtimes())
    g.addoption("--hg-image", default=os.environ.get("HOURGLASS_IMAGE"), help="an existing broker image (e.g. apache/rocketmq:5.3.3)")
    g.addoption("--hg-namesrv", default=os.environ.get("HOURGLASS_NAMESRV"),
                help="--hg-runtime external: HOST:PORT of the existing cluster's name server")
    g.addoption("--hg-proxy", default=os.environ.get("HOURGLASS_PROXY"),
                help="--hg-runtime external: HOST:PORT of the cluster's 5.x proxy (its gRPC port): its gRPC scenarios run")
    g.addoption("--hg-faults", default=os.environ.get("HOURGLASS_FAULTS"),
                help="--hg-runtime external: TOML file of fault commands (see python -m hourglass run --help)")
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
    g.addoption("--hg-retries", type=int, default=int(os.environ.get("HOURGLASS_RETRIES", "1")),
                help="run a scenario once more, this many times, when its run ends undecided or broken (a host's "
                     "stall, a broker that would not start); a violation is never retried (default 1, docs/ci.md)")
    g.addoption("--hg-flaky", choices=("pass", "fail"), default=os.environ.get("HOURGLASS_FLAKY") or "pass",
                help="a scenario that passed only when run again (flaky: named in the summaries either way): "
                     "pass (default) or fail its test (HOURGLASS_FLAKY; docs/ci.md)")
    g.addoption("--hg-max-wait", type=float, default=float(os.environ.get("HOURGLASS_MAX_WAIT_S", MAX_WAIT_MS / 1000)),
                help="on a cluster that runs another delay table: leave out messages not done within this many "
                     f"seconds on its table (default {MAX_WAIT_MS // 1000})")


def pytest_configure(config):
    for line in (
        "conformance: a rule of the model run as a scenario against the system under test",
        "chaos: a scenario with faults",
        "persistence: a scenario of the persistence suite (the schedule offset's life at a stop)",
        "timer: a scenario of the timer suite (the 5.x timer store's life at a stop)",
        "slow: takes minutes of broker time",
        "realbroker: needs a real RocketMQ broker",
        "container: needs a Docker engine",
        "hg_system(spec): pin the system a scenario test runs against",
        "main: part of the main job (conformance suite + short chaos run)",
    ):
        config.addinivalue_line("markers", line)
    known = {line.split(":")[0].split("(")[0].strip() for line in config.getini("markers")}
    for family in families.families():  # the marks a family puts on tests of its systems
        for mark in set(family.test_marks) - known:
            config.addinivalue_line("markers", f"{mark}: a scenario test on a {family.name} system")
    out = config.getoption("--hg-out") or f"runs/{run_stamp()}"
    config._hourglass = Session(Path(out).resolve(), session_options(config))
    if config.getoption("--hg-retries") < 0:
        raise pytest.UsageError("--hg-retries (HOURGLASS_RETRIES) must be 0 or more")
    if config.getoption("--hg-progress-interval") <= 0:
        raise pytest.UsageError("--hg-progress-interval (HOURGLASS_PROGRESS_INTERVAL_S) must be more than 0 seconds")
    config._hourglass.progress_out = _uncaptured_stderr()
    config._hourglass_junit = JunitNames(config)
    config.pluginmanager.register(config._hourglass_junit, "hourglass-junit-names")


def session_options(config) -> SessionOptions:
    o = config.getoption
    return SessionOptions(o("--hg-runtime"), o("--hg-image"), o("--hg-namesrv"), o("--hg-faults"), o("--hg-max-systems"),
                          o("--hg-max-wait"), o("--hg-baseline"), o("--hg-master"), dict(o("--hg-spark-conf")),
                          o("--hg-progress"), o("--hg-progress-interval"), proxy=o("--hg-proxy"),
                          retries=o("--hg-retries"))


def _register(hs: Session, system: str, scenario) -> None:
    """A scenario that breaks the schema or its cross-checks stops the session before anything runs."""
    try:
        hs.register(system, scenario)
    except ContractError as e:
        raise pytest.UsageError(f"hourglass: {e}") from None


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
    hs: Session = config._hourglass
    only = _suite_systems(config)
    if only:
        from hourglass.harness.catalogue import suite_of

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
            _register(hs, system, scenario)
            config._hourglass_junit.names[item.nodeid] = (system, scenario.name, junit_case(item, system, scenario.name))
            family = families.family_of(system)
            for mark in family.test_marks if family else ():
                item.add_marker(getattr(pytest.mark, mark))


@pytest.fixture
def hg_verdict(request, scenario, hg_system):
    """The checker's verdict (a dict, ``verdict.json``) of ``scenario`` run on ``hg_system``."""
    hs: Session = request.config._hourglass
    if (hg_system, scenario.name) not in hs.verdicts:
        _register(hs, hg_system, scenario)
    verdict = hs.verdict(hg_system, scenario)
    if verdict.get("broken"):  # the harness could not carry the run out: an error (setup), not a failed test
        from hourglass.harness.verdicts import describe

        pytest.fail(f"the run is broken, no verdict on the broker: {verdict['broken'][:300]}\n{describe(verdict)}", pytrace=False)
    flaky_check(verdict, request.node.user_properties, request.config.getoption("--hg-flaky"))
    return verdict


def flaky_check(verdict: dict, properties: list, when_flaky: str) -> None:
    """A scenario that passed only when run again (``reports.verdict.flaky``): named in the test's
    JUnit properties (``hourglass_flaky``: what the attempts before said; a property CI tools read),
    and failed when ``--hg-flaky fail`` asks so."""
    from hourglass.reports.verdict import flaky

    if not flaky(verdict):
        return
    properties.append(("hourglass_flaky", _earlier_words(verdict)))
    if when_flaky == "fail":
        pytest.fail(f"flaky: passed only when run again ({_earlier_words(verdict)}) -> {verdict.get('run_dir')}", pytrace=False)


def _earlier_words(verdict: dict) -> str:
    """The attempts before a scenario's last, in words: each one's status and why."""
    return "; ".join(f"{e['status']}: {str(e.get('why'))[:200]}" for e in verdict.get("earlier", ()))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A scenario's failed verdict reads as its few lines (the failed invariants, their first
    examples with t+ times, the report's path), not as pages of the harness's source."""
    from hourglass.harness.verdicts import VerdictFailure

    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and report.failed and isinstance(call.excinfo.value, VerdictFailure):
        report.longrepr = str(call.excinfo.value)


def junit_case(item, system: str, scenario_name: str) -> tuple[str, str]:
    """(classname, name) of a scenario test in ``--junitxml``: ``suite`` and ``scenario[system]``
    (read together: ``suite.scenario[system]``; the system as :func:`reports.junit.system_label`
    says it, no dot in the classname), the same every run so CI keeps the history. The suite is
    the catalogue's, else the test module's name without ``test_``."""
    from hourglass.harness.catalogue import suite_of
    from hourglass.reports.junit import system_label

    suite = suite_of(scenario_name) or item.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
    return suite, f"{scenario_name}[{system_label(system)}]"


class JunitNames:
    """Registered per session: before junitxml records a scenario test's report, the stable names,
    and — at teardown, just before the case is written — the run's own duration instead of the
    phases' (the first test's setup runs the whole batch). junitxml adds the teardown's own
    duration on top: we leave room for it."""

    def __init__(self, config):
        self.config = config
        self.names: dict[str, tuple[str, str, tuple[str, str]]] = {}  # nodeid -> system, scenario, (classname, name)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report):
        from _pytest.junitxml import xml_key

        hs = getattr(self.config, "_hourglass", None)
        xml = self.config.stash.get(xml_key, None)
        if hs is None or xml is None or report.nodeid not in self.names:
            return
        system, name, (classname, case) = self.names[report.nodeid]
        reporter = xml.node_reporter(report)
        reporter.add_attribute("classname", classname)
        reporter.add_attribute("name", case)
        if report.when == "teardown":
            reporter.duration = max(0.0, hs.run_seconds(system, name) - float(getattr(report, "duration", 0.0)))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    from hourglass.harness.summary import batch_seconds

    hs: Session = getattr(config, "_hourglass", None)
    if not hs or not hs.batches:
        return
    tr = terminalreporter
    tr.section("hourglass")
    for b in hs.batches:
        tr.write_line(f"{b['system']}: {b['scenarios']} scenarios in {batch_seconds(b['wall_s'], b['check_s'])} -> {b['dir']}/index.html")
        for name in b.get("retried", ()):
            v = hs.verdicts[(b["system"], name)]
            what = "FLAKY, passed only when run again" if name in b.get("flaky", ()) else "run again"
            tr.write_line(f"  {name}: {what} ({_earlier_words(v)}) -> {v.get('run_dir')}")
    flaky_n = sum(len(b.get("flaky", ())) for b in hs.batches)
    if flaky_n:
        tr.write_line(f"hourglass: {flaky_n} flaky scenario(s): passed only when run again (--hg-flaky fail makes them fail)",
                      yellow=True, bold=True)
