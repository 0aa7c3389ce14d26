"""What every command line of the package shares (``shoe-controller``, ``shoe-diag``,
``shoe-floor``): how a command ends (one line on standard error and a documented exit
code), argument errors in that form, and text made safe for a terminal.

Every error a person can cause is a ShoeControllerError carrying its exit code. Anything
else is a bug: it is logged with its traceback (visible with --debug) and reported in one
line with exit code 1.
"""

from __future__ import annotations

import argparse
import logging
import re
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from shoe_controller.errors import ExitCode, ShoeControllerError

log = logging.getLogger("shoe_controller")

#: C0 controls (ESC included), DEL, C1 controls (CSI 0x9b included), and the Unicode marks
#: that reorder or hide what follows them (bidirectional overrides and isolates).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: str) -> str:
    """``text`` safe to show on a terminal: each control character as a visible escape
    (``\\x1b``, ``\\n``, ``\\u202e``), everything else as it is."""
    return _UNSAFE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


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
