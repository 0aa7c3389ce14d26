"""Terminal output shared by both commands: JSON lines, colour, tables and a progress bar.

Colour only on a terminal and never with NO_COLOR set (https://no-color.org); a progress
bar only on a terminal. ``--json`` output is one compact object per line, flushed, so that a
consumer reading a pipe sees each line as it happens.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

_COLORS = {"red": "31", "green": "32", "yellow": "33", "blue": "34", "bold": "1", "dim": "2"}


def color_enabled(stream: TextIO, choice: str = "auto") -> bool:
    if choice == "never" or "NO_COLOR" in os.environ:
        return False
    if choice == "always":
        return True
    return stream.isatty()


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

    def paint(self, text: str, *styles: str) -> str:
        if not self.color or not styles:
            return text
        codes = ";".join(_COLORS[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"

    def line(self, text: str = "", *styles: str) -> None:
        self._end_progress()
        self.stream.write(self.paint(text, *styles) + "\n")
        self.stream.flush()

    def json(self, obj: dict[str, Any]) -> None:
        self.stream.write(json.dumps(obj, separators=(",", ":"), ensure_ascii=False) + "\n")
        self.stream.flush()

    def warn(self, text: str) -> None:
        self._end_progress()
        self.err.write(text + "\n")
        self.err.flush()

    def progress(self, done: int, total: int, label: str = "") -> None:
        """Draw a progress bar in place; nothing when not on a terminal."""
        if not self.interactive or total <= 0:
            return
        width = 30
        filled = min(width, done * width // total)
        bar = "#" * filled + "." * (width - filled)
        self.stream.write(f"\r  [{bar}] {done:>3}/{total} {label}\x1b[K")
        self.stream.flush()
        self._progress_shown = True

    def _end_progress(self) -> None:
        if self._progress_shown:
            self.stream.write("\n")
            self._progress_shown = False

    def table(self, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        cells = [[str(c) for c in row] for row in rows]
        widths = [len(h) for h in headers]
        for row in cells:
            for i, c in enumerate(row):
                widths[i] = max(widths[i], len(c))
        self.line("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)), "bold")
        for row in cells:
            self.line("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
