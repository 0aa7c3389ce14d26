"""The floor's store on its own: several connections to one SQLite file, and what it says
of a file that is no store."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from floor_protocol import PublicRecord, Records
from shoe_controller.errors import StoreError
from shoe_floor.rows import Batch
from shoe_floor.store import open_store


def record(*seqs: int) -> Batch:
    batch = Batch()
    records = tuple(
        PublicRecord(
            seq=seq,
            prev=seq - 1,
            mac="00",
            body='{"event":"card"}',
            event="card",
            round_id="R1",
            ts="2026-12-01T00:00:00.000Z",
            at=0.0,
        )
        for seq in seqs
    )
    batch.add_records(Records("s", "T1", "J", records), 1.0)
    return batch


def test_a_second_connection_in_the_same_process_loses_nothing_of_the_first(
    tmp_path: Path,
) -> None:
    # The collector stores on one connection and looks for gaps on another. Opening (and
    # closing) the second must not take the first one's locks away: a closing connection
    # that believes it is the last deletes the write-ahead log the first still writes to.
    path = str(tmp_path / "floor.sqlite3")
    with open_store(path) as storing:
        storing.add(record(1))
        with open_store(path) as scanning:
            assert scanning.count_events() == 1
        # Another process (the dashboard, a report) reads the store and closes it.
        reader = "import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute('SELECT 1 FROM events')"
        subprocess.run([sys.executable, "-c", reader, path], check=True, timeout=60)
        storing.add(record(2, 3))
        with sqlite3.connect(path) as reader:
            assert reader.execute("SELECT count(*) FROM events").fetchone()[0] == 3
    with open_store(path, create=False) as store:
        assert [seq for seq, _, _ in store.records_of("s", "T1", "J")] == [1, 2, 3]


@pytest.mark.parametrize("content", [b"not a database at all, but long enough", b"x"])
def test_a_file_that_is_not_sqlite_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(content)
    with pytest.raises(StoreError, match="is not an SQLite database: choose another --db"):
        open_store(str(path))
    assert path.read_bytes() == content


@pytest.mark.needs("postgresql")
def test_collectors_starting_together_on_a_new_postgresql_database_all_start(
    pg_url: str,
) -> None:
    starting = 6
    barrier = threading.Barrier(starting)
    failures: list[BaseException] = []

    def start() -> None:
        barrier.wait(timeout=30)
        try:
            open_store(pg_url).close()
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=start) for _ in range(starting)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failures == []
    with open_store(pg_url, create=False) as store:
        assert store.count_events() == 0
