"""``shoe-floor collect``: store every table's public record, idempotently, and tell gaps.

The collector subscribes to ``$share/floor/shoes/+/+/events`` (a shared subscription: the
broker gives each record to one collector of the group ``floor``, so several collectors
share the load) and to every table's ``head`` and ``status`` (each collector sees all of
those). Its MQTT session is persistent, so the broker keeps what arrives while it is
away.

Records are stored in batches, one transaction each, and acknowledged to the broker only
once their transaction committed: a collector killed at any moment loses nothing, and a
record the broker delivers again changes nothing (its key is table, journal, sequence).

Every few seconds the collector looks for gaps: the public records of a journal are
chained by their ``prev`` numbers, so a record whose predecessor never arrived (or a head
naming a record that never arrived) shows one. It reports the gap and asks the box to send
the records after the last one it holds again (``shoes/SITE/TABLE/replay``).
"""

from __future__ import annotations

import json
import logging
import queue
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.reasoncodes import ReasonCode
from paho.mqtt.subscribeoptions import SubscribeOptions

from shoe_controller.broker import (
    TOPIC_ROOT,
    BrokerSettings,
    make_client,
    publish_properties,
    topic,
    user_properties,
)
from shoe_floor.messages import FloorRecord, Head, Malformed, Presence, parse_message
from shoe_floor.store import Gap, Store, open_store

log = logging.getLogger(__name__)

SHARE_GROUP: Final = "floor"
EVENTS_FILTER: Final = f"$share/{SHARE_GROUP}/{TOPIC_ROOT}/+/+/events"
HEAD_FILTER: Final = f"{TOPIC_ROOT}/+/+/head"
STATUS_FILTER: Final = f"{TOPIC_ROOT}/+/+/status"
#: How long the broker keeps the session of a collector that vanished (and what arrives for
#: it): a collector restarted within the hour finds everything waiting. A session also
#: takes its share of the records while it waits, so it must not outlive a collector that is
#: gone for good by long; what the broker dropped the boxes send again (gaps). A collector
#: stopped on purpose ends its session at once.
SESSION_EXPIRY: Final = 3600
#: Records the broker may send before the collector acknowledges them.
RECEIVE_MAXIMUM: Final = 2000
BATCH_SIZE: Final = 1000
#: Longest a record waits to be stored (seconds) while the batch fills.
BATCH_DELAY: Final = 0.02
#: A gap must be this old (seconds) before it is reported: another collector may be
#: storing the missing records right now.
GAP_GRACE: Final = 5.0
GAP_INTERVAL: Final = 2.0
#: Longest wait for the broker to take the DISCONNECT at a stop (seconds).
DISCONNECT_TIMEOUT: Final = 2.0

Notice = Callable[[str], None]


@dataclass
class _Incoming:
    mid: int
    qos: int
    topic: str
    payload: bytes
    properties: dict[str, str]
    received: float


@dataclass
class CollectorStats:
    """What the collector did, for its log and for tests."""

    stored: int = 0
    batches: int = 0
    rejected: int = 0
    gaps_reported: int = 0
    #: Gap scans done, and journals the last scan left with records missing or unchecked.
    scans: int = 0
    pending: int = 0
    latencies: list[float] = field(default_factory=list)


class Collector:
    """Subscribe, store, acknowledge, look for gaps. ``start()``, then ``stop()``."""

    def __init__(
        self,
        broker: BrokerSettings,
        db: str,
        *,
        name: str | None = None,
        notice: Notice = log.warning,
        clock: Callable[[], float] = time.time,
        batch_size: int = BATCH_SIZE,
        batch_delay: float = BATCH_DELAY,
        gap_grace: float = GAP_GRACE,
        gap_interval: float = GAP_INTERVAL,
        keep_latencies: bool = False,
    ) -> None:
        self.broker = broker
        self.db = db
        self.name = name or socket.gethostname()
        self.client_id = f"shoe-floor-{self.name}"
        self._notice = notice
        self._clock = clock
        self._batch_size = batch_size
        self._batch_delay = batch_delay
        self._gap_grace = gap_grace
        self._gap_interval = gap_interval
        self._keep_latencies = keep_latencies
        self._incoming: queue.SimpleQueue[_Incoming | None] = queue.SimpleQueue()
        self._client: mqtt.Client | None = None
        self._thread: threading.Thread | None = None
        self._store: Store | None = None
        self._stopping = threading.Event()
        #: Set once the broker confirmed the subscriptions: from then on nothing is missed.
        self.connected = threading.Event()
        self.stats = CollectorStats()
        self.failure: Exception | None = None
        self._touched: set[tuple[str, str, str]] = set()
        self._changed = threading.Condition()
        self._gone = threading.Event()
        self._left = threading.Event()
        self._asked: dict[tuple[str, str, str], tuple[int, float]] = {}

    def start(self) -> None:
        """Open the store (errors raise here), then connect and start storing."""
        self._store = open_store(self.db)
        self._touched.update(self._store.journals())
        client = make_client(self.broker, self.client_id, manual_ack=True)
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_message = self._on_message
        client.on_subscribe = self._on_subscribe
        client.on_unsubscribe = lambda *_: self._left.set()
        client.reconnect_delay_set(1, 10)
        props = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
        props.SessionExpiryInterval = SESSION_EXPIRY
        props.ReceiveMaximum = RECEIVE_MAXIMUM
        client.connect_async(
            self.broker.host, self.broker.port, keepalive=30, clean_start=False, properties=props
        )
        self._client = client
        self._thread = threading.Thread(target=self._run, name="floor-collector", daemon=True)
        self._thread.start()
        client.loop_start()

    def stop(self) -> None:
        """Leave the floor's group, store and acknowledge what arrived, disconnect.
        Idempotent."""
        if self._thread is None:
            return
        client = self._client
        assert client is not None
        # First no more deliveries (a broker writing to us while we disconnect may take the
        # DISCONNECT for a dropped connection and keep the session), ...
        self._left.clear()
        result, _ = client.unsubscribe([EVENTS_FILTER, HEAD_FILTER, STATUS_FILTER])
        if result == mqtt.MQTT_ERR_SUCCESS:
            self._left.wait(DISCONNECT_TIMEOUT)
        # ... then store and acknowledge what came, ...
        self._stopping.set()
        self._incoming.put(None)
        self._thread.join()
        self._thread = None
        # ... then leave, ending the session: kept for nobody it would take a share of the
        # records.
        props = Properties(PacketTypes.DISCONNECT)  # type: ignore[no-untyped-call]
        props.SessionExpiryInterval = 0
        self._gone.clear()
        if client.disconnect(properties=props) == mqtt.MQTT_ERR_SUCCESS:
            # loop_stop() may end the network thread before DISCONNECT is on the wire.
            self._gone.wait(DISCONNECT_TIMEOUT)
        client.loop_stop()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the collector stopped (asked to, or on a failure of its store)."""
        thread = self._thread
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def wait_for(self, predicate: Callable[[CollectorStats], bool], timeout: float) -> bool:
        """Wait until ``predicate(stats)`` holds (checked after every stored batch and gap
        scan); False when ``timeout`` passed first."""
        with self._changed:
            return self._changed.wait_for(lambda: predicate(self.stats), timeout)

    # -- paho callbacks ---------------------------------------------------------------------

    def _on_connect(
        self,
        client: mqtt.Client,
        userdata: Any,
        flags: mqtt.ConnectFlags,
        reason: ReasonCode,
        properties: Properties | None,
    ) -> None:
        if reason.is_failure:
            self._notice(f"the broker {self.broker.describe()} refused the collector: {reason}")
            return
        options = SubscribeOptions(qos=1)
        client.subscribe([(name, options) for name in (EVENTS_FILTER, HEAD_FILTER, STATUS_FILTER)])
        log.info("collector %s connected to %s", self.name, self.broker.describe())

    def _on_subscribe(
        self,
        client: mqtt.Client,
        userdata: Any,
        mid: int,
        reasons: list[ReasonCode],
        properties: Properties | None,
    ) -> None:
        refused = [str(r) for r in reasons if r.is_failure]
        if refused:
            self._notice(f"the broker refused the collector's subscriptions: {', '.join(refused)}")
            return
        self.connected.set()

    def _on_disconnect(
        self,
        client: mqtt.Client,
        userdata: Any,
        flags: mqtt.DisconnectFlags,
        reason: ReasonCode,
        properties: Properties | None,
    ) -> None:
        if self.connected.is_set() and not self._stopping.is_set():
            self._notice(f"lost the broker {self.broker.describe()} ({reason}); reconnecting")
        self.connected.clear()
        self._gone.set()

    def _on_message(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        self._incoming.put(
            _Incoming(
                message.mid,
                message.qos,
                message.topic,
                bytes(message.payload),
                user_properties(getattr(message, "properties", None)),
                self._clock(),
            )
        )

    # -- the storing thread -----------------------------------------------------------------

    def _run(self) -> None:
        store = self._store
        assert store is not None
        next_scan = time.monotonic() + self._gap_interval
        try:
            while True:
                batch, stop = self._take_batch(max(0.0, next_scan - time.monotonic()))
                if batch:
                    self._store_batch(store, batch)
                if stop:
                    return
                if time.monotonic() >= next_scan:
                    self._scan_gaps(store)
                    next_scan = time.monotonic() + self._gap_interval
                    with self._changed:
                        self.stats.scans += 1
                        self.stats.pending = len(self._touched)
                        self._changed.notify_all()
        except Exception as exc:
            self.failure = exc
            self._notice(f"the collector stopped: {exc}")
        finally:
            store.close()
            with self._changed:
                self._changed.notify_all()

    def _take_batch(self, idle: float) -> tuple[list[_Incoming], bool]:
        try:
            first = self._incoming.get(timeout=idle)
        except queue.Empty:
            return [], False
        if first is None:
            return self._drain_now(), True
        batch = [first]
        deadline = time.monotonic() + self._batch_delay
        while len(batch) < self._batch_size:
            try:
                item = self._incoming.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if item is None:
                return batch + self._drain_now(), True
            batch.append(item)
        return batch, False

    def _drain_now(self) -> list[_Incoming]:
        rest: list[_Incoming] = []
        while True:
            try:
                item = self._incoming.get_nowait()
            except queue.Empty:
                return rest
            if item is not None:
                rest.append(item)

    def _store_batch(self, store: Store, batch: list[_Incoming]) -> None:
        records: list[FloorRecord] = []
        heads: list[Head] = []
        presence: list[Presence] = []
        for item in batch:
            try:
                message = parse_message(item.topic, item.payload, item.properties, item.received)
            except Malformed as exc:
                self.stats.rejected += 1
                log.warning("rejected a message on %s: %s", item.topic, exc)
                continue
            if isinstance(message, FloorRecord):
                records.append(message)
                self._touched.add((message.site, message.table_id, message.journal_id))
            elif isinstance(message, Head):
                heads.append(message)
                self._touched.add((message.site, message.table_id, message.journal_id))
            elif isinstance(message, Presence):
                presence.append(message)
        stored_at = self._clock()
        store.add(records, heads, presence, stored_at)
        # Committed: only now may the broker forget them.
        client = self._client
        assert client is not None
        for item in batch:
            if item.qos > 0:
                client.ack(item.mid, item.qos)
        with self._changed:
            self.stats.stored += len(records)
            self.stats.batches += 1
            if self._keep_latencies:
                self.stats.latencies.extend(stored_at - r.at for r in records)
            self._changed.notify_all()

    def _scan_gaps(self, store: Store) -> None:
        settled = self._clock() - self._gap_grace
        for site, table, journal in sorted(self._touched):
            complete, gap = store.find_gap(site, table, journal, settled)
            key = (site, table, journal)
            if complete:
                if key in self._asked:
                    self._notice(f"table {table} (journal {journal}): the gap is filled")
                    del self._asked[key]
                self._touched.discard(key)
            elif gap is not None:
                self._ask_again(gap)

    def _ask_again(self, gap: Gap) -> None:
        key = (gap.site, gap.table_id, gap.journal_id)
        previous = self._asked.get(key)
        now = self._clock()
        recently = previous is not None and now - previous[1] < self._gap_grace
        if recently and previous is not None and previous[0] == gap.after:
            return
        if previous is None or previous[0] != gap.after:
            self.stats.gaps_reported += 1
            self._notice(
                f"table {gap.table_id} (journal {gap.journal_id}): public records after "
                f"{gap.after} are missing; asked the box to send them again"
            )
        self._asked[key] = (gap.after, now)
        client = self._client
        assert client is not None
        request = json.dumps({"journal": gap.journal_id, "after": gap.after})
        client.publish(
            topic(gap.site, gap.table_id, "replay"),
            request,
            qos=1,
            properties=publish_properties([]),
        )
