"""A load generator for the floor's benchmark: many tables' records published over MQTT 5
at QoS 1 faster than any Python MQTT client could.

The records are the forwarder's own bytes (payload, topic, properties) for every table,
encoded once as PUBLISH packets before the clock starts, then written to the broker in
large writes over one plain socket, with at most ``window`` of them not yet acknowledged
(PUBACK) by the broker. A collector under test thus sees exactly what 200 boxes would send,
and the figure measured is the floor's, not the publisher's: a paho client spends some
50 us of Python on every publish and would be the bottleneck long before the collectors.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterable

from benchmarks import _mqtt_wire as wire


class LoadError(RuntimeError):
    """The broker refused the connection or a record."""


class Publisher:
    """One connection to the broker that sends pre-encoded PUBLISH packets and counts the
    broker's PUBACKs."""

    def __init__(self, host: str, port: int, client_id: str, *, window: int = 20_000) -> None:
        if not 0 < window < 65_535:
            raise ValueError("the window must stay below the 65,535 packet ids")
        self.window = window
        self._sock = socket.create_connection((host, port), timeout=30)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock.sendall(
            wire.connect(
                client_id, keepalive=60, clean_start=True, session_expiry=0, receive_maximum=100
            )
        )
        self._buffer = bytearray()
        packet = self._read_packet()
        if not isinstance(packet, wire.Control) or packet.kind != wire.CONNACK or packet.body[1]:
            raise LoadError(f"the broker refused the connection: {packet}")
        self._sock.settimeout(None)
        self._acked = 0
        self._sent = 0
        self._failure: str | None = None
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read_acks, daemon=True)
        self._reader.start()

    def _read_packet(self) -> wire.Packet:
        while True:
            packets, used = wire.decode(self._buffer, limit=1)
            if packets:
                del self._buffer[:used]
                return packets[0]
            chunk = self._sock.recv(65_536)
            if not chunk:
                raise LoadError("the broker closed the connection")
            self._buffer += chunk

    def _read_acks(self) -> None:
        try:
            while True:
                chunk = self._sock.recv(65_536)
                if not chunk:
                    raise LoadError("the broker closed the connection")
                self._buffer += chunk
                packets, used = wire.decode(self._buffer)
                del self._buffer[:used]
                acked = 0
                for packet in packets:
                    if isinstance(packet, wire.Control) and packet.kind == wire.PUBACK:
                        if packet.body and packet.body[0] >= 0x80:
                            raise LoadError(f"the broker refused a record: {packet.body[0]:#x}")
                        acked += 1
                with self._changed:
                    self._acked += acked
                    self._changed.notify_all()
        except (OSError, LoadError, wire.ProtocolError) as exc:
            with self._changed:
                self._failure = str(exc)
                self._changed.notify_all()

    def send(self, packets: Iterable[bytes], chunk: int = 512) -> None:
        """Send every packet, at most ``window`` unacknowledged, in writes of ``chunk``."""
        pending: list[bytes] = []
        for packet in packets:
            pending.append(packet)
            if len(pending) >= chunk:
                self._write(pending)
                pending = []
        if pending:
            self._write(pending)

    def _write(self, packets: list[bytes]) -> None:
        with self._changed:
            self._changed.wait_for(
                lambda: (
                    self._failure is not None
                    or self._sent - self._acked + len(packets) <= self.window
                )
            )
            if self._failure is not None:
                raise LoadError(self._failure)
        self._sock.sendall(b"".join(packets))
        self._sent += len(packets)

    def wait_acknowledged(self, timeout: float) -> bool:
        """Wait until the broker acknowledged everything sent."""
        with self._changed:
            done = self._changed.wait_for(
                lambda: self._failure is not None or self._acked >= self._sent, timeout
            )
            if self._failure is not None:
                raise LoadError(self._failure)
            return done

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.sendall(wire.disconnect())
        self._sock.close()
