"""The journal's SQLite schema, its migrations, and opening a file only if it is a journal.

A journal is recognised by three marks: the SQLite header, ``PRAGMA application_id`` set to
:data:`APPLICATION_ID`, and a ``meta`` table whose ``application`` row is
:data:`APPLICATION`. Anything else is refused before a single byte of it is written.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from shoe_controller.errors import JournalError
from shoe_controller.files import NotRegularFile, open_regular

APPLICATION: Final = "shoe-controller journal"
#: "SHOE" in ASCII, stored in the SQLite header (offset 68).
APPLICATION_ID: Final = 0x53484F45
SQLITE_MAGIC: Final = b"SQLite format 3\x00"

_V1: Final = (
    """CREATE TABLE meta (
        name  TEXT PRIMARY KEY,
        value TEXT NOT NULL
    ) WITHOUT ROWID""",
    """CREATE TABLE records (
        seq      INTEGER PRIMARY KEY,
        wall     TEXT    NOT NULL,
        mono_ns  INTEGER NOT NULL,
        round_id TEXT,
        kind     TEXT    NOT NULL,
        payload  TEXT    NOT NULL,
        mac      BLOB    NOT NULL
    )""",
    "CREATE INDEX records_by_kind_round ON records (kind, round_id)",
    # Append-only: the application never changes or removes a record. These triggers do not
    # stop someone with write access to the file (the MAC chain shows that); they stop
    # mistakes.
    """CREATE TRIGGER records_no_update BEFORE UPDATE ON records
    BEGIN SELECT RAISE(ABORT, 'journal records are append-only'); END""",
    """CREATE TRIGGER records_no_delete BEFORE DELETE ON records
    BEGIN SELECT RAISE(ABORT, 'journal records are append-only'); END""",
)

#: ``MIGRATIONS[n]`` holds the statements that bring a journal from schema version n to
#: n + 1, run in one transaction. A migration may add tables and indexes; it must never
#: rewrite a record, which would break the MAC chain.
MIGRATIONS: Final[Sequence[Sequence[str]]] = (_V1,)
SCHEMA_VERSION: Final = len(MIGRATIONS)


def create_database(path: Path, key_check: bytes, created: str) -> str:
    """Initialise an empty SQLite file at ``path``; returns the new journal's id."""
    journal_id = uuid.uuid4().hex
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("BEGIN IMMEDIATE")
        _run_migrations(conn, 0)
        conn.executemany(
            "INSERT INTO meta (name, value) VALUES (?, ?)",
            [
                ("application", APPLICATION),
                ("journal_id", journal_id),
                ("key_check", key_check.hex()),
                ("created", created),
            ],
        )
        conn.execute("COMMIT")
    finally:
        conn.close()
    return journal_id


def connect(path: Path, *, writable: bool) -> sqlite3.Connection:
    """Open ``path`` if and only if it is a journal; migrate it when ``writable``.

    The file is identified through a read-only connection first, so that a foreign or
    damaged file is never written to.
    """
    _check_header(path)
    probe = _open(path, readonly=True)
    try:
        version = _identify(probe, path)
    finally:
        probe.close()
    if version > SCHEMA_VERSION:
        raise JournalError(
            f"journal {path} has schema version {version}, newer than this program's "
            f"{SCHEMA_VERSION}: use the shoe-controller release that wrote it or a newer one"
        )
    if not writable:
        # Migrations never change the meta and records tables, so an older journal reads as
        # it is: a reader (an auditor's copy, say) is never upgraded behind its back.
        return _open(path, readonly=True)
    conn = _open(path, readonly=False)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        # FULL: every commit is synced to the WAL file before COMMIT returns.
        conn.execute("PRAGMA synchronous = FULL")
        if version < SCHEMA_VERSION:
            conn.execute("BEGIN IMMEDIATE")
            _run_migrations(conn, version)
            conn.execute("COMMIT")
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise damaged(path, exc) from None
    return conn


def read_identity(conn: sqlite3.Connection, path: Path) -> tuple[str, bytes]:
    """The journal's id and its key check value, from the meta table."""
    try:
        meta = dict(conn.execute("SELECT name, value FROM meta").fetchall())
        return str(meta["journal_id"]), bytes.fromhex(meta["key_check"])
    except sqlite3.DatabaseError as exc:
        raise damaged(path, exc) from None
    except (KeyError, ValueError, TypeError):
        raise JournalError(
            f"journal {path} has an incomplete meta table (its id or key check is missing or "
            "malformed): keep it for investigation and start a new journal with --journal"
        ) from None


def damaged(path: Path, exc: sqlite3.Error) -> JournalError:
    return JournalError(
        f"journal {path} is damaged ({exc}): keep the file for investigation and restore the "
        "journal from a backup, or start a new one with --journal"
    )


def _run_migrations(conn: sqlite3.Connection, version: int) -> None:
    for step in range(version, SCHEMA_VERSION):
        for statement in MIGRATIONS[step]:
            conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def _check_header(path: Path) -> None:
    try:
        with open_regular(path) as f:
            head = f.read(len(SQLITE_MAGIC))
    except FileNotFoundError:
        raise JournalError(f"no journal at {path}: check the path given with --journal") from None
    except IsADirectoryError:
        raise JournalError(
            f"{path} is a directory, not a journal: give the journal file's path with --journal"
        ) from None
    except NotRegularFile as exc:
        raise JournalError(
            f"{path} is not a journal: {exc.strerror}; give the journal file's path with --journal"
        ) from None
    except OSError as exc:
        raise JournalError(
            f"cannot read journal {path}: {exc.strerror or exc}; run as the user that owns it"
        ) from None
    if head != SQLITE_MAGIC:
        raise JournalError(
            f"{path} is not a journal (not an SQLite database); it was left untouched: move it "
            "away or choose another path with --journal"
        )


def _open(path: Path, *, readonly: bool) -> sqlite3.Connection:
    uri = path.resolve().as_uri() + ("?mode=ro" if readonly else "?mode=rw")
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None)
    except sqlite3.Error as exc:
        raise JournalError(
            f"cannot open journal {path}: {exc}; check its permissions and its directory's"
        ) from None
    # A journal holds no views or triggers we need to trust beyond our own.
    conn.execute("PRAGMA trusted_schema = OFF")
    return conn


def _identify(conn: sqlite3.Connection, path: Path) -> int:
    foreign = JournalError(
        f"{path} is an SQLite database of another application, not a journal; it was left "
        "untouched: choose another path with --journal"
    )
    try:
        application_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version: int = conn.execute("PRAGMA user_version").fetchone()[0]
        if application_id != APPLICATION_ID:
            raise foreign
        has_meta = conn.execute(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'meta'"
        ).fetchone()[0]
        if not has_meta:
            raise foreign
        row = conn.execute("SELECT value FROM meta WHERE name = 'application'").fetchone()
    except sqlite3.DatabaseError as exc:
        raise damaged(path, exc) from None
    if row is None or row[0] != APPLICATION:
        raise foreign
    return version
