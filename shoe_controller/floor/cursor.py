"""The forwarder's cursor: the last journal record the broker acknowledged, kept beside the
journal so that forwarding resumes there after a restart.

``journal.sqlite3`` has its cursor in ``journal.floor-cursor``, a JSON document
``{"format": 1, "journal_id": ..., "seq": N}``: every public record up to ``seq`` was
acknowledged by the broker (PUBACK). It is rewritten atomically (temporary file, fsync,
rename, fsync of the directory), so that a crash leaves the old cursor or the new one,
never half of one. A cursor of another journal counts as none: a new journal is forwarded
from its first record.
"""

from __future__ import annotations

import json
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from shoe_controller.errors import JournalError
from shoe_controller.journal.paths import replace_file

FORMAT: Final = 1
SUFFIX: Final = ".floor-cursor"


@dataclass(frozen=True)
class Cursor:
    journal_id: str
    seq: int


def cursor_path(journal: Path) -> Path:
    """The cursor beside ``journal``: ``journal.sqlite3`` -> ``journal.floor-cursor``."""
    return journal.with_suffix(SUFFIX)


def read_cursor(path: Path, journal_id: str) -> int:
    """The sequence number acknowledged for ``journal_id`` (0 when there is no cursor for
    that journal). A file at ``path`` that is not a cursor is refused, never overwritten."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return 0
    if not stat.S_ISREG(info.st_mode):
        raise JournalError(
            f"{path} is not a regular file, so it cannot be the floor cursor: move it away "
            "(the forwarder never writes over what it did not create)"
        )
    try:
        document = json.loads(path.read_bytes())
        fmt, owner, seq = document["format"], document["journal_id"], document["seq"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise JournalError(
            f"floor cursor {path} cannot be read ({exc}): move it away to forward the journal "
            "again from its first record (the floor stores each record once)"
        ) from None
    if fmt != FORMAT or not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        raise JournalError(f"floor cursor {path} is not in a format this program reads")
    return seq if owner == journal_id else 0


def write_cursor(path: Path, cursor: Cursor) -> None:
    """Replace the cursor at ``path`` atomically and durably."""
    document = {"format": FORMAT, "journal_id": cursor.journal_id, "seq": cursor.seq}
    data = json.dumps(document, sort_keys=True).encode("ascii") + b"\n"
    replace_file(path, data)
