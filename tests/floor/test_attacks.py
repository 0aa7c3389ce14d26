"""The floor under attack: whoever can publish on the broker (a forger with a client of
their own, or a box's own topic) can neither stop a collector nor put a record, a head or
a presence beside the genuine ones; whatever is refused is kept in quarantine with its
reason and counted."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

import floor_protocol as fp
from floor_protocol import SigningKey
from floor_protocol.messages import compact, parse_records
from shoe_floor import intake
from shoe_floor.report_cli import quarantine_summary
from shoe_floor.rows import Batch, Quarantined
from shoe_floor.store import open_store
from tests.floor.helpers import (
    WAIT,
    Box,
    box_key,
    check_store_matches,
    enrol,
    journal_id,
    public_records,
)
from tests.floor.servers import Mosquitto
from tests.floor.test_collector import collector, settled

JOURNAL = "0123456789abcdef0123456789abcdef"
TS = "2026-12-01T00:37:00.909Z"


class Forger:
    """A client of the forger's own on the broker: anonymous, publishing what it likes."""

    def __init__(self, url: str) -> None:
        host, port = url.removeprefix("mqtt://").split(":")
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv5)
        self.client.connect(host, int(port))
        self.client.loop_start()

    def publish(self, message: fp.Outgoing, *, retain: bool | None = None) -> None:
        from shoe_controller.floor.broker import publish_properties

        info = self.client.publish(
            message.topic,
            message.payload,
            qos=1,
            retain=message.retain if retain is None else retain,
            properties=publish_properties(message.properties),
        )
        info.wait_for_publish(WAIT)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def signed(message: fp.Outgoing, key: SigningKey) -> fp.Outgoing:
    return fp.Outgoing(
        message.topic,
        message.payload,
        key.sign(message.topic, message.properties, message.payload),
        message.retain,
    )


def card(index: int, round_id: str = "20261201T003700Z-9") -> bytes:
    return compact({"event": "card", "ts": TS, "round": round_id, "index": index, "position": 2})


def round_end(wagered: list[int]) -> bytes:
    return compact(
        {
            "event": "round_end",
            "ts": TS,
            "round": "20261201T003700Z-9",
            "outcome": "dealt",
            "reason": "the stub holds 4 cards",
            "start_position": 1,
            "cards_per_position": {str(p): 7 for p in range(1, 8)},
            "wagered": wagered,
            "collected_unseen": [],
        }
    )


@pytest.fixture(
    params=["sqlite", pytest.param("postgresql", marks=pytest.mark.needs("postgresql"))]
)
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "floor.sqlite3")
    url: str = request.getfixturevalue("pg_url")
    return url


@pytest.fixture
def forger(broker: Mosquitto) -> Iterator[Forger]:
    client = Forger(broker.url)
    yield client
    client.close()


def quarantined(db: str) -> dict[str, int]:
    with open_store(db, create=False) as store:
        summary = quarantine_summary(store.quarantined(0.0, time.time() + 60))
    by_reason = summary["by_reason"]
    assert isinstance(by_reason, dict)
    return by_reason


@pytest.mark.needs("mosquitto")
def test_a_retained_head_with_seq_2_to_the_64_kills_no_collector(
    tmp_path: Path, broker: Mosquitto, forger: Forger, db: str
) -> None:
    # Even signed with the box's own key and published on its own topic (what the ACL lets
    # that box do), the head is refused by the schema, kept in quarantine, and retained on
    # the broker it is refused again by every collector that starts.
    enrol(db, "T1")
    poison = fp.Outgoing(
        "shoes/casino/T1/head",
        compact({"journal": JOURNAL, "seq": 2**64, "mac": "ab" * 32, "public_seq": 1, "ts": TS}),
        (),
        retain=True,
    )
    forger.publish(signed(poison, box_key("T1")))
    first = collector(broker.url, db, "c1")
    assert first.wait_for(lambda s: s.quarantined.get("schema", 0) >= 1, WAIT)
    first.stop()
    assert first.failure is None
    again = collector(broker.url, db, "c2")
    assert again.wait_for(lambda s: s.quarantined.get("schema", 0) >= 1, WAIT)
    box = Box(tmp_path, broker.url, "T1", seed=3)
    box.wait_rounds(1)
    box.controller.stop()
    settled(again, len(public_records(box.journal)))
    assert box.forwarder.stop(drain_seconds=10) == 0
    again.stop()
    assert again.failure is None
    check_store_matches(db, "T1", box.journal)
    assert quarantined(db)["schema"] == 2


@pytest.mark.needs("mosquitto")
def test_forged_records_at_the_genuine_journals_next_numbers_take_no_genuine_place(
    tmp_path: Path, broker: Mosquitto, forger: Forger, db: str
) -> None:
    enrol(db, "T1")
    collecting = collector(broker.url, db)
    box = Box(tmp_path, broker.url, "T1", seed=4, pace=0.002)
    assert box.forwarder.wait_for(lambda s: s.cursor > 20, WAIT)
    genuine = journal_id(box.journal)
    cursor = box.forwarder.state().read_seq
    forged_key = SigningKey.generate()
    # Ahead of the box, at the numbers its next records will have: unsigned, then signed
    # with a key of the forger's own.
    for n, key in enumerate((None, forged_key)):
        seqs = [(cursor + 1 + 10 * n + i, "00" * 32, card(40 + i)) for i in range(5)]
        message = fp.encode_records("casino", "T1", genuine, cursor + 10 * n, seqs)
        forger.publish(message if key is None else signed(message, key))
    # A made-up journal with three dealt rounds for a table the floor does not know.
    phantom = fp.encode_records("casino", "T9", JOURNAL, 0, [(1, "00" * 32, round_end([2]))])
    forger.publish(signed(phantom, forged_key))
    box.wait_rounds(2)
    box.controller.stop()
    settled(collecting, len(public_records(box.journal)))
    assert box.forwarder.stop(drain_seconds=10) == 0
    collecting.stop()
    assert collecting.failure is None
    check_store_matches(db, "T1", box.journal)
    assert quarantined(db) == {"unsigned": 1, "forged": 1, "unknown_sender": 1}
    with open_store(db, create=False) as store:
        assert {t for _, t, _ in store.journals()} == {"T1"}


@pytest.mark.needs("mosquitto")
def test_a_forged_presence_and_a_poisoned_report_are_quarantined(
    tmp_path: Path, broker: Mosquitto, forger: Forger
) -> None:
    db = str(tmp_path / "floor.sqlite3")
    enrol(db, "T1")
    collecting = collector(broker.url, db)
    status = fp.encode_status(
        "casino",
        "T1",
        {
            "online": True,
            "ts": TS,
            "site": "casino",
            "table": "T1",
            "connection": "deadbeef-1",
            "version": "0.1.0",
            "shoe": {"model": "FORGED", "serial": "X", "firmware": "0", "approved": True},
            "state": "dealing",
            "round": None,
        },
    )
    forger.publish(status)
    forger.publish(signed(status, SigningKey.generate()))
    # A box's own key cannot poison the report either: a round_end with 1,000 wagered
    # positions is outside the schema, one with 100,000 outside the message's bounds.
    key = box_key("T1")
    for wagered in ([2] * 1000, [2] * 100_000):
        forger.publish(
            signed(fp.Outgoing("shoes/casino/T1/events", round_end(wagered), ()), key)
            if len(wagered) > 1000
            else signed(
                fp.encode_records("casino", "T1", JOURNAL, 0, [(1, "0" * 64, round_end(wagered))]),
                key,
            )
        )
    assert collecting.wait_for(lambda s: sum(s.quarantined.values()) >= 4, WAIT)
    collecting.stop()
    assert collecting.failure is None
    assert quarantined(db) == {"unsigned": 1, "forged": 1, "schema": 1, "malformed": 1}
    with open_store(db, create=False) as store:
        assert store.presence() == []
        assert store.count_events() == 0
        kept = store.quarantine_rows()
    assert len(kept) == 4 and all(len(row["payload"]) <= 2048 for row in kept)


def test_records_are_keyed_by_site_too(tmp_path: Path) -> None:
    db = str(tmp_path / "floor.sqlite3")
    with open_store(db) as store:
        for site in ("sanjuan", "ponce"):
            batch = Batch()
            message = parse_records(
                site,
                "PG-07",
                card(1),
                {"journal": JOURNAL, "seq": "1", "prev": "0", "mac": "0" * 64},
            )
            batch.add_records(message, 1.0)
            store.add(batch)
        assert store.count_events() == 2
        assert sorted(s for s, _, _ in store.journals()) == ["ponce", "sanjuan"]


KEY = SigningKey.from_seed(bytes(32))
ENROLLED = intake.Keyring()


def _malformed() -> list[tuple[str, fp.Outgoing, str]]:
    good = fp.encode_records("s", "T1", JOURNAL, 0, [(1, "0" * 64, card(1))])
    props = dict(good.properties)

    def with_props(**changes: str) -> fp.Outgoing:
        return fp.Outgoing(good.topic, good.payload, tuple({**props, **changes}.items()))

    deep = b'{"event":"card","x":' + b"[" * 30_000 + b"]" * 30_000 + b"}"
    return [
        ("not JSON", fp.Outgoing(good.topic, b"{", good.properties), "malformed"),
        ("30,000-deep nesting", fp.Outgoing(good.topic, deep, good.properties), "malformed"),
        (
            "invalid UTF-8",
            fp.Outgoing(good.topic, b'{"event":"\xff"}', good.properties),
            "malformed",
        ),
        (
            "a lone surrogate in the round",
            fp.Outgoing(good.topic, card(1, "\\ud800"), good.properties),
            "schema",
        ),
        (
            "a NUL in the round",
            fp.Outgoing(good.topic, card(1, "a\\u0000"), good.properties),
            "schema",
        ),
        ("seq 2**64", with_props(seq=str(2**64)), "malformed"),
        ("seq -1", with_props(seq="-1"), "malformed"),
        ("seq 1e3", with_props(seq="1e3"), "malformed"),
        ("prev after seq", with_props(prev="5"), "malformed"),
        ("two seqs for one record", with_props(seq="1,2"), "malformed"),
        ("no journal", fp.Outgoing(good.topic, good.payload, good.properties[1:]), "malformed"),
        ("a journal that is no id", with_props(journal="../../x"), "schema"),
        ("a MAC that is no MAC", with_props(mac="zz"), "schema"),
        (
            "an unknown event",
            fp.Outgoing(
                good.topic, compact({"event": "jackpot", "ts": TS, "round": None}), good.properties
            ),
            "malformed",
        ),
        (
            "a card's identity",
            fp.Outgoing(
                good.topic,
                compact({"event": "card", "ts": TS, "round": "R1", "index": 1, "position": "QH"}),
                good.properties,
            ),
            "schema",
        ),
        (
            "a topic with more levels",
            fp.Outgoing("shoes/s/T1/events/x", good.payload, good.properties),
            "malformed",
        ),
        (
            "a replay sent as if by a box",
            fp.encode_replay("s", "T1", JOURNAL, 0, ts=TS, nonce="0" * 32),
            "malformed",
        ),
        (
            "a status for another table",
            fp.encode_status(
                "s",
                "T1",
                {
                    "online": True,
                    "site": "s",
                    "table": "T2",
                    "connection": "deadbeef-1",
                    "version": "1",
                },
            ),
            "malformed",
        ),
        (
            "a head past its journal",
            fp.encode_head("s", "T1", JOURNAL, seq=3, mac="0" * 64, public_seq=9, ts=TS),
            "malformed",
        ),
        (
            "a payload over 64 KiB",
            fp.Outgoing(good.topic, b" " * (65 * 1024), good.properties),
            "malformed",
        ),
    ]


@pytest.mark.parametrize(
    ("case", "message", "reason"), _malformed(), ids=[c[0] for c in _malformed()]
)
def test_each_malformed_message_is_quarantined_with_its_reason_and_stored_safely(
    tmp_path: Path, case: str, message: fp.Outgoing, reason: str
) -> None:
    keyring = intake.Keyring()
    with open_store(str(tmp_path / "floor.sqlite3")) as store:
        store.enrol("s", "T1", KEY.public, 0.0)
        keyring.replace(store.enrolments())
        props = KEY.sign(message.topic, message.properties, message.payload)
        read = intake.read(message.topic, message.payload, props, 1.0, keyring)
        assert isinstance(read, Quarantined), case
        assert read.reason == reason, read.detail
        batch = Batch()
        batch.add_quarantined(read, keep=True)
        store.add(batch)
        assert len(store.quarantine_rows()) == 1
