"""Files that are not journals, or no longer readable ones: a clear error, never a write."""

from __future__ import annotations

import hashlib
import io
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from shoe_controller.errors import ExitCode, JournalError
from shoe_controller.journal import Journal, export, verify
from shoe_controller.journal.schema import SCHEMA_VERSION
from tests.journal.helpers import fill, open_journal


def fingerprint(directory: Path) -> dict[str, tuple[str, int]]:
    return {
        p.name: (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(directory.iterdir())
        if p.is_file()
    }


def open_for_writing(path: Path) -> None:
    Journal.open(path).close()


def verify_it(path: Path) -> None:
    verify(path)


def export_it(path: Path) -> None:
    export(path, io.StringIO())


OPENERS: list[Callable[[Path], None]] = [open_for_writing, verify_it, export_it]


def make_foreign(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE songs (title TEXT)")
    conn.execute("INSERT INTO songs VALUES ('Lamento borincano')")
    conn.commit()
    conn.close()


def make_garbage(path: Path) -> None:
    path.write_bytes(b"PK\x03\x04 not a database at all" * 100)


def make_empty(path: Path) -> None:
    path.write_bytes(b"")


def make_impostor(path: Path) -> None:
    """An SQLite file with our application id but no journal inside."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA application_id = 1397247813")
    conn.execute("CREATE TABLE other (x)")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("opener", OPENERS, ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    ("make", "message"),
    [
        (make_foreign, "an SQLite database of another application, not a journal"),
        (make_impostor, "an SQLite database of another application, not a journal"),
        (make_garbage, r"not a journal \(not an SQLite database\)"),
        (make_empty, r"not a journal \(not an SQLite database\)"),
    ],
    ids=["foreign", "impostor", "garbage", "empty"],
)
def test_a_file_that_is_not_a_journal_is_refused_and_left_untouched(
    tmp_path: Path,
    make: Callable[[Path], None],
    message: str,
    opener: Callable[[Path], None],
) -> None:
    path = tmp_path / "journal.sqlite3"
    make(path)
    (tmp_path / "journal.key").write_text("00" * 32)
    before = fingerprint(tmp_path)
    with pytest.raises(JournalError, match=message) as caught:
        opener(path)
    assert "\n" not in str(caught.value)
    assert caught.value.exit_code is ExitCode.JOURNAL
    after = fingerprint(tmp_path)
    after.pop("journal.lock", None)
    assert after == before


@pytest.mark.parametrize("opener", OPENERS, ids=lambda f: f.__name__)
def test_a_journal_from_a_newer_release_is_refused(
    tmp_path: Path, opener: Callable[[Path], None]
) -> None:
    path = tmp_path / "journal.sqlite3"
    with open_journal(path) as journal:
        fill(journal, 2)
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    before = fingerprint(tmp_path)
    with pytest.raises(JournalError, match="newer than this program's"):
        opener(path)
    assert fingerprint(tmp_path)["journal.sqlite3"] == before["journal.sqlite3"]


def test_a_directory_in_place_of_the_journal_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    path.mkdir()
    with pytest.raises(JournalError, match="is a directory, not a journal"):
        Journal.open(path)


def test_a_damaged_journal_is_reported_not_repaired(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    with open_journal(path) as journal:
        fill(journal, 3000)
    data = bytearray(path.read_bytes())
    page = 4096
    assert len(data) > 20 * page
    # Wipe a page of the records table in the middle of the file.
    data[10 * page : 11 * page] = b"\xa5" * page
    path.write_bytes(bytes(data))
    before = fingerprint(tmp_path)
    with pytest.raises(JournalError, match=r"is damaged .*restore the journal from a backup"):
        verify(path)
    assert fingerprint(tmp_path)["journal.sqlite3"] == before["journal.sqlite3"]


@pytest.mark.parametrize("opener", [open_for_writing, verify_it], ids=lambda f: f.__name__)
def test_a_journal_without_its_identity_is_refused(
    tmp_path: Path, opener: Callable[[Path], None]
) -> None:
    path = tmp_path / "journal.sqlite3"
    with open_journal(path) as journal:
        fill(journal, 2)
    conn = sqlite3.connect(path)
    conn.execute("DELETE FROM meta WHERE name = 'key_check'")
    conn.commit()
    conn.close()
    with pytest.raises(JournalError, match="incomplete meta table"):
        opener(path)
