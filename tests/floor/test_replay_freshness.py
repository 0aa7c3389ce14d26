"""A replay request is usable once, and only while fresh, against a real Mosquitto: whoever
reads the broker can capture a request the floor signed, but publishing it again makes the
box send nothing; the floor's requests, made anew, are answered."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

import floor_protocol as fp
from floor_protocol import freshness
from shoe_controller.floor.broker import broker_settings, publish_properties
from shoe_controller.floor.forwarder import Forwarder
from shoe_floor.collector import Collector
from shoe_floor.store import open_store
from tests.floor.helpers import (
    FLOOR_KEY,
    WAIT,
    Delivered,
    Subscriber,
    enrol,
    eventually,
    floor_settings,
    journal_id,
    public_records,
    publish,
    records_of,
    records_of_table,
    replay,
)
from tests.floor.servers import Mosquitto
from tests.floor.test_forwarder import deal, last_seq

pytestmark = pytest.mark.needs("mosquitto")

#: The collector's grace before it reports a gap, and asks again for the same records.
GRACE = 100 * freshness.MAX_AGE


class Clock:
    """The wall clock, set ahead at will: the box's or the floor's."""

    def __init__(self) -> None:
        self.ahead = 0.0

    def __call__(self) -> float:
        return time.time() + self.ahead


def captured(message: Delivered) -> fp.Outgoing:
    assert message.raw is not None
    return message.raw


def test_a_captured_request_published_again_makes_the_box_send_nothing(
    tmp_path: Path, broker: Mosquitto
) -> None:
    journal = tmp_path / "box" / "journal.sqlite3"
    box_clock = Clock()
    forwarder = Forwarder(
        floor_settings(broker.url), journal, clock=box_clock, refusals_interval=0.0
    )
    forwarder.start()
    deal(journal, 1, forwarder)
    assert forwarder.wait_for(lambda s: s.cursor == last_seq(journal), WAIT)
    expected = public_records(journal)
    watcher = Subscriber(broker.url, "shoes/+/+/events", "shoes/+/+/status")
    # Whoever can read the broker sees the floor's requests go by.
    attacker = Subscriber(broker.url, "shoes/+/+/replay")

    def refused(reason: str) -> int:
        return forwarder.state().replays_refused.get(reason, 0)

    # The floor asks for the whole journal: answered.
    replay(watcher.client, "T1", journal_id(journal), 0)
    watcher.wait_for(lambda s: len(records_of(s.on("events"))) >= len(expected))
    attacker.wait_for(lambda s: bool(s.on("replay")))
    request = captured(attacker.on("replay")[0])

    # Published again and again, retained too: every copy is refused.
    for _ in range(5):
        publish(attacker.client, request)
    publish(attacker.client, request, retain=True)
    eventually(lambda: refused(freshness.REPLAYED) == 6)
    # Once it is older than the window, it is refused for its age.
    box_clock.ahead = freshness.MAX_AGE + 10
    publish(attacker.client, request)
    eventually(lambda: refused(freshness.STALE) == 1)
    # A request made further ahead than the clocks may disagree is refused too.
    replay(watcher.client, "T1", journal_id(journal), 0, made=box_clock() + 60)
    eventually(lambda: refused(freshness.FUTURE) == 1)
    assert records_of(watcher.on("events")) == expected

    # A fresh request of the floor's is answered.
    after = expected[-5][0]
    replay(watcher.client, "T1", journal_id(journal), after, made=box_clock())
    again = [r for r in expected if r[0] > after]
    watcher.wait_for(lambda s: len(records_of(s.on("events"))) >= len(expected) + len(again))
    assert records_of(watcher.on("events")) == expected + again
    # The box says so in its status.
    counts = {freshness.REPLAYED: 6, freshness.STALE: 1, freshness.FUTURE: 1}
    watcher.wait_for(lambda s: s.on("status")[-1].body.get("replays_refused") == counts)
    assert forwarder.replays_refused == 8

    publish(attacker.client, fp.Outgoing(request.topic, b"", ()), retain=True)
    assert forwarder.stop(drain_seconds=10) == 0
    assert records_of(watcher.on("events")) == expected + again
    watcher.close()
    attacker.close()


#: Copies an attacker publishes in a flood.
FLOOD = 300


def test_a_flood_of_copies_costs_the_box_no_record_no_status_and_a_log_line_a_hundred(
    tmp_path: Path, broker: Mosquitto, caplog: pytest.LogCaptureFixture
) -> None:
    journal = tmp_path / "box" / "journal.sqlite3"
    # The status waits this long to tell a changed count: far longer than the test.
    forwarder = Forwarder(floor_settings(broker.url), journal, refusals_interval=3600.0)
    forwarder.start()
    deal(journal, 1, forwarder)
    assert forwarder.wait_for(lambda s: s.cursor == last_seq(journal), WAIT)
    expected = public_records(journal)
    watcher = Subscriber(broker.url, "shoes/+/+/events", "shoes/+/+/status")
    attacker = Subscriber(broker.url, "shoes/+/+/replay")
    replay(watcher.client, "T1", journal_id(journal), 0)
    watcher.wait_for(lambda s: len(records_of(s.on("events"))) >= len(expected))
    attacker.wait_for(lambda s: bool(s.on("replay")))
    request = captured(attacker.on("replay")[0])
    statuses = len(watcher.on("status"))

    caplog.set_level(logging.WARNING, logger="shoe_controller.floor.forwarder")
    for _ in range(FLOOD):
        attacker.client.publish(
            request.topic, request.payload, qos=0, properties=publish_properties(request.properties)
        )
    assert forwarder.wait_for(lambda s: s.replays_refused.get(freshness.REPLAYED, 0) == FLOOD, WAIT)
    assert forwarder.replays_refused == FLOOD
    # Nothing sent again, no status for each copy, a line in the log for the first and
    # every hundredth.
    assert records_of(watcher.on("events")) == expected
    assert len(watcher.on("status")) == statuses
    said = [r for r in caplog.records if "a copy of one this box has seen" in r.getMessage()]
    assert len(said) == FLOOD // 100, [r.getMessage() for r in said]

    assert forwarder.stop(drain_seconds=10) == 0
    watcher.wait_for(lambda s: s.on("status")[-1].body.get("reason") == "stopped")
    assert records_of(watcher.on("events")) == expected
    # The box went on running a while, and stopped: its one status since is the stop's.
    assert len(watcher.on("status")) == statuses + 1
    watcher.close()
    attacker.close()


def test_a_box_off_for_long_gets_a_request_made_anew_while_the_records_are_missing(
    tmp_path: Path, broker: Mosquitto
) -> None:
    db = str(tmp_path / "floor.sqlite3")
    enrol(db, "T1")
    journal = tmp_path / "box" / "journal.sqlite3"
    forwarder = Forwarder(floor_settings(broker.url), journal)
    forwarder.start()
    deal(journal, 1, forwarder)
    # Forwarded before any collector subscribed: the broker kept only the retained head.
    assert forwarder.wait_for(lambda s: s.in_flight == 0 and s.cursor == last_seq(journal), WAIT)
    assert forwarder.stop(drain_seconds=10) == 0

    floor_clock = Clock()
    notices: list[str] = []
    collecting = Collector(
        broker_settings(broker.url),
        db,
        name="c1",
        floor_key=FLOOR_KEY,
        notice=notices.append,
        clock=floor_clock,
        # Far longer than a request stays fresh: only its freshness makes the floor ask anew.
        gap_grace=GRACE,
        gap_interval=0.1,
    )
    collecting.start()
    spy = Subscriber(broker.url, "shoes/+/+/replay")
    try:
        assert collecting.connected.wait(WAIT)
        scans = collecting.stats.scans
        assert collecting.wait_for(lambda s: s.scans > scans + 2, WAIT)
        # The gap is old enough to ask for: a request, retained for the box that is off.
        floor_clock.ahead = GRACE + freshness.MAX_AGE
        spy.wait_for(lambda s: len(s.on("replay")) == 1)
        first = spy.on("replay")[0].body

        # Long after, the box starts: the retained request is stale, and refused.
        box_clock = Clock()
        box_clock.ahead = floor_clock.ahead + 10 * freshness.MAX_AGE
        box = Forwarder(floor_settings(broker.url), journal, clock=box_clock)
        box.start()
        eventually(lambda: box.state().replays_refused == {freshness.STALE: 1})
        # The floor, whose clock went on too, makes it anew; the box answers it.
        floor_clock.ahead = box_clock.ahead
        spy.wait_for(lambda s: len(s.on("replay")) >= 2)
        again = spy.on("replay")[1].body
        assert fp.epoch(again["ts"]) - fp.epoch(first["ts"]) >= 10 * freshness.MAX_AGE
        assert again["nonce"] != first["nonce"] and again["after"] == first["after"] == 0
        expected = public_records(journal)
        assert collecting.wait_for(lambda s: s.stored >= len(expected), WAIT)
        eventually(lambda: any("the gap is filled" in n for n in notices))
        assert box.stop(drain_seconds=10) == 0
        assert box.replays_refused == 1
    finally:
        collecting.stop()
        spy.close()
    with open_store(db, create=False) as store:
        stored = records_of_table(store, "T1", journal_id(journal))
    assert [seq for seq, _, _ in stored] == [seq for seq, _ in expected]
    assert any("are missing; asked the box" in n for n in notices), notices
