"""``shoe-floor collect``: store every table's public record, idempotently, and tell gaps.

The collector subscribes to ``$share/floor/shoes/+/+/events`` (a shared subscription: the
broker gives each record to one collector of the group ``floor``, so several collectors
share the load) and to every table's ``head`` and ``status`` (each collector sees all of
those). Its MQTT session is persistent, so the broker keeps what arrives while it is
away.

Records are stored in batches, one transaction each, and acknowledged to the broker only
once their transaction committed: a collector killed at any moment loses nothing, and a
record the broker delivers again changes nothing (its key is table, journal, sequence).

Every message is verified and validated first (:mod:`shoe_floor.intake`): one that is
unsigned, signed by no key enrolled for the table it claims, or outside the published
schema is kept in quarantine with the reason (a bounded number a minute; every one is
counted), never beside genuine records, and no message can stop the collector.

Every few seconds the collector looks for gaps, on a thread and a store connection of its
own (the storing never waits for it): the public records of a journal are chained by their
``prev`` numbers, so a record whose predecessor never arrived (or a head naming a record
that never arrived) shows one. It reports the gap and asks the box to send the records
after the last one it holds again (``shoes/SITE/TABLE/replay``), signed with the floor's
key (a box answers no unsigned request) and retained, so that a box that is off gets it
when it next connects; once the gap is filled the request is withdrawn. Every request is
made anew, with its time and a nonce of its own: a box answers a request once and only
while it is fresh (:mod:`floor_protocol.freshness`), so while records are missing the
request is made again every few seconds, and the retained one is never stale for long.
"""

from __future__ import annotations

import logging
import queue
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

import floor_protocol as fp
from floor_protocol import freshness, topics
from shoe_controller.errors import StoreError
from shoe_controller.floor.broker import BrokerSettings
from shoe_floor import intake
from shoe_floor.gaps import Gap, find_gap
from shoe_floor.rows import Batch, Quarantined
from shoe_floor.store import Store, open_store
from shoe_floor.subscriber import Delivery, Subscription

log = logging.getLogger(__name__)

EVENTS_FILTER: Final = topics.shared(topics.every_table(topics.EVENTS))
HEAD_FILTER: Final = topics.every_table(topics.HEAD)
STATUS_FILTER: Final = topics.every_table(topics.STATUS)
#: Refused messages kept whole a minute, at most (every one is counted): a forger's flood
#: must not fill the floor's disk.
QUARANTINE_KEEP: Final = 100
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
#: Seconds between the collector's keepalive pings when nothing else is sent.
KEEPALIVE: Final = 30
#: Longest wait for the broker to take the DISCONNECT at a stop (seconds).
DISCONNECT_TIMEOUT: Final = 2.0

Notice = Callable[[str], None]


def new_nonce() -> str:
    """A replay request's nonce: random, never the same twice."""
    return secrets.token_hex(fp.NONCE_BYTES)


@dataclass
class CollectorStats:
    """What the collector did, for its log and for tests."""

    stored: int = 0
    batches: int = 0
    #: Messages refused (quarantined), by reason.
    quarantined: dict[str, int] = field(default_factory=dict)
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
        floor_key: fp.SigningKey | None = None,
        notice: Notice = log.warning,
        clock: Callable[[], float] = time.time,
        batch_size: int = BATCH_SIZE,
        batch_delay: float = BATCH_DELAY,
        gap_grace: float = GAP_GRACE,
        gap_interval: float = GAP_INTERVAL,
        keep_latencies: bool = False,
        verify: bool = True,
        nonce: Callable[[], str] = new_nonce,
    ) -> None:
        self.broker = broker
        self.db = db
        self.name = name or socket.gethostname()
        self.client_id = f"shoe-floor-{self.name}"
        self._notice = notice
        self._clock = clock
        self._nonce = nonce
        self._batch_size = batch_size
        self._batch_delay = batch_delay
        self._gap_grace = gap_grace
        self._gap_interval = gap_interval
        self._keep_latencies = keep_latencies
        self._floor_key = floor_key
        #: Off only in the benchmark's unsigned baseline: shoe-floor never turns it off.
        self._verify = verify
        self.keyring = intake.Keyring()
        #: The minute whose refused messages are being kept, and how many were.
        self._kept: tuple[int, int] = (0, 0)
        #: What the connection read, a read's messages at a time with when they came
        #: (monotonic); None ends the storing.
        self._incoming: queue.SimpleQueue[tuple[float, list[Delivery]] | None] = queue.SimpleQueue()
        self._subscription: Subscription | None = None
        self._thread: threading.Thread | None = None
        self._scanner: threading.Thread | None = None
        self._store: Store | None = None
        self._scan_store: Store | None = None
        self._stopping = threading.Event()
        #: Set once the broker confirmed the subscriptions: from then on nothing is missed.
        self.connected = threading.Event()
        self.stats = CollectorStats()
        self.failure: Exception | None = None
        #: Journals stored into since the last gap scan took them, or left incomplete by it.
        self._touched: set[tuple[str, str, str]] = set()
        self._touched_lock = threading.Lock()
        self._changed = threading.Condition()
        self._asked: dict[tuple[str, str, str], tuple[int, float]] = {}

    def start(self) -> None:
        """Open the store (errors raise here), then connect and start storing."""
        self._store = open_store(self.db)
        try:
            self._scan_store = open_store(self.db)
        except BaseException:
            self._store.close()
            raise
        self._touched.update(self._store.journals())
        self.keyring.replace(self._store.enrolments())
        if not len(self.keyring):
            self._notice(
                "no box is enrolled: every message is quarantined until one is "
                "(shoe-floor enroll --site S --table T --key FILE)"
            )
        self._subscription = Subscription(
            self.broker,
            self.client_id,
            [EVENTS_FILTER, HEAD_FILTER, STATUS_FILTER],
            on_messages=self._arrived,
            on_state=self._on_state,
            session_expiry=SESSION_EXPIRY,
            receive_maximum=RECEIVE_MAXIMUM,
            keepalive=KEEPALIVE,
        )
        self._thread = threading.Thread(target=self._run, name="floor-collector", daemon=True)
        self._thread.start()
        self._scanner = threading.Thread(target=self._scan, name="floor-gaps", daemon=True)
        self._scanner.start()
        self._subscription.start()

    def stop(self) -> None:
        """Leave the floor's group, store and acknowledge what arrived, disconnect.
        Idempotent."""
        if self._thread is None:
            return
        subscription = self._subscription
        assert subscription is not None
        # First no more deliveries (a broker writing to us while we disconnect may take the
        # DISCONNECT for a dropped connection and keep the session), ...
        subscription.leave(DISCONNECT_TIMEOUT)
        # ... then store and acknowledge what came, ...
        self._stopping.set()
        self._incoming.put(None)
        self._thread.join()
        self._thread = None
        if self._scanner is not None:
            self._scanner.join()
            self._scanner = None
        # ... then leave, ending the session: kept for nobody it would take a share of the
        # records.
        subscription.close(session_expiry=0, timeout=DISCONNECT_TIMEOUT)
        self.connected.clear()

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

    # -- the connection's news (its thread) -------------------------------------------------

    def _arrived(self, deliveries: list[Delivery]) -> None:
        self._incoming.put((time.monotonic(), deliveries))

    def _on_state(self, what: str, why: str) -> None:
        if what == "subscribed":
            log.info("collector %s connected to %s", self.name, self.broker.describe())
            self.connected.set()
        elif what == "refused":
            self._notice(f"the broker {self.broker.describe()} refused the collector: {why}")
        elif what == "lost":
            if self.connected.is_set() and not self._stopping.is_set():
                self._notice(f"lost the broker {self.broker.describe()} ({why}); reconnecting")
            self.connected.clear()
        else:
            log.info("the broker %s is unreachable: %s", self.broker.describe(), why)

    # -- the storing thread -----------------------------------------------------------------

    def _run(self) -> None:
        store = self._store
        assert store is not None
        try:
            while True:
                batch, stop = self._take_batch()
                if batch:
                    self._store_batch(store, batch)
                if stop:
                    return
        except Exception as exc:
            self._fail(exc)
        finally:
            self._stopping.set()
            store.close()
            with self._changed:
                self._changed.notify_all()

    def _fail(self, exc: Exception) -> None:
        if self.failure is None:
            self.failure = exc
            self._notice(f"the collector stopped: {exc}")
        self._stopping.set()
        self._incoming.put(None)

    def _take_batch(self) -> tuple[list[Delivery], bool]:
        """What arrived, waiting for more until the oldest waited ``batch_delay``: records
        that came while the previous batch was stored wait no longer."""
        first = self._incoming.get()
        if first is None:
            return self._drain_now(), True
        came, batch = first
        batch = list(batch)
        deadline = came + self._batch_delay
        while len(batch) < self._batch_size:
            try:
                more = self._incoming.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            if more is None:
                return batch + self._drain_now(), True
            batch += more[1]
        return batch, False

    def _drain_now(self) -> list[Delivery]:
        rest: list[Delivery] = []
        while True:
            try:
                more = self._incoming.get_nowait()
            except queue.Empty:
                return rest
            if more is not None:
                rest += more[1]

    def _store_batch(self, store: Store, batch: list[Delivery]) -> None:
        received = self._clock()
        read = [
            intake.read(
                d.topic, d.payload, d.properties, received, self.keyring, verify=self._verify
            )
            for d in batch
        ]
        rows = self._rows(read, received)
        try:
            store.add(rows)
        except StoreError:
            # A row the database will not take must not stop the floor: store them one by
            # one, and put what still fails in quarantine. A store that is down fails
            # there too, and stops the collector.
            self._store_one_by_one(store, read, received)
        stored_at = self._clock()
        # Committed: only now may the broker forget them, and the gap scan look at them.
        subscription = self._subscription
        assert subscription is not None
        subscription.ack(batch)
        journals: set[tuple[str, str, str]] = set()
        records: list[fp.Records] = []
        for message in read:
            if isinstance(message, fp.Records):
                records.append(message)
                journals.add((message.site, message.table, message.journal))
            elif isinstance(message, fp.Head):
                journals.add((message.site, message.table, message.journal))
        with self._touched_lock:
            self._touched |= journals
        with self._changed:
            self.stats.stored += sum(len(m.records) for m in records)
            self.stats.batches += 1
            for message in read:
                if isinstance(message, Quarantined):
                    counts = self.stats.quarantined
                    counts[message.reason] = counts.get(message.reason, 0) + 1
            if self._keep_latencies:
                self.stats.latencies.extend(stored_at - r.at for m in records for r in m.records)
            self._changed.notify_all()

    def _rows(self, read: list[fp.Message | Quarantined], received: float) -> Batch:
        rows = Batch()
        for message in read:
            if isinstance(message, fp.Records):
                rows.add_records(message, received)
            elif isinstance(message, fp.Head):
                rows.add_head(message, received)
            elif isinstance(message, fp.Status):
                rows.add_presence(message)
            elif isinstance(message, Quarantined):
                rows.add_quarantined(message, keep=self._keep(message))
        return rows

    def _keep(self, message: Quarantined) -> bool:
        minute, kept = self._kept
        now = int(message.received_at // 60)
        if now != minute:
            minute, kept = now, 0
        self._kept = (minute, kept + 1)
        if kept == 0 or kept + 1 == QUARANTINE_KEEP:
            self._notice(
                f"quarantined a message on {message.topic[:120]!r}: {message.reason}: "
                f"{message.detail[:200]}"
                + (" (and more this minute: see shoe-floor report)" if kept else "")
            )
        return kept < QUARANTINE_KEEP

    def _store_one_by_one(
        self, store: Store, read: list[fp.Message | Quarantined], received: float
    ) -> None:
        for index, message in enumerate(read):
            try:
                store.add(self._rows([message], received))
            except StoreError as exc:
                if isinstance(message, Quarantined):
                    raise
                topic = _topic_of(message)
                refused = Quarantined(
                    received, message.site, message.table, topic, "unstorable", str(exc), b""
                )
                read[index] = refused
                store.add(self._rows([refused], received))

    # -- the gap scan's thread --------------------------------------------------------------

    def _scan(self) -> None:
        """Every few seconds, the journals stored into since the last scan, on a connection
        of its own: the storing never waits for a scan."""
        store = self._scan_store
        assert store is not None
        try:
            while not self._stopping.wait(self._gap_interval):
                # A box enrolled meanwhile is trusted from now on.
                self.keyring.replace(store.enrolments())
                self._scan_gaps(store)
                with self._touched_lock:
                    pending = len(self._touched)
                with self._changed:
                    self.stats.scans += 1
                    self.stats.pending = pending
                    self._changed.notify_all()
        except Exception as exc:
            self._fail(exc)
        finally:
            store.close()

    def _scan_gaps(self, store: Store) -> None:
        settled = self._clock() - self._gap_grace
        with self._touched_lock:
            journals, self._touched = self._touched, set()
        incomplete: set[tuple[str, str, str]] = set()
        try:
            for site, table, journal in sorted(journals):
                complete, gap = find_gap(store, site, table, journal, settled)
                key = (site, table, journal)
                if complete:
                    if key in self._asked:
                        self._notice(f"table {table} (journal {journal}): the gap is filled")
                        del self._asked[key]
                        self._withdraw(site, table)
                else:
                    incomplete.add(key)
                    if gap is not None:
                        self._ask_again(gap)
        except BaseException:
            incomplete |= journals
            raise
        finally:
            with self._touched_lock:
                self._touched |= incomplete

    def _ask_again(self, gap: Gap) -> None:
        key = (gap.site, gap.table_id, gap.journal_id)
        previous = self._asked.get(key)
        now = self._clock()
        # Asked a moment ago: the box may be sending the records now. A request is made
        # anew every so often all the same, so that the retained one is fresh when a box
        # that was off connects.
        recently = previous is not None and now - previous[1] < min(
            self._gap_grace, freshness.RENEW
        )
        if recently and previous is not None and previous[0] == gap.after:
            return
        if previous is None or previous[0] != gap.after:
            self.stats.gaps_reported += 1
            asked = (
                "asked the box to send them again"
                if self._floor_key is not None
                else "the collector has no key (--key) to ask the box for them again"
            )
            self._notice(
                f"table {gap.table_id} (journal {gap.journal_id}): public records after "
                f"{gap.after} are missing; {asked}"
            )
        self._asked[key] = (gap.after, now)
        subscription = self._subscription
        assert subscription is not None
        if self._floor_key is None:
            return
        request = fp.encode_replay(
            gap.site, gap.table_id, gap.journal_id, gap.after, ts=fp.iso(now), nonce=self._nonce()
        )
        signed = self._floor_key.sign(request.topic, request.properties, request.payload)
        # Retained: a box that is off now gets the request when it next connects (the one
        # made last, which replaces this one before it is stale).
        subscription.publish(request.topic, request.payload, signed, retain=True)

    def _withdraw(self, site: str, table: str) -> None:
        """The gap is filled: the retained request goes (an empty retained message)."""
        subscription = self._subscription
        if subscription is not None and self._floor_key is not None:
            subscription.publish(topics.topic(site, table, topics.REPLAY), b"", retain=True)


def _topic_of(message: fp.Message) -> str:
    leaf = {
        fp.Records: topics.EVENTS,
        fp.Head: topics.HEAD,
        fp.Status: topics.STATUS,
        fp.Replay: topics.REPLAY,
    }[type(message)]
    return topics.topic(message.site, message.table, leaf)
