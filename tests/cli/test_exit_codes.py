"""Every exit code has its meaning in the commands' --help (the installed manual); the
table of docs/technicians.md is checked by test_diag_cli.py."""

from __future__ import annotations

from shoe_controller.cli.errors import EXIT_CODES, exit_codes_epilog
from shoe_controller.errors import ExitCode


def test_every_exit_code_has_its_meaning_in_the_help() -> None:
    assert list(EXIT_CODES) == sorted(ExitCode)
    assert all(meaning.strip() for meaning in EXIT_CODES.values())
    epilog = exit_codes_epilog()
    assert "   12  (shoe-floor) the floor's store cannot be opened, read or written" in epilog
