"""shoe-diag as a program: its help, its usage errors, and a quick start."""

from __future__ import annotations

import subprocess
import sys

import pytest

from shoe_controller import __version__
from shoe_controller.errors import ExitCode
from tests.cli.conftest import ROOT, Run, child_env, run_process

pytestmark = pytest.mark.usefixtures("hermetic")

COMMANDS = (
    "ports",
    "info",
    "verify",
    "selftest",
    "counters",
    "monitor",
    "simulate",
    "audit",
    "rules",
    "diagram",
    "check",
    "install",
    "users",
)


def test_help_names_every_command() -> None:
    result = run_process("--help")
    assert result.code == ExitCode.OK
    assert result.out.startswith("usage: shoe-diag ")
    for command in COMMANDS:
        assert f"\n    {command} " in result.out, command
    assert "docs/technicians.md" in result.out


def test_version(run: Run) -> None:
    with pytest.raises(SystemExit) as stopped:
        run("--version")
    assert stopped.value.code == 0


def test_help_imports_only_the_light_modules() -> None:
    """--help stays quick: nothing below the CLI is imported until a command runs."""
    code = (
        "import sys\n"
        "sys.argv = ['shoe-diag', '--help']\n"
        "from shoe_controller.cli.diag import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('shoe_controller.hal', 'shoe_controller.link', 'shoe_controller.journal',\n"
        "         'shoe_controller.procedure', 'shoe_controller.simulator',\n"
        "         'shoe_controller.service', 'serial', 'usb', 'sqlite3', 'transitions',\n"
        "         'firmware_protocol', 'pathlib')\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in heavy or\n"
        "                m.startswith(heavy))\n"
        "print('loaded:', ','.join(loaded))\n"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=child_env() | {"PYTHONPATH": str(ROOT)},
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "loaded: "


@pytest.mark.parametrize(
    "args",
    [
        ["frobnicate"],
        ["info", "--frob"],
        ["monitor", "--count", "0"],
        ["monitor", "--seconds", "soon"],
        ["simulate", "--pty", "--tcp", "9"],
        ["audit"],
    ],
)
def test_usage_errors_are_one_line_and_exit_2(run: Run, args: list[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        run(*args)
    assert stopped.value.code == ExitCode.USAGE


def test_usage_error_message(capsys: pytest.CaptureFixture[str]) -> None:
    from shoe_controller.cli.diag import main

    with pytest.raises(SystemExit):
        main(["monitor", "--count", "none"])
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        "shoe-diag monitor: error: argument --count: 'none' is not a whole number "
        "(see shoe-diag monitor --help)"
    )


def test_options_before_the_command(run: Run) -> None:
    result = run("--json", "counters", "--device", "sim://")
    assert result.code == ExitCode.OK
    assert result.out.startswith("{")


def test_python_dash_m_runs_a_command() -> None:
    result = run_process("counters", "--device", "sim://?serial=PM-1", "--json")
    assert result.code == ExitCode.OK, result.err
    assert '"serial_number":"PM-1"' in result.out
    assert __version__ in run_process("--version").out


# -- docs/technicians.md keeps up with the code ----------------------------------------

TECHNICIANS = ROOT / "docs" / "technicians.md"


def test_the_exit_code_table_is_exit_code() -> None:
    rows = [
        line.split("|")[1:3]
        for line in TECHNICIANS.read_text(encoding="utf-8").splitlines()
        if line.startswith("| ") and line.split("|")[1].strip().isdigit()
    ]
    documented = {int(code): name.strip() for code, name in rows}
    assert documented == {int(code): code.name for code in ExitCode}


def test_every_command_has_a_section_with_a_session() -> None:
    text = TECHNICIANS.read_text(encoding="utf-8")
    for command in COMMANDS:
        names = ("audit verify", "audit export") if command == "audit" else (command,)
        for name in names:
            heading = f"### `shoe-diag {name}`"
            assert heading in text, heading
            section = text.split(heading, 1)[1].split("\n### ", 1)[0]
            assert f"    $ shoe-diag {name}" in section, name
