"""Follow a journal that another process writes, read-only.

The forwarder and the diagnostics read the journal through a connection of their own while
the service appends to it: SQLite's WAL mode lets readers see every committed transaction
without blocking the writer or being blocked by it. A reader never writes a byte of the
journal, never takes its lock, and never sees a record of a transaction not yet committed.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from types import TracebackType
from typing import Final, Self

from shoe_controller.journal import schema
from shoe_controller.journal.records import Record

_SELECT: Final = "SELECT seq, wall, mono_ns, round_id, kind, payload, mac FROM records"


class JournalTail:
    """A read-only view of a journal; build it with :meth:`open`."""

    def __init__(self, path: Path, conn: sqlite3.Connection, journal_id: str) -> None:
        self.path = path
        self.journal_id = journal_id
        self._conn: sqlite3.Connection | None = conn

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> JournalTail:
        """Open the journal at ``path`` for reading; JournalError when it is not one."""
        journal = Path(path)
        conn = schema.connect(journal, writable=False)
        try:
            journal_id, _ = schema.read_identity(conn, journal)
        except BaseException:
            conn.close()
            raise
        return cls(journal, conn, journal_id)

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def after(self, seq: int, limit: int) -> list[Record]:
        """Up to ``limit`` committed records with a sequence number above ``seq``, in order."""
        return self._records(_SELECT + " WHERE seq > ? ORDER BY seq LIMIT ?", (seq, limit))

    def before(self, seq: int, limit: int) -> list[Record]:
        """Up to ``limit`` records with a sequence number up to ``seq``, latest first."""
        return self._records(_SELECT + " WHERE seq <= ? ORDER BY seq DESC LIMIT ?", (seq, limit))

    def record(self, seq: int) -> Record | None:
        """The record numbered ``seq``, if the journal holds it."""
        found = self._records(_SELECT + " WHERE seq = ?", (seq,))
        return found[0] if found else None

    def head(self) -> Record | None:
        """The last committed record (None while the journal is empty)."""
        found = self._records(_SELECT + " ORDER BY seq DESC LIMIT 1", ())
        return found[0] if found else None

    def _records(self, sql: str, args: tuple[int, ...]) -> list[Record]:
        conn = self._conn
        if conn is None:
            raise RuntimeError("the journal reader is closed")
        try:
            return [Record(*row) for row in conn.execute(sql, args)]
        except sqlite3.DatabaseError as exc:
            raise schema.damaged(self.path, exc) from None
