"""Field encodings, and the compiled payload layout of a message type.

A payload is its fields' encodings concatenated, with nothing between them. All integers
are little-endian:

============  ==============================================================
``u8``        unsigned integer, 1 byte
``u16``       unsigned integer, 2 bytes
``u32``       unsigned integer, 4 bytes
``bool``      1 byte, 0x00 or 0x01 (anything else is malformed)
``str``       u8 length n, then n bytes of UTF-8
``bytes``     u8 length n, then n bytes
``digest``    32 bytes (a SHA-256 or HMAC-SHA256 value)
``card``      1 byte card code (see :mod:`firmware_protocol.cards`)
``u8list``    u8 count n, then n u8 values
``gate``      1 byte :class:`GateMode`; ``button`` 1 byte :class:`Button`;
              ``nak`` 1 byte :class:`NakReason`
============  ==============================================================

A message checks its own values when it is built (each kind's ``check`` raises TypeError or
ValueError), so that encoding a message never meets a value that does not fit; decoding
takes remote bytes and raises only :class:`MalformedPayload`, which the frame decoder
counts.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from firmware_protocol.cards import DECK_53, UNREADABLE, Card

DIGEST_SIZE = 32
MAX_LENGTH_PREFIXED = 0xFF


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


#: Takes a value given to a message's constructor; returns the value to keep (the same, or
#: its canonical form: an enumeration member, a tuple, bytes), or raises TypeError or
#: ValueError saying what does not fit.
Checker = Callable[[Any], Any]
#: Takes a checked value, returns its encoding.
Encoder = Callable[[Any], bytes]
#: Takes (buffer, offset), returns (value, offset after the field).
Decoder = Callable[[memoryview, int], tuple[Any, int]]


@dataclass(frozen=True, slots=True)
class FieldKind:
    """One field encoding: how a value is checked, encoded and decoded. Fixed-size kinds
    also give a struct format and, when the raw integer is not the value itself, the table
    of valid raw values."""

    name: str
    check: Checker
    encode: Encoder
    decode: Decoder
    fixed_format: str | None = None
    table: Mapping[int, Any] | None = None
    describe_invalid: Callable[[int], str] | None = None


# --- checks and encoders (our own values: checked once, when a message is built) ----------


def _uint_kind(name: str, fmt: str) -> FieldKind:
    st = struct.Struct("<" + fmt)
    top = (1 << (8 * st.size)) - 1

    def check(value: Any) -> Any:
        if not isinstance(value, int):
            raise TypeError(f"a {name} field takes an int, not {type(value).__name__}")
        if not 0 <= value <= top:
            raise ValueError(f"{value} does not fit a {name} field (0..{top})")
        return value

    def dec(buf: memoryview, off: int) -> tuple[Any, int]:
        end = off + st.size
        if end > len(buf):
            raise MalformedPayload("payload too short")
        return st.unpack_from(buf, off)[0], end

    return FieldKind(name, check, st.pack, dec, fmt)


def _table_kind(
    name: str,
    table: Mapping[int, Any],
    check: Checker,
    encode: Encoder,
    invalid: Callable[[int], str],
) -> FieldKind:
    """A one-byte field whose raw value maps to a value through ``table``."""

    def dec(buf: memoryview, off: int) -> tuple[Any, int]:
        if off >= len(buf):
            raise MalformedPayload("payload too short")
        value = table.get(buf[off])
        if value is None:
            raise MalformedPayload(invalid(buf[off]))
        return value, off + 1

    return FieldKind(name, check, encode, dec, "B", table, invalid)


def _check_bool(value: Any) -> Any:
    if value is True or value is False:
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ValueError(f"a bool field takes True or False, not {value!r}")


def _check_card(value: Any) -> Any:
    if not isinstance(value, Card):
        raise TypeError(f"a card field takes a Card, not {type(value).__name__}")
    return value


def _enum_kind(name: str, enum_cls: type[enum.IntEnum]) -> FieldKind:
    members = ", ".join(f"{m.name}={m.value}" for m in enum_cls)

    def check(value: Any) -> Any:
        if type(value) is enum_cls:
            return value
        try:
            return enum_cls(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a {enum_cls.__name__} ({members})") from None

    return _table_kind(
        name,
        {m.value: m for m in enum_cls},
        check,
        lambda value: bytes((value,)),
        lambda raw: f"{raw} is not a {enum_cls.__name__}",
    )


def _checked_bytes(value: Any, name: str) -> bytes:
    if not isinstance(value, bytes | bytearray | memoryview):
        raise TypeError(f"a {name} field takes bytes, not {type(value).__name__}")
    return bytes(value)


def _check_length(size: int, what: str) -> None:
    if size > MAX_LENGTH_PREFIXED:
        raise ValueError(f"{what} of {size} bytes does not fit (max {MAX_LENGTH_PREFIXED})")


def _check_bytes(value: Any) -> Any:
    raw = _checked_bytes(value, "bytes")
    _check_length(len(raw), "a bytes field")
    return raw


def _check_str(value: Any) -> Any:
    if not isinstance(value, str):
        raise TypeError(f"a str field takes a str, not {type(value).__name__}")
    _check_length(len(value.encode("utf-8")), "a string")
    return value


def _check_digest(value: Any) -> Any:
    raw = _checked_bytes(value, "digest")
    if len(raw) != DIGEST_SIZE:
        raise ValueError(f"a digest has {DIGEST_SIZE} bytes, not {len(raw)}")
    return raw


def _check_u8list(value: Any) -> Any:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise TypeError(f"a u8list field takes a sequence of ints, not {type(value).__name__}")
    items = tuple(value)
    if not all(isinstance(i, int) and 0 <= i <= 0xFF for i in items):
        raise ValueError(f"a u8list field takes ints in 0..255, not {items!r}")
    _check_length(len(items), "a u8list")
    return items


def _length_prefixed(raw: bytes) -> bytes:
    return bytes((len(raw),)) + raw


def _enc_str(value: Any) -> bytes:
    return _length_prefixed(value.encode("utf-8"))


def _enc_u8list(value: Any) -> bytes:
    return _length_prefixed(bytes(value))


# --- decoders of variable-size fields (remote bytes: never anything but MalformedPayload) -


def _dec_bytes(buf: memoryview, off: int) -> tuple[Any, int]:
    if off >= len(buf):
        raise MalformedPayload("payload too short")
    end = off + 1 + buf[off]
    if end > len(buf):
        raise MalformedPayload("length-prefixed field runs past the payload")
    return bytes(buf[off + 1 : end]), end


def _dec_str(buf: memoryview, off: int) -> tuple[Any, int]:
    raw, end = _dec_bytes(buf, off)
    try:
        return raw.decode("utf-8"), end
    except UnicodeDecodeError:
        raise MalformedPayload("string is not UTF-8") from None


def _dec_digest(buf: memoryview, off: int) -> tuple[Any, int]:
    end = off + DIGEST_SIZE
    if end > len(buf):
        raise MalformedPayload("payload too short")
    return bytes(buf[off:end]), end


def _dec_u8list(buf: memoryview, off: int) -> tuple[Any, int]:
    raw, end = _dec_bytes(buf, off)
    return tuple(raw), end


_CARDS: dict[int, Card] = {card.code: card for card in (*DECK_53, UNREADABLE)}

KINDS: dict[str, FieldKind] = {
    kind.name: kind
    for kind in (
        _uint_kind("u8", "B"),
        _uint_kind("u16", "H"),
        _uint_kind("u32", "I"),
        _table_kind(
            "bool",
            {0: False, 1: True},
            _check_bool,
            lambda value: b"\x01" if value else b"\x00",
            lambda raw: f"boolean byte 0x{raw:02X}",
        ),
        _table_kind(
            "card",
            _CARDS,
            _check_card,
            lambda value: bytes((value.code,)),
            lambda raw: f"0x{raw:02X} is not a card code",
        ),
        FieldKind("str", _check_str, _enc_str, _dec_str),
        FieldKind("bytes", _check_bytes, _length_prefixed, _dec_bytes),
        FieldKind("digest", _check_digest, bytes, _dec_digest, f"{DIGEST_SIZE}s"),
        FieldKind("u8list", _check_u8list, _enc_u8list, _dec_u8list),
        _enum_kind("gate", GateMode),
        _enum_kind("button", Button),
        _enum_kind("nak", NakReason),
    )
}


class PayloadLayout:
    """The payload layout of one message type.

    :meth:`decode` reads the fields one after the other. When every field has a fixed size,
    ``fixed`` is also the ``struct`` of the whole payload, from which the messages module
    compiles a faster decoder (one ``struct`` call plus a table look-up for each field that
    has a table). Bytes after the last field are ignored: a later version may append fields.
    """

    __slots__ = ("_decoders", "_encoders", "fixed", "kinds")

    def __init__(self, kind_names: Sequence[str]) -> None:
        self.kinds = tuple(KINDS[name] for name in kind_names)
        self._encoders = tuple(kind.encode for kind in self.kinds)
        self._decoders = tuple(kind.decode for kind in self.kinds)
        formats = [kind.fixed_format for kind in self.kinds]
        self.fixed: struct.Struct | None = None
        if all(fmt is not None for fmt in formats):
            self.fixed = struct.Struct("<" + "".join(fmt or "" for fmt in formats))

    def encode(self, values: Iterable[Any]) -> bytes:
        return b"".join(enc(v) for enc, v in zip(self._encoders, values, strict=True))

    def decode(self, buf: bytes | memoryview, start: int, end: int) -> list[Any]:
        """The field values of the payload ``buf[start:end]``, decoded one by one."""
        view = memoryview(buf)[start:end]
        off = 0
        out: list[Any] = []
        for dec in self._decoders:
            value, off = dec(view, off)
            out.append(value)
        return out


def describe_invalid(kind: FieldKind, raw: int) -> str:
    return kind.describe_invalid(raw) if kind.describe_invalid else f"invalid {kind.name} {raw}"
