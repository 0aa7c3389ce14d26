"""Opening a journal for appending: the whole chain is verified (from the verified prefix
on), a damaged journal is never appended to, and a refused path is left as it was found,
with no lock file beside it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from shoe_controller.errors import JournalError
from shoe_controller.journal import Journal
from shoe_controller.journal.chain import Chain
from shoe_controller.journal.paths import lock_path, verified_path
from tests.journal.helpers import fill, open_journal, rows, tamper


@pytest.fixture
def path(tmp_path: Path) -> Path:
    path = tmp_path / "journal.sqlite3"
    with open_journal(path) as journal:
        fill(journal, 40)
    return path


class MacCounter:
    """Counts the record MACs computed while opening."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        original = Chain.record_mac

        def counting(chain: Chain, previous: bytes, fields: tuple[object, ...]) -> bytes:
            self.calls += 1
            return original(chain, previous, fields)

        monkeypatch.setattr(Chain, "record_mac", counting)


def _count(path: Path) -> int:
    return int(rows(path, "SELECT count(*) FROM records")[0][0])


@pytest.mark.rule("E3")
def test_a_journal_changed_in_its_middle_is_never_appended_to(path: Path) -> None:
    tamper(path, 'UPDATE records SET payload = \'{"by":"x","name":"y"}\' WHERE seq = 5')
    with pytest.raises(JournalError, match=r"does not verify at record 5: it was changed"):
        open_journal(path)
    assert _count(path) == 40


def test_a_change_after_the_verified_prefix_is_found(path: Path) -> None:
    open_journal(path).close()  # verified up to 40
    with open_journal(path) as journal:
        fill(journal, 10)
    tamper(path, "UPDATE records SET round_id = 'r-9' WHERE seq = 45")
    with pytest.raises(JournalError, match=r"does not verify at record 45"):
        open_journal(path)


def test_a_changed_last_verified_record_is_found(path: Path) -> None:
    open_journal(path).close()
    assert json.loads(verified_path(path).read_text())["seq"] == 40
    tamper(path, f"UPDATE records SET mac = X'{os.urandom(32).hex()}' WHERE seq = 40")
    with pytest.raises(JournalError, match=r"record 40, which it was verified up to before"):
        open_journal(path)


def test_the_first_opening_verifies_every_record(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    verified_path(path).unlink()  # as a journal written before verified prefixes existed
    counter = MacCounter(monkeypatch)
    open_journal(path).close()
    assert counter.calls == 40
    assert json.loads(verified_path(path).read_text())["seq"] == 40


def test_later_openings_verify_only_the_records_after_the_prefix(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    open_journal(path).close()
    with open_journal(path) as journal:
        fill(journal, 5)
    counter = MacCounter(monkeypatch)
    open_journal(path).close()
    assert counter.calls == 5
    counter.calls = 0
    open_journal(path).close()
    assert counter.calls == 0


def test_a_forged_verified_prefix_is_refused(path: Path) -> None:
    open_journal(path).close()
    document = json.loads(verified_path(path).read_text())
    document["seq"] = 10
    verified_path(path).write_text(json.dumps(document))
    with pytest.raises(JournalError, match=r"verified prefix .* does not match its MAC"):
        open_journal(path)


def test_a_verified_prefix_beyond_the_checkpoint_is_refused(path: Path) -> None:
    checkpoint = path.with_suffix(".checkpoint")
    old = checkpoint.read_bytes()
    with open_journal(path) as journal:
        fill(journal, 3)
    open_journal(path).close()  # verified up to 43
    checkpoint.write_bytes(old)  # an older checkpoint put back
    with pytest.raises(JournalError, match=r"verified up to record 43, beyond its checkpoint"):
        open_journal(path)


# -- nothing left beside a refused path ---------------------------------------------------


def test_a_directory_is_refused_without_a_lock_file(tmp_path: Path) -> None:
    target = tmp_path / "tmp"
    target.mkdir()
    with pytest.raises(JournalError, match=r"is a directory, not a journal"):
        Journal.open(target)
    assert not lock_path(target).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmp"]


def test_a_file_that_is_not_a_journal_leaves_no_lock_file(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a journal\n")
    with pytest.raises(JournalError, match=r"not a journal \(not an SQLite database\)"):
        Journal.open(notes)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    assert notes.read_text() == "not a journal\n"


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "journal.sqlite3"
    os.mkfifo(fifo)
    with pytest.raises(JournalError, match=r"not a regular file"):
        Journal.open(fifo)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["journal.sqlite3"]


def test_a_refused_second_writer_keeps_the_first_ones_lock(path: Path) -> None:
    with open_journal(path):
        with pytest.raises(JournalError, match="in use by another process"):
            open_journal(path)
        assert lock_path(path).exists()
