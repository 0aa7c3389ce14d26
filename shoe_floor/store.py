"""The floor's store: every table's public records, chain heads and presence.

Two engines behind one class: SQLite (a file; the default, for a small floor or a test)
and PostgreSQL (``postgresql://...``, through psycopg 3, for a real floor with several
collectors). The SQL is the same for both, written with ``?`` placeholders; only the
connection and the placeholder style differ.

Tables:

- ``events``: one row per public record, keyed by (table, journal id, sequence number), so
  that a record delivered twice is stored once;
- ``heads``: every chain head received, keyed the same way;
- ``presence``: when each connection of a box came online and went offline;
- ``progress``: per table and journal, the sequence number up to which no public record is
  missing (every record's ``prev`` is stored), from which gaps are told.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self
from urllib.parse import urlsplit, urlunsplit

from shoe_controller.errors import StoreError
from shoe_floor.messages import FloorRecord, Head, Presence

SCHEMA_VERSION: Final = 1
APPLICATION: Final = "shoe-floor store"

_SCHEMA: Final = (
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
        PRIMARY KEY (table_id, journal_id, seq)
    )""",
    "CREATE INDEX IF NOT EXISTS events_by_event_at ON events (event, at)",
    """CREATE TABLE IF NOT EXISTS heads (
        site        TEXT NOT NULL,
        table_id    TEXT NOT NULL,
        journal_id  TEXT NOT NULL,
        seq         BIGINT NOT NULL,
        mac         TEXT NOT NULL,
        public_seq  BIGINT NOT NULL,
        at          DOUBLE PRECISION NOT NULL,
        received_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (table_id, journal_id, seq)
    )""",
    """CREATE TABLE IF NOT EXISTS presence (
        site        TEXT NOT NULL,
        table_id    TEXT NOT NULL,
        connection  TEXT NOT NULL,
        online      INTEGER NOT NULL,
        at          DOUBLE PRECISION NOT NULL,
        body        TEXT NOT NULL,
        PRIMARY KEY (table_id, connection, online)
    )""",
    """CREATE TABLE IF NOT EXISTS progress (
        site        TEXT NOT NULL,
        table_id    TEXT NOT NULL,
        journal_id  TEXT NOT NULL,
        through     BIGINT NOT NULL,
        PRIMARY KEY (table_id, journal_id)
    )""",
)

#: The advisory lock taken while the schema is made ("shoe" in ASCII).
_SCHEMA_LOCK: Final = 0x73686F65
_APPLICATION_ROW: Final = "SELECT value FROM floor_meta WHERE name = 'application'"
_INSERT_EVENT: Final = (
    "INSERT INTO events (site, table_id, journal_id, seq, prev, mac, event, round_id, ts, at, "
    "body, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
)
_EVENT_COLUMNS: Final = (
    "site, table_id, journal_id, seq, prev, mac, event, round_id, ts, at, body, received_at"
)
#: Into PostgreSQL each kind of message of a batch is one INSERT of a JSON array of rows
#: (each an array of its columns, cheaper to write than an object): a batch is then one
#: round trip (pipelined), whatever its size.
_INSERT_EVENTS_PG: Final = (
    f"INSERT INTO events ({_EVENT_COLUMNS}) SELECT r->>0, r->>1, r->>2, (r->>3)::bigint, "
    "(r->>4)::bigint, r->>5, r->>6, r->>7, r->>8, (r->>9)::float8, r->>10, (r->>11)::float8 "
    "FROM json_array_elements(%s::json) AS r ON CONFLICT DO NOTHING"
)
_INSERT_HEADS_PG: Final = (
    "INSERT INTO heads (site, table_id, journal_id, seq, mac, public_seq, at, received_at) "
    "SELECT r->>0, r->>1, r->>2, (r->>3)::bigint, r->>4, (r->>5)::bigint, (r->>6)::float8, "
    "(r->>7)::float8 FROM json_array_elements(%s::json) AS r ON CONFLICT DO NOTHING"
)
_INSERT_PRESENCE_PG: Final = (
    "INSERT INTO presence (site, table_id, connection, online, at, body) "
    "SELECT r->>0, r->>1, r->>2, (r->>3)::integer, (r->>4)::float8, r->>5 "
    "FROM json_array_elements(%s::json) AS r ON CONFLICT DO NOTHING"
)
_INSERT_HEAD: Final = (
    "INSERT INTO heads (site, table_id, journal_id, seq, mac, public_seq, at, received_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
)
_INSERT_PRESENCE: Final = (
    "INSERT INTO presence (site, table_id, connection, online, at, body) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
)


@dataclass(frozen=True, slots=True)
class Gap:
    """Public records of a table's journal that have not arrived: those after ``after``."""

    site: str
    table_id: str
    journal_id: str
    after: int


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


class Store:
    """One connection to the floor's store; use it from one thread. Build it with
    :func:`open_store`."""

    def __init__(self, conn: Any, url: str, *, postgres: bool) -> None:
        self._conn = conn
        self.url = url
        self.postgres = postgres

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

    def _sql(self, statement: str) -> str:
        return statement.replace("?", "%s") if self.postgres else statement

    def _execute(self, statement: str, args: Sequence[Any] = ()) -> Any:
        try:
            return self._conn.execute(self._sql(statement), args)
        except Exception as exc:
            raise self._error(exc) from None

    def _error(self, exc: Exception) -> StoreError:
        return StoreError(f"the floor store {self.describe()} failed: {exc}")

    def describe(self) -> str:
        """The store's address for people (a PostgreSQL password is never shown)."""
        if not self.postgres:
            return self.url
        return _hide_password(self.url)

    def _transaction(self) -> Any:
        return _Transaction(self)

    def create_schema(self) -> None:
        with self._transaction():
            if self.postgres:
                # Collectors starting together on a new database: CREATE ... IF NOT EXISTS
                # is not safe against a concurrent twin, so one creates, the others wait.
                self._execute("SELECT pg_advisory_xact_lock(?)", (_SCHEMA_LOCK,))
            for statement in _SCHEMA:
                self._execute(statement)
            row = self._execute(_APPLICATION_ROW).fetchone()
            if row is None:
                self._execute(
                    "INSERT INTO floor_meta (name, value) VALUES (?, ?), (?, ?)",
                    ("application", APPLICATION, "schema_version", str(SCHEMA_VERSION)),
                )
            elif row[0] != APPLICATION:
                raise StoreError(
                    f"{self.describe()} holds another application's data: choose another --db"
                )

    # -- writing ----------------------------------------------------------------------------

    def add(
        self,
        records: Sequence[FloorRecord],
        heads: Sequence[Head],
        presence: Sequence[Presence],
        received_at: float,
    ) -> None:
        """Store a batch in one transaction; what is already stored is left as it is."""
        if self.postgres:
            self._add_postgres(records, heads, presence, received_at)
            return
        with self._transaction():
            cursor = self._conn.cursor()
            try:
                if records:
                    cursor.executemany(
                        _INSERT_EVENT,
                        [
                            (
                                r.site,
                                r.table_id,
                                r.journal_id,
                                r.seq,
                                r.prev,
                                r.mac,
                                r.event,
                                r.round_id,
                                r.ts,
                                r.at,
                                r.body,
                                received_at,
                            )
                            for r in records
                        ],
                    )
                if heads:
                    cursor.executemany(
                        _INSERT_HEAD,
                        [
                            (
                                h.site,
                                h.table_id,
                                h.journal_id,
                                h.seq,
                                h.mac,
                                h.public_seq,
                                h.at,
                                received_at,
                            )
                            for h in heads
                        ],
                    )
                if presence:
                    cursor.executemany(
                        _INSERT_PRESENCE,
                        [
                            (p.site, p.table_id, p.connection, int(p.online), p.at, p.body)
                            for p in presence
                        ],
                    )
            except Exception as exc:
                raise self._error(exc) from None
            finally:
                cursor.close()

    def _add_postgres(
        self,
        records: Sequence[FloorRecord],
        heads: Sequence[Head],
        presence: Sequence[Presence],
        received_at: float,
    ) -> None:
        # BEGIN, an INSERT per kind, COMMIT: sent together, answered together. A batch
        # costs one round trip to the server, which is what bounds a collector's latency.
        statements: list[tuple[str, str]] = []
        if records:
            rows: list[tuple[Any, ...]] = [
                (
                    r.site,
                    r.table_id,
                    r.journal_id,
                    r.seq,
                    r.prev,
                    r.mac,
                    r.event,
                    r.round_id,
                    r.ts,
                    r.at,
                    r.body,
                    received_at,
                )
                for r in records
            ]
            statements.append((_INSERT_EVENTS_PG, json.dumps(rows, ensure_ascii=False)))
        if heads:
            rows = [
                (h.site, h.table_id, h.journal_id, h.seq, h.mac, h.public_seq, h.at, received_at)
                for h in heads
            ]
            statements.append((_INSERT_HEADS_PG, json.dumps(rows, ensure_ascii=False)))
        if presence:
            rows = [
                (p.site, p.table_id, p.connection, int(p.online), p.at, p.body) for p in presence
            ]
            statements.append((_INSERT_PRESENCE_PG, json.dumps(rows, ensure_ascii=False)))
        if not statements:
            return
        conn = self._conn
        try:
            with conn.pipeline(), conn.transaction():
                for statement, rows_json in statements:
                    conn.execute(statement, (rows_json,))
        except Exception as exc:
            raise self._error(exc) from None

    # -- gaps -------------------------------------------------------------------------------

    def journals(self) -> list[tuple[str, str, str]]:
        """Every (site, table, journal) the store has records or heads of."""
        rows = self._execute(
            "SELECT DISTINCT site, table_id, journal_id FROM events "
            "UNION SELECT DISTINCT site, table_id, journal_id FROM heads"
        ).fetchall()
        return [(str(a), str(b), str(c)) for a, b, c in rows]

    def find_gap(
        self, site: str, table: str, journal: str, settled_before: float
    ) -> tuple[bool, Gap | None]:
        """Advance the journal's progress mark along the stored records' ``prev`` links.

        Returns (complete, gap): complete when no record is missing as far as the store
        knows; a gap when records after the mark are missing while later records (or a
        head naming a later public record) arrived before ``settled_before``."""
        # No transaction, and few round trips: the mark only ever moves forward along
        # links that are stored, so two collectors scanning at once agree; the head is read
        # before the records, so a record stored meanwhile never makes it look ahead.
        start, head_seq, head_received = self._execute(
            "SELECT (SELECT through FROM progress WHERE table_id = ? AND journal_id = ?), "
            "(SELECT public_seq FROM heads WHERE table_id = ? AND journal_id = ? "
            "ORDER BY seq DESC LIMIT 1), "
            "(SELECT received_at FROM heads WHERE table_id = ? AND journal_id = ? "
            "ORDER BY seq DESC LIMIT 1)",
            (table, journal) * 3,
        ).fetchone()
        start = int(start) if start is not None else 0
        through = start
        waiting_since: float | None = None
        while True:
            rows = self._execute(
                "SELECT seq, prev, received_at FROM events WHERE table_id = ? AND "
                "journal_id = ? AND seq > ? ORDER BY seq LIMIT 2000",
                (table, journal, through),
            ).fetchall()
            moved = False
            for seq, prev, received in rows:
                if prev != through:
                    waiting_since = float(received)
                    break
                through, moved = int(seq), True
            if not moved or waiting_since is not None or len(rows) < 2000:
                break
        if through != start:
            self._execute(
                "INSERT INTO progress (site, table_id, journal_id, through) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (table_id, journal_id) DO UPDATE SET through = excluded.through "
                "WHERE progress.through < excluded.through",
                (site, table, journal, through),
            )
        if waiting_since is None and head_seq is not None and int(head_seq) > through:
            waiting_since = float(head_received)
        if waiting_since is None:
            return True, None
        if waiting_since < settled_before:
            return False, Gap(site, table, journal, through)
        return False, None

    def incomplete_tables(self) -> set[str]:
        """Tables some of whose public records are known to be missing, or not yet checked
        by a collector's gap scan."""
        rows = self._execute(
            "SELECT DISTINCT e.table_id FROM events e LEFT JOIN progress p "
            "ON p.table_id = e.table_id AND p.journal_id = e.journal_id "
            "WHERE p.through IS NULL OR e.seq > p.through "
            "UNION SELECT DISTINCT h.table_id FROM heads h LEFT JOIN progress p "
            "ON p.table_id = h.table_id AND p.journal_id = h.journal_id "
            "WHERE h.public_seq > coalesce(p.through, 0)"
        ).fetchall()
        return {str(r[0]) for r in rows}

    def progress(self) -> dict[tuple[str, str], int]:
        """(table, journal) -> the sequence number through which nothing is missing."""
        rows = self._execute("SELECT table_id, journal_id, through FROM progress").fetchall()
        return {(str(t), str(j)): int(n) for t, j, n in rows}

    # -- reading ----------------------------------------------------------------------------

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
            + " ORDER BY at, table_id, journal_id, seq",
            args,
        ).fetchall()
        for site, tbl, journal, seq, event, round_id, at, body in rows:
            yield StoredEvent(
                str(site), str(tbl), str(journal), int(seq), str(event), round_id, float(at), body
            )

    def records_of(self, table: str, journal: str) -> list[tuple[int, str, str]]:
        """(seq, event, body) of every stored record of one journal, in sequence."""
        rows = self._execute(
            "SELECT seq, event, body FROM events WHERE table_id = ? AND journal_id = ? "
            "ORDER BY seq",
            (table, journal),
        ).fetchall()
        return [(int(s), str(e), str(b)) for s, e, b in rows]

    def anchors(self, table: str) -> list[tuple[str, int, str]]:
        """(journal, seq, mac) the floor received for ``table``: every record's and head's."""
        rows = self._execute(
            "SELECT journal_id, seq, mac FROM events WHERE table_id = ? "
            "UNION SELECT journal_id, seq, mac FROM heads WHERE table_id = ?",
            (table, table),
        ).fetchall()
        return sorted((str(j), int(s), str(m)) for j, s, m in rows)

    def presence(self, table: str | None = None) -> list[StoredPresence]:
        clause, args = ("", ()) if table is None else (" WHERE table_id = ?", (table,))
        rows = self._execute(
            "SELECT site, table_id, connection, online, at FROM presence" + clause + " ORDER BY at",
            args,
        ).fetchall()
        return [StoredPresence(str(s), str(t), str(c), bool(o), float(a)) for s, t, c, o, a in rows]

    def count_events(self) -> int:
        return int(self._execute("SELECT count(*) FROM events").fetchone()[0])


class _Transaction:
    """One transaction: committed when the block ends, rolled back on an exception."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._pg: Any = None

    def __enter__(self) -> None:
        if self.store.postgres:
            self._pg = self.store._conn.transaction()
            try:
                self._pg.__enter__()
            except Exception as exc:
                raise self.store._error(exc) from None
        else:
            self.store._execute("BEGIN IMMEDIATE")

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if self._pg is not None:
                self._pg.__exit__(exc_type, exc, tb)
                return
            conn = self.store._conn
            if exc_type is None:
                conn.execute("COMMIT")
            elif conn.in_transaction:
                conn.execute("ROLLBACK")
        except Exception as error:
            if exc_type is None:
                raise self.store._error(error) from None


def open_store(url: str, *, create: bool = True) -> Store:
    """The store at ``url``: ``postgresql://...`` (or ``postgres://``), else a SQLite file
    path (``sqlite:///PATH`` also works). ``create`` makes the tables when missing."""
    if url.startswith(("postgresql://", "postgres://")):
        store = _open_postgres(url)
    else:
        store = _open_sqlite(url, create=create)
    try:
        if create:
            store.create_schema()
        else:
            store._execute(_APPLICATION_ROW)
    except BaseException:
        store.close()
        raise
    return store


def _open_sqlite(url: str, *, create: bool) -> Store:
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
    return Store(conn, os.fspath(path), postgres=False)


def _open_postgres(url: str) -> Store:
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
    return Store(conn, url, postgres=True)


def _hide_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit(parts._replace(netloc=netloc))
