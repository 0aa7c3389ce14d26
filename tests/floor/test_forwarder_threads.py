"""The forwarder's threads, without a broker: a paho client that never touches the network
stands in for it, and the test plays paho's network thread, calling the callbacks itself.
What another thread sees of the forwarder is one moment of it, never half of a step, and
the cursor it shows is the one on disk."""

from __future__ import annotations

import errno
import itertools
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion, MQTTErrorCode
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

from shoe_controller.floor import forwarder as forwarder_module
from shoe_controller.floor.broker import BrokerSettings
from shoe_controller.floor.cursor import Cursor, cursor_path, read_cursor, write_cursor
from shoe_controller.floor.forwarder import Forwarder
from tests.floor.helpers import WAIT, floor_settings, journal_id
from tests.floor.test_forwarder import deal, last_seq

#: Never reached: the client below does not connect.
NOWHERE = "mqtt://127.0.0.1:1"


class Offline(mqtt.Client):
    """A paho client that never touches the network: it keeps what the forwarder publishes
    and subscribes to, and the test calls the callbacks as paho's network thread would."""

    def __init__(self, settings: BrokerSettings, identifier: str) -> None:
        super().__init__(CallbackAPIVersion.VERSION2, client_id=identifier, protocol=mqtt.MQTTv5)
        self.changed = threading.Condition()
        self.published: list[tuple[int, str]] = []
        self.subscribed: list[str] = []
        self._mids = itertools.count(1)

    def connect_async(self, *args: Any, **kwargs: Any) -> None:
        pass

    def loop_start(self) -> MQTTErrorCode:
        return mqtt.MQTT_ERR_SUCCESS

    def loop_stop(self) -> MQTTErrorCode:
        return mqtt.MQTT_ERR_SUCCESS

    def disconnect(self, *args: Any, **kwargs: Any) -> MQTTErrorCode:
        return mqtt.MQTT_ERR_NO_CONN

    def publish(  # type: ignore[override]
        self, topic: str, payload: Any = None, qos: int = 0, retain: bool = False, **_: Any
    ) -> mqtt.MQTTMessageInfo:
        with self.changed:
            mid = next(self._mids)
            self.published.append((mid, topic))
            self.changed.notify_all()
        return mqtt.MQTTMessageInfo(mid)

    def subscribe(self, topic: Any, *args: Any, **kwargs: Any) -> tuple[MQTTErrorCode, int]:
        with self.changed:
            self.subscribed.append(topic)
            self.changed.notify_all()
        return mqtt.MQTT_ERR_SUCCESS, next(self._mids)

    def records(self, at_least: int) -> list[int]:
        """The mids of the records messages published, once there are ``at_least``."""

        def found() -> list[int]:
            return [mid for mid, topic in self.published if topic.endswith("/events")]

        with self.changed:
            assert self.changed.wait_for(lambda: len(found()) >= at_least, WAIT)
            return found()

    def wait_subscribed(self) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: bool(self.subscribed), WAIT)

    def acknowledge(self, mid: int, *, refused: bool = False) -> None:
        reason = ReasonCode(PacketTypes.PUBACK, identifier=0x80 if refused else 0)
        self._callback("on_publish", mid, reason, Properties(PacketTypes.PUBACK))  # type: ignore[no-untyped-call]

    def connected(self) -> None:
        reason = ReasonCode(PacketTypes.CONNACK, identifier=0)
        self._callback("on_connect", mqtt.ConnectFlags(False), reason, None)

    def disconnected(self) -> None:
        reason = ReasonCode(PacketTypes.DISCONNECT, identifier=0)
        self._callback("on_disconnect", mqtt.DisconnectFlags(False), reason, None)

    def _callback(self, name: str, *args: Any) -> None:
        """Call the forwarder's callback ``name`` as paho's network thread does."""
        callback: Any = getattr(self, name)
        callback(self, None, *args)


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    """A journal with one round dealt on it."""
    path = tmp_path / "box" / "journal.sqlite3"
    deal(path, 1)
    return path


@pytest.fixture
def clients() -> list[Offline]:
    return []


def offline_forwarder(journal: Path, clients: list[Offline], **options: Any) -> Forwarder:
    def factory(settings: BrokerSettings, identifier: str) -> mqtt.Client:
        clients.append(Offline(settings, identifier))
        return clients[-1]

    return Forwarder(floor_settings(NOWHERE), journal, client_factory=factory, **options)


@pytest.fixture
def running(journal: Path, clients: list[Offline]) -> Iterator[Forwarder]:
    """A forwarder started on the journal, with its clock frozen (a refused record waits for
    its retry for ever), stopped at once at the end."""
    forwarder = offline_forwarder(journal, clients, window=2, monotonic=lambda: 0.0)
    forwarder.start()
    try:
        yield forwarder
    finally:
        forwarder.stop(drain_seconds=0)


def test_a_cursor_that_cannot_be_written_is_not_shown_moved_after_a_refusal(
    journal: Path, clients: list[Offline], monkeypatch: pytest.MonkeyPatch
) -> None:
    def unwritable(path: Path, cursor: Cursor) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(forwarder_module, "write_cursor", unwritable)
    forwarder = offline_forwarder(journal, clients, window=2, monotonic=lambda: 0.0)
    forwarder.start()
    try:
        first, second = clients[0].records(2)
        assert forwarder.wait_for(lambda s: s.in_flight == 2, WAIT)
        # The second refused, then the first acknowledged: every record before the refused
        # one was, but the disk is full: the cursor must not say what a restart would not
        # know.
        clients[0].acknowledge(second, refused=True)
        clients[0].acknowledge(first)
        assert forwarder.wait_for(lambda s: s.in_flight == 0, WAIT)
        assert forwarder.state().cursor == 0
        assert not cursor_path(journal).exists()
    finally:
        forwarder.stop(drain_seconds=0)


def test_a_refusal_writes_the_cursor_it_shows(
    journal: Path, clients: list[Offline], running: Forwarder
) -> None:
    first, second = clients[0].records(2)
    assert running.wait_for(lambda s: s.in_flight == 2, WAIT)
    clients[0].acknowledge(second, refused=True)
    clients[0].acknowledge(first)
    assert running.wait_for(lambda s: s.in_flight == 0, WAIT)
    shown = running.state().cursor
    assert shown > 0
    assert read_cursor(cursor_path(journal), journal_id(journal)) == shown


def test_a_state_read_while_the_cursor_is_written_is_the_one_before_the_step(
    journal: Path, clients: list[Offline], monkeypatch: pytest.MonkeyPatch
) -> None:
    end = last_seq(journal)
    writing, written = threading.Event(), threading.Event()

    def slow_write(path: Path, cursor: Cursor) -> None:
        if cursor.seq == end:  # the last write: everything was acknowledged
            writing.set()
            assert written.wait(WAIT)
        write_cursor(path, cursor)

    monkeypatch.setattr(forwarder_module, "write_cursor", slow_write)
    forwarder = offline_forwarder(journal, clients)
    forwarder.start()
    try:
        assert forwarder.wait_for(lambda s: s.read_seq == end and s.in_flight > 0, WAIT)
        before = forwarder.state()
        for mid in clients[0].records(before.in_flight):
            clients[0].acknowledge(mid)
        assert writing.wait(WAIT)
        # The forwarder's thread has settled every acknowledgement and is writing the
        # cursor: another thread sees the step before, not the records settled with the
        # cursor behind them.
        assert forwarder.state() == before
        written.set()
        assert forwarder.wait_for(lambda s: s.cursor == end and s.in_flight == 0, WAIT)
    finally:
        written.set()
        forwarder.stop(drain_seconds=0)
    assert read_cursor(cursor_path(journal), journal_id(journal)) == end


def test_the_replay_topic_is_subscribed_once_the_journal_is_open(
    tmp_path: Path, clients: list[Offline]
) -> None:
    journal = tmp_path / "box" / "journal.sqlite3"
    forwarder = offline_forwarder(journal, clients)
    forwarder.start()
    try:
        clients[0].connected()
        assert forwarder.wait_for(lambda s: s.connected, WAIT)
        # A retained request names its journal: none is taken before the box knows its own.
        assert clients[0].subscribed == []
        deal(journal, 1, forwarder)
        assert clients[0].wait_subscribed()
        assert clients[0].subscribed == [forwarder.replay_topic]
        assert forwarder.wait_for(lambda s: s.journal_id == journal_id(journal), WAIT)
        clients[0].disconnected()
        assert forwarder.wait_for(lambda s: not s.connected, WAIT)
    finally:
        forwarder.stop(drain_seconds=0)
