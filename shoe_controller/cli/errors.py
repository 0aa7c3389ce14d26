"""How both commands end: one line on standard error and a documented exit code.

Every error a person can cause is a ShoeControllerError carrying its exit code. Anything
else is a bug: it is logged with its traceback (visible with --debug) and reported in one
line with exit code 1.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from shoe_controller.cli.output import printable
from shoe_controller.errors import ExitCode, ShoeControllerError

log = logging.getLogger("shoe_controller")


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


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit code 2 (ExitCode.USAGE)."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {printable(message)} (see {self.prog} --help)\n")
        raise SystemExit(ExitCode.USAGE)


def run_main(prog: str, main: Callable[[Sequence[str]], int], argv: Sequence[str]) -> int:
    debug = "--debug" in argv
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.ERROR,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        return main(argv)
    except ShoeControllerError as exc:
        sys.stderr.write(f"{prog}: error: {printable(str(exc))}\n")
        return int(exc.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write(f"{prog}: interrupted\n")
        return int(ExitCode.INTERRUPTED)
    except BrokenPipeError:
        # The reader of our output went away (e.g. piped into head): not an error of ours.
        return int(ExitCode.OK)
    except Exception as exc:
        log.debug("internal error", exc_info=True)
        sys.stderr.write(
            f"{prog}: internal error: {type(exc).__name__}: {printable(str(exc))} "
            "(this is a bug; run again with --debug for details and report it)\n"
        )
        return int(ExitCode.INTERNAL_ERROR)
