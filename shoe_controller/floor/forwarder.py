"""Forward the journal's public records to the floor's MQTT broker.

The journal is the outbox. The forwarder reads it through a read-only connection of its
own (the controller goes on appending meanwhile), projects every record with
:func:`~shoe_controller.service.public.public_event`, and publishes the public ones, in
journal order, QoS 1, to ``shoes/SITE/TABLE/events`` as :mod:`floor_protocol` says: live
records one a message, a backlog several consecutive records a message (at most 64 KiB),
every message signed with the box's own key.

The cursor beside the journal (:mod:`.floor_cursor`) marks the last record the broker
acknowledged (PUBACK); the forwarder resumes after it at every start. A broker that is
down only delays forwarding: the records wait in the journal, nothing waits in memory but
the few in flight. Forwarding runs on its own thread and never in the card path; the
controller only wakes it (:meth:`Forwarder.wake`, a subscriber that never blocks).

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
import math
import queue
import secrets
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
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
from shoe_controller.floor.core import InFlight, ReplayGate, batches
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
#: After the broker refused a record, wait this long (seconds) before sending it again.
REFUSED_RETRY: Final = 5.0
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


@dataclass(frozen=True)
class ForwarderState:
    """What the forwarder has done so far, for diagnostics and tests."""

    connected: bool
    journal_id: str | None
    cursor: int
    read_seq: int
    in_flight: int
    #: Replay requests refused since the start, by reason (fp.REPLAY_REFUSALS).
    replays_refused: Mapping[str, int] = field(default_factory=dict)


class Forwarder:
    """Forwards one journal's public records to the floor. ``start()``, then ``wake`` on
    every controller event, then ``stop(drain_seconds)``."""

    def __init__(
        self,
        settings: FloorSettings,
        journal_path: Path,
        *,
        client_factory: ClientFactory = _default_client,
        project: Project = public_event,
        clock: Callable[[], float] = time.time,
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
        self._window = window
        self._keepalive = keepalive if keepalive is not None else settings.keepalive
        self._poll = poll_interval
        self._head_interval = head_interval
        self._retry_delay = retry_delay
        site, table = settings.site, settings.table_id
        self.events_topic = topics.topic(site, table, topics.EVENTS)
        self.head_topic = topics.topic(site, table, topics.HEAD)
        self.status_topic = topics.topic(site, table, topics.STATUS)
        self.replay_topic = topics.topic(site, table, topics.REPLAY)
        # Both keys are read now, so that a missing one stops the start, not the floor.
        self._key = load_signing_key(settings.signing_key or signing_key_path(journal_path))
        self._floor_key = load_floor_key(settings.floor_key) if settings.floor_key else None
        self._replay_gate = ReplayGate(settings.replay_interval)
        # Only the network thread checks requests; the memory is this run's.
        self._replay_guard = fp.ReplayGuard()
        #: Replay requests refused, by reason (guarded by the lock).
        self._refusals: dict[str, int] = {}
        self._refusals_interval = refusals_interval
        self.client_id = client_id(site, table)
        # Names this process's connections, so the floor can tell a stale Last Will of an
        # earlier connection from the state of the current one.
        self._boot = secrets.token_hex(4)
        self._connection = 0

        self._wake = threading.Event()
        self._acks: queue.SimpleQueue[tuple[int, bool]] = queue.SimpleQueue()
        self._replays: queue.SimpleQueue[int] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._changed = threading.Condition()
        self._gone = threading.Event()
        self._connected = False
        self._status_due = False
        self._head_lost = False
        self._thread: threading.Thread | None = None
        self._client: mqtt.Client | None = None
        self._stopping = threading.Event()
        self._drain_until = 0.0
        self._stopped = threading.Event()
        self.failure: ShoeControllerError | None = None

        self._tail: JournalTail | None = None
        self._journal_id: str | None = None
        self._cursor = 0
        self._read_seq = 0
        self._prev_public = 0
        self._in_flight = InFlight()
        self._retry_at = 0.0
        self._head_sent: tuple[int, int] = (0, 0)
        self._head_at = 0.0
        self._caught_up = False
        self._backlog = 0
        #: The table as the last records read tell it, for the status message.
        self._shoe: dict[str, Any] | None = None
        self._state: str | None = None
        self._round: str | None = None
        self._status_sent: tuple[Any, ...] | None = None
        self._refusals_sent: dict[str, int] = {}
        self._status_at = -math.inf

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
        self._set_will(client)
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
        self._drain_until = time.monotonic() + max(0.0, drain_seconds)
        self._stopping.set()
        self._wake.set()
        self._thread.join()
        self._thread = None
        return self._backlog

    def state(self) -> ForwarderState:
        with self._lock:
            connected = self._connected
            refusals = dict(self._refusals)
        return ForwarderState(
            connected,
            self._journal_id,
            self._cursor,
            self._read_seq,
            len(self._in_flight),
            refusals,
        )

    @property
    def replays_refused(self) -> int:
        """Replay requests refused since the start, whatever the reason."""
        with self._lock:
            return sum(self._refusals.values())

    def wait_for(self, predicate: Callable[[ForwarderState], bool], timeout: float) -> bool:
        """Wait until ``predicate(state)`` holds (checked whenever the cursor moves, the
        connection changes or a replay request is refused); False when ``timeout`` passed
        first."""
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self.state()), timeout)

    def _tell(self) -> None:
        with self._changed:
            self._changed.notify_all()

    # --- paho callbacks (its network thread): hand over, never block -----------------------

    def _on_pre_connect(self, client: mqtt.Client, userdata: Any) -> None:
        self._connection += 1
        self._set_will(client)

    def _on_connect(
        self,
        client: mqtt.Client,
        userdata: Any,
        flags: mqtt.ConnectFlags,
        reason: ReasonCode,
        properties: Properties | None,
    ) -> None:
        if reason.is_failure:
            log.warning("the floor broker %s refused the box: %s", self._where(), reason)
            return
        log.info("connected to the floor broker %s", self._where())
        with self._lock:
            self._connected = True
            listen = self._journal_id is not None
            # A broker that restarted without its store lost the retained messages: say
            # them again on every connection.
            self._status_due = True
            self._head_lost = True
        if listen:
            self._listen(client)
        self._wake.set()
        self._tell()

    def _listen(self, client: mqtt.Client) -> None:
        """Subscribe to the replay requests, once a connection: when connected with the
        journal open (a request is for one journal; a retained one must not come before the
        box knows its journal's id), by whichever of the two came last. Never with the lock
        held: paho takes a lock of its own that its callbacks hold while they wait for ours."""
        client.subscribe(self.replay_topic, qos=1)

    def _on_disconnect(
        self,
        client: mqtt.Client,
        userdata: Any,
        flags: mqtt.DisconnectFlags,
        reason: ReasonCode,
        properties: Properties | None,
    ) -> None:
        with self._lock:
            was = self._connected
            self._connected = False
        self._gone.set()
        self._tell()
        if reason.value == _TAKEN_OVER:
            log.error(
                "another box connected to the floor broker as table %s of site %s: give each "
                "box its own table id",
                self.settings.table_id,
                self.settings.site,
            )
        elif was and not self._stopping.is_set():
            log.warning(
                "lost the floor broker %s (%s): records wait in the journal", self._where(), reason
            )

    def _on_publish(
        self,
        client: mqtt.Client,
        userdata: Any,
        mid: int,
        reason: ReasonCode,
        properties: Properties,
    ) -> None:
        self._acks.put((mid, reason.is_failure))
        self._wake.set()

    def _on_message(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        properties = user_properties(getattr(message, "properties", None))
        payload = bytes(message.payload)
        if not payload:
            return  # the floor withdrew its retained request: the gap is filled
        now = self._clock()
        try:
            if self._floor_key is None:
                raise fp.Rejected("unknown_sender", "no floor key is configured (floor.floor_key)")
            fp.check_signature(message.topic, properties, payload, [self._floor_key], "the floor")
            request = fp.parse(message.topic, payload, properties, now)
        except fp.Rejected as exc:
            self._refuse_replay(exc.reason, f"ignored a replay request on {message.topic}: {exc}")
            return
        if not isinstance(request, fp.Replay) or request.journal != self._journal_id:
            return
        # Fresh and never seen, or a copy of a request read on the broker: its signature is
        # genuine all the same.
        verdict = self._replay_guard.check(request.at, request.nonce, now)
        if verdict != freshness.FRESH:
            self._refuse_replay(
                verdict,
                f"ignored a replay request made at {fp.iso(request.at)}: "
                + _FRESHNESS_REFUSED[verdict],
            )
            return
        if not self._replay_gate.admit(time.monotonic()):
            self._refuse_replay(
                freshness.TOO_SOON,
                f"ignored a replay request: one was answered less than "
                f"{self._replay_gate.interval:g} s ago",
            )
            return
        self._replays.put(request.after)
        self._wake.set()

    def _refuse_replay(self, reason: str, why: str) -> None:
        with self._lock:
            count = self._refusals[reason] = self._refusals.get(reason, 0) + 1
            total = sum(self._refusals.values())
        # A flood of them must not flood the log: the first of each reason, then every
        # hundredth.
        if count % 100 == 1:
            log.warning("%s (%d refused so far, %d %s)", why, total, count, reason)
        self._tell()

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
        while not self._open_journal():
            if self._stopping.is_set():
                return
            self._wake.wait(self._poll)
            self._wake.clear()
        while True:
            self._settle_acks()
            self._take_replays()
            self._fill()
            self._store_cursor()
            if self._caught_up:
                self._publish_status()
                self._publish_head(force=False)
            if self._stopping.is_set() and self._drained():
                return
            self._wake.wait(self._wait_time())
            self._wake.clear()

    def _drained(self) -> bool:
        if self._caught_up and len(self._in_flight) == 0:
            return True
        return time.monotonic() >= self._drain_until

    def _wait_time(self) -> float:
        if self._stopping.is_set():
            return max(0.0, min(self._poll, self._drain_until - time.monotonic()))
        if self._caught_up and self._head_due():
            return max(0.0, self._head_at + self._head_interval - self._clock())
        return self._poll

    def _open_journal(self) -> bool:
        if not self.journal_path.exists():
            return False
        tail = JournalTail.open(self.journal_path)
        self._tail = tail
        with self._lock:
            self._journal_id = tail.journal_id
            listen = self._connected
        if listen:
            assert self._client is not None
            self._listen(self._client)
        self._cursor = read_cursor(self.cursor_path, tail.journal_id)
        head = tail.head()
        if head is not None and self._cursor > head.seq:
            # A cursor ahead of the journal: the journal was replaced by an older copy of
            # itself. Forward it again from its start; the floor's audit tells the rest.
            log.error(
                "floor cursor %s says record %d was forwarded, but journal %s ends at %d: "
                "forwarding it again from its first record",
                self.cursor_path,
                self._cursor,
                self.journal_path,
                head.seq,
            )
            self._cursor = 0
        self._rewind(self._cursor)
        self._recall(self._cursor)
        return True

    def _recall(self, seq: int, depth: int = 4096) -> None:
        """The shoe and the state as of record ``seq``, for the first status message."""
        tail = self._tail
        assert tail is not None
        for record in tail.before(seq, depth):
            if self._shoe is not None and self._state is not None:
                return
            event = self._project(record)
            wanted = (isinstance(event, ev.ConnectedEvent) and self._shoe is None) or (
                isinstance(event, ev.StateEvent) and self._state is None
            )
            if wanted and event is not None:
                self._note(event)

    def _rewind(self, seq: int) -> None:
        """Read again from the record after ``seq``."""
        self._read_seq = seq
        self._prev_public = self._last_public_through(seq)
        self._caught_up = False

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

    def _settle_acks(self) -> None:
        while True:
            try:
                mid, refused = self._acks.get_nowait()
            except queue.Empty:
                break
            if self._in_flight.settle(mid, refused) and refused:
                log.error(
                    "the floor broker %s refused a record; sending it again in %g s",
                    self._where(),
                    REFUSED_RETRY,
                )
                self._retry_at = time.monotonic() + REFUSED_RETRY
        if self._in_flight.refused() and self._in_flight.all_settled():
            # Every record sent before the refused one was acknowledged: start over there.
            self._cursor = max(self._cursor, self._in_flight.acknowledged_through(self._read_seq))
            first_refused = self._in_flight.acknowledged_through(self._read_seq)
            self._in_flight.clear()
            self._rewind(first_refused)

    def _take_replays(self) -> None:
        earliest: int | None = None
        while True:
            try:
                after = self._replays.get_nowait()
            except queue.Empty:
                break
            earliest = after if earliest is None else min(earliest, after)
        if earliest is not None and earliest < self._read_seq:
            log.info("the floor asked for the records after %d again", earliest)
            self._rewind(earliest)

    def _fill(self) -> None:
        tail, client = self._tail, self._client
        assert tail is not None and client is not None
        if self._in_flight.refused() or time.monotonic() < self._retry_at:
            return
        while len(self._in_flight) < self._window:
            records = tail.after(self._read_seq, self._window - len(self._in_flight))
            if not records:
                self._caught_up = True
                return
            self._caught_up = False
            public: list[tuple[int, str, bytes]] = []
            for record in records:
                found = self._public(record)
                if found is None:
                    continue
                self._note(found[0])
                body = compact(found[1])
                if len(body) > MAX_PAYLOAD:
                    log.error(
                        "record %d (%s) is not forwarded: larger than a floor message",
                        record.seq,
                        record.kind,
                    )
                    continue
                public.append((record.seq, record.mac.hex(), body))
            # Several records read at once are a backlog: consecutive ones go together in
            # a message. A live record goes alone, at once.
            for batch in batches(public, backlog=len(records) > 1):
                self._publish_records(client, batch)
            self._read_seq = max(self._read_seq, records[-1].seq)

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

    def _publish_records(self, client: mqtt.Client, batch: list[tuple[int, str, bytes]]) -> None:
        assert self._journal_id is not None
        message = fp.encode_records(
            self.settings.site, self.settings.table_id, self._journal_id, self._prev_public, batch
        )
        info = self._publish(client, message)
        self._in_flight.add(info.mid, batch[0][0], batch[-1][0])
        self._prev_public = batch[-1][0]
        self._read_seq = batch[-1][0]

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

    def _note(self, event: ev.ServiceEvent) -> None:
        """Keep what the status message shows."""
        if isinstance(event, ev.ConnectedEvent):
            self._shoe = {
                "model": event.model,
                "serial": event.serial,
                "firmware": event.firmware,
                "approved": event.approved,
            }
        elif isinstance(event, ev.StateEvent):
            self._state = event.state
            self._round = event.round

    def _store_cursor(self) -> None:
        through = self._in_flight.acknowledged_through(self._read_seq)
        if through <= self._cursor or self._journal_id is None:
            return
        try:
            write_cursor(self.cursor_path, Cursor(self._journal_id, through))
        except OSError as exc:
            # The next write retries; until then a restart sends a few records again.
            log.error("cannot write the floor cursor %s: %s", self.cursor_path, exc)
            return
        self._cursor = through
        self._tell()

    # --- status and head ---------------------------------------------------------------------

    def _status(self, online: bool, reason: str | None = None) -> dict[str, Any]:
        status: dict[str, Any] = {
            "online": online,
            "ts": fp.iso(self._clock()),
            "site": self.settings.site,
            "table": self.settings.table_id,
            "connection": f"{self._boot}-{self._connection}",
            "version": __version__,
        }
        if online:
            status.update(shoe=self._shoe, state=self._state, round=self._round)
            with self._lock:
                status["replays_refused"] = dict(sorted(self._refusals.items()))
        else:
            status["reason"] = reason
        return status

    def _set_will(self, client: mqtt.Client) -> None:
        will = self._status(False, "connection lost")
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
        current = (self._shoe, self._state, self._round)
        with self._lock:
            refusals = self._refusals != self._refusals_sent and (
                time.monotonic() >= self._status_at + self._refusals_interval
            )
            due = self._connected and (self._status_due or current != self._status_sent or refusals)
            self._status_due = False
        if due:
            status = self._status(True)
            self._publish(
                client, fp.encode_status(self.settings.site, self.settings.table_id, status)
            )
            self._status_sent = current
            self._refusals_sent = status["replays_refused"]
            self._status_at = time.monotonic()

    def _head_due(self) -> bool:
        with self._lock:
            if self._head_lost:
                self._head_lost = False
                self._head_sent = (0, 0)
        return self._read_seq > 0 and (self._read_seq, self._prev_public) != self._head_sent

    def _publish_head(self, *, force: bool) -> None:
        if not self._head_due() or self._journal_id is None:
            return
        if not force and self._clock() < self._head_at + self._head_interval:
            return
        tail, client = self._tail, self._client
        assert tail is not None and client is not None
        record = tail.record(self._read_seq)
        if record is None:
            return
        head = fp.encode_head(
            self.settings.site,
            self.settings.table_id,
            self._journal_id,
            seq=record.seq,
            mac=record.mac.hex(),
            public_seq=self._prev_public,
            ts=fp.iso(self._clock()),
        )
        self._publish(client, head)
        self._head_sent = (self._read_seq, self._prev_public)
        self._head_at = self._clock()

    # --- the end -----------------------------------------------------------------------------

    def _finish(self) -> None:
        client = self._client
        try:
            if self._tail is not None and self.failure is None:
                self._settle_acks()
                self._store_cursor()
                if self._caught_up:
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
            self._stopped.set()
            self._tell()

    def _say_goodbye(self, client: mqtt.Client) -> None:
        """Mark the table offline ourselves: a clean disconnect sends no Last Will."""
        with self._lock:
            connected = self._connected
        if not connected:
            return
        goodbye = self._status(False, "stopped")
        info = self._publish(
            client, fp.encode_status(self.settings.site, self.settings.table_id, goodbye)
        )
        with contextlib.suppress(RuntimeError, ValueError):
            info.wait_for_publish(GOODBYE_SECONDS)

    def _count_waiting(self) -> int:
        """Public records after the cursor: what the next start forwards."""
        tail = self._tail
        assert tail is not None
        waiting, seq = 0, self._cursor
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
