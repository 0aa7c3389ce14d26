"""Two casinos may both have a PG-07: on the floor a table is its site and its name, in the
report, the store's gap bookkeeping and the audit, over SQLite and the real PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from floor_protocol import PublicRecord, Records
from shoe_controller.errors import ConfigError
from shoe_floor.audit import audit_site
from shoe_floor.report import build_report
from shoe_floor.rows import Batch
from shoe_floor.shifts import Shifts
from shoe_floor.store import Store, open_store

ROOT = Path(__file__).resolve().parents[2]
TABLE = "PG-07"
#: Each site's PG-07 dealt one round, in a journal of its own.
SITES = {"casino-north": "J-north", "casino-south": "J-south"}


@pytest.fixture(
    params=["sqlite", pytest.param("postgresql", marks=pytest.mark.needs("postgresql"))]
)
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "floor.sqlite3")
    url: str = request.getfixturevalue("pg_url")
    return url


def one_round(site: str, journal: str, mac: str) -> Records:
    body = json.dumps({"event": "round_end", "outcome": "dealt", "wagered": [2, 4]})
    record = PublicRecord(
        seq=1,
        prev=0,
        mac=mac,
        body=body,
        event="round_end",
        round_id="R1",
        ts="2026-12-01T10:00:00.000Z",
        at=100.0,
    )
    return Records(site, TABLE, journal, (record,))


def two_sites(db: str) -> Store:
    store = open_store(db)
    batch = Batch()
    for index, (site, journal) in enumerate(SITES.items()):
        batch.add_records(one_round(site, journal, f"{index:02x}" * 32), 101.0)
    store.add(batch)
    return store


def test_each_site_s_pg07_has_its_own_rounds_in_the_report(db: str) -> None:
    with two_sites(db) as store:
        rows = build_report(store, Shifts.parse(None, "UTC"), 0.0, 1000.0, 1000.0)
    totals = {(r.site, r.table): r for r in rows if r.shift is None}
    assert set(totals) == {(site, TABLE) for site in SITES}
    # Before, each PG-07 counted the other's round too: 2 rounds and 4 hands each.
    assert {key: (r.rounds, r.hands) for key, r in totals.items()} == {
        (site, TABLE): (1, 2) for site in SITES
    }


def test_a_gap_at_one_site_leaves_the_other_s_table_complete(db: str) -> None:
    with two_sites(db) as store:
        assert store.incomplete_tables() == {(site, TABLE) for site in SITES}
        store.set_progress("casino-north", TABLE, SITES["casino-north"], 1)
        assert store.incomplete_tables() == {("casino-south", TABLE)}
        assert store.progress() == {("casino-north", TABLE, "J-north"): 1}
        rows = build_report(store, Shifts.parse(None, "UTC"), 0.0, 1000.0, 1000.0)
    complete = {r.site: r.complete for r in rows if r.shift is None}
    assert complete == {"casino-north": True, "casino-south": False}


def test_the_audit_holds_one_site_s_anchors_and_asks_which_site(db: str) -> None:
    with two_sites(db) as store:
        for site, journal in SITES.items():
            assert [j for j, _, _ in store.anchors(site, TABLE)] == [journal]
        assert store.sites_of(TABLE) == sorted(SITES)
        assert audit_site(store, TABLE, "casino-south") == "casino-south"
        with pytest.raises(ConfigError, match=r"at several sites .*: name one with --site"):
            audit_site(store, TABLE, None)


def test_shoe_floor_audit_without_site_says_which_to_name(tmp_path: Path) -> None:
    db = str(tmp_path / "floor.sqlite3")
    two_sites(db).close()
    done = subprocess.run(
        [
            *(sys.executable, "-m", "shoe_floor", "audit", "--db", db, "--table", TABLE),
            *("--journal", str(tmp_path / "journal.sqlite3")),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 3, done.stderr
    assert done.stderr.strip().splitlines() == [
        "shoe-floor: error: table PG-07 is at several sites (casino-north, casino-south): "
        "name one with --site"
    ]
