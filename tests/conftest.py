"""Suite-wide settings: the procedure's bugs raised, long runs on request, the fast tier,
and the real parts (system programs) a test needs, skipped where missing or required by CI.

The run may be spread over processes (pytest-xdist, ``-n``): what a worker finds missing
travels to the controller in its reports, which says it in the run's last line."""

from __future__ import annotations

import os

import pytest

from shoe_controller.procedure.model import ProcedureModel
from tools import real_parts
from tools.real_parts import Part

# A bug in a procedure callback (a misspelt name, a wrong type) must fail the test that
# meets it, not turn into a fault at a simulated table.
ProcedureModel.reraise_bugs = True

#: Long reliability runs (minutes) run only when asked for: SHOE_SOAK=1.
RUN_SOAK = os.environ.get("SHOE_SOAK") == "1"
#: The user property a test's setup report carries when parts it needs are missing.
MISSING_PROPERTY = "real_parts_missing"

#: Fixtures that start a real part: a test using one is marked with that part.
FIXTURE_PARTS = {
    "broker": "mosquitto",
    "postgres": "postgresql",
    "pg_url": "postgresql",
    # The console's tests: a browser, and the view logic's page in it.
    "browser": "chromium",
    "js": "chromium",
}

#: The parts missing here that a selected test needed, and how many tests they kept out.
_kept_out: set[Part] = set()
_tests_kept_out = 0
_missing: dict[Part, bool] = {}

#: Test files whose tests wait on processes, browsers and servers as a whole: the fast
#: tier (``-m "not slow"``) leaves them out, as it leaves out every test needing a part.
SLOW_FILES = frozenset(
    {
        "tests/test_real_parts.py",
        "tests/test_packaging.py",
        "tests/test_readme.py",
    }
)


def needed_parts(item: pytest.Item) -> list[Part]:
    """The parts ``item`` is marked with (``@pytest.mark.needs(...)``, on it, its class
    or its module), in the order of ``real_parts.PARTS``."""
    names = {name for marker in item.iter_markers("needs") for name in marker.args}
    return [part for name, part in real_parts.PARTS.items() if name in names]


def marking_problem(item: pytest.Item) -> str | None:
    """What is wrong with how ``item`` names its parts: a part that does not exist, or a
    fixture starting a part the test is not marked with."""
    named = {name for marker in item.iter_markers("needs") for name in marker.args}
    unknown = sorted(str(name) for name in named if name not in real_parts.PARTS)
    if unknown:
        return (
            f"@pytest.mark.needs({unknown[0]!r}) names no real part; the parts are "
            f"{', '.join(real_parts.PARTS)}"
        )
    for fixture in getattr(item, "fixturenames", ()):
        name = FIXTURE_PARTS.get(fixture)
        if name is not None and name not in named:
            return f"the test uses the {fixture} fixture: mark it @pytest.mark.needs({name!r})"
    return None


def _is_missing(part: Part) -> bool:
    if part not in _missing:
        _missing[part] = part.is_missing()
    return _missing[part]


def is_slow(item: pytest.Item) -> bool:
    """Whether ``item`` belongs outside the fast tier: it drives a real part, its file
    waits on processes as a whole, or it is marked ``slow`` itself."""
    if item.get_closest_marker("needs") is not None:
        return True
    relative = item.nodeid.split("::", 1)[0]
    return relative in SLOW_FILES


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tiers: ``slow`` (in the default run, out of ``-m "not slow"``) given to what
    waits on processes, browsers and servers; ``soak`` (a long reliability run) skipped
    unless SHOE_SOAK=1."""
    skip = pytest.mark.skip(reason="a long reliability run: set SHOE_SOAK=1 to run it")
    for item in items:
        if is_slow(item):
            item.add_marker(pytest.mark.slow)
        if not RUN_SOAK and item.get_closest_marker("soak") is not None:
            item.add_marker(skip)


@pytest.hookimpl(tryfirst=True)
def pytest_fixture_setup(
    fixturedef: pytest.FixtureDef[object], request: pytest.FixtureRequest
) -> None:
    """A fixture starting a part, asked for by name as the test runs (getfixturevalue),
    needs the test's mark too."""
    name = FIXTURE_PARTS.get(fixturedef.argname)
    node = request.node
    if (
        name is not None
        and isinstance(node, pytest.Item)
        and name not in {part.name for part in needed_parts(node)}
    ):
        pytest.fail(
            f"the test uses the {fixturedef.argname} fixture: mark it @pytest.mark.needs({name!r})",
            pytrace=False,
        )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test whose part is missing is skipped, or fails under SHOE_REAL_PARTS=required;
    one that does not name its parts right fails."""
    problem = marking_problem(item)
    if problem is not None:
        pytest.fail(problem, pytrace=False)
    lacking = [part for part in needed_parts(item) if _is_missing(part)]
    if not lacking:
        return
    item.user_properties.append((MISSING_PROPERTY, [part.name for part in lacking]))
    what = ", ".join(str(part) for part in lacking)
    if real_parts.required():
        pytest.fail(
            f"{what} missing ({real_parts.MODE_VARIABLE}=required): {real_parts.apt_line(lacking)}",
            pytrace=False,
        )
    pytest.skip(f"needs {what}, missing here: {real_parts.apt_line(lacking)}")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Counts the tests kept out by a missing part, from the reports of this process or of
    the workers, so the run's last line says it however the run is spread."""
    if report.when != "setup":
        return
    for name, value in report.user_properties:
        if name == MISSING_PROPERTY and isinstance(value, list):
            global _tests_kept_out  # noqa: PLW0603 (one count for the run's last line)
            _kept_out.update(real_parts.PARTS[part] for part in value)
            _tests_kept_out += 1


def missing_parts_line() -> str | None:
    """The run's last line when parts were missing: what, how many tests, how to install."""
    if not _kept_out:
        return None
    parts = [part for part in real_parts.PARTS.values() if part in _kept_out]
    tests = "test" if _tests_kept_out == 1 else "tests"
    fate = f"failed ({real_parts.MODE_VARIABLE}=required)" if real_parts.required() else "skipped"
    return (
        f"real parts missing: {', '.join(str(p) for p in parts)} "
        f"({_tests_kept_out} {tests} {fate}); "
        f"to run every test: {real_parts.apt_line(parts)}"
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return  # a worker: the controller says it
    line = missing_parts_line()
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if line is not None and reporter is not None:
        reporter.write_line(line, yellow=True, bold=True)
