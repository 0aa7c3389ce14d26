"""Every message of the protocol, both directions, as frozen dataclasses.

Each message class has a one-byte ``TYPE`` and an ordered tuple of ``FIELDS`` naming the
field encodings of :mod:`firmware_protocol.fields`. The payload is the fields' encodings
concatenated in that order, with nothing between them.

Type codes 0x01..0x7F go from the host to the shoe, 0x80..0xFF from the shoe to the host.
A type this version does not know decodes to :class:`Unknown`, so that a newer firmware
never crashes an older controller. Payload bytes after the last known field are ignored,
so that a later protocol version may append fields to a message.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from firmware_protocol.cards import Card
from firmware_protocol.fields import (
    DIGEST_SIZE,
    Button,
    Checker,
    GateMode,
    MalformedPayload,
    NakReason,
    PayloadLayout,
    describe_invalid,
)

__all__ = [
    "DIGEST_SIZE",
    "REGISTRY",
    "Ack",
    "AckEvents",
    "Button",
    "ButtonPressed",
    "Capability",
    "CardDrawn",
    "Counters",
    "DeckLoaded",
    "DeckRemoved",
    "DoorClosed",
    "DoorOpened",
    "DoubleCard",
    "Fault",
    "GateMode",
    "GetCounters",
    "GetIdentity",
    "Heartbeat",
    "Hello",
    "Jam",
    "JamCleared",
    "MalformedPayload",
    "Message",
    "Nak",
    "NakReason",
    "Ping",
    "ResendEvents",
    "Reset",
    "RunSelfTest",
    "SelfTestReport",
    "SetDisplay",
    "SetGate",
    "SetTestMode",
    "ShoeEmpty",
    "Unknown",
    "Verify",
    "VerifyResult",
    "decode_message",
    "type_code_of",
]


class Capability(enum.IntFlag):
    """Bits of :attr:`Hello.capabilities`."""

    STUB_MODE = 0x01
    DOUBLE_DETECT = 0x02
    SEEDED_VERIFY = 0x04
    DISPLAY = 0x08
    SELF_TEST = 0x10
    PERSISTENT_EVENTS = 0x20
    TEST_MODE = 0x40
    #: The shoe answers ResendEvents at once and times its retransmissions from the
    #: measured round trip; the host times its commands the same way (docs/protocol.md 8).
    FAST_RECOVERY = 0x80


class Message:
    """Base of every message. ``EVENT`` messages are sequenced, retransmitted by the shoe
    until acknowledged, and acknowledged cumulatively by the host.

    A message checks its field values when it is built (``__post_init__``): a value that
    does not fit its field raises TypeError or ValueError naming the message and the field,
    and a value with a canonical form is kept in it (an int as its enumeration member, a
    sequence as a tuple, a bytearray as bytes). Decoding builds messages the same way.
    """

    __slots__ = ()

    TYPE: ClassVar[int]
    FIELDS: ClassVar[tuple[str, ...]] = ()
    EVENT: ClassVar[bool] = False
    FROM_SHOE: ClassVar[bool]
    # Compiled by _register: (field name, check) in order, the payload layout and decoder.
    _CHECKS: ClassVar[tuple[tuple[str, Checker], ...]] = ()
    _LAYOUT: ClassVar[PayloadLayout]
    _DECODE: ClassVar[PayloadDecoder]

    def __post_init__(self) -> None:
        for name, check in self._CHECKS:
            value = getattr(self, name)
            try:
                checked = check(value)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{type(self).__name__}.{name}: {exc}") from None
            if checked is not value:
                # The documented way to set a field of a frozen dataclass while it is built.
                object.__setattr__(self, name, checked)

    def encode_payload(self) -> bytes:
        return self._LAYOUT.encode([getattr(self, name) for name, _ in self._CHECKS])

    @classmethod
    def decode_payload(cls, payload: bytes | memoryview) -> Message:
        """Decode a payload of this type; raises :class:`MalformedPayload`."""
        return cls._DECODE(payload, 0, len(payload))


#: Decodes the payload ``buf[start:end]`` into a message; raises MalformedPayload.
PayloadDecoder = Callable[[bytes | memoryview, int, int], Message]

REGISTRY: dict[int, type[Message]] = {}
#: Type code -> payload decoder, for the frame decoder's hot path.
PAYLOAD_DECODERS: dict[int, PayloadDecoder] = {}


def _build(cls: type[Message], values: Iterable[Any]) -> Message:
    """``cls(*values)``; a value its constructor refuses is a malformed payload."""
    try:
        return cls(*values)
    except (TypeError, ValueError) as exc:  # the field decoders should have caught it
        raise MalformedPayload(str(exc)) from None


def _compile_decoder(cls: type[Message], layout: PayloadLayout) -> PayloadDecoder:
    """A payload decoder for ``cls``: the layout's field values, given to its constructor.

    When every field has a fixed size, one ``struct`` call reads them all, and only the
    fields with a table of valid raw values (enumerations, cards, booleans) are looked up.
    """
    fixed = layout.fixed
    if fixed is None:

        def decode_variable(buf: bytes | memoryview, start: int, end: int) -> Message:
            return _build(cls, layout.decode(buf, start, end))

        return decode_variable

    unpack = fixed.unpack_from
    size = fixed.size
    if all(kind.table is None for kind in layout.kinds):

        def decode_plain(buf: bytes | memoryview, start: int, end: int) -> Message:
            if end - start < size:
                raise MalformedPayload("payload too short")
            return _build(cls, unpack(buf, start))

        return decode_plain

    steps = tuple((kind, kind.table) for kind in layout.kinds)

    def decode_fixed(buf: bytes | memoryview, start: int, end: int) -> Message:
        if end - start < size:
            raise MalformedPayload("payload too short")
        values = []
        # Both have one item per field; zip's keyword argument would cost time here.
        for (kind, table), raw in zip(steps, unpack(buf, start)):  # noqa: B905
            if table is None:
                values.append(raw)
                continue
            value = table.get(raw)
            if value is None:
                raise MalformedPayload(describe_invalid(kind, raw))
            values.append(value)
        return _build(cls, values)

    return decode_fixed


def _register(cls: type[Message]) -> type[Message]:
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    if len(names) != len(cls.FIELDS):
        raise TypeError(f"{cls.__name__}: FIELDS does not match the dataclass fields")
    if cls.TYPE in REGISTRY:
        raise TypeError(f"type 0x{cls.TYPE:02X} registered twice")
    if bool(cls.TYPE & 0x80) != cls.FROM_SHOE:
        raise TypeError(f"{cls.__name__}: direction does not match the type code")
    cls._LAYOUT = PayloadLayout(cls.FIELDS)
    cls._CHECKS = tuple(
        (name, kind.check) for name, kind in zip(names, cls._LAYOUT.kinds, strict=True)
    )
    cls._DECODE = _compile_decoder(cls, cls._LAYOUT)
    REGISTRY[cls.TYPE] = cls
    PAYLOAD_DECODERS[cls.TYPE] = cls._DECODE
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
    """Set the card gate. In ``DEAL`` and ``STUB`` mode the gate lets cards out until the
    draw index (cards drawn since the deck was loaded) reaches ``limit`` and then locks by
    itself (0: no limit), so that the shoe, not the host's reaction time, stops the deal
    at its last card, and so that the same command sent again lets no more cards out."""

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


@_register
@dataclass(frozen=True, slots=True)
class ResendEvents(Message):
    """The host misses events from ``from_seq`` on (it has every one before): the shoe
    sends again at once, oldest first, every event it holds numbered ``from_seq`` or
    above. Sent only to a shoe with the FAST_RECOVERY capability; not answered, and
    acknowledges nothing."""

    TYPE = 0x0B
    FROM_SHOE = False
    FIELDS = ("u32",)
    from_seq: int


@dataclass(frozen=True, slots=True)
class Unknown(Message):
    """A message type this version does not know; kept whole so it can be logged."""

    type_code: int
    payload: bytes

    FROM_SHOE = True

    def __post_init__(self) -> None:
        if not isinstance(self.type_code, int) or not 0 <= self.type_code <= 0xFF:
            raise ValueError(f"Unknown.type_code: {self.type_code!r} is outside 0..255")
        if not isinstance(self.payload, bytes):
            if not isinstance(self.payload, bytearray | memoryview):
                raise TypeError(f"Unknown.payload: takes bytes, not {type(self.payload).__name__}")
            object.__setattr__(self, "payload", bytes(self.payload))

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
