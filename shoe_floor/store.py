"""The floor's store: every table's public records, chain heads and presence, the keys
enrolled for the boxes, and what was refused (quarantine).

Two databases, one class each over the same rows (:mod:`shoe_floor.rows`) and the same
queries: :class:`SqliteStore` (a file; the default, for a small floor or a test) and
:class:`PostgresStore` (``postgresql://...``, through psycopg 3, for a real floor with
several collectors). The queries are written with ``?`` placeholders.

Tables:

- ``events``: one row per public record, keyed by (site, table, journal id, sequence
  number), so that a record delivered twice is stored once;
- ``heads``: every chain head received, keyed the same way;
- ``presence``: when each connection of a box came online and went offline;
- ``progress``: per journal, the sequence number up to which no public record is missing
  (every record's ``prev`` is stored), from which gaps are told (:mod:`shoe_floor.gaps`);
- ``enrolments``: every box key enrolled (``shoe-floor enroll``), journaled: who, when;
- ``quarantine``: messages refused (unsigned, forged, malformed), a bounded number of them
  kept with their reason; ``quarantine_tally`` counts every one per minute.
"""

from __future__ import annotations

import abc
import getpass
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self
from urllib.parse import urlsplit, urlunsplit

from floor_protocol import VerifyKey
from shoe_controller.errors import StoreError
from shoe_floor.rows import (
    EVENT_COLUMNS,
    HEAD_COLUMNS,
    PRESENCE_COLUMNS,
    QUARANTINE_COLUMNS,
    Batch,
    Row,
)

SCHEMA_VERSION: Final = 2
APPLICATION: Final = "shoe-floor store"

_TABLES: Final = (
    """CREATE TABLE IF NOT EXISTS floor_meta (
        name  TEXT PRIMARY KEY,
        value TEXT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS events (
        site        TEXT NOT NULL,
        table_id    TEXT NOT NULL,
        journal_id  TEXT NOT NULL,
        seq         BIGINT NOT NULL,
        prev        BIGINT NOT NULL,
        mac         TEXT NOT NULL,
        event       TEXT NOT NULL,
        round_id    TEXT,
        ts          TEXT NOT NULL,
        at          DOUBLE PRECISION NOT NULL,
        body        TEXT NOT NULL,
        received_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (site, table_id, journal_id, seq)
    )""",
    """CREATE TABLE IF NOT EXISTS heads (
        site        TEXT NOT NULL,
        table_id    TEXT NOT NULL,
        journal_id  TEXT NOT NULL,
        seq         BIGINT NOT NULL,
        mac         TEXT NOT NULL,
        public_seq  BIGINT NOT NULL,
        at          DOUBLE PRECISION NOT NULL,
        received_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (site, table_id, journal_id, seq)
    )""",
    """CREATE TABLE IF NOT EXISTS presence (
        site        TEXT NOT NULL,
        table_id    TEXT NOT NULL,
        connection  TEXT NOT NULL,
        online      INTEGER NOT NULL,
        at          DOUBLE PRECISION NOT NULL,
        body        TEXT NOT NULL,
        PRIMARY KEY (site, table_id, connection, online)
    )""",
    """CREATE TABLE IF NOT EXISTS progress (
        site        TEXT NOT NULL,
        table_id    TEXT NOT NULL,
        journal_id  TEXT NOT NULL,
        through     BIGINT NOT NULL,
        PRIMARY KEY (site, table_id, journal_id)
    )""",
    """CREATE TABLE IF NOT EXISTS enrolments (
        site        TEXT NOT NULL,
        table_id    TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        public_key  TEXT NOT NULL,
        enrolled_at DOUBLE PRECISION NOT NULL,
        enrolled_by TEXT NOT NULL,
        PRIMARY KEY (site, table_id, fingerprint)
    )""",
    """CREATE TABLE IF NOT EXISTS quarantine (
        received_at DOUBLE PRECISION NOT NULL,
        site        TEXT NOT NULL,
        table_id    TEXT NOT NULL,
        topic       TEXT NOT NULL,
        reason      TEXT NOT NULL,
        detail      TEXT NOT NULL,
        payload     TEXT NOT NULL,
        size        BIGINT NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS quarantine_tally (
        minute      BIGINT NOT NULL,
        site        TEXT NOT NULL,
        table_id    TEXT NOT NULL,
        reason      TEXT NOT NULL,
        messages    BIGINT NOT NULL,
        PRIMARY KEY (minute, site, table_id, reason)
    )""",
)
_INDEXES: Final = (
    "CREATE INDEX IF NOT EXISTS events_by_event_at ON events (event, at)",
    "CREATE INDEX IF NOT EXISTS quarantine_by_time ON quarantine (received_at)",
)
#: Tables whose key gained the site in schema 2, and the columns they share with schema 1.
_REKEYED: Final = {
    "events": EVENT_COLUMNS,
    "heads": HEAD_COLUMNS,
    "presence": PRESENCE_COLUMNS,
    "progress": ("site", "table_id", "journal_id", "through"),
}
#: The advisory lock taken while the schema is made ("shoe" in ASCII).
_SCHEMA_LOCK: Final = 0x73686F65
_APPLICATION_ROW: Final = "SELECT value FROM floor_meta WHERE name = 'application'"
_VERSION_ROW: Final = "SELECT value FROM floor_meta WHERE name = 'schema_version'"
_TALLY_COLUMNS: Final = ("minute", "site", "table_id", "reason", "messages")
_TALLY_CONFLICT: Final = (
    " ON CONFLICT (minute, site, table_id, reason) DO UPDATE SET "
    "messages = quarantine_tally.messages + excluded.messages"
)


def _insert(table: str, columns: Sequence[str]) -> str:
    marks = ", ".join("?" for _ in columns)
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})"


@dataclass(frozen=True, slots=True)
class StoredEvent:
    site: str
    table_id: str
    journal_id: str
    seq: int
    event: str
    round_id: str | None
    at: float
    body: str


@dataclass(frozen=True, slots=True)
class StoredPresence:
    site: str
    table_id: str
    connection: str
    online: bool
    at: float


@dataclass(frozen=True, slots=True)
class Enrolment:
    site: str
    table_id: str
    key: VerifyKey
    enrolled_at: float
    enrolled_by: str


class Store(abc.ABC):
    """One connection to the floor's store; use it from one thread. Open it with
    :func:`open_store`."""

    def __init__(self, conn: Any, url: str) -> None:
        self._conn = conn
        self.url = url

    # -- what each database does its own way ------------------------------------------------

    @abc.abstractmethod
    def _execute(self, statement: str, args: Sequence[Any] = ()) -> Any:
        """Run one statement written with ``?`` placeholders."""

    @abc.abstractmethod
    def _write(self, batch: Batch) -> None:
        """Store ``batch`` in one transaction."""

    @abc.abstractmethod
    def transaction(self) -> Any:
        """A context manager: one transaction."""

    @abc.abstractmethod
    def _lock_schema(self) -> None:
        """Keep collectors starting together from making the schema at once."""

    @abc.abstractmethod
    def _renamed(self, table: str) -> None:
        """``table`` became ``table_v1``: give its key's index a name of its own too."""

    def describe(self) -> str:
        """The store's address for people."""
        return self.url

    # -- life cycle -------------------------------------------------------------------------

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _error(self, exc: Exception) -> StoreError:
        return StoreError(f"the floor store {self.describe()} failed: {exc}")

    def create_schema(self) -> None:
        with self.transaction():
            self._lock_schema()
            self._execute(_TABLES[0])
            row = self._execute(_APPLICATION_ROW).fetchone()
            if row is not None and row[0] != APPLICATION:
                raise StoreError(
                    f"{self.describe()} holds another application's data: choose another --db"
                )
            version = self._execute(_VERSION_ROW).fetchone()
            if version is not None and int(version[0]) > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.describe()} was made by a newer shoe-floor (schema "
                    f"{version[0]}): upgrade this one"
                )
            old = version is not None and int(version[0]) < SCHEMA_VERSION
            if old:
                for table in _REKEYED:
                    self._execute(f"ALTER TABLE {table} RENAME TO {table}_v1")
                    self._renamed(table)
            for statement in _TABLES[1:]:
                self._execute(statement)
            if old:
                # Schema 1 keyed rows without the site; the rows keep theirs.
                for table, columns in _REKEYED.items():
                    names = ", ".join(columns)
                    self._execute(
                        f"INSERT INTO {table} ({names}) SELECT {names} FROM {table}_v1 "
                        "ON CONFLICT DO NOTHING"
                    )
                    self._execute(f"DROP TABLE {table}_v1")
            for statement in _INDEXES:
                self._execute(statement)
            if row is None:
                self._execute(
                    "INSERT INTO floor_meta (name, value) VALUES (?, ?), (?, ?)",
                    ("application", APPLICATION, "schema_version", str(SCHEMA_VERSION)),
                )
            elif old:
                self._execute(
                    "UPDATE floor_meta SET value = ? WHERE name = 'schema_version'",
                    (str(SCHEMA_VERSION),),
                )

    def check_schema(self) -> None:
        """A store made by a collector of this version (for the read-only commands)."""
        row = self._execute(_APPLICATION_ROW).fetchone()
        version = self._execute(_VERSION_ROW).fetchone()
        if row is None or row[0] != APPLICATION:
            raise StoreError(f"{self.describe()} is not a floor store: check --db")
        if version is None or int(version[0]) != SCHEMA_VERSION:
            raise StoreError(
                f"{self.describe()} has schema {version[0] if version else '?'}, this program "
                f"reads {SCHEMA_VERSION}: run shoe-floor collect once to bring it up to date"
            )

    # -- writing ----------------------------------------------------------------------------

    def add(self, batch: Batch) -> None:
        """Store a batch in one transaction; what is already stored is left as it is."""
        if batch:
            self._write(batch)

    def enrol(self, site: str, table: str, key: VerifyKey, at: float) -> bool:
        """Enrol ``key`` for the box of ``table`` at ``site``; False when it already was."""
        with self.transaction():
            exists = self._execute(
                "SELECT 1 FROM enrolments WHERE site = ? AND table_id = ? AND fingerprint = ?",
                (site, table, key.fingerprint),
            ).fetchone()
            if exists is not None:
                return False
            self._execute(
                _insert(
                    "enrolments",
                    ("site", "table_id", "fingerprint", "public_key", "enrolled_at", "enrolled_by"),
                ),
                (site, table, key.fingerprint, key.to_pem().decode("ascii"), at, _who()),
            )
            return True

    def set_progress(self, site: str, table: str, journal: str, through: int) -> None:
        self._execute(
            "INSERT INTO progress (site, table_id, journal_id, through) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (site, table_id, journal_id) DO UPDATE SET through = excluded.through "
            "WHERE progress.through < excluded.through",
            (site, table, journal, through),
        )

    # -- reading ----------------------------------------------------------------------------

    def enrolments(self) -> list[Enrolment]:
        rows = self._execute(
            "SELECT site, table_id, public_key, enrolled_at, enrolled_by FROM enrolments "
            "ORDER BY site, table_id, enrolled_at"
        ).fetchall()
        return [
            Enrolment(str(s), str(t), VerifyKey.from_pem(str(k).encode("ascii")), float(a), str(b))
            for s, t, k, a, b in rows
        ]

    def journals(self) -> list[tuple[str, str, str]]:
        """Every (site, table, journal) the store has records or heads of."""
        rows = self._execute(
            "SELECT DISTINCT site, table_id, journal_id FROM events "
            "UNION SELECT DISTINCT site, table_id, journal_id FROM heads"
        ).fetchall()
        return [(str(a), str(b), str(c)) for a, b, c in rows]

    def progress_of(self, site: str, table: str, journal: str) -> tuple[int, int | None, float]:
        """(progress mark, last head's public record or None, when that head came)."""
        start, head_seq, head_received = self._execute(
            "SELECT (SELECT through FROM progress WHERE site = ? AND table_id = ? AND "
            "journal_id = ?), "
            "(SELECT public_seq FROM heads WHERE site = ? AND table_id = ? AND journal_id = ? "
            "ORDER BY seq DESC LIMIT 1), "
            "(SELECT received_at FROM heads WHERE site = ? AND table_id = ? AND journal_id = ? "
            "ORDER BY seq DESC LIMIT 1)",
            (site, table, journal) * 3,
        ).fetchone()
        return (
            int(start) if start is not None else 0,
            int(head_seq) if head_seq is not None else None,
            float(head_received) if head_received is not None else 0.0,
        )

    def links_after(
        self, site: str, table: str, journal: str, after: int, limit: int
    ) -> list[tuple[int, int, float]]:
        """(seq, prev, received_at) of the stored records after ``after``, in order."""
        rows = self._execute(
            "SELECT seq, prev, received_at FROM events WHERE site = ? AND table_id = ? AND "
            "journal_id = ? AND seq > ? ORDER BY seq LIMIT ?",
            (site, table, journal, after, limit),
        ).fetchall()
        return [(int(s), int(p), float(r)) for s, p, r in rows]

    def incomplete_tables(self) -> set[tuple[str, str]]:
        """(site, table) of the tables some of whose public records are known to be
        missing, or not yet checked by a collector's gap scan."""
        rows = self._execute(
            "SELECT DISTINCT e.site, e.table_id FROM events e LEFT JOIN progress p "
            "ON p.site = e.site AND p.table_id = e.table_id AND p.journal_id = e.journal_id "
            "WHERE p.through IS NULL OR e.seq > p.through "
            "UNION SELECT DISTINCT h.site, h.table_id FROM heads h LEFT JOIN progress p "
            "ON p.site = h.site AND p.table_id = h.table_id AND p.journal_id = h.journal_id "
            "WHERE h.public_seq > coalesce(p.through, 0)"
        ).fetchall()
        return {(str(site), str(table)) for site, table in rows}

    def progress(self) -> dict[tuple[str, str, str], int]:
        """(site, table, journal) -> the sequence number through which nothing is missing."""
        rows = self._execute("SELECT site, table_id, journal_id, through FROM progress").fetchall()
        return {(str(s), str(t), str(j)): int(n) for s, t, j, n in rows}

    def events(
        self,
        kinds: Iterable[str] | None = None,
        since: float | None = None,
        until: float | None = None,
        table: str | None = None,
    ) -> Iterator[StoredEvent]:
        """Stored records, oldest first (by their journal's time, then sequence)."""
        where: list[str] = []
        args: list[Any] = []
        if kinds is not None:
            names = list(kinds)
            where.append(f"event IN ({', '.join('?' for _ in names)})")
            args += names
        if since is not None:
            where.append("at >= ?")
            args.append(since)
        if until is not None:
            where.append("at < ?")
            args.append(until)
        if table is not None:
            where.append("table_id = ?")
            args.append(table)
        clause = f" WHERE {' AND '.join(where)}" if where else ""
        rows = self._execute(
            "SELECT site, table_id, journal_id, seq, event, round_id, at, body FROM events"
            + clause
            + " ORDER BY at, site, table_id, journal_id, seq",
            args,
        ).fetchall()
        for site, tbl, journal, seq, event, round_id, at, body in rows:
            yield StoredEvent(
                str(site), str(tbl), str(journal), int(seq), str(event), round_id, float(at), body
            )

    def records_of(self, site: str, table: str, journal: str) -> list[tuple[int, str, str]]:
        """(seq, event, body) of every stored record of one journal, in sequence."""
        rows = self._execute(
            "SELECT seq, event, body FROM events WHERE site = ? AND table_id = ? AND "
            "journal_id = ? ORDER BY seq",
            (site, table, journal),
        ).fetchall()
        return [(int(s), str(e), str(b)) for s, e, b in rows]

    def sites_of(self, table: str) -> list[str]:
        """The sites that have a table named ``table`` on this floor, by name."""
        rows = self._execute(
            "SELECT site FROM events WHERE table_id = ? UNION SELECT site FROM heads "
            "WHERE table_id = ? UNION SELECT site FROM enrolments WHERE table_id = ?",
            (table, table, table),
        ).fetchall()
        return sorted(str(r[0]) for r in rows)

    def anchors(self, site: str, table: str) -> list[tuple[str, int, str]]:
        """(journal, seq, mac) the floor received for one table of one site: every record's
        and head's."""
        rows = self._execute(
            "SELECT journal_id, seq, mac FROM events WHERE site = ? AND table_id = ? "
            "UNION SELECT journal_id, seq, mac FROM heads WHERE site = ? AND table_id = ?",
            (site, table, site, table),
        ).fetchall()
        return sorted((str(j), int(s), str(m)) for j, s, m in rows)

    def presence(self, table: str | None = None) -> list[StoredPresence]:
        clause, args = ("", ()) if table is None else (" WHERE table_id = ?", (table,))
        rows = self._execute(
            "SELECT site, table_id, connection, online, at FROM presence" + clause + " ORDER BY at",
            args,
        ).fetchall()
        return [StoredPresence(str(s), str(t), str(c), bool(o), float(a)) for s, t, c, o, a in rows]

    def quarantined(self, since: float, until: float) -> dict[tuple[str, str, str], int]:
        """(site, table, reason) -> messages refused in the period ('' for a table the
        floor does not know)."""
        rows = self._execute(
            "SELECT site, table_id, reason, sum(messages) FROM quarantine_tally "
            "WHERE minute >= ? AND minute < ? GROUP BY site, table_id, reason",
            (int(since // 60), int(until // 60) + 1),
        ).fetchall()
        return {(str(s), str(t), str(r)): int(n) for s, t, r, n in rows}

    def quarantine_rows(self, limit: int = 100) -> list[dict[str, Any]]:
        """The latest refused messages kept, newest first."""
        rows = self._execute(
            f"SELECT {', '.join(QUARANTINE_COLUMNS)} FROM quarantine "
            "ORDER BY received_at DESC LIMIT ?",
            (limit,),
        ).fetchall()
        return [dict(zip(QUARANTINE_COLUMNS, row, strict=True)) for row in rows]

    def count_events(self) -> int:
        return int(self._execute("SELECT count(*) FROM events").fetchone()[0])


class SqliteStore(Store):
    """The store in a SQLite file (WAL, synchronous FULL)."""

    def _execute(self, statement: str, args: Sequence[Any] = ()) -> Any:
        try:
            return self._conn.execute(statement, args)
        except Exception as exc:
            raise self._error(exc) from None

    def transaction(self) -> Any:
        return _SqliteTransaction(self)

    def _lock_schema(self) -> None:
        """BEGIN IMMEDIATE already holds the file's write lock."""

    def _renamed(self, table: str) -> None:
        """SQLite names a table's key index after the table itself."""

    def _write(self, batch: Batch) -> None:
        with self.transaction():
            cursor = self._conn.cursor()
            try:
                for table, columns, rows in _plain_inserts(batch):
                    cursor.executemany(_insert(table, columns) + " ON CONFLICT DO NOTHING", rows)
                if batch.tally:
                    cursor.executemany(
                        _insert("quarantine_tally", _TALLY_COLUMNS) + _TALLY_CONFLICT,
                        batch.tally_rows(),
                    )
            except Exception as exc:
                raise self._error(exc) from None
            finally:
                cursor.close()


class PostgresStore(Store):
    """The store in PostgreSQL: a batch is one round trip, each kind of row one INSERT of a
    JSON array of rows (each an array of its columns), pipelined with BEGIN and COMMIT."""

    def _execute(self, statement: str, args: Sequence[Any] = ()) -> Any:
        try:
            return self._conn.execute(statement.replace("?", "%s"), args)
        except Exception as exc:
            raise self._error(exc) from None

    def transaction(self) -> Any:
        return _PostgresTransaction(self)

    def describe(self) -> str:
        return _hide_password(self.url)

    def _lock_schema(self) -> None:
        # CREATE ... IF NOT EXISTS is not safe against a concurrent twin: one creates, the
        # others wait.
        self._execute("SELECT pg_advisory_xact_lock(?)", (_SCHEMA_LOCK,))

    def _renamed(self, table: str) -> None:
        self._execute(f"ALTER INDEX IF EXISTS {table}_pkey RENAME TO {table}_v1_pkey")

    def _write(self, batch: Batch) -> None:
        statements = [
            (_json_insert(table, columns, _PG_TYPES), rows)
            for table, columns, rows in _plain_inserts(batch)
        ]
        if batch.tally:
            statements.append(
                (
                    _json_insert("quarantine_tally", _TALLY_COLUMNS, _PG_TYPES, _TALLY_CONFLICT),
                    list(batch.tally_rows()),
                )
            )
        conn = self._conn
        try:
            with conn.pipeline(), conn.transaction():
                for statement, rows in statements:
                    conn.execute(statement, (json.dumps(rows, ensure_ascii=False),))
        except Exception as exc:
            raise self._error(exc) from None


def _plain_inserts(batch: Batch) -> list[tuple[str, Sequence[str], list[Row]]]:
    kinds = (
        ("events", EVENT_COLUMNS, batch.events),
        ("heads", HEAD_COLUMNS, batch.heads),
        ("presence", PRESENCE_COLUMNS, batch.presence),
        ("quarantine", QUARANTINE_COLUMNS, batch.quarantine),
    )
    return [(table, columns, rows) for table, columns, rows in kinds if rows]


#: PostgreSQL's type of each column that is not text, for the JSON inserts.
_PG_TYPES: Final = {
    "seq": "bigint",
    "prev": "bigint",
    "public_seq": "bigint",
    "at": "float8",
    "received_at": "float8",
    "online": "integer",
    "size": "bigint",
    "minute": "bigint",
    "messages": "bigint",
}


def _json_insert(
    table: str, columns: Sequence[str], types: dict[str, str], conflict: str = ""
) -> str:
    values = ", ".join(
        f"(r->>{i})::{types[c]}" if c in types else f"r->>{i}" for i, c in enumerate(columns)
    )
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) SELECT {values} "
        f"FROM json_array_elements(%s::json) AS r" + (conflict or " ON CONFLICT DO NOTHING")
    )


class _SqliteTransaction:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on an exception."""

    def __init__(self, store: SqliteStore) -> None:
        self.store = store

    def __enter__(self) -> None:
        self.store._execute("BEGIN IMMEDIATE")

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        conn = self.store._conn
        try:
            if exc_type is None:
                conn.execute("COMMIT")
            elif conn.in_transaction:
                conn.execute("ROLLBACK")
        except Exception as error:
            if exc_type is None:
                raise self.store._error(error) from None


class _PostgresTransaction:
    def __init__(self, store: PostgresStore) -> None:
        self.store = store
        self._pg: Any = None

    def __enter__(self) -> None:
        self._pg = self.store._conn.transaction()
        try:
            self._pg.__enter__()
        except Exception as exc:
            raise self.store._error(exc) from None

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self._pg.__exit__(exc_type, exc, tb)
        except Exception as error:
            if exc_type is None:
                raise self.store._error(error) from None


def open_store(url: str, *, create: bool = True) -> Store:
    """The store at ``url``: ``postgresql://...`` (or ``postgres://``), else a SQLite file
    path (``sqlite:///PATH`` also works). ``create`` makes the tables when missing (and
    brings an older store up to date)."""
    if url.startswith(("postgresql://", "postgres://")):
        store: Store = _open_postgres(url)
    else:
        store = _open_sqlite(url, create=create)
    try:
        if create:
            store.create_schema()
        else:
            store.check_schema()
    except BaseException:
        store.close()
        raise
    return store


def _open_sqlite(url: str, *, create: bool) -> SqliteStore:
    path = Path(url.removeprefix("sqlite://")) if url.startswith("sqlite://") else Path(url)
    if not create and not path.is_file():
        raise StoreError(f"no floor store at {path}: check --db (shoe-floor collect creates it)")
    if path.exists() and not path.is_file():
        raise StoreError(f"{path} is not a file: give the store's file with --db")
    # The file is told an SQLite database by SQLite itself, never by opening it otherwise:
    # closing any other descriptor of the file drops the locks this process's connections
    # hold on it, and another process's connection, believing itself the last one, would
    # then delete the write-ahead log they are still writing to.
    try:
        conn = sqlite3.connect(os.fspath(path), isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the floor store {path}: {exc}; check --db") from None
    try:
        # SQLite takes a file too short for its header for an empty database.
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        foreign = pages == 0 and path.stat().st_size > 0
    except (sqlite3.DatabaseError, OSError) as exc:
        conn.close()
        if getattr(exc, "sqlite_errorname", "") != "SQLITE_NOTADB":
            raise StoreError(f"cannot open the floor store {path}: {exc}; check --db") from None
        foreign = True
    if foreign:
        conn.close()
        raise StoreError(f"{path} is not an SQLite database: choose another --db")
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA busy_timeout = 10000")
    except sqlite3.Error as exc:
        conn.close()
        raise StoreError(f"cannot open the floor store {path}: {exc}; check --db") from None
    return SqliteStore(conn, os.fspath(path))


def _open_postgres(url: str) -> PostgresStore:
    try:
        import psycopg  # noqa: PLC0415 (the floor's [floor] extra; SQLite needs none)
    except ImportError:
        raise StoreError(
            "PostgreSQL needs psycopg: install shoe-controller[floor] (pip install "
            "'shoe-controller[floor]')"
        ) from None
    try:
        conn = psycopg.connect(url, autocommit=True)
    except psycopg.Error as exc:
        raise StoreError(
            f"cannot connect to the floor store {_hide_password(url)}: "
            f"{str(exc).strip().splitlines()[0] if str(exc).strip() else exc}; check --db"
        ) from None
    return PostgresStore(conn, url)


def _hide_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit(parts._replace(netloc=netloc))


def _who() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid {os.getuid()}"
