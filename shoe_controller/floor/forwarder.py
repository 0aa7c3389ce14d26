"""Forward the journal's public records to the floor's MQTT broker.

The journal is the outbox. The forwarder reads it through a read-only connection of its
own (the controller goes on appending meanwhile), projects every record with
:func:`~shoe_controller.service.public.public_event`, and publishes the public ones, in
journal order, QoS 1, to ``shoes/SITE/TABLE/events`` as :mod:`floor_protocol` says: live
records one a message, a backlog several consecutive records a message (at most 64 KiB),
every message signed with the box's own key.

The cursor beside the journal (:mod:`.cursor`) marks the last record the broker
acknowledged (PUBACK); the forwarder resumes after it at every start. A broker that is
down only delays forwarding: the records wait in the journal, nothing waits in memory but
the few in flight. Forwarding runs on its own thread and never in the card path; the
controller only wakes it (:meth:`Forwarder.wake`, a subscriber that never blocks). The
decisions are :mod:`.core`'s, without I/O; this module is the paho driver around them.

Beside the records (docs/floor.md):

- ``shoes/SITE/TABLE/head`` (retained): the journal's chain head, its last record's
  sequence number and MAC, and the last public record at or before it;
- ``shoes/SITE/TABLE/status`` (retained): online, the shoe's identity, the procedure's
  state; the Last Will sets it offline when the box vanishes;
- ``shoes/SITE/TABLE/replay``: the floor asks for the records after a sequence number
  again (it saw a gap); the forwarder reads the journal again from there. A request must
  be signed by the floor's key, fresh and never seen before
  (:mod:`floor_protocol.freshness`), and the box answers one per ``replay_interval`` at
  most. It counts the requests it refuses, by reason, and its status says so.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import paho.mqtt.client as mqtt
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode

import floor_protocol as fp
from floor_protocol import freshness, topics
from floor_protocol.messages import MAX_PAYLOAD, Outgoing, compact
from shoe_controller import __version__
from shoe_controller.errors import ShoeControllerError
from shoe_controller.floor.broker import (
    BrokerSettings,
    make_client,
    publish_properties,
    user_properties,
)
from shoe_controller.floor.core import (
    REFUSED_RETRY,
    ForwarderState,
    Forwarding,
    Ready,
    Rewind,
    batches,
)
from shoe_controller.floor.cursor import Cursor, cursor_path, read_cursor, write_cursor
from shoe_controller.floor.keys import load_floor_key, load_signing_key, signing_key_path
from shoe_controller.floor.settings import FloorSettings
from shoe_controller.journal.records import Record
from shoe_controller.journal.tail import JournalTail
from shoe_controller.service import events as ev
from shoe_controller.service.public import public_event

log = logging.getLogger(__name__)

#: Records published and not yet acknowledged, at most.
WINDOW: Final = 500
#: The chain head is published at most this often (seconds), and whenever forwarding stops.
HEAD_INTERVAL: Final = 1.0
#: The journal is read again at least this often (seconds), even without a wake-up.
POLL_INTERVAL: Final = 1.0
#: Longest wait (seconds) for the offline status to be acknowledged at a stop.
GOODBYE_SECONDS: Final = 2.0
#: A change in the count of refused replay requests is told in the status at most this
#: often (seconds): a flood of requests must not become a flood of statuses.
REFUSALS_INTERVAL: Final = 60.0
#: MQTT 5 "session taken over": another client connected with this table's client id.
_TAKEN_OVER: Final = 0x8E

Project = Callable[[Record], ev.ServiceEvent | None]
ClientFactory = Callable[[BrokerSettings, str], mqtt.Client]


def client_id(site: str, table: str) -> str:
    """The box's MQTT client id: one per table, so a second box claiming the table shows."""
    return f"shoe-{site}-{table}"


def _default_client(settings: BrokerSettings, identifier: str) -> mqtt.Client:
    return make_client(settings, identifier)


# What the other threads hand over to the forwarder's own, in the order it happened.


@dataclass(frozen=True)
class _Connected:
    reason: ReasonCode


@dataclass(frozen=True)
class _Disconnected:
    reason: ReasonCode


@dataclass(frozen=True)
class _Acknowledged:
    mid: int
    refused: bool


@dataclass(frozen=True)
class _Request:
    """A message on the replay topic, as it came, and when (the box's clock)."""

    topic: str
    payload: bytes
    properties: tuple[tuple[str, str], ...]
    received: float


@dataclass(frozen=True)
class _Stop:
    """Forward what waits until ``until`` (the monotonic clock), then stop."""

    until: float


_Happened = _Connected | _Disconnected | _Acknowledged | _Request | _Stop


class Forwarder:
    """Forwards one journal's public records to the floor. ``start()``, then ``wake`` on
    every controller event, then ``stop(drain_seconds)``.

    Three kinds of thread touch it: paho's network thread (its callbacks), the forwarder's
    own thread, and the callers of ``start``, ``wake``, ``state``, ``wait_for`` and
    ``stop``. The rule: the forwarder's own thread alone reads the journal, writes the
    cursor, publishes and touches the :class:`~.core.Forwarding` that decides; every other
    thread only hands over, by putting what happened in the inbox (paho's callbacks,
    ``stop``) or by setting the wake-up event (``wake``). What they read is the lock's: the
    snapshot the forwarder's thread shows between two of its steps (``state``), and the
    count of connections, which the Last Will names before each connect. ``failure`` and
    the backlog are read once the thread ended.
    """

    def __init__(
        self,
        settings: FloorSettings,
        journal_path: Path,
        *,
        client_factory: ClientFactory = _default_client,
        project: Project = public_event,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        window: int = WINDOW,
        keepalive: int | None = None,
        poll_interval: float = POLL_INTERVAL,
        head_interval: float = HEAD_INTERVAL,
        retry_delay: tuple[int, int] = (1, 30),
        refusals_interval: float = REFUSALS_INTERVAL,
    ) -> None:
        self.settings = settings
        self.journal_path = journal_path
        self.cursor_path = cursor_path(journal_path)
        self._client_factory = client_factory
        self._project = project
        self._clock = clock
        self._monotonic = monotonic
        self._window = window
        self._keepalive = keepalive if keepalive is not None else settings.keepalive
        self._poll = poll_interval
        self._retry_delay = retry_delay
        site, table = settings.site, settings.table_id
        self.events_topic = topics.topic(site, table, topics.EVENTS)
        self.head_topic = topics.topic(site, table, topics.HEAD)
        self.status_topic = topics.topic(site, table, topics.STATUS)
        self.replay_topic = topics.topic(site, table, topics.REPLAY)
        # Both keys are read now, so that a missing one stops the start, not the floor.
        self._key = load_signing_key(settings.signing_key or signing_key_path(journal_path))
        self._floor_key = load_floor_key(settings.floor_key) if settings.floor_key else None
        self.client_id = client_id(site, table)
        # Names this process's connections, so the floor can tell a stale Last Will of an
        # earlier connection from the state of the current one.
        self._boot = secrets.token_hex(4)

        # Handed over by the other threads.
        self._inbox: queue.SimpleQueue[_Happened] = queue.SimpleQueue()
        self._wake = threading.Event()
        self._gone = threading.Event()
        # Read by the other threads: the lock's.
        self._lock = threading.Lock()
        self._connection = 0
        self._snapshot = ForwarderState(False, None, 0, 0, 0, {})
        self._changed = threading.Condition()
        # The callers' own.
        self._thread: threading.Thread | None = None
        self._client: mqtt.Client | None = None
        # The forwarder's thread's.
        self._core = Forwarding(
            window=window,
            head_interval=head_interval,
            replay_interval=settings.replay_interval,
            refusals_interval=refusals_interval,
        )
        self._tail: JournalTail | None = None
        self._drain_until: float | None = None
        self._leaving = False
        self._backlog = 0
        self.failure: ShoeControllerError | None = None

    # --- life cycle ------------------------------------------------------------------------

    def start(self) -> None:
        """Connect to the broker (retrying in the background while it is unreachable) and
        start forwarding. The journal may not exist yet: it is opened once it does."""
        client = self._client_factory(self.settings.broker, self.client_id)
        client.on_pre_connect = self._on_pre_connect
        client.on_socket_open = _send_at_once
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_publish = self._on_publish
        client.on_message = self._on_message
        client.max_inflight_messages_set(min(self._window, 65535))
        client.reconnect_delay_set(*self._retry_delay)
        self._set_will(client, self._connection_number())
        self._client = client
        broker = self.settings.broker
        client.connect_async(broker.host, broker.port, keepalive=self._keepalive, clean_start=True)
        client.loop_start()
        self._thread = threading.Thread(target=self._run, name="floor-forwarder", daemon=True)
        self._thread.start()
        log.info(
            "forwarding %s to %s as %s", self.journal_path, broker.describe(), self.events_topic
        )

    def wake(self, event: object = None) -> None:
        """Read the journal now: the controller committed something. Never blocks, so it
        may be given to ``TableController.subscribe``."""
        self._wake.set()

    def stop(self, drain_seconds: float) -> int:
        """Forward what is waiting for at most ``drain_seconds``, then publish the table
        offline and disconnect. Returns the public records still waiting for the next start.
        Idempotent."""
        if self._thread is None:
            return self._backlog
        self._hand_over(_Stop(self._monotonic() + max(0.0, drain_seconds)))
        self._thread.join()
        self._thread = None
        return self._backlog

    def state(self) -> ForwarderState:
        """The forwarder as it was between two of its steps: never half of one."""
        with self._lock:
            return self._snapshot

    @property
    def replays_refused(self) -> int:
        """Replay requests refused since the start, whatever the reason."""
        return sum(self.state().replays_refused.values())

    def wait_for(self, predicate: Callable[[ForwarderState], bool], timeout: float) -> bool:
        """Wait until ``predicate(state)`` holds (checked whenever the state changes); False
        when ``timeout`` passed first."""
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self.state()), timeout)

    def _show(self) -> None:
        """Let the other threads see the forwarder as it is now, between two steps."""
        snapshot = self._core.snapshot()
        with self._lock:
            changed, self._snapshot = snapshot != self._snapshot, snapshot
        if changed:
            with self._changed:
                self._changed.notify_all()

    def _connection_number(self) -> int:
        with self._lock:
            return self._connection

    # --- paho callbacks (its network thread): hand over, never block -----------------------

    def _hand_over(self, happened: _Happened) -> None:
        self._inbox.put(happened)
        self._wake.set()

    def _on_pre_connect(self, client: mqtt.Client, userdata: Any) -> None:
        # The Last Will goes in the CONNECT packet: it is set here, before it is sent.
        with self._lock:
            self._connection += 1
            connection = self._connection
        self._set_will(client, connection)

    def _on_connect(
        self,
        client: mqtt.Client,
        userdata: Any,
        flags: mqtt.ConnectFlags,
        reason: ReasonCode,
        properties: Properties | None,
    ) -> None:
        self._hand_over(_Connected(reason))

    def _on_disconnect(
        self,
        client: mqtt.Client,
        userdata: Any,
        flags: mqtt.DisconnectFlags,
        reason: ReasonCode,
        properties: Properties | None,
    ) -> None:
        self._hand_over(_Disconnected(reason))
        self._gone.set()

    def _on_publish(
        self,
        client: mqtt.Client,
        userdata: Any,
        mid: int,
        reason: ReasonCode,
        properties: Properties,
    ) -> None:
        self._hand_over(_Acknowledged(mid, reason.is_failure))

    def _on_message(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        properties = user_properties(getattr(message, "properties", None))
        self._hand_over(_Request(message.topic, bytes(message.payload), properties, self._clock()))

    # --- the forwarding thread ---------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._forward()
        except ShoeControllerError as exc:
            log.error("forwarding to the floor stopped: %s", exc)
            self.failure = exc
        except Exception as exc:
            log.exception("forwarding to the floor failed")
            self.failure = ShoeControllerError(f"internal error: {type(exc).__name__}: {exc}")
        finally:
            self._finish()

    def _forward(self) -> None:
        while True:
            self._take_inbox()
            opened = self._tail is not None or self._open_journal()
            if opened:
                self._step()
            self._show()
            if self._drain_until is not None and (not opened or self._drained()):
                return
            self._wake.wait(self._wait_time())
            self._wake.clear()

    def _step(self) -> None:
        if self._core.subscription_due():
            self._listen()
        self._rewind_if_due()
        self._fill()
        self._store_cursor()
        if self._core.caught_up:
            self._publish_status()
            self._publish_head(force=False)

    def _drained(self) -> bool:
        assert self._drain_until is not None
        return self._core.drained() or self._monotonic() >= self._drain_until

    def _wait_time(self) -> float:
        if self._drain_until is not None:
            return max(0.0, min(self._poll, self._drain_until - self._monotonic()))
        if self._core.caught_up:
            head = self._core.head_wait(self._clock())
            if head is not None:
                return head
        return self._poll

    # --- what the other threads handed over ----------------------------------------------------

    def _take_inbox(self) -> None:
        while True:
            try:
                happened = self._inbox.get_nowait()
            except queue.Empty:
                return
            self._apply(happened)

    def _apply(self, happened: _Happened) -> None:
        match happened:
            case _Acknowledged(mid, refused):
                if self._core.settle(mid, refused, self._monotonic()):
                    log.error(
                        "the floor broker %s refused a record; sending it again in %g s",
                        self._where(),
                        REFUSED_RETRY,
                    )
            case _Request():
                self._consider(happened)
            case _Connected(reason):
                self._connected(reason)
            case _Disconnected(reason):
                self._disconnected(reason)
            case _Stop(until):
                self._drain_until = until

    def _connected(self, reason: ReasonCode) -> None:
        if reason.is_failure:
            log.warning("the floor broker %s refused the box: %s", self._where(), reason)
            return
        log.info("connected to the floor broker %s", self._where())
        self._core.connect()

    def _disconnected(self, reason: ReasonCode) -> None:
        was = self._core.disconnect()
        if reason.value == _TAKEN_OVER:
            log.error(
                "another box connected to the floor broker as table %s of site %s: give each "
                "box its own table id",
                self.settings.table_id,
                self.settings.site,
            )
        elif was and self._drain_until is None and not self._leaving:
            log.warning(
                "lost the floor broker %s (%s): records wait in the journal", self._where(), reason
            )

    def _listen(self) -> None:
        """Subscribe to the replay requests (the core says when: once a connection, with
        the journal open)."""
        assert self._client is not None
        self._client.subscribe(self.replay_topic, qos=1)

    def _consider(self, got: _Request) -> None:
        """Answer a replay request, or refuse it and say why."""
        try:
            request = self._check_request(got)
        except fp.Rejected as exc:
            self._refuse_replay(exc.reason, f"ignored a replay request on {got.topic}: {exc}")
            return
        if request is None:
            return
        verdict = self._core.consider(request, got.received, self._monotonic())
        if verdict is None or verdict == freshness.FRESH:
            return
        if verdict == freshness.TOO_SOON:
            why = (
                f"ignored a replay request: one was answered less than "
                f"{self._core.replay_interval:g} s ago"
            )
        else:
            why = (
                f"ignored a replay request made at {fp.iso(request.at)}: "
                + (_FRESHNESS_REFUSED[verdict])
            )
        self._refuse_replay(verdict, why)

    def _check_request(self, got: _Request) -> fp.Replay | None:
        """The replay request ``got`` carries, signed by the floor and well formed (None
        when it is no request: the floor withdrew its retained one, the gap is filled)."""
        if not got.payload:
            return None
        if self._floor_key is None:
            raise fp.Rejected("unknown_sender", "no floor key is configured (floor.floor_key)")
        fp.check_signature(got.topic, got.properties, got.payload, [self._floor_key], "the floor")
        request = fp.parse(got.topic, got.payload, got.properties, got.received)
        return request if isinstance(request, fp.Replay) else None

    def _refuse_replay(self, reason: str, why: str) -> None:
        count, total = self._core.refuse(reason)
        # A flood of them must not flood the log: the first of each reason, then every
        # hundredth.
        if count % 100 == 1:
            log.warning("%s (%d refused so far, %d %s)", why, total, count, reason)

    # --- the journal -------------------------------------------------------------------------

    def _open_journal(self) -> bool:
        if not self.journal_path.exists():
            return False
        tail = JournalTail.open(self.journal_path)
        self._tail = tail
        stored = read_cursor(self.cursor_path, tail.journal_id)
        head = tail.head()
        last = None if head is None else head.seq
        if not self._core.open(tail.journal_id, stored, last):
            # A cursor ahead of the journal: the journal was replaced by an older copy of
            # itself. Forward it again from its start; the floor's audit tells the rest.
            log.error(
                "floor cursor %s says record %d was forwarded, but journal %s ends at %d: "
                "forwarding it again from its first record",
                self.cursor_path,
                stored,
                self.journal_path,
                last,
            )
        self._rewind(self._core.cursor)
        self._recall(self._core.cursor)
        return True

    def _recall(self, seq: int, depth: int = 4096) -> None:
        """The shoe and the state as of record ``seq``, for the first status message."""
        tail = self._tail
        assert tail is not None
        for record in tail.before(seq, depth):
            if self._core.recalled():
                return
            event = self._project(record)
            if event is not None and self._core.recalls(event):
                self._core.note(event)

    def _rewind_if_due(self) -> None:
        due: Rewind | None = self._core.rewind_due()
        if due is None:
            return
        if due.asked:
            log.info("the floor asked for the records after %d again", due.seq)
        self._rewind(due.seq)

    def _rewind(self, seq: int) -> None:
        """Read again from the record after ``seq``."""
        self._core.rewind(seq, self._last_public_through(seq))

    def _last_public_through(self, seq: int) -> int:
        tail = self._tail
        assert tail is not None
        while seq > 0:
            records = tail.before(seq, 256)
            for record in records:
                if self._public(record) is not None:
                    return record.seq
            if not records:
                return 0
            seq = records[-1].seq - 1
        return 0

    def _fill(self) -> None:
        tail, client = self._tail, self._client
        assert tail is not None and client is not None
        while (room := self._core.room(self._monotonic())) > 0:
            records = tail.after(self._core.read_seq, room)
            if not records:
                self._core.read(None)
                return
            # Several records read at once are a backlog: consecutive ones go together in
            # a message. A live record goes alone, at once.
            for batch in batches(self._ready(records), backlog=len(records) > 1):
                self._publish_records(client, batch)
            self._core.read(records[-1].seq)

    def _ready(self, records: list[Record]) -> list[Ready]:
        """The public ones of ``records``, ready to go."""
        public: list[Ready] = []
        for record in records:
            found = self._public(record)
            if found is None:
                continue
            self._core.note(found[0])
            body = compact(found[1])
            if len(body) > MAX_PAYLOAD:
                log.error(
                    "record %d (%s) is not forwarded: larger than a floor message",
                    record.seq,
                    record.kind,
                )
                continue
            public.append((record.seq, record.mac.hex(), body))
        return public

    def _public(self, record: Record) -> tuple[ev.ServiceEvent, dict[str, Any]] | None:
        """The record's event and its JSON object, when the record is public."""
        event = self._project(record)
        if event is None:
            return None
        body = event.to_json()
        withheld = _confidential_fields(body)
        if withheld:
            # The projection decides what is public; this is the last guard before the wire.
            log.error(
                "record %d (%s) is not forwarded: its event would carry %s",
                record.seq,
                record.kind,
                ", ".join(withheld),
            )
            return None
        return event, body

    def _publish_records(self, client: mqtt.Client, batch: list[Ready]) -> None:
        journal = self._core.journal_id
        assert journal is not None
        message = fp.encode_records(
            self.settings.site, self.settings.table_id, journal, self._core.prev_public, batch
        )
        info = self._publish(client, message)
        self._core.sent(info.mid, batch[0][0], batch[-1][0])

    def _publish(self, client: mqtt.Client, message: Outgoing) -> mqtt.MQTTMessageInfo:
        """Sign ``message`` and hand it to paho (QoS 1)."""
        signed = self._key.sign(message.topic, message.properties, message.payload)
        return client.publish(
            message.topic,
            message.payload,
            qos=1,
            retain=message.retain,
            properties=publish_properties(signed),
        )

    def _store_cursor(self) -> None:
        """Write the cursor the core says is due; the core's cursor moves only once the
        file says it, so that nothing shows forwarded that a restart would not know."""
        through, journal = self._core.cursor_due(), self._core.journal_id
        if through is None or journal is None:
            return
        try:
            write_cursor(self.cursor_path, Cursor(journal, through))
        except OSError as exc:
            # The next write retries; until then a restart sends a few records again.
            log.error("cannot write the floor cursor %s: %s", self.cursor_path, exc)
            return
        self._core.cursor_written(through)

    # --- status and head ---------------------------------------------------------------------

    def _status(self, connection: int, *, online: bool) -> dict[str, Any]:
        return {
            "online": online,
            "ts": fp.iso(self._clock()),
            "site": self.settings.site,
            "table": self.settings.table_id,
            "connection": f"{self._boot}-{connection}",
            "version": __version__,
        }

    def _offline(self, connection: int, reason: str) -> dict[str, Any]:
        return {**self._status(connection, online=False), "reason": reason}

    def _set_will(self, client: mqtt.Client, connection: int) -> None:
        will = self._offline(connection, "connection lost")
        del will["ts"]  # the broker sends it when the box is gone: the floor times it
        message = fp.encode_status(self.settings.site, self.settings.table_id, will)
        signed = self._key.sign(message.topic, message.properties, message.payload)
        client.will_set(
            message.topic,
            message.payload,
            qos=1,
            retain=True,
            properties=publish_properties(signed),
        )

    def _publish_status(self) -> None:
        client = self._client
        assert client is not None
        if not self._core.status_due(self._monotonic()):
            return
        status = {**self._status(self._connection_number(), online=True), **self._core.status()}
        self._publish(client, fp.encode_status(self.settings.site, self.settings.table_id, status))
        self._core.status_published(status, self._monotonic())

    def _publish_head(self, *, force: bool) -> None:
        if not self._core.head_due(self._clock(), force=force):
            return
        tail, client, journal = self._tail, self._client, self._core.journal_id
        assert tail is not None and client is not None and journal is not None
        record = tail.record(self._core.read_seq)
        if record is None:
            return
        head = fp.encode_head(
            self.settings.site,
            self.settings.table_id,
            journal,
            seq=record.seq,
            mac=record.mac.hex(),
            public_seq=self._core.prev_public,
            ts=fp.iso(self._clock()),
        )
        self._publish(client, head)
        self._core.head_published(self._clock())

    # --- the end -----------------------------------------------------------------------------

    def _finish(self) -> None:
        self._leaving = True
        client = self._client
        try:
            # What came last, the connection's state among it, decides what is said.
            self._take_inbox()
            if self._tail is not None and self.failure is None:
                self._store_cursor()
                if self._core.caught_up:
                    self._publish_head(force=True)
                self._backlog = self._count_waiting()
            if client is not None:
                self._say_goodbye(client)
        finally:
            if client is not None:
                self._gone.clear()
                if client.disconnect() == mqtt.MQTT_ERR_SUCCESS:
                    # loop_stop() may end the network thread before DISCONNECT is on the
                    # wire; without it the broker would publish the Last Will.
                    self._gone.wait(GOODBYE_SECONDS)
                client.loop_stop()
            if self._tail is not None:
                self._tail.close()
            self._core.disconnect()
            self._show()

    def _say_goodbye(self, client: mqtt.Client) -> None:
        """Mark the table offline ourselves: a clean disconnect sends no Last Will."""
        if not self._core.connected:
            return
        goodbye = self._offline(self._connection_number(), "stopped")
        info = self._publish(
            client, fp.encode_status(self.settings.site, self.settings.table_id, goodbye)
        )
        with contextlib.suppress(RuntimeError, ValueError):
            info.wait_for_publish(GOODBYE_SECONDS)

    def _count_waiting(self) -> int:
        """Public records after the cursor: what the next start forwards."""
        tail = self._tail
        assert tail is not None
        waiting, seq = 0, self._core.cursor
        while True:
            records = tail.after(seq, 1024)
            if not records:
                return waiting
            waiting += sum(1 for r in records if self._public(r) is not None)
            seq = records[-1].seq

    def _where(self) -> str:
        return self.settings.broker.describe()


def _send_at_once(client: mqtt.Client, userdata: Any, sock: Any) -> None:
    """No Nagle's algorithm on the box's connection: a record published while the broker
    has not yet acknowledged the previous segment would wait for that acknowledgement."""
    with contextlib.suppress(AttributeError, OSError):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


#: Why a request was refused for its freshness, for the log.
_FRESHNESS_REFUSED: Final = {
    freshness.STALE: f"older than {freshness.MAX_AGE:g} s by this box's clock (a copy published "
    "again on the broker, or check the box's time against the floor's: NTP)",
    freshness.FUTURE: f"more than {freshness.MAX_SKEW:g} s ahead of this box's clock (check "
    "the box's time against the floor's: NTP)",
    freshness.REPLAYED: "a copy of one this box has seen (published again on the broker)",
    freshness.FULL: f"this box remembers {freshness.MEMORY} fresh requests already",
}

#: Where the journal keeps card identities (as its sealing does): a public event has none.
_IDENTITY_KEYS: Final = frozenset({"card", "cards"})


def _confidential_fields(body: dict[str, Any]) -> list[str]:
    """Fields of an event that would publish a card identity (rule E1): only a closed
    round's ``hands`` may carry cards; anything named like a card elsewhere is withheld."""
    found: list[str] = []

    def walk(value: Any, where: str) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                misplaced_hands = key == "hands" and (
                    bool(where) or body.get("event") != "round_closed"
                )
                if key in _IDENTITY_KEYS or misplaced_hands:
                    found.append(f"{where}{key}")
                else:
                    walk(item, f"{where}{key}.")
        elif isinstance(value, list):
            for item in value:
                walk(item, where)

    walk(body, "")
    return found
