"""The schema: recognised, versioned, upgraded by the writer only."""

from __future__ import annotations

from pathlib import Path

import pytest

from shoe_controller.journal import schema, verify
from tests.journal.helpers import fill, open_journal, rows


def test_a_journal_names_its_application_and_version(tmp_path: Path) -> None:
    path = tmp_path / "journal.sqlite3"
    open_journal(path).close()
    assert rows(path, "PRAGMA application_id") == [(schema.APPLICATION_ID,)]
    assert rows(path, "PRAGMA user_version") == [(schema.SCHEMA_VERSION,)]
    meta = dict(rows(path, "SELECT name, value FROM meta"))
    assert meta["application"] == "shoe-controller journal"
    assert len(meta["journal_id"]) == 32 and len(meta["key_check"]) == 64
    assert meta["created"].endswith("Z")


def test_an_older_journal_is_upgraded_by_the_writer_and_read_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "journal.sqlite3"
    with open_journal(path) as journal:
        fill(journal, 3)
    version = schema.SCHEMA_VERSION
    notes = ("CREATE TABLE notes (seq INTEGER NOT NULL, text TEXT NOT NULL)",)
    monkeypatch.setattr(schema, "MIGRATIONS", (*schema.MIGRATIONS, notes))
    monkeypatch.setattr(schema, "SCHEMA_VERSION", version + 1)

    assert verify(path).ok
    assert rows(path, "PRAGMA user_version") == [(version,)]

    with open_journal(path) as journal:
        fill(journal, 1)
    assert rows(path, "PRAGMA user_version") == [(version + 1,)]
    assert rows(path, "SELECT count(*) FROM notes") == [(0,)]
    report = verify(path)
    assert report.ok and report.records == 4
