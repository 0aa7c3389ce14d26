"""Where the journal lives, the modes of its files, and its key."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from shoe_controller.errors import JournalError
from shoe_controller.journal import Journal, default_journal_path, default_key_path
from shoe_controller.journal.chain import Chain
from shoe_controller.journal.paths import checkpoint_path, lock_path
from tests.journal.helpers import fill, open_journal, rows


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    value: int = request.param
    old = os.umask(value)
    try:
        yield value
    finally:
        os.umask(old)


def test_the_service_keeps_its_journal_in_its_state_directory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("STATE_DIRECTORY", raising=False)
    assert default_journal_path(service=True) == Path("/var/lib/shoe-controller/journal.sqlite3")
    monkeypatch.setenv("STATE_DIRECTORY", "/srv/state/shoe:/srv/other")
    assert default_journal_path(service=True) == Path("/srv/state/shoe/journal.sqlite3")


def test_a_user_keeps_the_journal_in_their_data_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    expected = tmp_path / ".local/share/shoe-controller/journal.sqlite3"
    assert default_journal_path(service=False) == expected
    # The XDG specification says a relative path is invalid and must be ignored.
    monkeypatch.setenv("XDG_DATA_HOME", "relative/data")
    assert default_journal_path(service=False) == expected
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert default_journal_path(service=False) == tmp_path / "data/shoe-controller/journal.sqlite3"
    assert default_key_path(expected) == expected.with_name("journal.key")


@pytest.mark.parametrize("umask", [0o000, 0o022], indirect=True)
def test_every_file_is_owner_only_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    directory = tmp_path / "new" / "state"
    path = directory / "journal.sqlite3"
    with open_journal(path) as journal:
        fill(journal, 3)
        wal = path.with_name(path.name + "-wal")
        shm = path.with_name(path.name + "-shm")
        assert wal.exists() and shm.exists()
        files = [path, default_key_path(path), checkpoint_path(path), lock_path(path), wal, shm]
        assert {f.name: mode(f) for f in files} == {f.name: 0o600 for f in files}
    assert mode(directory) == 0o700


def test_an_existing_directory_keeps_its_mode(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    open_journal(tmp_path / "journal.sqlite3").close()
    assert mode(tmp_path) == 0o755


def test_the_key_is_created_once_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    open_journal(path).close()
    key_file = default_key_path(path)
    text = key_file.read_text()
    assert len(text) == 65 and text.endswith("\n")
    bytes.fromhex(text)
    with open_journal(path) as journal:
        fill(journal, 1)
    assert key_file.read_text() == text


def test_a_new_journal_uses_the_key_already_there(tmp_path: Path) -> None:
    key = bytes(range(32))
    key_file = tmp_path / "box.key"
    key_file.write_text(key.hex() + "\n")
    key_file.chmod(0o600)
    with Journal.open(tmp_path / "journal.sqlite3", key_file) as journal:
        assert journal.key_path == key_file
    [(check,)] = rows(
        tmp_path / "journal.sqlite3", "SELECT value FROM meta WHERE name = ?", "key_check"
    )
    assert check == Chain(key).key_check().hex()
    assert not default_key_path(tmp_path / "journal.sqlite3").exists()


def test_an_existing_journal_never_gets_a_new_key(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    open_journal(path).close()
    default_key_path(path).unlink()
    with pytest.raises(JournalError, match=r"journal key .*journal\.key not found: restore it"):
        Journal.open(path)
    assert not default_key_path(path).exists()


def test_the_writer_refuses_a_key_that_is_not_the_journals(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    open_journal(path).close()
    other = tmp_path / "other.key"
    other.write_text(os.urandom(32).hex())
    with pytest.raises(JournalError, match="is not the key of journal"):
        Journal.open(path, other)


def test_a_file_that_is_not_a_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    open_journal(path).close()
    default_key_path(path).write_text("correct horse battery staple\n")
    with pytest.raises(JournalError, match=r"is not a journal key \(expected 64 hex digits\)"):
        Journal.open(path)


def test_an_unreadable_key_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    open_journal(path).close()
    key_file = default_key_path(path)
    key_file.unlink()
    key_file.mkdir()
    with pytest.raises(JournalError, match=r"journal.key is not a journal key: it is a directory"):
        Journal.open(path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_a_key_without_read_permission_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    open_journal(path).close()
    default_key_path(path).chmod(0)
    with pytest.raises(JournalError, match=r"cannot read journal key .*Permission denied"):
        Journal.open(path)


def test_a_key_others_can_read_is_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "journal.sqlite3"
    open_journal(path).close()
    default_key_path(path).chmod(0o644)
    with caplog.at_level(logging.WARNING, "shoe_controller.journal"):
        open_journal(path).close()
    assert "other accounts can read it" in caplog.text and "chmod 600" in caplog.text


def test_a_location_that_cannot_be_a_directory_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "state").write_text("a file where the directory should be")
    path = tmp_path / "state" / "journal.sqlite3"
    with pytest.raises(JournalError, match=r"cannot use journal location .*state.*--journal"):
        Journal.open(path)


def test_a_location_without_permission_names_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: Path, *args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "mkdir", refuse)
    path = tmp_path / "var" / "lib" / "shoe-controller" / "journal.sqlite3"
    with pytest.raises(JournalError) as caught:
        Journal.open(path)
    message = str(caught.value)
    assert "\n" not in message
    assert str(path.parent) in message
    assert "Permission denied" in message
    assert "StateDirectory=" in message and "--journal" in message


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_a_read_only_directory_is_a_clear_error(tmp_path: Path) -> None:
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(JournalError, match=r"Permission denied.*StateDirectory="):
            Journal.open(tmp_path / "journal.sqlite3")
    finally:
        tmp_path.chmod(0o700)


def test_a_missing_journal_is_not_created_when_told_not_to(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    with pytest.raises(JournalError, match="no journal at"):
        Journal.open(path, create=False)
    assert list(tmp_path.iterdir()) == []


def test_a_creation_cut_short_leaves_nothing_in_the_way(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    # What a process killed while building the journal leaves: a half-made temporary file.
    (tmp_path / ".journal.sqlite3.new").write_bytes(b"SQLite format 3\x00half")
    (tmp_path / ".journal.key.new").write_bytes(b"0123")
    with open_journal(path) as journal:
        fill(journal, 1)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
