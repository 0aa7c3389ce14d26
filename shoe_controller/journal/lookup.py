"""Reading a few records of a journal another process may be writing.

For the commands that look something up in the journal (``shoe-diag verify-install``
reads the latest start's software manifest, ``shoe-diag journal confirm-stub`` a round's
stub): a read-only connection, one consistent snapshot, and the same refusals as every
reader of a file that is not a journal or is damaged (JournalError, exit code 9).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path

from shoe_controller.journal import schema
from shoe_controller.journal.records import Kind, Record

_SELECT = "SELECT seq, wall, mono_ns, round_id, kind, payload, mac FROM records"


class JournalReader:
    """Queries on one read-only snapshot of a journal; see :func:`reading`."""

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self._conn = conn

    def latest(self, kind: Kind) -> Record | None:
        """The last record of ``kind``."""
        return self._one(_SELECT + " WHERE kind = ? ORDER BY seq DESC LIMIT 1", (kind.value,))

    def first_after(self, kind: Kind, seq: int) -> Record | None:
        """The first record of ``kind`` numbered above ``seq``."""
        return self._one(
            _SELECT + " WHERE kind = ? AND seq > ? ORDER BY seq LIMIT 1", (kind.value, seq)
        )

    def of_round(self, round_id: str, kinds: Sequence[Kind]) -> list[Record]:
        """The records of round ``round_id`` of the ``kinds`` given, in journal order."""
        marks = ", ".join("?" for _ in kinds)
        return self._all(
            _SELECT + f" WHERE round_id = ? AND kind IN ({marks}) ORDER BY seq",
            (round_id, *(kind.value for kind in kinds)),
        )

    def holds_round(self, round_id: str) -> bool:
        return self._one(_SELECT + " WHERE round_id = ? LIMIT 1", (round_id,)) is not None

    def _one(self, sql: str, args: tuple[object, ...]) -> Record | None:
        try:
            row = self._conn.execute(sql, args).fetchone()
        except sqlite3.DatabaseError as exc:
            raise schema.damaged(self.path, exc) from None
        return None if row is None else Record(*row)

    def _all(self, sql: str, args: tuple[object, ...]) -> list[Record]:
        try:
            rows = self._conn.execute(sql, args).fetchall()
        except sqlite3.DatabaseError as exc:
            raise schema.damaged(self.path, exc) from None
        return [Record(*row) for row in rows]


@contextlib.contextmanager
def reading(path: Path) -> Iterator[JournalReader]:
    """A :class:`JournalReader` on one snapshot of the journal at ``path``, opened read-only
    (a journal the service is writing included)."""
    conn = schema.connect(path, writable=False)
    try:
        try:
            conn.execute("BEGIN")
        except sqlite3.DatabaseError as exc:
            raise schema.damaged(path, exc) from None
        yield JournalReader(path, conn)
    finally:
        conn.close()
