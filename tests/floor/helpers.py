"""Helpers of the floor's tests: a box over the in-process simulated shoe with its
forwarder, what its journal says is public, a subscriber that records what the broker
delivers, and waiting on conditions."""

from __future__ import annotations

import atexit
import json
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt

from floor_protocol import Outgoing, SigningKey, encode_replay, iso
from shoe_controller.floor.broker import (
    BrokerSettings,
    broker_settings,
    make_client,
    publish_properties,
    user_properties,
)
from shoe_controller.floor.keys import make_signing_key
from shoe_controller.floor.settings import FloorSettings
from shoe_controller.journal.tail import JournalTail
from shoe_controller.service.config import Config
from shoe_controller.service.public import public_event
from shoe_floor.collector import new_nonce
from shoe_floor.store import Store

WAIT = 60.0

#: The tests' keys: each box's (by site and table) and the floor's, in a directory that
#: goes when the run ends.
_KEYS = tempfile.TemporaryDirectory(prefix="floor-test-keys-")
atexit.register(_KEYS.cleanup)
KEYS = Path(_KEYS.name)
FLOOR_KEY = SigningKey.generate()
FLOOR_PRIVATE = KEYS / "floor.pem"
FLOOR_PRIVATE.write_bytes(FLOOR_KEY.to_pem())
FLOOR_PRIVATE.chmod(0o600)
FLOOR_PUBLIC = KEYS / "floor.pem.pub"
FLOOR_PUBLIC.write_bytes(FLOOR_KEY.public.to_pem())


def box_key_path(table: str, site: str = "casino") -> Path:
    """The signing key of the test's box of ``table`` (made the first time)."""
    path = KEYS / f"box-{site}-{table}.pem"
    make_signing_key(path)
    return path


def box_key(table: str, site: str = "casino") -> SigningKey:
    return make_signing_key(box_key_path(table, site))[0]


def floor_settings(
    url: str, table: str = "T1", site: str = "casino", *, broker: BrokerSettings | None = None
) -> FloorSettings:
    return FloorSettings(
        broker or broker_settings(url),
        site,
        table,
        drain_seconds=10.0,
        signing_key=box_key_path(table, site),
        floor_key=FLOOR_PUBLIC,
        replay_interval=0.0,
    )


def enrol(db: str, *tables: str, site: str = "casino") -> None:
    """Enrol the test boxes of ``tables`` in the floor store ``db``."""
    import time

    from shoe_floor.store import open_store

    with open_store(db) as store:
        for table in tables:
            store.enrol(site, table, box_key(table, site).public, time.time())


def replay(
    client: mqtt.Client,
    table: str,
    journal: str,
    after: int,
    site: str = "casino",
    *,
    made: float | None = None,
) -> Outgoing:
    """Ask the box for its records after ``after`` again, as the floor does: signed, made
    now (or at ``made``) with a nonce of its own. Returns the request as published."""
    import time

    ts = iso(time.time() if made is None else made)
    request = encode_replay(site, table, journal, after, ts=ts, nonce=new_nonce())
    signed = Outgoing(
        request.topic,
        request.payload,
        FLOOR_KEY.sign(request.topic, request.properties, request.payload),
    )
    publish(client, signed)
    return signed


def publish(client: mqtt.Client, message: Outgoing, *, retain: bool = False) -> None:
    """Publish ``message`` as it is (its properties signed already), QoS 1."""
    client.publish(
        message.topic,
        message.payload,
        qos=1,
        retain=retain,
        properties=publish_properties(message.properties),
    ).wait_for_publish(WAIT)


def public_records(journal: Path) -> list[tuple[int, dict[str, Any]]]:
    """(seq, --json object) of every public record of ``journal``, in order."""
    out: list[tuple[int, dict[str, Any]]] = []
    with JournalTail.open(journal) as tail:
        seq = 0
        while records := tail.after(seq, 1000):
            for record in records:
                event = public_event(record)
                if event is not None:
                    out.append((record.seq, event.to_json()))
            seq = records[-1].seq
    return out


def journal_id(journal: Path) -> str:
    with JournalTail.open(journal) as tail:
        return tail.journal_id


@dataclass(frozen=True)
class Delivered:
    topic: str
    body: Any
    properties: dict[str, str]
    retained: bool
    #: The message as it came, to publish again as it is.
    raw: Outgoing | None = None


class Subscriber:
    """Records what the broker delivers on ``filters``; ``wait_for`` blocks on a condition."""

    def __init__(self, url: str, *filters: str, settings: BrokerSettings | None = None) -> None:
        settings = settings or broker_settings(url)
        self.messages: list[Delivered] = []
        self._cond = threading.Condition()
        self._subscribed = threading.Event()
        client = make_client(settings, f"test-subscriber-{id(self)}")
        client.on_connect = lambda c, *_: c.subscribe([(f, 1) for f in filters])
        client.on_subscribe = lambda *_: self._subscribed.set()
        client.on_message = self._on_message
        client.connect(settings.host, settings.port)
        client.loop_start()
        self.client = client
        if not self._subscribed.wait(WAIT):
            raise AssertionError("the test's subscriber could not subscribe")

    def _on_message(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        pairs = tuple(user_properties(getattr(message, "properties", None)))
        raw = Outgoing(message.topic, bytes(message.payload), pairs)
        with self._cond:
            self.messages.append(
                Delivered(
                    message.topic,
                    _bodies(message.payload) if message.payload else None,
                    dict(pairs),
                    bool(message.retain),
                    raw,
                )
            )
            self._cond.notify_all()

    def on(self, leaf: str) -> list[Delivered]:
        with self._cond:
            return [m for m in self.messages if m.topic.endswith("/" + leaf)]

    def wait_for(self, predicate: Callable[[Subscriber], bool], timeout: float = WAIT) -> None:
        with self._cond:
            if not self._cond.wait_for(lambda: predicate(self), timeout):
                raise AssertionError(f"not delivered within {timeout} s: {self.messages[-3:]}")

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def _bodies(payload: bytes) -> Any:
    """A message's JSON object; for an events message of several records, their list."""
    lines = payload.split(b"\n")
    return json.loads(payload) if len(lines) == 1 else [json.loads(line) for line in lines]


def records_of(delivered: list[Delivered]) -> list[tuple[int, dict[str, Any]]]:
    """(seq, body) of every record in events messages, single or batched."""
    out: list[tuple[int, dict[str, Any]]] = []
    for message in delivered:
        seqs = [int(s) for s in message.properties["seq"].split(",")]
        bodies = message.body if isinstance(message.body, list) else [message.body]
        out += zip(seqs, bodies, strict=True)
    return out


def eventually(check: Callable[[], bool], timeout: float = WAIT, every: float = 0.05) -> None:
    """For what only another process changes (a store written by a collector process):
    check at short intervals until ``check()`` holds, for at most ``timeout`` seconds."""
    pause = threading.Event()
    deadline = threading.Event()
    timer = threading.Timer(timeout, deadline.set)
    timer.start()
    try:
        while not check():
            if deadline.is_set():
                raise AssertionError(f"condition not met within {timeout} s")
            pause.wait(every)
    finally:
        timer.cancel()


class Box:
    """A table in this process: the controller over its own simulated shoe, its journal,
    and its forwarder."""

    def __init__(
        self,
        directory: Path,
        url: str,
        table: str,
        *,
        seed: int,
        pace: float = 0.0,
        wagers: frozenset[int] = frozenset({2, 4, 5}),
        journal: Path | None = None,
        device: str | None = None,
        config: Config | None = None,
        broker: BrokerSettings | None = None,
        site: str = "casino",
    ) -> None:
        from shoe_controller.cli.croupier import Script
        from shoe_controller.floor.forwarder import Forwarder
        from tests.service.helpers import start_table

        self.journal = journal or directory / table / "journal.sqlite3"
        self.forwarder = Forwarder(floor_settings(url, table, site, broker=broker), self.journal)
        self.forwarder.start()
        self.controller, self.recorder = start_table(
            self.journal.parent,
            journal=self.journal,
            device=device or f"sim://?pace={pace}&seed={seed}",
            script=Script(wagers=wagers, attendant="att-1"),
            config=config,
        )
        self.controller.subscribe(self.forwarder.wake)

    def rounds(self) -> int:
        return self.recorder.finished_rounds()

    def wait_rounds(self, rounds: int) -> None:
        self.recorder.wait_for(lambda _: self.recorder.finished_rounds() >= rounds, WAIT)

    def stop(self, drain_seconds: float = 10.0) -> int:
        self.controller.stop()
        return self.forwarder.stop(drain_seconds)


def journal_summary(journal: Path) -> dict[str, Any]:
    """What a report must say of the table, counted from its journal's records alone."""
    outcomes: dict[str, int] = {}
    faults: dict[str, int] = {}
    hands = 0
    with JournalTail.open(journal) as tail:
        for record in tail.after(0, 10_000_000):
            payload = record.payload_object()
            if record.kind == "round_ended":
                outcomes[payload["outcome"]] = outcomes.get(payload["outcome"], 0) + 1
                if payload["outcome"] == "dealt":
                    hands += len(payload["wagered"])
            elif record.kind == "fault" and public_event(record) is not None:
                faults[payload["code"]] = faults.get(payload["code"], 0) + 1
    return {
        "rounds": sum(outcomes.values()),
        "outcomes": outcomes,
        "faults": faults,
        "hands": hands,
    }


def site_of(store: Store, table: str) -> str | None:
    """The one site whose ``table`` the store holds records of (None before any): in these
    tests each table name belongs to one site, so a second one is a failure."""
    sites = {event.site for event in store.events(table=table)}
    assert len(sites) <= 1, f"table {table} is stored under several sites: {sorted(sites)}"
    return next(iter(sites), None)


def records_of_table(store: Store, table: str, journal: str) -> list[tuple[int, str, str]]:
    """The stored records of ``journal``, at its table's one site."""
    site = site_of(store, table)
    return [] if site is None else store.records_of(site, table, journal)


def check_store_matches(db: str, table: str, journal: Path) -> None:
    """The store holds every public record of the journal exactly once, in order, and the
    report's total for the table agrees with the journal."""
    import time

    from shoe_floor.report import build_report
    from shoe_floor.shifts import Shifts
    from shoe_floor.store import open_store

    expected = public_records(journal)
    with open_store(db, create=False) as store:
        stored = records_of_table(store, table, journal_id(journal))
        assert [(seq, json.loads(body)) for seq, _, body in stored] == expected
        now = time.time()
        rows = build_report(store, Shifts.parse(None, "UTC"), 0.0, now + 60, now)
    total = next(r for r in rows if r.table == table and r.shift is None)
    summary = journal_summary(journal)
    assert total.rounds == summary["rounds"]
    assert {k: v for k, v in total.outcomes.items() if v} == summary["outcomes"]
    assert dict(total.faults) == summary["faults"]
    assert total.hands == summary["hands"]
    assert total.complete
