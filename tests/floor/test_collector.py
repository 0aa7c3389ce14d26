"""The floor's collector: every record stored once, in SQLite and in PostgreSQL, gaps told
and filled by the box, several collectors sharing the load."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from floor_protocol import schema
from shoe_controller.floor.broker import broker_settings
from shoe_controller.service.config import Config
from shoe_floor.collector import Collector
from shoe_floor.store import open_store
from tests.floor.helpers import (
    FLOOR_KEY,
    WAIT,
    Box,
    Subscriber,
    check_store_matches,
    enrol,
    eventually,
    journal_id,
    public_records,
    records_of,
    replay,
)
from tests.floor.servers import Mosquitto
from tests.service.test_positions import six_positions


def collector(url: str, db: str, name: str = "c1", **kwargs: float) -> Collector:
    collecting = Collector(
        broker_settings(url),
        db,
        name=name,
        floor_key=FLOOR_KEY,
        gap_grace=0.5,
        gap_interval=0.2,
        **kwargs,
    )
    collecting.start()
    assert collecting.connected.wait(WAIT)
    return collecting


def settled(collecting: Collector, stored: int) -> None:
    """Wait until ``stored`` records are in and a later gap scan found nothing missing."""
    mark: list[int] = []

    def done(stats: object) -> bool:
        s = collecting.stats
        if s.stored < stored:
            return False
        if not mark:
            mark.append(s.scans)
        return s.scans > mark[0] and s.pending == 0

    assert collecting.wait_for(done, WAIT), collecting.stats


@pytest.fixture(
    params=["sqlite", pytest.param("postgresql", marks=pytest.mark.needs("postgresql"))]
)
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "floor.sqlite3")
    url: str = request.getfixturevalue("pg_url")
    return url


@pytest.mark.needs("mosquitto")
def test_every_record_is_stored_once_even_when_the_box_sends_it_again(
    tmp_path: Path, broker: Mosquitto, db: str
) -> None:
    enrol(db, "T1")
    collecting = collector(broker.url, db)
    box = Box(tmp_path, broker.url, "T1", seed=3)
    box.wait_rounds(2)
    box.controller.stop()  # the table stops; its forwarder goes on
    expected = public_records(box.journal)
    settled(collecting, len(expected))
    # The box sends everything again (as after a replay request): nothing changes.
    watcher = Subscriber(broker.url, "shoes/+/+/events")
    replay(watcher.client, "T1", journal_id(box.journal), 0)
    watcher.wait_for(lambda w: len(records_of(w.on("events"))) >= len(expected))
    assert collecting.wait_for(lambda s: s.stored >= 2 * len(expected), WAIT)
    assert box.forwarder.stop(drain_seconds=10) == 0
    collecting.stop()
    watcher.close()
    check_store_matches(db, "T1", box.journal)


@pytest.mark.needs("mosquitto")
def test_a_gap_is_reported_and_the_box_sends_the_missing_records_again(
    tmp_path: Path, broker: Mosquitto
) -> None:
    db = str(tmp_path / "floor.sqlite3")
    enrol(db, "T2")
    box = Box(tmp_path, broker.url, "T2", seed=5)
    box.wait_rounds(1)
    # Published before any collector subscribed: the broker kept them for nobody.
    assert box.forwarder.wait_for(lambda s: s.in_flight == 0 and s.cursor > 0, WAIT)
    notices: list[str] = []
    collecting = Collector(
        broker_settings(broker.url),
        db,
        name="c1",
        floor_key=FLOOR_KEY,
        notice=notices.append,
        gap_grace=0.3,
        gap_interval=0.1,
    )
    collecting.start()
    assert collecting.connected.wait(WAIT)
    box.wait_rounds(2)
    box.controller.stop()
    settled(collecting, len(public_records(box.journal)))
    assert box.forwarder.stop(drain_seconds=10) == 0
    collecting.stop()
    assert any("are missing; asked the box" in n for n in notices), notices
    assert any("the gap is filled" in n for n in notices), notices
    check_store_matches(db, "T2", box.journal)


@pytest.mark.needs("mosquitto", "postgresql")
def test_two_collectors_share_the_records_and_store_each_once(
    tmp_path: Path, broker: Mosquitto, pg_url: str
) -> None:
    enrol(pg_url, "T0", "T1", "T2")
    first = collector(broker.url, pg_url, "c1")
    second = collector(broker.url, pg_url, "c2")
    boxes = [Box(tmp_path, broker.url, f"T{i}", seed=10 + i) for i in range(3)]
    for box in boxes:
        box.wait_rounds(2)
    for box in boxes:
        box.controller.stop()
    total = sum(len(public_records(box.journal)) for box in boxes)
    assert first.wait_for(lambda _: first.stats.stored + second.stats.stored >= total, WAIT)
    settled(first, 0)
    for box in boxes:
        assert box.forwarder.stop(drain_seconds=10) == 0
    first.stop()
    second.stop()
    assert first.stats.stored > 0 and second.stats.stored > 0
    for box in boxes:
        check_store_matches(pg_url, box.journal.parent.name, box.journal)
    with open_store(pg_url, create=False) as store:
        assert store.count_events() == total


@pytest.mark.needs("mosquitto")
def test_a_six_position_tables_records_are_all_stored(tmp_path: Path, broker: Mosquitto) -> None:
    """Six positions, 8 cards to each: positions and hands are the profile's, not 7."""
    db = str(tmp_path / "floor.sqlite3")
    enrol(db, "T6")
    collecting = collector(broker.url, db)
    profile = six_positions()
    config = Config(profile=profile, table=profile.rules)
    box = Box(tmp_path, broker.url, "T6", seed=21, config=config)
    box.wait_rounds(2)
    box.controller.stop()
    settled(collecting, len(public_records(box.journal)))
    assert box.forwarder.stop(drain_seconds=10) == 0
    collecting.stop()
    assert collecting.stats.quarantined == {}
    check_store_matches(db, "T6", box.journal)


@pytest.mark.needs("mosquitto")
def test_records_a_floor_does_not_know_yet_are_stored_once_its_schema_is_written_again(
    tmp_path: Path, broker: Mosquitto, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A box ahead of its floor (here a state the floor's schema lacks): the records are
    quarantined, not lost; once the floor's schema is current the box sends them again."""
    db = str(tmp_path / "floor.sqlite3")
    enrol(db, "T8")
    older = copy.deepcopy(schema.document())
    older["$defs"]["Event.state"]["properties"]["state"]["enum"].remove("stub_confirm")
    monkeypatch.setattr(schema, "document", lambda: older)
    schema._validator.cache_clear()
    try:
        first = collector(broker.url, db, name="c1")
        box = Box(tmp_path, broker.url, "T8", seed=3)
        box.wait_rounds(1)
        box.controller.stop()
        assert first.wait_for(
            lambda s: s.quarantined.get("schema", 0) >= 1 and s.gaps_reported >= 1, WAIT
        ), first.stats
        first.stop()
    finally:
        monkeypatch.undo()
        schema._validator.cache_clear()
    second = collector(broker.url, db, name="c2")

    def complete() -> bool:
        try:
            check_store_matches(db, "T8", box.journal)
        except AssertionError:
            return False
        return True

    eventually(complete, every=0.2)
    assert box.forwarder.stop(drain_seconds=10) == 0
    second.stop()
    check_store_matches(db, "T8", box.journal)
