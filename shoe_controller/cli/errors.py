"""How both commands end: one line on standard error and a documented exit code.

Every error a person can cause is a ShoeControllerError carrying its exit code. Anything
else is a bug: it is logged with its traceback (visible with --debug) and reported in one
line with exit code 1.
"""

from __future__ import annotations

from shoe_controller.commandline import ArgumentParser, run_main
from shoe_controller.errors import ExitCode

__all__ = ["EXIT_CODES", "ArgumentParser", "exit_codes_epilog", "run_main"]


#: What each exit code means, for the commands' --help (the installed manual: the wheel
#: carries no docs/ directory).
EXIT_CODES: dict[ExitCode, str] = {
    ExitCode.OK: "done",
    ExitCode.INTERNAL_ERROR: "a bug: run again with --debug and report it",
    ExitCode.USAGE: "an unknown option or a malformed value",
    ExitCode.CONFIG: "the configuration, an address, an option or a path given is wrong",
    ExitCode.DEVICE_NOT_FOUND: "no shoe at the address, or no USB library",
    ExitCode.PERMISSION_DENIED: "this user may not open the shoe (udev rules, group shoe)",
    ExitCode.DEVICE_BUSY: "another process (the service?) holds the shoe",
    ExitCode.LINK: "the shoe did not answer, or the link failed",
    ExitCode.NOT_APPROVED: "the shoe is not approved, or its verification failed",
    ExitCode.JOURNAL: "the journal cannot be used: not one, damaged, or not its key",
    ExitCode.PROCEDURE: "an input the dealing procedure does not accept now",
    ExitCode.CHECK_FAILED: "a check, a self-test step or an installation step failed",
    ExitCode.STORE: "(shoe-floor) the floor's store cannot be opened, read or written",
    ExitCode.INTERRUPTED: "interrupted (Ctrl-C)",
}


def exit_codes_epilog() -> str:
    """The exit codes, one a line, for an ``epilog`` (with RawDescriptionHelpFormatter)."""
    return "exit codes:\n" + "\n".join(
        f"  {int(code):>3}  {meaning}" for code, meaning in EXIT_CODES.items()
    )
