"""The journal's only writer: append records in durable groups, recover open rounds.

Usage by the service::

    journal = Journal.open(path)
    with journal.transaction():
        journal.append(Kind.CARD, {...}, round_id)
        journal.append(Kind.STATE, {...}, round_id)
    # only now are those records durable: acknowledge them

A transaction is one SQLite transaction in WAL mode with ``synchronous=FULL``: one sync of
the WAL for the whole group. A record's sequence number, returned by :meth:`Journal.append`,
is durable once the transaction that holds it has returned.
"""

from __future__ import annotations

import contextlib
import fcntl
import hmac
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from shoe_controller.errors import JournalError
from shoe_controller.journal import schema
from shoe_controller.journal.chain import Chain, key_id
from shoe_controller.journal.checkpoint import (
    Checkpoint,
    CheckpointInvalid,
    read_checkpoint,
    read_verified,
    write_checkpoint,
    write_verified,
)
from shoe_controller.journal.checkpointer import Checkpointer, CheckpointFile
from shoe_controller.journal.keys import load_key, load_or_create_key
from shoe_controller.journal.paths import (
    FILE_MODE,
    checkpoint_path,
    default_key_path,
    ensure_directory,
    fsync_directory,
    lock_path,
    replace_file,
    unusable_location,
    verified_path,
)
from shoe_controller.journal.records import (
    Kind,
    Record,
    canonical_json,
    check_record,
    format_wall,
    to_nanoseconds,
)
from shoe_controller.journal.recovery import OpenRound, find_open_rounds

log = logging.getLogger(__name__)

Clock = Callable[[], float]

_SELECT = "SELECT seq, wall, mono_ns, round_id, kind, payload, mac FROM records"
#: Above every sequence number a record can have (SQLite's largest integer).
_NO_SEQ_ABOVE = 2**63 - 1
_INSERT = (
    "INSERT INTO records (seq, wall, mono_ns, round_id, kind, payload, mac) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)


class Journal:
    """An open journal, held exclusively by this process. Build it with :meth:`open`."""

    def __init__(
        self,
        *,
        path: Path,
        key_path: Path,
        conn: sqlite3.Connection,
        lock_fd: int,
        chain: Chain,
        journal_id: str,
        key_check: bytes,
        clock: Clock,
        monotonic: Clock,
    ) -> None:
        self.path = path
        self.key_path = key_path
        self.journal_id = journal_id
        self.key_id = key_id(key_check)
        self._conn: sqlite3.Connection | None = conn
        self._lock_fd = lock_fd
        self._chain = chain
        self._clock = clock
        self._monotonic = monotonic
        self._checkpoint_path = checkpoint_path(path)
        self._verified_path = verified_path(path)
        self._seq, self._mac = 0, chain.genesis(journal_id)
        self._pending_seq, self._pending_mac = self._seq, self._mac
        self._in_transaction = False
        self._checkpoint_stale = False
        #: Checkpoints wait for :meth:`store_checkpoint` instead of every commit.
        self._defer_checkpoints = False
        self._checkpoint_due = False
        #: Writes checkpoints in the background, once asked to (store_checkpoint_later).
        self._checkpointer: Checkpointer | None = None
        #: Held while the checkpoint file is written, by whichever thread writes it.
        self._checkpoint_lock = threading.Lock()
        #: The newest point this process wrote to the checkpoint file.
        self._checkpoint_written = 0
        #: The checkpoint's file with its descriptors held (reserve_checkpoint).
        self._checkpoint_file: CheckpointFile | None = None

    # -- opening and closing ----------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        key_path: str | os.PathLike[str] | None = None,
        *,
        create: bool = True,
        clock: Clock = time.time,
        monotonic: Clock = time.monotonic,
    ) -> Journal:
        """Open the journal at ``path`` for appending, creating it (and its key, beside it
        unless ``key_path`` says otherwise) when ``create`` is true and it does not exist.

        Checks that the file is a journal, that the key is its key, that its chain verifies
        (the records after the verified prefix; the whole chain the first time) and that its
        tail matches its checkpoint; never changes a file that fails these checks, and
        leaves nothing beside a path it refuses.
        """
        journal = Path(path)
        key_file = Path(key_path) if key_path is not None else default_key_path(journal)
        if not create and not os.path.lexists(journal):
            raise JournalError(f"no journal at {journal}: check the path given with --journal")
        _check_location(journal)
        if create:
            ensure_directory(journal.parent)
        lock_fd, made_lock = _lock(journal)
        conn: sqlite3.Connection | None = None
        try:
            # Looked at under the lock: another process may have created it meanwhile.
            exists = os.path.lexists(journal)
            if exists:
                conn = schema.connect(journal, writable=True)
                chain = Chain(load_key(key_file))
            else:
                chain = Chain(load_or_create_key(key_file))
                _create(journal, chain, format_wall(clock()))
                conn = schema.connect(journal, writable=True)
            journal_id, key_check = schema.read_identity(conn, journal)
            if not hmac.compare_digest(key_check, chain.key_check()):
                raise JournalError(
                    f"journal key {key_file} is not the key of journal {journal} (key id "
                    f"{key_id(chain.key_check())}, journal wants {key_id(key_check)}): name the "
                    "right key with --key"
                )
            opened = cls(
                path=journal,
                key_path=key_file,
                conn=conn,
                lock_fd=lock_fd,
                chain=chain,
                journal_id=journal_id,
                key_check=key_check,
                clock=clock,
                monotonic=monotonic,
            )
            opened._check_tail()
        except BaseException:
            if conn is not None:
                conn.close()
            if made_lock:
                # Ours, and still held: nobody else can be using it.
                with contextlib.suppress(OSError):
                    lock_path(journal).unlink()
            os.close(lock_fd)
            raise
        log.info("journal %s open at record %d (key id %s)", journal, opened._seq, opened.key_id)
        return opened

    def close(self) -> None:
        """Close the journal; idempotent. An open transaction is rolled back."""
        if self._conn is None:
            return
        checkpointer, self._checkpointer = self._checkpointer, None
        if checkpointer is not None:
            checkpointer.stop()
        if self._checkpoint_due:
            self.store_checkpoint()
        checkpoint_file, self._checkpoint_file = self._checkpoint_file, None
        if checkpoint_file is not None:
            checkpoint_file.close()
        conn, self._conn = self._conn, None
        try:
            conn.close()
        finally:
            os.close(self._lock_fd)

    @property
    def closed(self) -> bool:
        return self._conn is None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- appending ----------------------------------------------------------------------

    @property
    def last_seq(self) -> int:
        """The sequence number of the last committed record (0 for an empty journal)."""
        return self._seq

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group appends into one durable commit. On an exception nothing of the group is
        recorded and the exception propagates. Transactions do not nest."""
        conn = self._connection()
        if self._in_transaction:
            raise RuntimeError("journal transactions do not nest")
        if self._checkpoint_stale:
            self._store_checkpoint(retrying=True)
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise self._write_error(exc) from None
        self._in_transaction = True
        try:
            yield
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                raise self._write_error(exc) from None
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            self._pending_seq, self._pending_mac = self._seq, self._mac
            raise
        finally:
            self._in_transaction = False
        if self._pending_seq != self._seq:
            self._seq, self._mac = self._pending_seq, self._pending_mac
            if self._defer_checkpoints:
                self._checkpoint_due = True
            else:
                self._store_checkpoint(retrying=False)

    def defer_checkpoints(self) -> None:
        """From now on a commit leaves the checkpoint to :meth:`store_checkpoint` (and to
        :meth:`close`). The records are durable at the commit either way; a checkpoint a
        few commits behind is what a crash may leave anyway (the journal may be longer than
        its checkpoint, never shorter), so a service that acknowledges at the commit and
        stores the checkpoint when it is idle loses nothing, and takes the checkpoint's
        three disk flushes off the path from a card to its acknowledgement."""
        self._defer_checkpoints = True

    @property
    def checkpoint_due(self) -> bool:
        """Commits were made since the checkpoint was last stored (deferred mode)."""
        return self._checkpoint_due

    def store_checkpoint(self) -> None:
        """Bring the checkpoint up to the last commit if it is behind."""
        if self._checkpoint_due:
            self._checkpoint_due = False
            self._store_checkpoint(retrying=False)

    def store_checkpoint_later(self) -> None:
        """:meth:`store_checkpoint` on a thread of the journal's own (see
        :mod:`.checkpointer`): returns at once. A failure is logged and the next
        transaction retries first, as after a failed checkpoint at a commit."""
        if not self._checkpoint_due:
            return
        self._checkpoint_due = False
        if self._checkpointer is None:
            self._checkpointer = Checkpointer(self._write_checkpoint, self._checkpoint_failed)
        self._checkpointer.submit(Checkpoint(self._seq, self._mac))

    def reserve_checkpoint(self) -> None:
        """Open now what storing the checkpoint needs (its thread, its file's descriptors:
        :class:`~.checkpointer.CheckpointFile`), so that storing it later opens nothing: a
        service does this before it lets network clients in."""
        if self._checkpoint_file is None:
            self._checkpoint_file = CheckpointFile(self._checkpoint_path)
        if self._checkpointer is None:
            self._checkpointer = Checkpointer(self._write_checkpoint, self._checkpoint_failed)

    def settle_checkpoint(self, timeout: float | None = None) -> bool:
        """Wait until the checkpoints left with :meth:`store_checkpoint_later` are written;
        False on timeout."""
        checkpointer = self._checkpointer
        return checkpointer is None or checkpointer.settle(timeout)

    def append(
        self, kind: Kind | str, payload: Mapping[str, Any], round_id: str | None = None
    ) -> int:
        """Append one record; returns its sequence number.

        Inside :meth:`transaction` the record becomes durable when the transaction ends;
        outside one, it is committed (and durable) before this returns. A record that does
        not match its kind's documented shape raises ValueError (a bug in the caller).
        """
        return self.append_record(kind, payload, round_id).seq

    def append_record(
        self, kind: Kind | str, payload: Mapping[str, Any], round_id: str | None = None
    ) -> Record:
        """:meth:`append`, returning the record as stored (for publishing it once the
        transaction that holds it is committed)."""
        if not self._in_transaction:
            with self.transaction():
                return self.append_record(kind, payload, round_id)
        conn = self._connection()
        known = check_record(kind, payload, round_id)
        text = canonical_json(payload)
        seq = self._pending_seq + 1
        wall = format_wall(self._clock())
        mono_ns = to_nanoseconds(self._monotonic())
        fields = (seq, wall, mono_ns, round_id, known.value, text)
        mac = self._chain.record_mac(self._pending_mac, fields)
        try:
            conn.execute(_INSERT, (*fields, mac))
        except sqlite3.Error as exc:
            raise self._write_error(exc) from None
        self._pending_seq, self._pending_mac = seq, mac
        return Record(seq, wall, mono_ns, round_id, known.value, text, mac)

    @property
    def pending_seq(self) -> int:
        """The sequence number of the last record appended, committed or not."""
        return self._pending_seq

    def last_record(
        self, kind: Kind | str, *, after: int = 0, before: int | None = None
    ) -> Record | None:
        """The latest record of ``kind`` (committed, or appended in the open transaction),
        of those numbered above ``after`` and below ``before``.

        For the service's start-up: the last ``shoe_event`` of a shoe tells which of the
        events it sends again were journaled before the restart, though not yet
        acknowledged.
        """
        upper = _NO_SEQ_ABOVE if before is None else before
        try:
            row = (
                self._connection()
                .execute(
                    _SELECT + " WHERE kind = ? AND seq > ? AND seq < ? ORDER BY seq DESC LIMIT 1",
                    (Kind(kind).value, after, upper),
                )
                .fetchone()
            )
        except sqlite3.DatabaseError as exc:
            raise schema.damaged(self.path, exc) from None
        return None if row is None else Record(*row)

    def records_of(self, kind: Kind | str) -> list[Record]:
        """Every record of ``kind``, in journal order (for kinds with few records: the
        start-up reads the shoes that connected)."""
        try:
            rows = (
                self._connection()
                .execute(_SELECT + " WHERE kind = ? ORDER BY seq", (Kind(kind).value,))
                .fetchall()
            )
        except sqlite3.DatabaseError as exc:
            raise schema.damaged(self.path, exc) from None
        return [Record(*row) for row in rows]

    # -- recovery -------------------------------------------------------------------------

    def open_rounds(self) -> list[OpenRound]:
        """Rounds with a ``round_opened`` record and no ``round_ended`` record."""
        try:
            return find_open_rounds(self._connection())
        except sqlite3.DatabaseError as exc:
            raise schema.damaged(self.path, exc) from None

    def round_records(self, round_id: str) -> list[Record]:
        """Every record of round ``round_id``, in journal order (for the start-up after a
        stop or a crash: the procedure takes the round over from them)."""
        try:
            rows = (
                self._connection()
                .execute(_SELECT + " WHERE round_id = ? ORDER BY seq", (round_id,))
                .fetchall()
            )
        except sqlite3.DatabaseError as exc:
            raise schema.damaged(self.path, exc) from None
        return [Record(*row) for row in rows]

    # -- internals ------------------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError("the journal is closed")
        return self._conn

    def _write_error(self, exc: sqlite3.Error) -> JournalError:
        return JournalError(
            f"cannot write journal {self.path}: {exc}; check the disk and its free space "
            "(nothing of the failed transaction was recorded)"
        )

    def _store_checkpoint(self, *, retrying: bool) -> None:
        try:
            self._write_checkpoint(Checkpoint(self._seq, self._mac))
        except OSError as exc:
            if retrying:
                raise JournalError(
                    f"cannot write the journal checkpoint {self._checkpoint_path}: "
                    f"{exc.strerror or exc}; check the disk and its free space"
                ) from None
            self._checkpoint_failed(exc)
        else:
            self._checkpoint_stale = False

    def _write_checkpoint(self, point: Checkpoint) -> None:
        """Write ``point`` unless a newer one is written already (any thread)."""
        with self._checkpoint_lock:
            if point.seq < self._checkpoint_written:
                return
            held = self._checkpoint_file
            replace = replace_file if held is None else held.replace
            write_checkpoint(self._checkpoint_path, self._chain, self.journal_id, point, replace)
            self._checkpoint_written = point.seq

    def _checkpoint_failed(self, exc: OSError) -> None:
        # The records are durable: the commit stands, and the next transaction retries the
        # checkpoint first and refuses to go on without it.
        log.error("cannot write journal checkpoint %s: %s", self._checkpoint_path, exc)
        self._checkpoint_stale = True

    def _check_tail(self) -> None:
        """Verify the chain from the verified prefix to the end, compare the end with the
        checkpoint, and bring both marks up to date."""
        conn = self._connection()
        cp_path = self._checkpoint_path
        advice = (
            "keep the journal and its checkpoint for investigation (verify them for details) "
            "and start a new journal with --journal"
        )
        try:
            point = read_checkpoint(cp_path, self._chain, self.journal_id)
            prefix = read_verified(self._verified_path, self._chain, self.journal_id)
        except CheckpointInvalid as exc:
            raise JournalError(f"{exc}: {advice}") from None
        try:
            last = conn.execute("SELECT seq, mac FROM records ORDER BY seq DESC LIMIT 1").fetchone()
            last_seq = last[0] if last else 0
            if point is None:
                if last_seq:
                    raise JournalError(
                        f"the checkpoint {cp_path} of journal {self.path} is missing, so a "
                        "removed tail cannot be detected: restore it from the journal's backup "
                        f"or {advice}"
                    )
                point = Checkpoint(0, self._mac)
                self._store_checkpoint(retrying=True)
            if point.seq > last_seq:
                raise JournalError(
                    f"journal {self.path} ends at record {last_seq} but its checkpoint names "
                    f"record {point.seq}: records were removed; {advice}"
                )
            start = prefix if prefix is not None else Checkpoint(0, self._mac)
            if start.seq > point.seq:
                raise JournalError(
                    f"journal {self.path} was verified up to record {start.seq}, beyond its "
                    f"checkpoint at record {point.seq}: the checkpoint was replaced; {advice}"
                )
            self._seq, self._mac = self._verify_from(conn, start, point, advice)
        except sqlite3.DatabaseError as exc:
            raise schema.damaged(self.path, exc) from None
        self._pending_seq, self._pending_mac = self._seq, self._mac
        if self._seq != point.seq:
            log.info("journal checkpoint was at record %d, journal at %d", point.seq, self._seq)
            self._store_checkpoint(retrying=True)
        if prefix is None or prefix.seq != self._seq:
            try:
                write_verified(
                    self._verified_path,
                    self._chain,
                    self.journal_id,
                    Checkpoint(self._seq, self._mac),
                )
            except OSError as exc:
                raise unusable_location(self._verified_path, exc) from None

    def _verify_from(
        self, conn: sqlite3.Connection, start: Checkpoint, point: Checkpoint, advice: str
    ) -> tuple[int, bytes]:
        """Verify every record after ``start`` (a verified prefix, or the genesis) to the
        end, and that the chain passes through ``point``; returns the last record's seq and
        mac."""
        mismatch = JournalError(f"journal {self.path} does not match its checkpoint: {advice}")
        seq, previous = start.seq, start.mac
        if seq == 0:
            if not hmac.compare_digest(previous, self._chain.genesis(self.journal_id)):
                raise JournalError(f"journal {self.path} does not match its verified prefix")
        else:
            row = conn.execute("SELECT mac FROM records WHERE seq = ?", (seq,)).fetchone()
            stored = row[0] if row is not None else None
            if not isinstance(stored, bytes) or not hmac.compare_digest(stored, previous):
                raise JournalError(
                    f"journal {self.path} does not verify at record {seq}, which it was "
                    f"verified up to before: it was changed since; {advice}"
                )
        if point.seq == seq and not hmac.compare_digest(point.mac, previous):
            raise mismatch
        rows = conn.execute(
            "SELECT seq, wall, mono_ns, round_id, kind, payload, mac FROM records "
            "WHERE seq > ? ORDER BY seq",
            (seq,),
        )
        for row in rows:
            r_seq, r_mac = row[0], row[6]
            expected = self._chain.record_mac(previous, row[:6])
            if (
                r_seq != seq + 1
                or row[3] == ""
                or not isinstance(r_mac, bytes)
                or not hmac.compare_digest(expected, r_mac)
            ):
                raise JournalError(
                    f"journal {self.path} does not verify at record {seq + 1}: it was "
                    f"changed, and nothing will be appended to it; {advice}"
                )
            if r_seq == point.seq and not hmac.compare_digest(r_mac, point.mac):
                raise mismatch
            seq, previous = r_seq, r_mac
        return seq, previous


def _check_location(journal: Path) -> None:
    """Refuse a path that cannot be a journal before anything is created beside it."""
    if journal.is_dir():
        raise JournalError(
            f"{journal} is a directory, not a journal: give the journal file's path with --journal"
        )
    if os.path.lexists(journal) and not journal.is_file():
        raise JournalError(
            f"{journal} is not a journal (not a regular file); it was left untouched: choose "
            "another path with --journal"
        )


def _lock(journal: Path) -> tuple[int, bool]:
    """Hold the journal for this process: a second writer would fork the chain. Returns the
    lock's descriptor and whether this call created the lock file."""
    path = lock_path(journal)
    flags = os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW
    while True:
        made = True
        try:
            fd = os.open(path, flags | os.O_CREAT | os.O_EXCL, FILE_MODE)
        except FileExistsError:
            made = False
            try:
                fd = os.open(path, flags)
            except FileNotFoundError:
                continue  # removed meanwhile by a process that gave up: try again
            except OSError as exc:
                raise unusable_location(path, exc) from None
        except OSError as exc:
            raise unusable_location(path, exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise JournalError(
                f"journal {journal} is in use by another process: stop the other "
                "shoe-controller service, or give this one its own journal with --journal"
            ) from None
        # A process that failed to open the journal removes the lock file it made: if ours
        # is no longer the file at that path, lock the one that is.
        try:
            current = os.stat(path, follow_symlinks=False)
        except FileNotFoundError:
            os.close(fd)
            continue
        held = os.fstat(fd)
        if (held.st_dev, held.st_ino) != (current.st_dev, current.st_ino):
            os.close(fd)
            continue
        return fd, made


def _create(journal: Path, chain: Chain, created: str) -> None:
    """Create a journal atomically: build it under a temporary name, then link it into
    place, so that a crash never leaves a half-made file under the journal's name."""
    temp = journal.with_name(f".{journal.name}.new")
    try:
        temp.unlink(missing_ok=True)
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
        os.fchmod(fd, FILE_MODE)
        os.close(fd)
        schema.create_database(temp, chain.key_check(), created)
        fd = os.open(temp, os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.link(temp, journal)
        temp.unlink()
        fsync_directory(journal.parent)
    except OSError as exc:
        raise unusable_location(journal, exc) from None
    except sqlite3.Error as exc:
        raise JournalError(f"cannot create journal {journal}: {exc}") from None
    log.info("created journal %s", journal)
