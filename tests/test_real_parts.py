"""The README's test command on a machine without the real parts: the tests that need one
are skipped, the run passes and ends with one line naming what is missing and the
apt-get line that brings it; under SHOE_REAL_PARTS=required the same run fails.

Such a machine is built here: every directory of PATH is shadowed by one holding every
program but the parts', and SHOE_PART_DIRS (where the fixtures also look: the sbin
directories, PostgreSQL's) is empty."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tools import real_parts

ROOT = Path(__file__).resolve().parents[1]
#: One test file or more per part, and around them tests that run programs and commands
#: of their own (the service, the box's install into an image, the udev lint).
SUBSET = (
    "tests/api/test_console_browser.py",  # chromium
    "tests/api/test_console_view.py",  # chromium
    "tests/floor/test_forwarder.py",  # mosquitto
    "tests/floor/test_store.py",  # postgresql, and SQLite beside it
    "tests/floor/test_collector.py",  # mosquitto, postgresql as a parameter
    "tests/box/test_udev.py",  # udev
    "tests/box/test_systemd.py",  # systemd
    "tests/box/test_install.py",  # systemd
    "tests/box/test_syscalls.py",  # strace and systemd
    "tests/cli/test_run_api.py",  # openssl
    "tests/cli/test_diag_box.py",
    "tests/cli/test_controller_over_pty.py",
    "tests/test_packaging.py",
    "tests/benchmarks/test_smoke.py::test_quick_run_prints_one_result_line[floor]",
)
EVERY_PART = sorted(real_parts.PARTS)
#: What the run says when every part is missing, and the one line that installs them (the
#: README's), written out here rather than taken from the code under test.
EVERY_PART_SAID = (
    "chromium, mosquitto, postgresql (initdb, postgres), udev (udevadm), systemd "
    "(systemd-analyze, systemctl, systemd-sysusers), strace, openssl"
)
PACKAGES = ["chromium", "mosquitto", "openssl", "postgresql", "strace", "systemd", "udev"]
APT_LINE = f"apt-get install {' '.join(PACKAGES)}"


def shadow_path(under: Path) -> str:
    """A PATH with every program of this one but the real parts'."""
    hidden = {program for part in real_parts.PARTS.values() for program in part.programs}
    shadows: list[str] = []
    for index, directory in enumerate(os.environ.get("PATH", "").split(os.pathsep)):
        if not directory or not Path(directory).is_dir():
            continue
        shadow = under / f"{index:02d}"
        shadow.mkdir(parents=True)
        for program in Path(directory).iterdir():
            if program.name not in hidden and os.access(program, os.X_OK):
                (shadow / program.name).symlink_to(program)
        shadows.append(str(shadow))
    return os.pathsep.join(shadows)


@pytest.fixture(scope="module")
def bare_machine(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of a machine without any real part."""
    env = {k: v for k, v in os.environ.items() if k != real_parts.MODE_VARIABLE}
    env["PATH"] = shadow_path(tmp_path_factory.mktemp("bare-path"))
    env[real_parts.DIRS_VARIABLE] = ""
    return env


def run_tests(env: dict[str, str], basetemp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The README's ``python -m pytest -q`` on ``args``, in ``env``."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--basetemp={basetemp}",
            *args,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )


def test_the_bare_machine_lacks_every_part(bare_machine: dict[str, str]) -> None:
    probe = subprocess.run(
        [sys.executable, "tools/real_parts.py", "--packages"],
        cwd=ROOT,
        env=bare_machine,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert probe.stdout.split() == PACKAGES


@pytest.mark.parametrize("spread", [(), ("-n", "2")], ids=["one-process", "two-workers"])
def test_without_the_parts_the_run_passes_and_ends_saying_what_to_install(
    bare_machine: dict[str, str], tmp_path: Path, spread: tuple[str, ...]
) -> None:
    """The last line is the run's, whether one process ran the tests or workers did (the
    README's command spreads them: what a worker finds missing reaches the controller)."""
    done = run_tests(bare_machine, tmp_path, *spread, *SUBSET)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    lines = output.strip().splitlines()
    assert " passed" in lines[-2] and " skipped" in lines[-2], lines[-2]
    assert " failed" not in lines[-2] and " error" not in lines[-2], lines[-2]
    last = lines[-1]
    assert last.startswith(f"real parts missing: {EVERY_PART_SAID} ("), last
    assert " tests skipped); " in last
    assert last.endswith(f"to run every test: {APT_LINE}"), last
    # Only the summary says it once; no test failed for want of a part.
    assert output.count("real parts missing") == 1


def test_with_the_parts_required_the_same_run_fails(
    bare_machine: dict[str, str], tmp_path: Path
) -> None:
    env = {**bare_machine, real_parts.MODE_VARIABLE: "required"}
    done = run_tests(env, tmp_path, "tests/box/test_systemd.py", "tests/floor/test_store.py")
    output = done.stdout + done.stderr
    assert done.returncode == 1, output[-3000:]
    said = "systemd (systemd-analyze, systemctl, systemd-sysusers) missing"
    assert f"{said} (SHOE_REAL_PARTS=required): apt-get install systemd" in output
    last = output.strip().splitlines()[-1]
    assert "tests failed (SHOE_REAL_PARTS=required)" in last, last
    assert last.endswith("apt-get install postgresql systemd"), last


def test_the_readme_gives_the_one_line_that_installs_every_part() -> None:
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert f"`sudo {APT_LINE}`" in readme
    assert real_parts.apt_line(real_parts.PARTS.values()) == APT_LINE


@pytest.mark.needs(*EVERY_PART)
def test_here_every_part_is_found() -> None:
    # This machine has them all: the run above, without them, is the only one that skips.
    assert real_parts.missing() == []


# --- the lookup itself ---------------------------------------------------------------------


def test_a_program_is_looked_for_on_path_then_in_the_part_directories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "bin", tmp_path / "lib" / "15" / "bin"
    newer = tmp_path / "lib" / "16" / "bin"
    for directory in (first, second, newer):
        directory.mkdir(parents=True)
    for path in (first / "tool", second / "initdb", newer / "initdb"):
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    monkeypatch.setenv("PATH", str(first))
    monkeypatch.setenv(real_parts.DIRS_VARIABLE, str(tmp_path / "lib" / "*" / "bin"))
    assert real_parts.find_program("tool") == first / "tool"
    # Versions side by side: the newest.
    assert real_parts.find_program("initdb") == newer / "initdb"
    monkeypatch.setenv(real_parts.DIRS_VARIABLE, "")
    assert real_parts.find_program("initdb") is None
    with pytest.raises(
        real_parts.MissingPart, match=r"^initdb is not installed: apt-get install postgresql$"
    ):
        real_parts.program("initdb")


def test_the_apt_line_names_each_package_once() -> None:
    systemd, chromium = real_parts.PARTS["systemd"], real_parts.PARTS["chromium"]
    assert real_parts.apt_line([systemd, chromium, systemd]) == "apt-get install chromium systemd"


def test_the_readme_says_the_line_that_installs_every_part() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"`sudo {APT_LINE}`" in readme


# --- how a test names its parts ------------------------------------------------------------

MARKINGS = """
import pytest


@pytest.fixture
def broker():
    return "a broker"


def test_unmarked(broker):
    pass


@pytest.mark.needs("mosquitto")
def test_marked(broker):
    pass


@pytest.mark.needs("mosquito")
def test_misspelt():
    pass


def test_asks_by_name(request):
    request.getfixturevalue("broker")
"""


def test_a_test_that_does_not_name_its_parts_right_fails(tmp_path: Path) -> None:
    (tmp_path / "test_markings.py").write_text(MARKINGS, encoding="utf-8")
    done = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider"),
            *("-rA", "-W", "ignore::pytest.PytestUnknownMarkWarning", str(tmp_path)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    out = done.stdout
    assert done.returncode == 1, out
    # Marked right, it runs where Mosquitto is, and is skipped where it is not.
    marked_ran = re.search(r"PASSED \S*test_markings\.py::test_marked\n", out)
    assert marked_ran or "needs mosquitto, missing here" in out, out
    assert not re.search(r"(ERROR|FAILED) \S*test_markings\.py::test_marked\b", out), out
    unmarked = "the test uses the broker fixture: mark it @pytest.mark.needs('mosquitto')"
    for test, says in (
        ("test_unmarked", unmarked),
        ("test_misspelt", "@pytest.mark.needs('mosquito') names no real part"),
        ("test_asks_by_name", unmarked),
    ):
        # A wide terminal adds " - <reason>" to the summary line.
        assert re.search(rf"(ERROR|FAILED) \S*test_markings\.py::{test}( - .*)?\n", out), out
        assert re.search(rf"{test} _+\n{re.escape(says)}", out), out
