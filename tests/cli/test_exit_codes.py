"""Every exit code is documented: in the commands' --help (EXIT_CODES) and in the table of
docs/technicians.md, with its name."""

from __future__ import annotations

import re
from pathlib import Path

from shoe_controller.cli.errors import EXIT_CODES, exit_codes_epilog
from shoe_controller.errors import ExitCode

TECHNICIANS = Path(__file__).resolve().parents[2] / "docs" / "technicians.md"


def documented_codes() -> dict[int, str]:
    """{code: name} from the exit codes' table of docs/technicians.md."""
    rows = re.findall(r"^\| (\d+) \| ([A-Z_]+) \|", TECHNICIANS.read_text(encoding="utf-8"), re.M)
    return {int(code): name for code, name in rows}


def test_every_exit_code_has_its_meaning_in_the_help() -> None:
    assert list(EXIT_CODES) == sorted(ExitCode)
    assert all(meaning.strip() for meaning in EXIT_CODES.values())
    epilog = exit_codes_epilog()
    assert "   12  (shoe-floor) the floor's store cannot be opened, read or written" in epilog


def test_every_exit_code_is_in_the_documented_table() -> None:
    assert documented_codes() == {int(code): code.name for code in ExitCode}
