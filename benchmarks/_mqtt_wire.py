"""MQTT 5 packets for the floor benchmark's load generator, encoded and decoded.

Only what the generator needs: CONNECT/CONNACK, PUBLISH with the box's user properties,
PUBACK, PINGREQ/PINGRESP, DISCONNECT (and the subscriber's packets its tests read back).
The product's MQTT clients are paho's; this exists because a paho publisher cannot put a
flood on the wire fast enough to load the collectors (it rescans its in-flight window on
every acknowledgement), and a load generator must outrun what it measures.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

CONNECT: Final = 0x10
CONNACK: Final = 0x20
PUBLISH: Final = 0x30
PUBACK: Final = 0x40
SUBSCRIBE: Final = 0x82
SUBACK: Final = 0x90
UNSUBSCRIBE: Final = 0xA2
UNSUBACK: Final = 0xB0
PINGREQ: Final = 0xC0
PINGRESP: Final = 0xD0
DISCONNECT: Final = 0xE0

#: Property identifiers (MQTT 5.0, section 2.2.2.2).
PAYLOAD_FORMAT: Final = 0x01
CONTENT_TYPE: Final = 0x03
SESSION_EXPIRY: Final = 0x11
RECEIVE_MAXIMUM: Final = 0x21
USER_PROPERTY: Final = 0x26
#: Every other property, by how its value is encoded, so that it can be skipped.
_BYTE: Final = frozenset({0x01, 0x17, 0x19, 0x24, 0x25, 0x28, 0x29, 0x2A})
_TWO: Final = frozenset({0x13, 0x21, 0x22, 0x23})
_FOUR: Final = frozenset({0x02, 0x11, 0x18, 0x27})
_VARIABLE: Final = frozenset({0x0B})
_STRING: Final = frozenset({0x03, 0x08, 0x09, 0x12, 0x15, 0x16, 0x1A, 0x1C, 0x1F})

PINGREQ_PACKET: Final = bytes([PINGREQ, 0])
#: Payload Format Indicator "UTF-8" and Content Type "application/json", as every message
#: of the floor carries.
_JSON_PROPERTIES: Final = (
    bytes([PAYLOAD_FORMAT, 1, CONTENT_TYPE])
    + struct.pack("!H", len(b"application/json"))
    + b"application/json"
)


class ProtocolError(ValueError):
    """The broker sent something that is not MQTT 5."""


@dataclass(frozen=True, slots=True)
class Publish:
    """A PUBLISH received: ``mid`` is 0 at QoS 0."""

    topic: str
    payload: bytes
    properties: dict[str, str]
    qos: int
    mid: int


@dataclass(frozen=True, slots=True)
class Control:
    """Any other packet received: its type (high nibble), packet id (0 when none) and the
    rest of its body after the packet id."""

    kind: int
    mid: int
    body: bytes


Packet = Publish | Control


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def string(text: str | bytes) -> bytes:
    data = text.encode() if isinstance(text, str) else text
    return struct.pack("!H", len(data)) + data


def _packet(first: int, body: bytes) -> bytes:
    return bytes([first]) + varint(len(body)) + body


def connect(
    client_id: str,
    *,
    keepalive: int,
    clean_start: bool,
    session_expiry: int,
    receive_maximum: int,
    username: str | None = None,
    password: str | None = None,
) -> bytes:
    flags = 0x02 if clean_start else 0
    if username is not None:
        flags |= 0x80
        if password is not None:
            flags |= 0x40
    props = bytes([SESSION_EXPIRY]) + struct.pack("!I", session_expiry)
    props += bytes([RECEIVE_MAXIMUM]) + struct.pack("!H", receive_maximum)
    body = string("MQTT") + bytes([5, flags]) + struct.pack("!H", keepalive)
    body += varint(len(props)) + props + string(client_id)
    if username is not None:
        body += string(username)
        if password is not None:
            body += string(password)
    return _packet(CONNECT, body)


def subscribe(mid: int, filters: Sequence[str], qos: int) -> bytes:
    body = struct.pack("!H", mid) + varint(0)
    for name in filters:
        body += string(name) + bytes([qos])
    return _packet(SUBSCRIBE, body)


def unsubscribe(mid: int, filters: Sequence[str]) -> bytes:
    body = struct.pack("!H", mid) + varint(0) + b"".join(string(f) for f in filters)
    return _packet(UNSUBSCRIBE, body)


def publish(
    topic: str, payload: bytes, *, qos: int, mid: int, user: Sequence[tuple[str, str]] = ()
) -> bytes:
    """A PUBLISH with the floor's JSON properties and ``user`` as user properties."""
    props = bytearray(_JSON_PROPERTIES)
    for key, value in user:
        props.append(USER_PROPERTY)
        props += string(key) + string(value)
    body = string(topic) + (struct.pack("!H", mid) if qos else b"")
    body += varint(len(props)) + bytes(props) + payload
    return _packet(PUBLISH | (qos << 1), body)


def pubacks(mids: Iterable[int]) -> bytes:
    """PUBACKs (reason: success, which MQTT 5 lets us leave out) for ``mids``, in one
    buffer: one write acknowledges a whole batch."""
    return b"".join(b"\x40\x02" + struct.pack("!H", mid) for mid in mids)


def disconnect(session_expiry: int | None = None) -> bytes:
    if session_expiry is None:
        return bytes([DISCONNECT, 0])
    props = bytes([SESSION_EXPIRY]) + struct.pack("!I", session_expiry)
    return _packet(DISCONNECT, bytes([0]) + varint(len(props)) + props)


def _read_varint(buf: bytes | bytearray, pos: int, end: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if pos >= end or shift > 21:
            raise ProtocolError("a variable byte integer runs past its packet")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _properties(buf: bytes | bytearray, pos: int, end: int) -> dict[str, str]:
    """User properties (the last value of a repeated key); the others are skipped."""
    found: dict[str, str] = {}
    while pos < end:
        ident = buf[pos]
        pos += 1
        if ident == USER_PROPERTY:
            size = (buf[pos] << 8) | buf[pos + 1]
            key = buf[pos + 2 : pos + 2 + size].decode()
            pos += 2 + size
            size = (buf[pos] << 8) | buf[pos + 1]
            found[key] = buf[pos + 2 : pos + 2 + size].decode()
            pos += 2 + size
        elif ident in _BYTE:
            pos += 1
        elif ident in _TWO:
            pos += 2
        elif ident in _FOUR:
            pos += 4
        elif ident in _VARIABLE:
            _, pos = _read_varint(buf, pos, end)
        elif ident in _STRING:
            pos += 2 + ((buf[pos] << 8) | buf[pos + 1])
        else:
            raise ProtocolError(f"unknown property {ident:#x}")
    if pos != end:
        raise ProtocolError("properties run past their length")
    return found


def decode(buf: bytearray, limit: int | None = None) -> tuple[list[Packet], int]:
    """The complete packets at the start of ``buf`` (``limit`` at most), and how many bytes
    they took."""
    packets: list[Packet] = []
    pos, size = 0, len(buf)
    while pos + 2 <= size and (limit is None or len(packets) < limit):
        first = buf[pos]
        try:
            length, start = _read_varint(buf, pos + 1, min(size, pos + 5))
        except ProtocolError:
            if size - pos < 5:
                break  # the length itself is not all here yet
            raise
        end = start + length
        if end > size:
            break
        try:
            packets.append(_decode_one(buf, first, start, end))
        except (IndexError, UnicodeDecodeError) as exc:
            raise ProtocolError(f"a malformed packet {first:#x}: {exc}") from None
        pos = end
    return packets, pos


def _decode_one(buf: bytearray, first: int, start: int, end: int) -> Packet:
    kind = first & 0xF0
    if kind == PUBLISH:
        qos = (first >> 1) & 0x03
        size = (buf[start] << 8) | buf[start + 1]
        topic = buf[start + 2 : start + 2 + size].decode()
        pos = start + 2 + size
        mid = 0
        if qos:
            mid = (buf[pos] << 8) | buf[pos + 1]
            pos += 2
        length, pos = _read_varint(buf, pos, end)
        properties = _properties(buf, pos, pos + length)
        return Publish(topic, bytes(buf[pos + length : end]), properties, qos, mid)
    if kind in (PUBACK, SUBACK, UNSUBACK):
        mid = (buf[start] << 8) | buf[start + 1]
        return Control(kind, mid, bytes(buf[start + 2 : end]))
    return Control(kind, 0, bytes(buf[start:end]))


def reason_after_properties(body: bytes) -> list[int]:
    """The reason codes of a SUBACK or UNSUBACK body (after the packet id)."""
    length, pos = _read_varint(body, 0, len(body))
    return list(body[pos + length :])
