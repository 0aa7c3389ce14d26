"""Test vectors of the wire format: the data file shipped with the package, and its generator.

``vectors.json`` (beside this module) holds three lists that any implementation, the shoe's
firmware included, can check itself against:

- ``valid``: one frame per message type at least; encoding the fields must give ``frame``
  exactly, and decoding ``frame`` must give the fields back.
- ``tolerated``: frames a receiver must accept although no conforming sender produces them
  (appended payload bytes, reserved flag bits, a handshake in a newer version); decoding
  them gives the fields listed.
- ``invalid``: byte runs a receiver must reject, each with the decoder counter that goes up
  by one and the number of bytes discarded.
- ``retransmit_timer``: the timeout a FAST_RECOVERY end computes from its round-trip
  measurements (RFC 6298), step by step: each case gives the timer's initial, minimum and
  maximum timeouts and a list of steps (a measurement, or a timeout that passed and backs
  the timer off) with the smoothed round trip, its variation and the timeout after each.

Fields use a JSON form: integers as numbers, booleans as booleans, strings as strings,
``bytes`` and ``digest`` fields as lowercase hex, cards in their text form ("QH", "JK",
"??"), enumerations by member name ("DEAL"), ``u8list`` as a list of numbers. Frames are
lowercase hex; ``frame`` includes the 0x00 delimiter, ``body`` is the frame before COBS
stuffing (header, payload, CRC).

``python -m tools.protocol_vectors`` (a maintainers' script in the source tree) writes the
file again from :func:`generate`; ``--doc docs/protocol.md`` also rewrites the examples in
the specification, and ``--check`` only verifies that both are up to date.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import json
import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from cobs import cobs

from firmware_protocol import crc
from firmware_protocol.cards import Card
from firmware_protocol.framing import (
    MAX_ENCODED_FRAME,
    MAX_PAYLOAD,
    PROTOCOL_VERSION,
    Flags,
    encode_frame,
)
from firmware_protocol.messages import (
    REGISTRY,
    Ack,
    AckEvents,
    Button,
    ButtonPressed,
    Capability,
    CardDrawn,
    Counters,
    DeckLoaded,
    DeckRemoved,
    DoorClosed,
    DoorOpened,
    DoubleCard,
    Fault,
    GateMode,
    GetCounters,
    GetIdentity,
    Heartbeat,
    Hello,
    Jam,
    JamCleared,
    Message,
    Nak,
    NakReason,
    Ping,
    ResendEvents,
    Reset,
    RunSelfTest,
    SelfTestReport,
    SetDisplay,
    SetGate,
    SetTestMode,
    ShoeEmpty,
    Unknown,
    Verify,
    VerifyResult,
)
from firmware_protocol.rtt import RetransmitTimer
from firmware_protocol.timing import (
    COMMAND_TIMEOUT,
    COMMAND_TIMEOUT_MAX,
    COMMAND_TIMEOUT_MIN,
    RETRANSMIT_TIMEOUT,
    RETRANSMIT_TIMEOUT_MAX,
    RETRANSMIT_TIMEOUT_MIN,
)

FORMAT = 1
VECTORS_PATH = Path(__file__).with_name("vectors.json")
#: The decoder counters an invalid vector may name (fields of DecoderStats).
COUNTERS = ("crc_errors", "malformed", "oversized")
#: Timer values are given in seconds to the microsecond.
TIMER_DIGITS = 6


# --- JSON form of messages ------------------------------------------------------------


def _field_to_json(kind: str, value: Any) -> Any:
    if kind in ("bytes", "digest"):
        return bytes(value).hex()
    if kind == "card":
        return value.text
    if kind in ("gate", "button", "nak"):
        return value.name
    if kind == "u8list":
        return list(value)
    return value


_ENUMS: dict[str, type[enum.IntEnum]] = {"gate": GateMode, "button": Button, "nak": NakReason}


def _field_from_json(kind: str, value: Any) -> Any:
    if kind in ("bytes", "digest"):
        return bytes.fromhex(value)
    if kind == "card":
        return Card.parse(value)
    if kind in _ENUMS:
        return _ENUMS[kind][value]
    if kind == "u8list":
        return tuple(value)
    return value


def message_to_json(message: Message) -> dict[str, Any]:
    """The JSON form of a message's fields."""
    if isinstance(message, Unknown):
        return {"type_code": message.type_code, "payload": message.payload.hex()}
    return {
        f.name: _field_to_json(kind, getattr(message, f.name))
        for f, kind in zip(fields(message), message.FIELDS, strict=True)  # type: ignore[arg-type]
    }


_BY_NAME: dict[str, type[Message]] = {cls.__name__: cls for cls in REGISTRY.values()}


def message_from_json(name: str, data: dict[str, Any]) -> Message:
    """Build the message ``name`` from the JSON form of its fields."""
    if name == "Unknown":
        return Unknown(int(data["type_code"]), bytes.fromhex(data["payload"]))
    cls = _BY_NAME[name]
    names = [f.name for f in fields(cls)]  # type: ignore[arg-type]
    if sorted(names) != sorted(data):
        raise ValueError(f"{name} has the fields {names}, not {sorted(data)}")
    return cls(*(_field_from_json(k, data[n]) for n, k in zip(names, cls.FIELDS, strict=True)))


# --- the vectors --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ValidVector:
    """A frame and what it means. ``tolerated`` ones are only decoded, never produced."""

    name: str
    description: str
    message: Message
    version: int
    seq: int
    flags: Flags
    frame: bytes
    tolerated: bool = False

    @property
    def body(self) -> bytes:
        """The frame before stuffing: header, payload, CRC."""
        stuffed: bytes = cobs.decode(self.frame[:-1])
        return stuffed


@dataclass(frozen=True, slots=True)
class InvalidVector:
    """Bytes a receiver must reject: ``counter`` goes up by one, ``bytes_discarded`` by
    the number given."""

    name: str
    description: str
    frame: bytes
    counter: str
    bytes_discarded: int


@dataclass(frozen=True, slots=True)
class TimerStep:
    """One step of a retransmission timer: a round trip measured (``rtt``, seconds), or a
    timeout that passed (``rtt`` None: the timer backs off); the state after it."""

    rtt: float | None
    srtt: float | None
    rttvar: float
    timeout: float


@dataclass(frozen=True, slots=True)
class TimerVector:
    """A :class:`~firmware_protocol.rtt.RetransmitTimer` from its initial state through
    ``steps``."""

    name: str
    description: str
    initial: float
    minimum: float
    maximum: float
    steps: tuple[TimerStep, ...]


@dataclass(frozen=True, slots=True)
class VectorSet:
    valid: tuple[ValidVector, ...]
    tolerated: tuple[ValidVector, ...]
    invalid: tuple[InvalidVector, ...]
    timers: tuple[TimerVector, ...] = ()


#: Example identity data, so that the vectors mean something to a reader.
EXAMPLE_FIRMWARE_IMAGE = b"ES-7 firmware image 1.4.2"
EXAMPLE_SEED = bytes(range(0x10, 0x20))


def _valid(
    name: str, description: str, message: Message, seq: int, flags: Flags = Flags.NONE
) -> ValidVector:
    frame = encode_frame(message, seq, flags)
    final_flags = flags | Flags.EVENT if message.EVENT else flags
    return ValidVector(name, description, message, PROTOCOL_VERSION, seq, final_flags, frame)


def _example_hello(boot_id: int, next_event_seq: int) -> Hello:
    capabilities = (
        Capability.STUB_MODE
        | Capability.DOUBLE_DETECT
        | Capability.SEEDED_VERIFY
        | Capability.DISPLAY
        | Capability.SELF_TEST
        | Capability.PERSISTENT_EVENTS
    )
    digest = hashlib.sha256(EXAMPLE_FIRMWARE_IMAGE).digest()
    return Hello(
        (1,), "ES-7", "ES7-000123", "B", "1.4.2", digest, int(capabilities), boot_id, next_event_seq
    )


def _valid_vectors() -> list[ValidVector]:
    keyed = hmac.new(EXAMPLE_SEED, EXAMPLE_FIRMWARE_IMAGE, hashlib.sha256).digest()
    response, retransmit = Flags.RESPONSE, Flags.RETRANSMIT
    longest_text = "W" * (MAX_PAYLOAD - 1)  # u8 length + text fill the payload exactly
    return [
        # host -> shoe
        _valid("get_identity", "The host asks who the shoe is.", GetIdentity((1,)), 1),
        _valid("ping", "The host checks the shoe answers.", Ping(), 2),
        _valid("set_gate", "Deal: let at most 49 cards out.", SetGate(GateMode.DEAL, 49), 3),
        _valid("set_gate_locked", "Lock the gate.", SetGate(GateMode.LOCKED, 0), 4),
        _valid("set_display", "Text for the shoe's display.", SetDisplay("Position 3"), 5),
        _valid(
            "set_display_longest",
            "The longest frame: a 244-byte payload, 253 bytes before stuffing.",
            SetDisplay(longest_text),
            6,
        ),
        _valid("run_self_test", "Start a self-test.", RunSelfTest(), 7),
        _valid("get_counters", "Ask for the lifetime counters.", GetCounters(), 8),
        _valid("verify", "Keyed verification with a 16-byte seed.", Verify(EXAMPLE_SEED), 9),
        _valid("ack_events", "Events up to 14 are journaled.", AckEvents(14), 0),
        _valid(
            "resend_events",
            "The host misses events from 13 on (FAST_RECOVERY): send them again now.",
            ResendEvents(13),
            0,
        ),
        _valid("reset", "Restart the firmware.", Reset(), 10),
        _valid("set_test_mode", "Enter test mode.", SetTestMode(True), 11),
        _valid(
            "get_identity_retransmitted",
            "GetIdentity sent again after a timeout: same sequence number, RETRANSMIT.",
            GetIdentity((1,)),
            1,
            retransmit,
        ),
        # shoe -> host
        _valid(
            "hello",
            "The answer to get_identity.",
            _example_hello(0x5EED0001, 12),
            1,
            response,
        ),
        _valid(
            "hello_unsolicited",
            "Sent after power-up, before any GetIdentity: sequence number 0.",
            _example_hello(0x5EED0002, 15),
            0,
        ),
        _valid(
            "card_drawn",
            "Event 12: the queen of hearts, 12th card of the deck, drawn in DEAL mode.",
            CardDrawn(12, Card.parse("QH"), GateMode.DEAL, 97),
            12,
        ),
        _valid(
            "card_drawn_retransmitted",
            "The same event sent again because no AckEvents covered it in time.",
            CardDrawn(12, Card.parse("QH"), GateMode.DEAL, 97),
            12,
            retransmit,
        ),
        _valid(
            "card_drawn_unreadable",
            "A card left the shoe but the reader could not identify it.",
            CardDrawn(13, Card.parse("??"), GateMode.DEAL, 0),
            13,
        ),
        _valid(
            "card_drawn_stub",
            "The joker counted in STUB mode as the 51st card.",
            CardDrawn(51, Card.parse("JK"), GateMode.STUB, 88),
            16,
        ),
        _valid(
            "card_drawn_locked",
            "A card that left while the gate was locked (an irregularity).",
            CardDrawn(1, Card.parse("2C"), GateMode.LOCKED, 93),
            17,
        ),
        _valid("double_card", "Two cards left together at draw 20.", DoubleCard(20), 18),
        _valid("deck_loaded", "A deck is in and the door closed.", DeckLoaded(), 1),
        _valid("deck_removed", "The deck was taken out.", DeckRemoved(), 19),
        _valid("door_opened", "The shoe's door opened.", DoorOpened(), 20),
        _valid("door_closed", "The shoe's door closed.", DoorClosed(), 21),
        _valid("jam", "A card jammed in the mechanism.", Jam(), 22),
        _valid("jam_cleared", "Jam cleared, no card left unread.", JamCleared(False), 23),
        _valid(
            "button_pressed",
            "The croupier pressed no-more-bets.",
            ButtonPressed(Button.NO_MORE_BETS),
            24,
        ),
        _valid("fault", "A fault the shoe detected.", Fault(2, "gate motor stalled"), 25),
        _valid(
            "heartbeat",
            "Uptime 123.456 s, two events unacknowledged, newest event 26.",
            Heartbeat(123456, 2, 26),
            0,
        ),
        _valid(
            "self_test_report",
            "Step 1 of 3 of the self-test started by run_self_test.",
            SelfTestReport(1, 3, "reader", True, "optics ok"),
            7,
            response,
        ),
        _valid(
            "counters",
            "The answer to get_counters.",
            Counters(104233, 12, 3, 871, 95),
            8,
            response,
        ),
        _valid(
            "verify_result",
            "The answer to verify: HMAC-SHA256 of the example image keyed with the seed.",
            VerifyResult(EXAMPLE_SEED, keyed),
            9,
            response,
        ),
        _valid("ack", "The answer to ping.", Ack(), 2, response),
        _valid(
            "nak",
            "set_gate refused while the door is open.",
            Nak(NakReason.NOT_NOW, "door open"),
            3,
            response,
        ),
        _valid("shoe_empty", "The last card left: 53 drawn.", ShoeEmpty(53), 27),
        _valid(
            "unknown_type",
            "An event of a type this version does not know (0xC0): kept whole.",
            Unknown(0xC0, bytes.fromhex("0102")),
            28,
            Flags.EVENT,
        ),
    ]


def _frame_of(
    type_code: int, payload: bytes, seq: int, flags: int, version: int = PROTOCOL_VERSION
) -> bytes:
    """A frame built by hand, for vectors that encode_frame rightly refuses to make."""
    body = bytes((version, type_code, flags)) + seq.to_bytes(4, "little") + payload
    body += crc.crc16(body).to_bytes(2, "big")
    stuffed: bytes = cobs.encode(body)
    return stuffed + b"\x00"


def _tolerated_vectors() -> list[ValidVector]:
    card = CardDrawn(12, Card.parse("QH"), GateMode.DEAL, 97)
    hello = Hello((1, 2), "ES-9", "ES9-000001", "A", "3.0.0", bytes(32), 0, 7, 1)
    return [
        ValidVector(
            "appended_payload_bytes",
            "card_drawn with two bytes appended by a later version: they are ignored.",
            card,
            1,
            12,
            Flags.EVENT,
            _frame_of(CardDrawn.TYPE, card.encode_payload() + b"\xaa\x00", 12, 0x01),
            tolerated=True,
        ),
        ValidVector(
            "reserved_flag_bits",
            "card_drawn with reserved flag bits 0x80 and 0x08 set: they are ignored.",
            card,
            1,
            12,
            Flags.EVENT,
            _frame_of(CardDrawn.TYPE, card.encode_payload(), 12, 0x89),
            tolerated=True,
        ),
        ValidVector(
            "hello_newer_version",
            "A Hello in version 2 with an appended field: the handshake decodes in any version.",
            hello,
            2,
            0,
            Flags.NONE,
            _frame_of(Hello.TYPE, hello.encode_payload() + b"\x01\x02\x03", 0, 0x00, 2),
            tolerated=True,
        ),
    ]


def _invalid_vectors() -> list[InvalidVector]:
    good = encode_frame(CardDrawn(12, Card.parse("QH"), GateMode.DEAL, 97), 12)
    body = bytearray(cobs.decode(good[:-1]))
    body[-1] ^= 0x01  # one bit of the CRC
    bad_crc = cobs.encode(bytes(body)) + b"\x00"
    bad_cobs = bytes((0x09, 0x01, 0x82, 0x01)) + b"\x00"  # says 8 bytes follow, 3 do
    truncated = good[:-4] + b"\x00"
    too_short = cobs.encode(bytes((1, 0x82, 1, 12, 0, 0))) + b"\x00"
    oversized = b"\x55" * (MAX_ENCODED_FRAME + 46) + b"\x00"

    def frame(type_code: int, payload: bytes, flags: int = 0, version: int = 1) -> bytes:
        return _frame_of(type_code, payload, 40, flags, version)

    vectors = [
        ("bad_crc", "card_drawn with one bit of its CRC flipped.", bad_crc, "crc_errors"),
        (
            "bad_cobs",
            "A COBS code byte that points past the end of the frame.",
            bad_cobs,
            "malformed",
        ),
        ("truncated", "card_drawn with its last three stuffed bytes lost.", truncated, "malformed"),
        ("too_short", "Six bytes: shorter than a header and a CRC.", too_short, "malformed"),
        (
            "oversized",
            f"{MAX_ENCODED_FRAME + 46} bytes without a delimiter.",
            oversized,
            "oversized",
        ),
        (
            "unsupported_version",
            "card_drawn in protocol version 9.",
            frame(CardDrawn.TYPE, bytes.fromhex("0c002c0161"), 0x01, 9),
            "malformed",
        ),
        (
            "version_zero",
            "A good Hello in version 0, which no version has.",
            frame(Hello.TYPE, _example_hello(0x5EED0001, 12).encode_payload(), 0, 0),
            "malformed",
        ),
        (
            "payload_too_short",
            "card_drawn whose payload stops after the card.",
            frame(CardDrawn.TYPE, bytes.fromhex("0c002c"), 0x01),
            "malformed",
        ),
        (
            "bad_boolean",
            "jam_cleared with 0x02 as its boolean.",
            frame(JamCleared.TYPE, b"\x02", 0x01),
            "malformed",
        ),
        (
            "bad_card_code",
            "card_drawn with card code 0x0E (rank 14).",
            frame(CardDrawn.TYPE, bytes.fromhex("0c000e0161"), 0x01),
            "malformed",
        ),
        (
            "bad_gate_mode",
            "set_gate with mode 7.",
            frame(SetGate.TYPE, bytes.fromhex("0731")),
            "malformed",
        ),
        (
            "bad_utf8",
            "set_display whose text is not UTF-8.",
            frame(SetDisplay.TYPE, bytes.fromhex("02c328")),
            "malformed",
        ),
        (
            "length_past_payload",
            "fault whose text length says 50 bytes, 3 follow.",
            frame(Fault.TYPE, bytes.fromhex("0200") + b"\x32abc", 0x01),
            "malformed",
        ),
    ]
    out = []
    for name, description, data, counter in vectors:
        # Everything but the delimiter is discarded.
        out.append(InvalidVector(name, description, data, counter, len(data) - 1))
    return out


def _timer(
    name: str,
    description: str,
    limits: tuple[float, float, float],
    measurements: list[float | None],
) -> TimerVector:
    """Run a timer through ``measurements`` (None: a timeout passed) and record it."""
    initial, minimum, maximum = limits
    timer = RetransmitTimer(initial, minimum, maximum)
    steps = []
    for rtt in measurements:
        if rtt is None:
            timer.back_off()
        else:
            timer.measure(rtt)
        srtt = None if timer.srtt is None else round(timer.srtt, TIMER_DIGITS)
        steps.append(
            TimerStep(
                rtt, srtt, round(timer.rttvar, TIMER_DIGITS), round(timer.timeout, TIMER_DIGITS)
            )
        )
    return TimerVector(name, description, initial, minimum, maximum, tuple(steps))


def _timer_vectors() -> list[TimerVector]:
    shoe = (RETRANSMIT_TIMEOUT, RETRANSMIT_TIMEOUT_MIN, RETRANSMIT_TIMEOUT_MAX)
    host = (COMMAND_TIMEOUT, COMMAND_TIMEOUT_MIN, COMMAND_TIMEOUT_MAX)
    return [
        _timer(
            "shoe_events",
            "The shoe's timeout for its events: a timeout before any measurement, cards "
            "acknowledged within a few milliseconds (the floor holds), two timeouts that "
            "pass, a host slow for once, then timeouts up to the maximum.",
            shoe,
            [None, 0.004, 0.002, 0.003, 0.0025, None, None, 0.030, 0.003] + [None] * 8,
        ),
        _timer(
            "host_commands",
            "The host's command timeout: replies within a millisecond, one that does not "
            "come, then a slow command (a seeded verification) and fast ones again.",
            host,
            [0.0008, 0.0009, 0.0007, None, 0.120, 0.001, 0.001, 0.0012, 0.0009],
        ),
    ]


def build() -> VectorSet:
    """The vectors, built from the code of this package."""
    return VectorSet(
        tuple(_valid_vectors()),
        tuple(_tolerated_vectors()),
        tuple(_invalid_vectors()),
        tuple(_timer_vectors()),
    )


def _valid_to_json(v: ValidVector) -> dict[str, Any]:
    type_code = v.message.type_code if isinstance(v.message, Unknown) else v.message.TYPE
    return {
        "name": v.name,
        "description": v.description,
        "message": type(v.message).__name__,
        "type_code": type_code,
        "version": v.version,
        "seq": v.seq,
        "flags": int(v.flags),
        "fields": message_to_json(v.message),
        "body": v.body.hex(),
        "frame": v.frame.hex(),
    }


def generate() -> dict[str, Any]:
    """The JSON document of ``vectors.json``."""
    vectors = build()
    return {
        "format": FORMAT,
        "protocol_version": PROTOCOL_VERSION,
        "crc": {
            "name": crc.NAME,
            "width": crc.WIDTH,
            "poly": f"0x{crc.POLY:04X}",
            "init": f"0x{crc.INIT:04X}",
            "refin": crc.REFIN,
            "refout": crc.REFOUT,
            "xorout": f"0x{crc.XOROUT:04X}",
            "check": f"0x{crc.CHECK:04X}",
            "residue": f"0x{crc.RESIDUE:04X}",
        },
        "valid": [_valid_to_json(v) for v in vectors.valid],
        "tolerated": [_valid_to_json(v) for v in vectors.tolerated],
        "invalid": [
            {
                "name": v.name,
                "description": v.description,
                "frame": v.frame.hex(),
                "counter": v.counter,
                "bytes_discarded": v.bytes_discarded,
            }
            for v in vectors.invalid
        ],
        "retransmit_timer": [
            {
                "name": t.name,
                "description": t.description,
                "initial": t.initial,
                "minimum": t.minimum,
                "maximum": t.maximum,
                "steps": [
                    {
                        "event": "timeout" if step.rtt is None else "measure",
                        "rtt": step.rtt,
                        "srtt": step.srtt,
                        "rttvar": step.rttvar,
                        "timeout": step.timeout,
                    }
                    for step in t.steps
                ],
            }
            for t in vectors.timers
        ],
    }


def dumps(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def load(path: Path = VECTORS_PATH) -> VectorSet:
    """Read a vectors file."""
    document = json.loads(path.read_text(encoding="utf-8"))
    if document.get("format") != FORMAT:
        raise ValueError(f"{path}: vectors format {document.get('format')!r}, expected {FORMAT}")

    def valid(entry: dict[str, Any], tolerated: bool) -> ValidVector:
        return ValidVector(
            entry["name"],
            entry["description"],
            message_from_json(entry["message"], entry["fields"]),
            entry["version"],
            entry["seq"],
            Flags(entry["flags"]),
            bytes.fromhex(entry["frame"]),
            tolerated,
        )

    return VectorSet(
        tuple(valid(e, False) for e in document["valid"]),
        tuple(valid(e, True) for e in document["tolerated"]),
        tuple(
            InvalidVector(
                e["name"],
                e["description"],
                bytes.fromhex(e["frame"]),
                e["counter"],
                e["bytes_discarded"],
            )
            for e in document["invalid"]
        ),
        tuple(
            TimerVector(
                e["name"],
                e["description"],
                e["initial"],
                e["minimum"],
                e["maximum"],
                tuple(
                    TimerStep(step["rtt"], step["srtt"], step["rttvar"], step["timeout"])
                    for step in e["steps"]
                ),
            )
            for e in document.get("retransmit_timer", ())
        ),
    )


# --- the examples in docs/protocol.md ----------------------------------------------------


def _hex_lines(label: str, data: bytes, width: int = 16) -> list[str]:
    chunks = [data[i : i + width].hex(" ") for i in range(0, len(data), width)] or [""]
    pad = " " * len(label)
    return [f"{label}{chunks[0]}"] + [f"{pad}{chunk}" for chunk in chunks[1:]]


def _flag_names(flags: Flags) -> str:
    names = [f.name for f in (Flags.EVENT, Flags.RETRANSMIT, Flags.RESPONSE) if f in flags]
    return f"0x{int(flags):02X} ({' | '.join(n for n in names if n)})" if names else "0x00"


def _describe_field(kind: str, value: Any) -> str:
    shown = _field_to_json(kind, value)
    if kind in ("str", "card"):
        return json.dumps(shown, ensure_ascii=False)
    if kind in ("bytes", "digest"):
        return shown if len(shown) <= 24 else f"{shown[:16]}...{shown[-8:]} ({len(value)} bytes)"
    return str(shown)


def render_example(vector: ValidVector) -> str:
    """The example block the specification shows for ``vector``."""
    message = vector.message
    if isinstance(message, Unknown):
        type_code, values = message.type_code, [f"payload={message.payload.hex(' ')}"]
    else:
        type_code = message.TYPE
        values = [
            f"{f.name}={_describe_field(kind, getattr(message, f.name))}"
            for f, kind in zip(fields(message), message.FIELDS, strict=True)  # type: ignore[arg-type]
        ]
    lines = [
        f"vector  {vector.name}",
        f"header  version {vector.version}, type 0x{type_code:02X} "
        f"({type(message).__name__}), flags {_flag_names(vector.flags)}, seq {vector.seq}",
    ]
    if not values:
        lines.append("fields  (none)")
    elif sum(len(v) + 1 for v in values) <= 70:
        lines.append(f"fields  {' '.join(values)}")
    else:
        lines.append(f"fields  {values[0]}")
        lines.extend(f"        {v}" for v in values[1:])
    lines += _hex_lines("body    ", vector.body)
    lines += _hex_lines("frame   ", vector.frame)
    return "\n".join(lines)


#: An example in the specification: an HTML comment naming the vector, then a text block.
EXAMPLE_PATTERN = re.compile(
    r"<!-- vector: (?P<name>[a-z0-9_]+) -->\n```text\n(?P<body>.*?)\n```", re.DOTALL
)


def update_document(text: str, vectors: VectorSet) -> str:
    """``text`` with every example block rewritten from ``vectors``."""
    by_name = {v.name: v for v in (*vectors.valid, *vectors.tolerated)}

    def replace(match: re.Match[str]) -> str:
        vector = by_name.get(match["name"])
        if vector is None:
            raise KeyError(f"the document shows vector {match['name']!r}, which does not exist")
        return f"<!-- vector: {vector.name} -->\n```text\n{render_example(vector)}\n```"

    return EXAMPLE_PATTERN.sub(replace, text)
