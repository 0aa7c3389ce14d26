"""Appending: sequence numbers, group commit, rollback, the single writer, write failures."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from shoe_controller.errors import JournalError
from shoe_controller.journal import Journal, Kind, verify
from shoe_controller.journal import checkpoint as checkpoint_module
from shoe_controller.journal import writer as writer_module
from tests.journal.helpers import FakeClock, fill, open_journal, rows


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "journal.sqlite3"


def test_records_hold_what_was_appended(path: Path) -> None:
    clock = FakeClock(wall=1_746_130_000.0, mono=12.5)
    with open_journal(path, clock) as journal:
        seq = journal.append(Kind.LINK, {"state": "up", "detail": "sim://"})
        assert seq == 1
        assert journal.last_seq == 1
    [(seq, wall, mono_ns, round_id, kind, payload, mac)] = rows(path, "SELECT * FROM records")
    assert (seq, round_id, kind) == (1, None, "link")
    # The clocks advanced by 0.25 s once each for this record (the wall clock also once at
    # creation, for the meta table).
    assert wall == "2025-05-01T20:06:40.500000Z"
    assert mono_ns == 12_750_000_000
    assert payload == '{"detail":"sim://","state":"up"}'
    assert isinstance(mac, bytes) and len(mac) == 32


@pytest.mark.rule("E3")
def test_a_group_is_one_commit_and_invisible_until_it_ends(path: Path) -> None:
    with open_journal(path) as journal:
        statements: list[str] = []
        journal._connection().set_trace_callback(statements.append)
        with journal.transaction():
            seqs = [
                journal.append(Kind.SHOE_EVENT, {"seq": n, "message": {"type": "Jam"}})
                for n in range(1, 6)
            ]
            assert rows(path, "SELECT count(*) FROM records") == [(0,)]
            assert journal.last_seq == 0
        assert seqs == [1, 2, 3, 4, 5]
        assert rows(path, "SELECT count(*) FROM records") == [(5,)]
        assert journal.last_seq == 5
        assert statements.count("COMMIT") == 1
        assert sum(s.startswith("INSERT") for s in statements) == 5


def test_the_writer_syncs_every_commit(path: Path) -> None:
    with open_journal(path) as journal:
        conn = journal._connection()
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL


@pytest.mark.rule("E3")
def test_an_append_outside_a_group_is_committed_before_it_returns(path: Path) -> None:
    with open_journal(path) as journal:
        journal.append(Kind.INPUT, {"by": "croupier", "name": "no_more_bets"})
        assert rows(path, "SELECT seq, kind FROM records") == [(1, "input")]


def test_an_exception_rolls_the_whole_group_back(path: Path) -> None:
    with open_journal(path) as journal:
        fill(journal, 2)
        with pytest.raises(KeyError), journal.transaction():
            journal.append(Kind.INPUT, {"by": "croupier", "name": "a"})
            journal.append(Kind.INPUT, {"by": "croupier", "name": "b"})
            raise KeyError("the procedure refused the batch")
        assert journal.last_seq == 2
        assert journal.append(Kind.INPUT, {"by": "croupier", "name": "c"}) == 3
    assert rows(path, "SELECT seq FROM records") == [(1,), (2,), (3,)]
    assert verify(path).ok


def test_a_malformed_record_is_refused_and_nothing_of_its_group_kept(path: Path) -> None:
    with open_journal(path) as journal:
        with pytest.raises(ValueError, match="card payload lacks"), journal.transaction():
            journal.append(Kind.INPUT, {"by": "croupier", "name": "a"})
            journal.append(Kind.CARD, {"index": 1, "position": 3}, "r1")
        with pytest.raises(ValueError, match="not a journal record kind"):
            journal.append("gossip", {})
        with pytest.raises(ValueError, match="belongs to a round"):
            journal.append(Kind.STUB_COUNTED, {"count": 4, "source": "shoe"})
        with pytest.raises(ValueError, match="not plain JSON"):
            journal.append(Kind.INPUT, {"by": "croupier", "name": "x", "args": b"\x00"})
        assert journal.last_seq == 0
    assert rows(path, "SELECT count(*) FROM records") == [(0,)]


def test_transactions_do_not_nest(path: Path) -> None:
    with (
        open_journal(path) as journal,
        journal.transaction(),
        pytest.raises(RuntimeError, match="nest"),
        journal.transaction(),
    ):
        pass


def test_reopening_continues_the_chain(path: Path) -> None:
    with open_journal(path) as journal:
        fill(journal, 3)
    with open_journal(path) as journal:
        assert journal.last_seq == 3
        assert journal.append(Kind.INPUT, {"by": "attendant", "name": "clear"}) == 4
    report = verify(path)
    assert report.ok and report.records == 4


def test_records_cannot_be_changed_or_removed_through_sqlite(path: Path) -> None:
    with open_journal(path) as journal:
        fill(journal, 2)
    conn = sqlite3.connect(path)
    try:
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("UPDATE records SET payload = '{}' WHERE seq = 1")
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("DELETE FROM records WHERE seq = 2")
    finally:
        conn.close()


def test_a_second_writer_is_refused(path: Path) -> None:
    with open_journal(path), pytest.raises(JournalError, match="in use by another process"):
        Journal.open(path)
    Journal.open(path).close()


def test_a_closed_journal_refuses_work_and_closes_twice(path: Path) -> None:
    journal = open_journal(path)
    journal.close()
    journal.close()
    assert journal.closed
    with pytest.raises(RuntimeError, match="closed"):
        journal.append(Kind.INPUT, {"by": "croupier", "name": "x"})


def test_the_checkpoint_follows_every_commit(path: Path) -> None:
    with open_journal(path) as journal:
        for expected in (1, 3, 6):
            fill(journal, expected - journal.last_seq)
            document = json.loads(path.with_suffix(".checkpoint").read_text())
            assert document["seq"] == expected
            assert (
                bytes.fromhex(document["mac"])
                == rows(path, "SELECT mac FROM records WHERE seq = ?", expected)[0][0]
            )


def checkpoint_seq(path: Path) -> int:
    return int(json.loads(path.with_suffix(".checkpoint").read_text())["seq"])


@pytest.mark.rule("E3")
def test_a_deferred_checkpoint_waits_for_its_store_and_a_lagging_one_opens(
    path: Path,
) -> None:
    with open_journal(path) as journal:
        fill(journal, 2)
        journal.defer_checkpoints()
        fill(journal, 3)
        # The records are committed; the checkpoint still names the last stored one.
        assert journal.last_seq == 5 and journal.checkpoint_due
        assert checkpoint_seq(path) == 2
        journal.store_checkpoint()
        assert checkpoint_seq(path) == 5 and not journal.checkpoint_due
        fill(journal, 1)
    # Closing stores what is due.
    assert checkpoint_seq(path) == 6
    # A crash between a commit and the store leaves the checkpoint behind the journal:
    # the journal opens, verifies, and the checkpoint is brought up to date.
    with open_journal(path) as journal:
        journal.defer_checkpoints()
        fill(journal, 2)
        journal._checkpoint_due = False  # the process dies before storing it
    assert checkpoint_seq(path) == 6
    with open_journal(path) as journal:
        assert journal.last_seq == 8
    assert checkpoint_seq(path) == 8
    assert verify(path).ok


@pytest.mark.rule("E3")
def test_a_checkpoint_stored_later_is_written_by_its_own_thread(path: Path) -> None:
    with open_journal(path) as journal:
        fill(journal, 2)
        journal.defer_checkpoints()
        fill(journal, 3)
        journal.store_checkpoint_later()
        assert not journal.checkpoint_due  # left with the thread: the caller goes on
        assert journal.settle_checkpoint(10.0)
        assert checkpoint_seq(path) == 5
        fill(journal, 1)
        journal.store_checkpoint_later()
        fill(journal, 1)
    # Closing writes what the thread holds, then what is due.
    assert checkpoint_seq(path) == 7
    assert verify(path).ok


def test_a_checkpoint_that_fails_on_its_thread_is_retried_before_the_next_group(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full_disk(*args: object) -> None:
        raise OSError(28, "No space left on device")

    with open_journal(path) as journal:
        journal.defer_checkpoints()
        fill(journal, 2)
        real_write = writer_module.write_checkpoint
        monkeypatch.setattr(writer_module, "write_checkpoint", full_disk)
        journal.store_checkpoint_later()
        assert journal.settle_checkpoint(10.0)
        with pytest.raises(JournalError, match="cannot write the journal checkpoint"):
            fill(journal, 1)  # refused: the checkpoint must be stored first
        monkeypatch.setattr(writer_module, "write_checkpoint", real_write)
        fill(journal, 1)
        assert checkpoint_seq(path) == 2  # stored before the group, as the retry
    assert checkpoint_seq(path) == 3


def test_a_full_disk_fails_the_group_and_loses_nothing_committed(path: Path) -> None:
    with open_journal(path) as journal:
        fill(journal, 2)
        conn = journal._connection()
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
        with pytest.raises(JournalError, match=r"cannot write journal .*full"):
            fill(journal, 500)
        assert journal.last_seq == 2
        conn.execute("PRAGMA max_page_count = 1000000")
        fill(journal, 1)
        assert journal.last_seq == 3
    assert verify(path).ok


def test_a_failed_checkpoint_keeps_the_commit_and_blocks_the_next_group(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = checkpoint_module.write_checkpoint
    failures = iter([True, True])

    def flaky(*args: object, **kwargs: object) -> None:
        if next(failures, False):
            raise OSError(28, "No space left on device")
        real(*args, **kwargs)  # type: ignore[arg-type]

    with open_journal(path) as journal:
        fill(journal, 1)
        monkeypatch.setattr(writer_module, "write_checkpoint", flaky)
        fill(journal, 1)  # committed: durable, so this must not raise
        assert journal.last_seq == 2
        with pytest.raises(JournalError, match="cannot write the journal checkpoint"):
            fill(journal, 1)
        fill(journal, 1)  # the checkpoint is written again first, then the group
        assert journal.last_seq == 3
    assert verify(path).ok


def test_the_last_record_of_a_kind(path: Path) -> None:
    with open_journal(path) as journal:
        assert journal.last_record(Kind.SHOE_EVENT) is None
        with journal.transaction():
            for n in (7, 8, 9):
                journal.append(Kind.SHOE_EVENT, {"seq": n, "message": {"type": "Jam"}})
            journal.append(Kind.LINK, {"state": "down"})
            last = journal.last_record(Kind.SHOE_EVENT)
        assert last is not None
        assert (last.seq, last.kind, last.round_id) == (3, "shoe_event", None)
        assert last.payload_object() == {"seq": 9, "message": {"type": "Jam"}}
    with open_journal(path) as journal:
        assert journal.last_record("shoe_event") == last


def test_the_last_record_of_a_kind_between_two_records_and_every_record_of_a_kind(
    path: Path,
) -> None:
    with open_journal(path) as journal:
        for kind in ("link", "shoe_event", "shoe_event", "link", "shoe_event", "link"):
            payload = (
                {"state": "down"} if kind == "link" else {"seq": 1, "message": {"type": "Jam"}}
            )
            journal.append(Kind(kind), payload)
        assert [r.seq for r in journal.records_of(Kind.LINK)] == [1, 4, 6]
        assert journal.records_of(Kind.CARD) == []
        between = journal.last_record(Kind.SHOE_EVENT, after=1, before=4)
        assert between is not None and between.seq == 3
        after = journal.last_record(Kind.SHOE_EVENT, after=4)
        assert after is not None and after.seq == 5
        assert journal.last_record(Kind.SHOE_EVENT, after=5) is None
        assert journal.last_record(Kind.SHOE_EVENT, before=2) is None
