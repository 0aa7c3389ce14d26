"""The box's forwarder against a real Mosquitto, over a real journal written by the table
controller dealing with the in-process simulated shoe."""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import socket
import time
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest

from floor_protocol import iso
from shoe_controller.floor.broker import BrokerSettings, make_client
from shoe_controller.floor.cursor import cursor_path, read_cursor
from shoe_controller.floor.forwarder import Forwarder
from shoe_controller.journal.records import BANKER, Kind
from shoe_controller.journal.tail import JournalTail
from tests.floor.helpers import (
    WAIT,
    Subscriber,
    eventually,
    floor_settings,
    journal_id,
    public_records,
    records_of,
    replay,
)
from tests.floor.servers import Mosquitto
from tests.service.helpers import start_table

pytestmark = pytest.mark.needs("mosquitto")

CARD = re.compile(r"^(?:[A2-9TJQK][SHDC]|JK)$")


_shoes = itertools.count(1)


def deal(journal: Path, rounds: int, forwarder: Forwarder | None = None) -> None:
    """Deal ``rounds`` rounds on a table whose journal is ``journal`` (with a shoe of its
    own), then stop it."""
    device = f"sim://?pace=0&seed={next(_shoes)}"
    controller, recorder = start_table(journal.parent, journal=journal, device=device)
    if forwarder is not None:
        controller.subscribe(forwarder.wake)
    try:
        recorder.wait_for(lambda _: recorder.finished_rounds() >= rounds)
    finally:
        controller.stop()


def last_seq(journal: Path) -> int:
    with JournalTail.open(journal) as tail:
        head = tail.head()
        assert head is not None
        return head.seq


def cards_in(value: object) -> set[str]:
    if isinstance(value, dict):
        return set().union(*(cards_in(v) for v in value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*(cards_in(v) for v in value)) if value else set()
    return {value} if isinstance(value, str) and CARD.match(value) else set()


@pytest.mark.rule("E1")
@pytest.mark.rule("E2")
def test_every_public_record_is_forwarded_in_order_with_its_place_and_nothing_else(
    tmp_path: Path, broker: Mosquitto
) -> None:
    journal = tmp_path / "box" / "journal.sqlite3"
    watcher = Subscriber(broker.url, "shoes/#")
    forwarder = Forwarder(floor_settings(broker.url), journal)
    forwarder.start()
    deal(journal, 2, forwarder)
    assert forwarder.stop(drain_seconds=10) == 0
    expected = public_records(journal)
    ident = journal_id(journal)
    watcher.wait_for(lambda s: len(records_of(s.on("events"))) >= len(expected))
    delivered = watcher.on("events")
    watcher.close()
    assert {m.properties["journal"] for m in delivered} == {ident}

    assert records_of(delivered) == expected
    previous = 0
    for message in delivered:
        assert message.topic == "shoes/casino/T1/events"
        assert message.properties["journal"] == ident
        assert int(message.properties["prev"]) == previous
        previous = int(message.properties["seq"].split(",")[-1])
    # Nothing restricted left the box: no stub card, no unwagered hand, no identity outside
    # a closed round's banker and wagered hands.
    with JournalTail.open(journal) as tail:
        records = tail.after(0, 100_000)
    stub: dict[str | None, set[str]] = {}
    for r in records:
        if r.kind == Kind.STUB_CARD:
            stub.setdefault(r.round_id, set()).add(r.payload_object()["card"])
    wagered = {
        r.round_id: set(r.payload_object()["wagered"]) for r in records if r.kind == "bets_closed"
    }
    assert stub
    closed = 0
    for _, body in records_of(delivered):
        found = cards_in(body)
        if body["event"] != "round_closed":
            assert not found, body
            continue
        round_id = body["round"]
        allowed = {str(BANKER)} | {str(p) for p in wagered[round_id]}
        assert set(body["hands"]) <= allowed
        assert found and not found & stub[round_id]
        closed += 1
    assert closed == 2
    assert read_cursor(cursor_path(journal), ident) == last_seq(journal)


def test_a_restart_resumes_after_the_cursor_without_sending_what_was_acknowledged(
    tmp_path: Path, broker: Mosquitto
) -> None:
    journal = tmp_path / "box" / "journal.sqlite3"
    first = Forwarder(floor_settings(broker.url), journal)
    first.start()
    deal(journal, 1, first)
    assert first.stop(drain_seconds=10) == 0
    forwarded = last_seq(journal)
    assert read_cursor(cursor_path(journal), journal_id(journal)) == forwarded

    deal(journal, 1)  # the box dealt on while not forwarding
    watcher = Subscriber(broker.url, "shoes/+/+/events")
    second = Forwarder(floor_settings(broker.url), journal)
    second.start()
    expected = [r for r in public_records(journal) if r[0] > forwarded]
    watcher.wait_for(lambda s: len(records_of(s.on("events"))) >= len(expected))
    assert second.stop(drain_seconds=10) == 0
    assert records_of(watcher.on("events")) == expected
    watcher.close()


def test_a_stop_without_broker_says_how_many_records_wait_and_the_next_start_sends_them(
    tmp_path: Path, broker: Mosquitto
) -> None:
    journal = tmp_path / "box" / "journal.sqlite3"
    broker.kill()
    offline = Forwarder(floor_settings(broker.url), journal)
    offline.start()
    deal(journal, 1, offline)
    waiting = offline.stop(drain_seconds=0.2)
    expected = public_records(journal)
    assert waiting == len(expected) > 0
    # The cursor may pass restricted records, never a public one the broker did not take.
    assert read_cursor(cursor_path(journal), journal_id(journal)) < expected[0][0]

    broker.start()
    watcher = Subscriber(broker.url, "shoes/+/+/events")
    online = Forwarder(floor_settings(broker.url), journal)
    online.start()
    watcher.wait_for(lambda s: len(records_of(s.on("events"))) >= len(expected))
    assert online.stop(drain_seconds=10) == 0
    assert records_of(watcher.on("events")) == expected
    watcher.close()


def test_the_head_and_the_status_are_retained_and_a_stop_marks_the_table_offline(
    tmp_path: Path, broker: Mosquitto
) -> None:
    journal = tmp_path / "box" / "journal.sqlite3"
    forwarder = Forwarder(floor_settings(broker.url, table="PG-7"), journal)
    forwarder.start()
    deal(journal, 1, forwarder)
    assert forwarder.wait_for(lambda s: s.cursor == last_seq(journal), WAIT)
    late = Subscriber(broker.url, "shoes/casino/PG-7/head", "shoes/casino/PG-7/status")
    end = last_seq(journal)
    # The head follows the journal at most once a second: wait for the latest.
    late.wait_for(
        lambda s: bool(s.on("status")) and any(m.body["seq"] == end for m in s.on("head"))
    )
    status = late.on("status")[-1]
    assert status.retained and status.body["online"] is True
    assert status.body["shoe"]["model"] == "ES-SIM"
    assert status.body["state"] is not None
    head = next(m.body for m in late.on("head") if m.body["seq"] == end)
    with JournalTail.open(journal) as tail:
        record = tail.record(head["seq"])
    assert record is not None and head["mac"] == record.mac.hex()
    assert head["journal"] == journal_id(journal)

    forwarder.stop(drain_seconds=10)
    late.wait_for(lambda s: s.on("status")[-1].body["online"] is False)
    assert late.on("status")[-1].body["reason"] == "stopped"
    late.close()


def test_a_replay_request_sends_the_records_after_it_again(
    tmp_path: Path, broker: Mosquitto
) -> None:
    journal = tmp_path / "box" / "journal.sqlite3"
    forwarder = Forwarder(floor_settings(broker.url), journal)
    forwarder.start()
    deal(journal, 1, forwarder)
    assert forwarder.wait_for(lambda s: s.cursor == last_seq(journal), WAIT)
    expected = public_records(journal)
    after = expected[len(expected) // 2][0]
    watcher = Subscriber(broker.url, "shoes/+/+/events")
    # A request the floor's key did not sign is refused, however well formed.
    unsigned = json.dumps({"journal": journal_id(journal), "after": 0, "ts": iso(time.time())})
    watcher.client.publish("shoes/casino/T1/replay", unsigned, qos=1).wait_for_publish(WAIT)
    replay(watcher.client, "T1", journal_id(journal), after)
    again = [r for r in expected if r[0] > after]
    watcher.wait_for(lambda s: len(records_of(s.on("events"))) >= len(again))
    assert records_of(watcher.on("events")) == again
    # A request for another journal is none of this box's business.
    replay(watcher.client, "T1", "0" * 32, 0)
    assert forwarder.stop(drain_seconds=10) == 0
    assert records_of(watcher.on("events")) == again
    assert forwarder.replays_refused == 1
    watcher.close()


def test_a_cursor_that_is_not_a_regular_file_is_refused_and_left_alone(
    tmp_path: Path, broker: Mosquitto
) -> None:
    journal = tmp_path / "box" / "journal.sqlite3"
    deal(journal, 1)
    cursor = cursor_path(journal)
    cursor.mkdir()
    forwarder = Forwarder(floor_settings(broker.url), journal)
    forwarder.start()
    forwarder.stop(drain_seconds=1)
    assert forwarder.failure is not None
    assert "not a regular file" in str(forwarder.failure)
    assert cursor.is_dir()


def test_the_box_sends_each_record_at_once_without_nagle(tmp_path: Path, broker: Mosquitto) -> None:
    # A record published while the broker has not acknowledged the previous TCP segment
    # would otherwise wait for that acknowledgement.
    made: list[mqtt.Client] = []

    def factory(settings: BrokerSettings, identifier: str) -> mqtt.Client:
        made.append(make_client(settings, identifier))
        return made[-1]

    journal = tmp_path / "box" / "journal.sqlite3"
    forwarder = Forwarder(floor_settings(broker.url), journal, client_factory=factory)
    forwarder.start()
    try:
        assert forwarder.wait_for(lambda state: state.connected, WAIT)
        sock = made[0].socket()
        assert sock is not None
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        forwarder.stop(drain_seconds=1)


def test_a_flood_of_replay_requests_is_answered_once_an_interval(
    tmp_path: Path, broker: Mosquitto
) -> None:
    journal = tmp_path / "box" / "journal.sqlite3"
    settings = dataclasses.replace(floor_settings(broker.url), replay_interval=3600.0)
    forwarder = Forwarder(settings, journal)
    forwarder.start()
    deal(journal, 1, forwarder)
    assert forwarder.wait_for(lambda s: s.cursor == last_seq(journal), WAIT)
    expected = public_records(journal)
    after = expected[-10][0]
    watcher = Subscriber(broker.url, "shoes/+/+/events")
    for _ in range(20):
        replay(watcher.client, "T1", journal_id(journal), after)
    again = [r for r in expected if r[0] > after]
    watcher.wait_for(lambda s: len(records_of(s.on("events"))) >= len(again))
    eventually(lambda: forwarder.replays_refused == 19)
    assert forwarder.stop(drain_seconds=10) == 0
    # Sent once, not twenty times.
    assert records_of(watcher.on("events")) == again
    watcher.close()
