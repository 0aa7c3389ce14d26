"""The collector's MQTT 5 connection: a persistent session subscribed to the floor's
topics, whose records are acknowledged only when the collector says so.

One thread owns the socket: it connects (again and again while the broker is away),
subscribes, reads the socket in large pieces and hands every piece's messages over at
once, answers keepalive, and writes what the other threads queued (acknowledgements,
replay requests) in one write each time it wakes. Nothing else touches the socket, which a
TLS connection requires.

A delivery is acknowledged on the connection it came on, or not at all: after a
reconnection the broker sends again what was not acknowledged, and that copy is the one
acknowledged.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.reasoncodes import ReasonCode

from shoe_controller.broker import BrokerSettings
from shoe_floor import mqtt_wire as wire

#: Longest wait (seconds) for the broker's CONNACK after the TCP (and TLS) connection.
CONNECT_TIMEOUT: Final = 10.0
#: Bytes asked of the socket at once: many records per read.
READ_SIZE: Final = 256 * 1024


@dataclass(frozen=True, slots=True)
class Delivery:
    """A message from the broker, with what its acknowledgement needs."""

    topic: str
    payload: bytes
    properties: dict[str, str]
    qos: int
    mid: int
    connection: int


#: Called on the connection's thread with every message of one read, in order.
OnMessages = Callable[[list[Delivery]], None]
#: Called on the connection's thread with what happened and why: "subscribed", "refused"
#: (the broker said no to the connection or a subscription), "unreachable" (no connection
#: at all; tried again) or "lost".
OnState = Callable[[str, str], None]


def reason_name(packet: int, code: int) -> str:
    """The reason code's name as MQTT 5 gives it (for notices)."""
    try:
        return str(ReasonCode(packet, identifier=code))
    except ValueError:
        return f"reason {code:#x}"


class _Lost(Exception):
    """The connection ended."""


class Subscription:
    """``start()``; ``ack()`` and ``publish()`` from any thread; ``leave()``, ``close()``."""

    def __init__(
        self,
        broker: BrokerSettings,
        client_id: str,
        filters: Sequence[str],
        *,
        on_messages: OnMessages,
        on_state: OnState,
        session_expiry: int,
        receive_maximum: int,
        keepalive: int = 30,
        reconnect_delay: tuple[float, float] = (1.0, 10.0),
    ) -> None:
        self.broker = broker
        self.client_id = client_id
        self.filters = list(filters)
        self._on_messages = on_messages
        self._on_state = on_state
        self._session_expiry = session_expiry
        self._receive_maximum = receive_maximum
        self._keepalive = keepalive
        self._delays = reconnect_delay
        self._lock = threading.Lock()
        self._outbox = bytearray()
        self._connection = 0
        self._live = False
        self._mid = 0
        self._closing = threading.Event()
        self._closed_write = False
        self._left = threading.Event()
        self._unsubscribe_mid = -1
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._thread: threading.Thread | None = None
        #: What the CONNACK's read brought beyond the CONNACK.
        self._pending = bytearray()
        self._pending_packets: list[wire.Packet] = []

    # -- from any thread --------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name=f"mqtt-{self.client_id}", daemon=True
        )
        self._thread.start()

    def ack(self, deliveries: Sequence[Delivery]) -> None:
        """Acknowledge the deliveries of the current connection (QoS 1)."""
        with self._lock:
            if not self._live:
                return
            current = self._connection
            mids = [d.mid for d in deliveries if d.qos and d.connection == current]
            if not mids:
                return
            self._outbox += wire.pubacks(mids)
        self._wake()

    def publish(self, topic: str, payload: bytes) -> bool:
        """Send a message at QoS 1; False when not connected (it is not kept)."""
        with self._lock:
            if not self._live:
                return False
            self._outbox += wire.publish(topic, payload, qos=1, mid=self._next_mid())
        self._wake()
        return True

    def leave(self, timeout: float) -> bool:
        """Unsubscribe from every filter: the broker delivers nothing more (what it already
        sent still arrives). False when not connected or not confirmed in ``timeout``."""
        with self._lock:
            if not self._live:
                return False
            self._left.clear()
            self._unsubscribe_mid = self._next_mid()
            self._outbox += wire.unsubscribe(self._unsubscribe_mid, self.filters)
        self._wake()
        return self._left.wait(timeout)

    def close(self, session_expiry: int | None, timeout: float) -> None:
        """Disconnect (with the session's new expiry, when given) and stop reconnecting."""
        with self._lock:
            if self._live:
                self._outbox += wire.disconnect(session_expiry)
                self._closed_write = True
        self._closing.set()
        self._wake()
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
            self._thread = None
            if thread.is_alive():
                return  # its wake-up sockets stay open until it sees the end
        self._wake_r.close()
        self._wake_w.close()

    def _next_mid(self) -> int:
        self._mid = self._mid % 65_535 + 1
        return self._mid

    def _wake(self) -> None:
        with contextlib.suppress(BlockingIOError, OSError):
            self._wake_w.send(b"\0")

    # -- the connection's thread ------------------------------------------------------------

    def _run(self) -> None:
        delay = self._delays[0]
        while not self._closing.is_set():
            try:
                sock = self._connect()
            except _Lost as exc:
                self._on_state("refused", str(exc))
                self._closing.wait(delay)
                delay = min(delay * 2, self._delays[1])
                continue
            except OSError as exc:
                self._on_state("unreachable", str(exc) or type(exc).__name__)
                self._closing.wait(delay)
                delay = min(delay * 2, self._delays[1])
                continue
            delay = self._delays[0]
            try:
                self._serve(sock)
            except (OSError, _Lost, wire.ProtocolError) as exc:
                self._end(sock)
                if not self._closing.is_set():
                    self._on_state("lost", str(exc) or type(exc).__name__)
                    self._closing.wait(delay)
            else:
                self._end(sock)

    def _end(self, sock: socket.socket) -> None:
        with self._lock:
            self._live = False
            self._outbox.clear()
        with contextlib.suppress(OSError):
            sock.close()

    def _connect(self) -> socket.socket:
        broker = self.broker
        raw = socket.create_connection((broker.host, broker.port), timeout=CONNECT_TIMEOUT)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock: socket.socket = raw
        try:
            if broker.tls:
                sock = _tls_context(broker).wrap_socket(raw, server_hostname=broker.host)
            sock.sendall(
                wire.connect(
                    self.client_id,
                    keepalive=self._keepalive,
                    clean_start=False,
                    session_expiry=self._session_expiry,
                    receive_maximum=self._receive_maximum,
                    username=broker.username or None,
                    password=broker.password if broker.username else None,
                )
            )
            buffer = bytearray()
            while True:
                chunk = sock.recv(READ_SIZE)
                if not chunk:
                    raise _Lost("the broker closed the connection before its CONNACK")
                buffer += chunk
                packets, used = wire.decode(buffer)
                if packets:
                    break
            first = packets[0]
            if not isinstance(first, wire.Control) or first.kind != wire.CONNACK:
                raise _Lost("the broker did not answer with CONNACK")
            code = first.body[1] if len(first.body) > 1 else 0xFF
            if code >= 0x80:
                raise _Lost(reason_name(PacketTypes.CONNACK, code))
        except BaseException:
            sock.close()
            raise
        del buffer[:used]
        sock.settimeout(None)
        with self._lock:
            self._connection += 1
            self._live = True
            self._outbox.clear()
            self._outbox += wire.subscribe(self._next_mid(), self.filters, 1)
        self._pending = buffer
        self._pending_packets = packets[1:]
        return sock

    def _serve(self, sock: socket.socket) -> None:
        buffer: bytearray = self._pending
        connection = self._connection
        self._handle(self._pending_packets, connection)
        selector = selectors.DefaultSelector()
        selector.register(sock, selectors.EVENT_READ)
        selector.register(self._wake_r, selectors.EVENT_READ)
        last_read = last_write = time.monotonic()
        pinged = False
        tick = max(0.5, self._keepalive / 4)
        try:
            while True:
                if self._flush(sock):
                    last_write = time.monotonic()
                if self._closed_write and self._closing.is_set():
                    return
                ready = selector.select(tick)
                readable = any(key.fileobj is sock for key, _ in ready)
                if any(key.fileobj is self._wake_r for key, _ in ready):
                    with contextlib.suppress(BlockingIOError):
                        self._wake_r.recv(4096)
                if self._closing.is_set() and not self._closed_write:
                    return
                # A TLS socket may hold decrypted bytes the selector cannot see.
                pending = isinstance(sock, ssl.SSLSocket) and sock.pending() > 0
                if readable or pending:
                    chunk = sock.recv(READ_SIZE)
                    if not chunk:
                        raise _Lost("the broker closed the connection")
                    _ack_at_once(sock)
                    last_read, pinged = time.monotonic(), False
                    buffer += chunk
                    packets, used = wire.decode(buffer)
                    del buffer[:used]
                    self._handle(packets, connection)
                now = time.monotonic()
                if now - last_read > self._keepalive * 1.5:
                    raise _Lost("the broker stopped answering")
                if not pinged and now - max(last_write, last_read) >= self._keepalive / 2:
                    with self._lock:
                        self._outbox += wire.PINGREQ_PACKET
                    pinged = True
        finally:
            selector.close()

    def _flush(self, sock: socket.socket) -> bool:
        with self._lock:
            if not self._outbox:
                return False
            data = bytes(self._outbox)
            self._outbox.clear()
        sock.sendall(data)
        return True

    def _handle(self, packets: list[wire.Packet], connection: int) -> None:
        deliveries: list[Delivery] = []
        for packet in packets:
            if isinstance(packet, wire.Publish):
                if packet.qos > 1:
                    raise wire.ProtocolError("QoS 2 was never subscribed to")
                deliveries.append(
                    Delivery(
                        packet.topic,
                        packet.payload,
                        packet.properties,
                        packet.qos,
                        packet.mid,
                        connection,
                    )
                )
                continue
            if deliveries:
                self._on_messages(deliveries)
                deliveries = []
            self._control(packet)
        if deliveries:
            self._on_messages(deliveries)

    def _control(self, packet: wire.Control) -> None:
        if packet.kind == wire.SUBACK:
            codes = wire.reason_after_properties(packet.body)
            refused = [reason_name(PacketTypes.SUBACK, c) for c in codes if c >= 0x80]
            if refused:
                self._on_state("refused", ", ".join(refused))
            else:
                self._on_state("subscribed", "")
        elif packet.kind == wire.UNSUBACK and packet.mid == self._unsubscribe_mid:
            self._left.set()
        elif packet.kind == wire.DISCONNECT:
            code = packet.body[0] if packet.body else 0
            raise _Lost(reason_name(PacketTypes.DISCONNECT, code))
        # PUBACK of a replay request, PINGRESP: nothing to do.


def _ack_at_once(sock: socket.socket) -> None:
    """Have the kernel acknowledge what arrives at once (Linux's TCP_QUICKACK, which it
    drops again after a while). Our PUBACKs leave only after the batch's commit, so the TCP
    acknowledgement would otherwise wait for the delayed-ACK timer (up to 40 ms), and a
    broker that batches small writes (Nagle's algorithm, Mosquitto's default) holds the
    next records back until then."""
    if _QUICKACK is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)


_QUICKACK: Final = getattr(socket, "TCP_QUICKACK", None)


def _tls_context(broker: BrokerSettings) -> ssl.SSLContext:
    context = ssl.create_default_context(
        cafile=os.fspath(broker.ca_file) if broker.ca_file else None
    )
    if broker.cert_file is not None:
        context.load_cert_chain(
            os.fspath(broker.cert_file), os.fspath(broker.key_file) if broker.key_file else None
        )
    return context
