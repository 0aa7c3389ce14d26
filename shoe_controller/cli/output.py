"""Terminal output shared by both commands: JSON lines, colour, tables and a progress bar.

Colour only on a terminal and never with NO_COLOR set to a non-empty value
(https://no-color.org); a progress bar only on a terminal, cleared once done. ``--json``
output is one compact object per line, flushed, so that a consumer reading a pipe sees each
line as it happens.

Text a shoe sent (its serial number, model, fault text) or a file held reaches a person's
terminal only through :func:`printable`: every human line written here is escaped, so that
no byte from outside can move the cursor, clear the screen or forge a status line. Colour
is added after escaping, so our own escape codes are the only ones that reach the terminal.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple, TextIO

from shoe_controller.commandline import printable

__all__ = ["Output", "Styled", "color_enabled", "printable"]

_COLORS = {"red": "31", "green": "32", "yellow": "33", "blue": "34", "bold": "1", "dim": "2"}

#: What JSON text must not carry raw to a terminal; JSON's own escapes keep the value exact.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def color_enabled(stream: TextIO, choice: str = "auto") -> bool:
    # no-color.org: NO_COLOR counts only when set to a non-empty value.
    if choice == "never" or os.environ.get("NO_COLOR"):
        return False
    if choice == "always":
        return True
    return stream.isatty()


class Styled(NamedTuple):
    """A piece of a line with its own colour, e.g. ``Styled("FAIL", ("red", "bold"))``."""

    text: str
    styles: tuple[str, ...] = ()


Part = str | Styled


class Output:
    def __init__(
        self,
        json_mode: bool = False,
        color: str = "auto",
        stream: TextIO | None = None,
        err: TextIO | None = None,
    ) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.err = err if err is not None else sys.stderr
        self.json_mode = json_mode
        self.color = color_enabled(self.stream, color) and not json_mode
        self.interactive = self.stream.isatty() and not json_mode
        self._progress_shown = False

    def _paint(self, text: str, styles: Sequence[str]) -> str:
        if not self.color or not styles:
            return text
        codes = ";".join(_COLORS[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"

    def line(self, text: str = "", *styles: str) -> None:
        """Write one line, escaped (:func:`printable`), painted with ``styles``."""
        self.parts(Styled(text, styles))

    def parts(self, *parts: Part) -> None:
        """Write one line made of ``parts``, each escaped and then painted with its styles."""
        self._end_progress()
        text = "".join(
            self._paint(printable(part.text), part.styles)
            if isinstance(part, Styled)
            else printable(part)
            for part in parts
        )
        self.stream.write(text + "\n")
        self.stream.flush()

    def text(self, block: str) -> None:
        """Write several lines (a diagram, a matrix), each escaped."""
        for row in block.splitlines():
            self.line(row)

    def json(self, obj: dict[str, Any]) -> None:
        text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
        # json.dumps leaves DEL, C1 and a few Unicode marks raw; as \\u escapes they decode to
        # the same value and cannot act on a terminal the output is shown on.
        self.stream.write(_JSON_UNSAFE.sub(_json_escape, text) + "\n")
        self.stream.flush()

    def warn(self, text: str) -> None:
        self._end_progress()
        self.err.write(printable(text) + "\n")
        self.err.flush()

    def progress(self, done: int, total: int, label: str = "") -> None:
        """Draw a progress bar in place; nothing when not on a terminal."""
        if not self.interactive or total <= 0:
            return
        width = 30
        filled = min(width, done * width // total)
        bar = "#" * filled + "." * (width - filled)
        self.stream.write(f"\r  [{bar}] {done:>3}/{total} {printable(label)}\x1b[K")
        self.stream.flush()
        self._progress_shown = True

    def progress_done(self) -> None:
        """Take the progress bar off the screen (the work it showed is over)."""
        self._end_progress()
        self.stream.flush()

    def _end_progress(self) -> None:
        if self._progress_shown:
            # Back to the start of the line and erase it: what follows takes its place.
            self.stream.write("\r\x1b[K")
            self._progress_shown = False

    def table(self, headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """Columns aligned on the text people see: a :class:`Styled` cell is measured
        without its colour codes."""
        cells: list[list[Styled]] = [
            [c if isinstance(c, Styled) else Styled(str(c)) for c in row] for row in rows
        ]
        shown = [[printable(c.text) for c in row] for row in cells]
        widths = [len(h) for h in headers]
        for texts in shown:
            for i, text in enumerate(texts):
                widths[i] = max(widths[i], len(text))
        self.line("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)), "bold")
        for row, row_texts in zip(cells, shown, strict=True):
            parts: list[Part] = []
            last = len(row) - 1
            for i, (cell, text, width) in enumerate(zip(row, row_texts, widths, strict=True)):
                pad = "" if i == last else " " * (width - len(text) + 2)
                parts += [cell, pad]
            self._trimmed(parts)

    def _trimmed(self, parts: list[Part]) -> None:
        # A row ends at its last visible character, as rstrip() did before colours.
        while parts and isinstance(parts[-1], str) and not parts[-1].strip():
            parts.pop()
        if parts and isinstance(parts[-1], Styled) and not parts[-1].styles:
            parts[-1] = Styled(parts[-1].text.rstrip())
        self.parts(*parts)
