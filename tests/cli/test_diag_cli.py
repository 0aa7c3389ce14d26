"""shoe-diag as a program: its help, its usage errors, and a quick start."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator
from types import ModuleType

import pytest

from shoe_controller import __version__
from shoe_controller.cli import controller, diag
from shoe_controller.cli.errors import EXIT_CODES
from shoe_controller.errors import ExitCode
from shoe_controller.simulator.faults import CardFault
from shoe_controller.simulator.options import OPTION_NAMES
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
    # The installed manual: every exit code, and no pointer to docs the wheel lacks.
    assert "exit codes:\n    0  done\n" in result.out
    assert "  130  interrupted (Ctrl-C)" in result.out


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


def _every_help(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str]]:
    yield parser.prog, parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _every_help(sub)


@pytest.mark.parametrize("module", [diag, controller])
def test_no_help_points_at_docs_the_wheel_does_not_ship(module: ModuleType) -> None:
    pages = dict(_every_help(module.build_parser()))
    assert len(pages) > 2
    for prog, text in pages.items():
        assert "docs/" not in text and ".md" not in text, prog
    top = pages[module.PROG]
    for code, meaning in EXIT_CODES.items():
        assert f"{int(code):>3}  {meaning}" in top


def test_simulate_help_lists_every_simulator_option() -> None:
    text = " ".join(dict(_every_help(diag.build_parser()))["shoe-diag simulate"].split())
    for name in OPTION_NAMES:
        if name != "serial":  # the short alias of serial_number
            assert f"--{name.replace('_', '-')} " in text, name
    for fault in [*CardFault, "noise", "drop", "dup", "split"]:
        assert str(fault) in text
