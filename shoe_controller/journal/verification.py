"""Verify a journal: every record against the MAC chain, and the tail against the checkpoint.

Verification stops at the first record that does not fit and names it. What is wrong is told
from the evidence around that record:

- ``deleted``: sequence numbers jump, or the following records chain onto this one only with
  their numbers shifted up (records removed and the rest renumbered);
- ``inserted``: the genuine record with this number is found further on, and this one fits
  nowhere in the chain; or it is a record after the checkpointed end that does not verify;
- ``reordered``: the genuine record with this number is found further on, and this one is a
  genuine record from elsewhere in the chain;
- ``modified``: anything else that does not match its MAC, in particular a record whose
  successor still chains onto it (its fields changed, its MAC kept);
- ``truncated``: the journal ends before the record its checkpoint names;
- ``wrong_key``: the key is not the journal's (its key check value differs);
- ``checkpoint_missing`` / ``checkpoint_invalid``: the tail cannot be checked.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import os
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from shoe_controller.journal import schema
from shoe_controller.journal.chain import Chain, encode_record, key_id
from shoe_controller.journal.checkpoint import Checkpoint, CheckpointInvalid, read_checkpoint
from shoe_controller.journal.keys import load_key
from shoe_controller.journal.paths import checkpoint_path, default_key_path

Progress = Callable[[int, int], None]
_Row = tuple[Any, ...]

#: Records read past a bad one to tell what happened to it.
LOOKAHEAD: Final = 256
PROGRESS_EVERY: Final = 65536

_SELECT = "SELECT seq, wall, mono_ns, round_id, kind, payload, mac FROM records ORDER BY seq"


class Problem(enum.StrEnum):
    MODIFIED = "modified"
    DELETED = "deleted"
    INSERTED = "inserted"
    REORDERED = "reordered"
    TRUNCATED = "truncated"
    WRONG_KEY = "wrong_key"
    CHECKPOINT_MISSING = "checkpoint_missing"
    CHECKPOINT_INVALID = "checkpoint_invalid"


@dataclass(frozen=True, slots=True)
class VerifyReport:
    ok: bool
    #: Records whose MAC checked out, from the first.
    records: int
    #: The highest sequence number in the file (0 when empty).
    last_seq: int
    checkpoint_seq: int | None
    key_id: str
    first_bad_seq: int | None = None
    problem: Problem | None = None
    detail: str = ""

    def summary(self) -> str:
        """One line for people."""
        if self.ok:
            return (
                f"journal verified: {self.records} records, last {self.last_seq}, "
                f"checkpoint {self.checkpoint_seq}, key id {self.key_id}"
            )
        where = f" at record {self.first_bad_seq}" if self.first_bad_seq is not None else ""
        assert self.problem is not None
        return (
            f"journal FAILED verification{where}: {self.problem.value}: {self.detail} "
            f"({self.records} records verified before it)"
        )


def verify(
    path: str | os.PathLike[str],
    key_path: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
) -> VerifyReport:
    """Check the journal at ``path`` with its key (beside it unless ``key_path`` is given).

    A file that is not a journal, or a key that cannot be read, raises JournalError; every
    finding about the journal's content is in the report. ``progress(done, total)`` is
    called every :data:`PROGRESS_EVERY` records and at the end.
    """
    journal = Path(path)
    key_file = Path(key_path) if key_path is not None else default_key_path(journal)
    conn = schema.connect(journal, writable=False)
    try:
        key = load_key(key_file)
        return _Verifier(journal, conn, key, progress).run()
    except sqlite3.DatabaseError as exc:
        raise schema.damaged(journal, exc) from None
    finally:
        conn.close()


class _Verifier:
    def __init__(
        self, path: Path, conn: sqlite3.Connection, key: bytes, progress: Progress | None
    ) -> None:
        self.path = path
        self.conn = conn
        self.key = key
        self.chain = Chain(key)
        self.progress = progress
        self.journal_id, self.stored_key_check = schema.read_identity(conn, path)
        self.key_id = key_id(self.chain.key_check())
        self.genesis = self.chain.genesis(self.journal_id)

    def run(self) -> VerifyReport:
        # The checkpoint is read before the records: a writer updates it after committing,
        # so read in this order it never names a record our snapshot lacks.
        point: Checkpoint | None = None
        checkpoint_error = ""
        try:
            point = read_checkpoint(checkpoint_path(self.path), self.chain, self.journal_id)
        except CheckpointInvalid as exc:
            checkpoint_error = str(exc)
        self.conn.execute("BEGIN")
        try:
            return self._run(point, checkpoint_error)
        finally:
            self.conn.execute("COMMIT")

    def _report(
        self,
        records: int,
        last_seq: int,
        point: Checkpoint | None,
        *,
        ok: bool = False,
        **findings: Any,
    ) -> VerifyReport:
        return VerifyReport(
            ok=ok,
            records=records,
            last_seq=last_seq,
            checkpoint_seq=point.seq if point else None,
            key_id=self.key_id,
            **findings,
        )

    def _run(self, point: Checkpoint | None, checkpoint_error: str) -> VerifyReport:
        total, last_seq = self.conn.execute(
            "SELECT count(*), coalesce(max(seq), 0) FROM records"
        ).fetchone()
        wrong_key = self._key_problem(last_seq, point)
        if wrong_key is not None:
            return wrong_key
        walked = self._walk(total, last_seq, point)
        if isinstance(walked, VerifyReport):
            return walked
        checked, point_mac_seen = walked
        return self._judge_checkpoint(checked, last_seq, point, checkpoint_error, point_mac_seen)

    def _key_problem(self, last_seq: int, point: Checkpoint | None) -> VerifyReport | None:
        """A report when the key given is not the journal's, or its check value changed."""
        if hmac.compare_digest(self.stored_key_check, self.chain.key_check()):
            return None
        first = self.conn.execute(_SELECT + " LIMIT 1").fetchone()
        if first is None or not self._fits(first, self.genesis, 1):
            return self._report(
                0,
                last_seq,
                point,
                problem=Problem.WRONG_KEY,
                detail=f"key id {self.key_id} is not this journal's key "
                f"({key_id(self.stored_key_check)}): use the key it was written with",
            )
        return self._report(
            0,
            last_seq,
            point,
            problem=Problem.MODIFIED,
            detail="the key check value in the journal's meta table was changed",
        )

    def _walk(
        self, total: int, last_seq: int, point: Checkpoint | None
    ) -> VerifyReport | tuple[int, bytes | None]:
        """Check every record's number and MAC in order: a report at the first bad one,
        else how many were checked and the MAC of the checkpointed record."""
        cursor = self.conn.execute(_SELECT)
        prepared = hmac.new(self.key, digestmod=hashlib.sha256)
        copy = prepared.copy
        progress = self.progress
        previous = self.genesis
        expected = 1
        point_seq = point.seq if point else -1
        point_mac_seen: bytes | None = None
        for row in cursor:
            seq, round_id, mac = row[0], row[3], row[6]
            h = copy()
            h.update(previous)
            h.update(encode_record(row[:6]))
            # An empty round id would encode like an absent one; the writer never stores it.
            # (A plain comparison: no secret is at stake, and a stored MAC of the wrong type
            # must read as a mismatch, not raise.)
            if seq != expected or round_id == "" or h.digest() != mac:
                first_bad, problem, detail = self._diagnose(previous, expected, row, cursor, point)
                return self._report(
                    expected - 1,
                    last_seq,
                    point,
                    first_bad_seq=first_bad,
                    problem=problem,
                    detail=detail,
                )
            if seq == point_seq:
                point_mac_seen = mac
            previous = mac
            if progress is not None and expected % PROGRESS_EVERY == 0:
                progress(expected, total)
            expected += 1
        checked = expected - 1
        if progress is not None and (checked == 0 or checked % PROGRESS_EVERY):
            progress(checked, total)
        return checked, point_mac_seen

    def _judge_checkpoint(
        self,
        checked: int,
        last_seq: int,
        point: Checkpoint | None,
        checkpoint_error: str,
        point_mac_seen: bytes | None,
    ) -> VerifyReport:
        """The whole chain holds: does the checkpoint agree with it?"""
        if checkpoint_error:
            return self._report(
                checked,
                last_seq,
                point,
                problem=Problem.CHECKPOINT_INVALID,
                detail=f"{checkpoint_error}; a removed tail cannot be ruled out",
            )
        if point is None:
            if checked == 0:
                return self._report(0, 0, point, ok=True)
            return self._report(
                checked,
                last_seq,
                point,
                problem=Problem.CHECKPOINT_MISSING,
                detail=f"{checkpoint_path(self.path)} is missing; a removed tail cannot be "
                "ruled out: restore it from the journal's backup",
            )
        if point.seq > checked:
            return self._report(
                checked,
                last_seq,
                point,
                first_bad_seq=checked + 1,
                problem=Problem.TRUNCATED,
                detail=f"the journal ends at record {checked} but its checkpoint names record "
                f"{point.seq}: records {checked + 1}..{point.seq} were removed",
            )
        seen = self.genesis if point.seq == 0 else point_mac_seen
        if seen is None or not hmac.compare_digest(seen, point.mac):
            return self._report(
                checked,
                last_seq,
                point,
                problem=Problem.CHECKPOINT_INVALID,
                detail=f"the checkpoint does not match record {point.seq}",
            )
        return self._report(checked, last_seq, point, ok=True)

    # -- diagnosis of the first bad record -------------------------------------------------

    def _fits(self, row: _Row, previous: object, seq: int) -> bool:
        """Whether ``row``'s MAC is that of its fields numbered ``seq`` after ``previous``."""
        mac = row[6]
        if not isinstance(mac, bytes) or not isinstance(previous, bytes):
            return False
        expected = self.chain.record_mac(previous, (seq, *row[1:6]))
        return hmac.compare_digest(expected, mac)

    def _diagnose(
        self,
        previous: bytes,
        expected: int,
        row: _Row,
        cursor: sqlite3.Cursor,
        point: Checkpoint | None,
    ) -> tuple[int, Problem, str]:
        seq = row[0]
        if seq != expected:
            return (
                expected,
                Problem.DELETED,
                f"records {expected}..{seq - 1} are missing (the next record is {seq})",
            )
        ahead: Sequence[_Row] = cursor.fetchmany(LOOKAHEAD)
        for i, candidate in enumerate(ahead):
            if self._fits(candidate, previous, expected):
                return self._misplaced(previous, expected, row, ahead, i)
        if ahead:
            following = ahead[0]
            for shift in range(LOOKAHEAD + 1):
                if self._fits(following, row[6], following[0] + shift):
                    if shift == 0:
                        break
                    return (
                        expected,
                        Problem.DELETED,
                        f"{shift} record(s) were removed here and the following ones renumbered",
                    )
        elif point is not None and seq > point.seq:
            return (
                expected,
                Problem.INSERTED,
                f"record {seq}, after the checkpointed end ({point.seq}), does not match its "
                "MAC: it was added without the key",
            )
        return expected, Problem.MODIFIED, f"record {seq} does not match its MAC"

    def _misplaced(
        self, previous: bytes, expected: int, row: _Row, ahead: Sequence[_Row], found: int
    ) -> tuple[int, Problem, str]:
        """The genuine record ``expected`` sits at ``ahead[found]``: tell a reordering (this
        row is a genuine record from elsewhere) from an insertion (it fits nowhere)."""
        genuine = ahead[found]
        candidates = [(previous, expected), (genuine[6], expected + 1)]
        candidates += [(r[6], r[0] + 1) for i, r in enumerate(ahead) if i != found]
        for before, number in candidates:
            if self._fits(row, before, number):
                return (
                    expected,
                    Problem.REORDERED,
                    f"record {expected} was moved to position {genuine[0]} and record "
                    f"{number} to position {expected}",
                )
        inserted = genuine[0] - expected
        return (
            expected,
            Problem.INSERTED,
            f"{inserted} record(s) that fit nowhere in the chain were inserted before "
            f"record {expected}, which is now at position {genuine[0]}",
        )
