"""Every message of the protocol, both directions, as frozen dataclasses.

Each message class has a one-byte ``TYPE`` and an ordered tuple of ``FIELDS``. The payload
is the fields' encodings concatenated in that order, with nothing between them. Field
encodings (all integers little-endian):

``u8``, ``u16``, ``u32``  unsigned integers of 1, 2, 4 bytes
``bool``                  one byte, 0 or 1 (anything else is malformed)
``str``                   u8 length, then that many bytes of UTF-8
``bytes``                 u8 length, then that many bytes
``digest``                32 bytes (a SHA-256 or HMAC-SHA256 value)
``card``                  one byte card code (see :mod:`firmware_protocol.cards`)
``u8list``                u8 count, then that many u8 values

Type codes 0x01..0x7F go from the host to the shoe, 0x80..0xFF from the shoe to the host.
A type this version does not know decodes to :class:`Unknown`, so that a newer firmware
never crashes an older controller. Payload bytes after the last known field are ignored,
so that a later protocol version may append fields to a message.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from firmware_protocol.cards import Card, CardError

DIGEST_SIZE = 32


class MalformedPayload(ValueError):
    """A payload that does not decode as its message type says (remote data, counted)."""


class GateMode(enum.IntEnum):
    """The card gate: ``LOCKED`` lets no card out, ``DEAL`` lets cards out one at a time for
    the deal, ``STUB`` lets the remaining cards out for counting, identities never shown."""

    LOCKED = 0
    DEAL = 1
    STUB = 2


class Button(enum.IntEnum):
    NO_MORE_BETS = 1
    CONFIRM = 2
    CALL_ATTENDANT = 3


class NakReason(enum.IntEnum):
    UNKNOWN_COMMAND = 1
    BAD_ARGUMENT = 2
    BUSY = 3
    NOT_NOW = 4
    UNSUPPORTED_VERSION = 5


class Capability(enum.IntFlag):
    """Bits of :attr:`Hello.capabilities`."""

    STUB_MODE = 0x01
    DOUBLE_DETECT = 0x02
    SEEDED_VERIFY = 0x04
    DISPLAY = 0x08
    SELF_TEST = 0x10
    PERSISTENT_EVENTS = 0x20
    TEST_MODE = 0x40


# ---------------------------------------------------------------------------------------
# Field codecs. Each is (encode, decode); decode takes (buffer, offset) and returns
# (value, new offset), raising MalformedPayload on short or invalid input.

_Decoder = Callable[[memoryview, int], tuple[Any, int]]
_Encoder = Callable[[Any], bytes]


def _int_codec(fmt: str) -> tuple[_Encoder, _Decoder]:
    st = struct.Struct("<" + fmt)

    def enc(value: Any) -> bytes:
        try:
            return st.pack(value)
        except struct.error as exc:
            raise ValueError(f"{value!r} does not fit the field ({exc})") from None

    def dec(buf: memoryview, off: int) -> tuple[Any, int]:
        end = off + st.size
        if end > len(buf):
            raise MalformedPayload("payload too short")
        return st.unpack_from(buf, off)[0], end

    return enc, dec


def _enc_bool(value: Any) -> bytes:
    return b"\x01" if value else b"\x00"


def _dec_bool(buf: memoryview, off: int) -> tuple[Any, int]:
    if off >= len(buf):
        raise MalformedPayload("payload too short")
    if buf[off] > 1:
        raise MalformedPayload(f"boolean byte 0x{buf[off]:02X}")
    return bool(buf[off]), off + 1


def _enc_bytes(value: Any) -> bytes:
    raw = bytes(value)
    if len(raw) > 255:
        raise ValueError(f"{len(raw)} bytes do not fit a length-prefixed field (max 255)")
    return bytes((len(raw),)) + raw


def _dec_bytes(buf: memoryview, off: int) -> tuple[Any, int]:
    if off >= len(buf):
        raise MalformedPayload("payload too short")
    end = off + 1 + buf[off]
    if end > len(buf):
        raise MalformedPayload("length-prefixed field runs past the payload")
    return bytes(buf[off + 1 : end]), end


def _enc_str(value: Any) -> bytes:
    return _enc_bytes(str(value).encode("utf-8"))


def _dec_str(buf: memoryview, off: int) -> tuple[Any, int]:
    raw, end = _dec_bytes(buf, off)
    try:
        return raw.decode("utf-8"), end
    except UnicodeDecodeError:
        raise MalformedPayload("string is not UTF-8") from None


def _enc_digest(value: Any) -> bytes:
    raw = bytes(value)
    if len(raw) != DIGEST_SIZE:
        raise ValueError(f"a digest has {DIGEST_SIZE} bytes, not {len(raw)}")
    return raw


def _dec_digest(buf: memoryview, off: int) -> tuple[Any, int]:
    end = off + DIGEST_SIZE
    if end > len(buf):
        raise MalformedPayload("payload too short")
    return bytes(buf[off:end]), end


def _enc_card(value: Any) -> bytes:
    return bytes((value.code,))


def _dec_card(buf: memoryview, off: int) -> tuple[Any, int]:
    if off >= len(buf):
        raise MalformedPayload("payload too short")
    try:
        return Card.from_code(buf[off]), off + 1
    except CardError as exc:
        raise MalformedPayload(str(exc)) from None


def _enc_u8list(value: Any) -> bytes:
    items = bytes(value)
    return bytes((len(items),)) + items


def _dec_u8list(buf: memoryview, off: int) -> tuple[Any, int]:
    raw, end = _dec_bytes(buf, off)
    return tuple(raw), end


def _enum_codec(enum_cls: type[enum.IntEnum]) -> tuple[_Encoder, _Decoder]:
    enc_u8, dec_u8 = _int_codec("B")

    def dec(buf: memoryview, off: int) -> tuple[Any, int]:
        raw, end = dec_u8(buf, off)
        try:
            return enum_cls(raw), end
        except ValueError:
            raise MalformedPayload(f"{raw} is not a {enum_cls.__name__}") from None

    return enc_u8, dec


CODECS: dict[str, tuple[_Encoder, _Decoder]] = {
    "u8": _int_codec("B"),
    "u16": _int_codec("H"),
    "u32": _int_codec("I"),
    "bool": (_enc_bool, _dec_bool),
    "str": (_enc_str, _dec_str),
    "bytes": (_enc_bytes, _dec_bytes),
    "digest": (_enc_digest, _dec_digest),
    "card": (_enc_card, _dec_card),
    "u8list": (_enc_u8list, _dec_u8list),
    "gate": _enum_codec(GateMode),
    "button": _enum_codec(Button),
    "nak": _enum_codec(NakReason),
}


# ---------------------------------------------------------------------------------------
# Messages


class Message:
    """Base of every message. ``EVENT`` messages are sequenced, retransmitted by the shoe
    until acknowledged, and acknowledged cumulatively by the host."""

    TYPE: ClassVar[int]
    FIELDS: ClassVar[tuple[str, ...]] = ()
    EVENT: ClassVar[bool] = False
    FROM_SHOE: ClassVar[bool]

    def encode_payload(self) -> bytes:
        return b"".join(
            CODECS[kind][0](getattr(self, f.name))
            for f, kind in zip(fields(self), self.FIELDS, strict=True)  # type: ignore[arg-type]
        )

    @classmethod
    def decode_payload(cls, payload: bytes | memoryview) -> Message:
        buf = memoryview(payload)
        values: list[Any] = []
        off = 0
        for kind in cls.FIELDS:
            value, off = CODECS[kind][1](buf, off)
            values.append(value)
        return cls(*values)


REGISTRY: dict[int, type[Message]] = {}


def _register(cls: type[Message]) -> type[Message]:
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    if len(names) != len(cls.FIELDS):
        raise TypeError(f"{cls.__name__}: FIELDS does not match the dataclass fields")
    if cls.TYPE in REGISTRY:
        raise TypeError(f"type 0x{cls.TYPE:02X} registered twice")
    if bool(cls.TYPE & 0x80) != cls.FROM_SHOE:
        raise TypeError(f"{cls.__name__}: direction does not match the type code")
    REGISTRY[cls.TYPE] = cls
    return cls


# --- shoe -> host ---------------------------------------------------------------------


@_register
@dataclass(frozen=True, slots=True)
class Hello(Message):
    """The shoe's identity; the answer to :class:`GetIdentity`, also sent after power-up.

    ``boot_id`` changes at every start of the firmware; ``next_event_seq`` is the sequence
    number of the oldest event the shoe still holds (or of its next event when it holds
    none), so the host can tell a reboot that lost unacknowledged events.
    """

    TYPE = 0x81
    FROM_SHOE = True
    FIELDS = ("u8list", "str", "str", "str", "str", "digest", "u32", "u32", "u32")
    protocol_versions: tuple[int, ...]
    model: str
    serial_number: str
    hardware_revision: str
    firmware_version: str
    firmware_digest: bytes
    capabilities: int
    boot_id: int
    next_event_seq: int


@_register
@dataclass(frozen=True, slots=True)
class CardDrawn(Message):
    """A card left the shoe. ``draw_index`` counts from 1 since the deck was loaded.
    ``quality`` is the reader's confidence, 0..100."""

    TYPE = 0x82
    FROM_SHOE = True
    EVENT = True
    FIELDS = ("u16", "card", "gate", "u8")
    draw_index: int
    card: Card
    gate_mode: GateMode
    quality: int


@_register
@dataclass(frozen=True, slots=True)
class DoubleCard(Message):
    """The reader detected two cards leaving together at ``draw_index``."""

    TYPE = 0x83
    FROM_SHOE = True
    EVENT = True
    FIELDS = ("u16",)
    draw_index: int


@_register
@dataclass(frozen=True, slots=True)
class DeckLoaded(Message):
    """A deck was placed in the shoe and its door is closed."""

    TYPE = 0x84
    FROM_SHOE = True
    EVENT = True


@_register
@dataclass(frozen=True, slots=True)
class DeckRemoved(Message):
    TYPE = 0x85
    FROM_SHOE = True
    EVENT = True


@_register
@dataclass(frozen=True, slots=True)
class DoorOpened(Message):
    TYPE = 0x86
    FROM_SHOE = True
    EVENT = True


@_register
@dataclass(frozen=True, slots=True)
class DoorClosed(Message):
    TYPE = 0x87
    FROM_SHOE = True
    EVENT = True


@_register
@dataclass(frozen=True, slots=True)
class Jam(Message):
    TYPE = 0x88
    FROM_SHOE = True
    EVENT = True


@_register
@dataclass(frozen=True, slots=True)
class JamCleared(Message):
    """The jam is cleared; ``card_left`` is true when a card left the shoe unread while
    it was jammed."""

    TYPE = 0x89
    FROM_SHOE = True
    EVENT = True
    FIELDS = ("bool",)
    card_left: bool


@_register
@dataclass(frozen=True, slots=True)
class ButtonPressed(Message):
    TYPE = 0x8A
    FROM_SHOE = True
    EVENT = True
    FIELDS = ("button",)
    button: Button


@_register
@dataclass(frozen=True, slots=True)
class Fault(Message):
    """A fault the shoe detected itself (sensor, reader, mechanism)."""

    TYPE = 0x8B
    FROM_SHOE = True
    EVENT = True
    FIELDS = ("u16", "str")
    code: int
    text: str


@_register
@dataclass(frozen=True, slots=True)
class Heartbeat(Message):
    """Sent every heartbeat period. ``last_event_seq`` is the newest event sequence number
    the shoe has issued (0 when none), ``unacked`` how many events await acknowledgement."""

    TYPE = 0x8C
    FROM_SHOE = True
    FIELDS = ("u32", "u16", "u32")
    uptime_ms: int
    unacked: int
    last_event_seq: int


@_register
@dataclass(frozen=True, slots=True)
class SelfTestReport(Message):
    """One step of a self-test; the test is complete when ``step == total``."""

    TYPE = 0x8D
    FROM_SHOE = True
    FIELDS = ("u8", "u8", "str", "bool", "str")
    step: int
    total: int
    name: str
    passed: bool
    detail: str


@_register
@dataclass(frozen=True, slots=True)
class Counters(Message):
    """Lifetime counters, kept by the shoe across power cycles."""

    TYPE = 0x8E
    FROM_SHOE = True
    FIELDS = ("u32", "u32", "u32", "u32", "u32")
    cards_read: int
    misreads: int
    jams: int
    door_openings: int
    power_cycles: int


@_register
@dataclass(frozen=True, slots=True)
class VerifyResult(Message):
    """HMAC-SHA256 of the firmware image keyed with the host's seed, and the seed echoed."""

    TYPE = 0x8F
    FROM_SHOE = True
    FIELDS = ("bytes", "digest")
    seed: bytes
    digest: bytes


@_register
@dataclass(frozen=True, slots=True)
class Ack(Message):
    """The command whose sequence number this frame carries was accepted."""

    TYPE = 0x90
    FROM_SHOE = True


@_register
@dataclass(frozen=True, slots=True)
class Nak(Message):
    """The command whose sequence number this frame carries was refused."""

    TYPE = 0x91
    FROM_SHOE = True
    FIELDS = ("nak", "str")
    reason: NakReason
    text: str


@_register
@dataclass(frozen=True, slots=True)
class ShoeEmpty(Message):
    """No card remains in the shoe; ``drawn`` cards left it since the deck was loaded."""

    TYPE = 0x92
    FROM_SHOE = True
    EVENT = True
    FIELDS = ("u16",)
    drawn: int


# --- host -> shoe ---------------------------------------------------------------------


@_register
@dataclass(frozen=True, slots=True)
class GetIdentity(Message):
    """Ask for :class:`Hello`. ``protocol_versions`` lists the versions the host speaks."""

    TYPE = 0x01
    FROM_SHOE = False
    FIELDS = ("u8list",)
    protocol_versions: tuple[int, ...]


@_register
@dataclass(frozen=True, slots=True)
class Ping(Message):
    TYPE = 0x02
    FROM_SHOE = False


@_register
@dataclass(frozen=True, slots=True)
class SetGate(Message):
    """Set the card gate. In ``DEAL`` and ``STUB`` mode the gate lets at most ``limit``
    cards out and then locks by itself (0: no limit), so that the shoe, not the host's
    reaction time, stops the deal at its last card."""

    TYPE = 0x03
    FROM_SHOE = False
    FIELDS = ("gate", "u8")
    mode: GateMode
    limit: int = 0


@_register
@dataclass(frozen=True, slots=True)
class SetDisplay(Message):
    TYPE = 0x04
    FROM_SHOE = False
    FIELDS = ("str",)
    text: str


@_register
@dataclass(frozen=True, slots=True)
class RunSelfTest(Message):
    TYPE = 0x05
    FROM_SHOE = False


@_register
@dataclass(frozen=True, slots=True)
class GetCounters(Message):
    TYPE = 0x06
    FROM_SHOE = False


@_register
@dataclass(frozen=True, slots=True)
class Verify(Message):
    """Ask for :class:`VerifyResult` keyed with ``seed`` (16..64 random bytes)."""

    TYPE = 0x07
    FROM_SHOE = False
    FIELDS = ("bytes",)
    seed: bytes


@_register
@dataclass(frozen=True, slots=True)
class AckEvents(Message):
    """Every event with a sequence number up to and including ``up_to_seq`` is durable on
    the host; the shoe may forget them. Not itself acknowledged."""

    TYPE = 0x08
    FROM_SHOE = False
    FIELDS = ("u32",)
    up_to_seq: int


@_register
@dataclass(frozen=True, slots=True)
class Reset(Message):
    """Restart the firmware. Unacknowledged events are kept where the shoe can."""

    TYPE = 0x09
    FROM_SHOE = False


@_register
@dataclass(frozen=True, slots=True)
class SetTestMode(Message):
    """Enter or leave the test mode, in which a technician may see card identities.
    The shoe refuses it while a deck is being dealt."""

    TYPE = 0x0A
    FROM_SHOE = False
    FIELDS = ("bool",)
    enabled: bool


@dataclass(frozen=True, slots=True)
class Unknown(Message):
    """A message type this version does not know; kept whole so it can be logged."""

    type_code: int
    payload: bytes

    FROM_SHOE = True

    def encode_payload(self) -> bytes:
        return self.payload


def decode_message(type_code: int, payload: bytes | memoryview) -> Message:
    """Decode one payload. Unknown types give :class:`Unknown`; a known type whose payload
    does not decode raises :class:`MalformedPayload`."""
    cls = REGISTRY.get(type_code)
    if cls is None:
        return Unknown(type_code, bytes(payload))
    return cls.decode_payload(payload)


def type_code_of(message: Message) -> int:
    if isinstance(message, Unknown):
        return message.type_code
    return message.TYPE
