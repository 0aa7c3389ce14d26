"""Misuse by our own code raises at once, with a message that says what is wrong."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from firmware_protocol import (
    MAX_PAYLOAD,
    Card,
    CardDrawn,
    Flags,
    GateMode,
    GetIdentity,
    Hello,
    JamCleared,
    Message,
    Ping,
    SetDisplay,
    SetGate,
    StreamDecoder,
    Unknown,
    Verify,
    encode_frame,
)

ACE = Card.parse("AS")


@pytest.mark.parametrize("seq", [-1, 0x1_0000_0000, 1.0, "1"])
def test_a_sequence_number_out_of_range_raises(seq: Any) -> None:
    with pytest.raises(ValueError, match="sequence number"):
        encode_frame(Ping(), seq)


@pytest.mark.parametrize("version", [0, 256])
def test_a_protocol_version_out_of_range_raises(version: int) -> None:
    with pytest.raises(ValueError, match="protocol version"):
        encode_frame(Ping(), 1, version=version)


def test_a_payload_larger_than_a_frame_raises() -> None:
    encode_frame(SetDisplay("x" * (MAX_PAYLOAD - 1)), 1)  # the largest that fits
    with pytest.raises(ValueError, match=f"the maximum is {MAX_PAYLOAD}"):
        encode_frame(SetDisplay("x" * MAX_PAYLOAD), 1)
    with pytest.raises(ValueError, match="the maximum"):
        encode_frame(Unknown(0xC0, bytes(MAX_PAYLOAD + 1)), 1)


@pytest.mark.parametrize(
    ("build", "error", "words"),
    [
        (lambda: CardDrawn(70_000, ACE, GateMode.DEAL, 1), ValueError, "does not fit a u16"),
        (lambda: CardDrawn(1, "AS", GateMode.DEAL, 1), TypeError, "takes a Card"),  # type: ignore[arg-type]
        (lambda: CardDrawn(1, ACE, 7, 1), ValueError, "is not a GateMode"),  # type: ignore[arg-type]
        (lambda: CardDrawn(1, ACE, GateMode.DEAL, "9"), TypeError, "takes an int"),  # type: ignore[arg-type]
        (lambda: SetGate(GateMode.DEAL, -1), ValueError, "does not fit a u8"),
        (lambda: JamCleared(2), ValueError, "True or False"),  # type: ignore[arg-type]
        (lambda: Verify(16), TypeError, "takes bytes"),  # type: ignore[arg-type]
        (lambda: Verify(bytes(256)), ValueError, "does not fit"),
        (lambda: SetDisplay(b"text"), TypeError, "takes a str"),  # type: ignore[arg-type]
        (lambda: SetDisplay("x" * 256), ValueError, "does not fit"),
        (lambda: GetIdentity((1, 300)), ValueError, "0..255"),
        (lambda: GetIdentity(1), TypeError, "sequence of ints"),  # type: ignore[arg-type]
        (lambda: Hello((1,), "m", "s", "h", "f", b"short", 0, 0, 0), ValueError, "32 bytes"),
        (lambda: Unknown(0x1C0, b""), ValueError, "outside 0..255"),
        (lambda: Unknown(0xC0, "text"), TypeError, "takes bytes"),  # type: ignore[arg-type]
    ],
)
def test_a_message_refuses_field_values_that_do_not_fit_when_built(
    build: Callable[[], Any],
    error: type[Exception],
    words: str,
) -> None:
    with pytest.raises(error, match=words) as refused:
        build()
    # The message says which message and which field.
    assert re.match(r"[A-Za-z]+\.[a-z_]+: ", str(refused.value))


def test_values_with_a_canonical_form_are_kept_in_it() -> None:
    assert CardDrawn(1, ACE, 1, 90).gate_mode is GateMode.DEAL  # type: ignore[arg-type]
    assert GetIdentity([1, 2]).protocol_versions == (1, 2)  # type: ignore[arg-type]
    assert Verify(bytearray(16)) == Verify(bytes(16))  # type: ignore[arg-type]
    assert hash(GetIdentity([1])) == hash(GetIdentity((1,)))  # type: ignore[arg-type]
    assert JamCleared(1).card_left is True  # type: ignore[arg-type]


def test_flags_that_contradict_each_other_or_do_not_fit_raise() -> None:
    with pytest.raises(ValueError, match="event or a response"):
        encode_frame(CardDrawn(1, ACE, GateMode.DEAL, 1), 1, Flags.RESPONSE)
    with pytest.raises(ValueError, match="one byte"):
        encode_frame(Ping(), 1, Flags(0x100))


def test_encoding_something_that_is_not_a_message_raises() -> None:
    with pytest.raises(TypeError, match="takes a Message"):
        encode_frame(b"\x01\x02", 1)  # type: ignore[arg-type]


@pytest.mark.parametrize("data", ["text", None, 7, [1, 2], (0,)])
def test_feeding_the_decoder_something_that_is_not_bytes_raises(data: Any) -> None:
    decoder = StreamDecoder()
    with pytest.raises(TypeError, match="receive_data takes bytes"):
        decoder.receive_data(data)
    assert decoder.stats.bytes_discarded == 0


def test_a_bool_field_takes_zero_and_one_as_well() -> None:
    assert encode_frame(JamCleared(1), 1) == encode_frame(JamCleared(True), 1)  # type: ignore[arg-type]


def test_a_decoded_message_is_built_by_its_constructor(monkeypatch: pytest.MonkeyPatch) -> None:
    """Decoding goes through ``__init__``, and so ``__post_init__``, never around it."""
    built: list[Message] = []
    check = CardDrawn.__post_init__

    def watched(self: CardDrawn) -> None:
        check(self)
        built.append(self)

    monkeypatch.setattr(CardDrawn, "__post_init__", watched)
    decoder = StreamDecoder()
    decoder.receive_data(encode_frame(CardDrawn(3, ACE, GateMode.DEAL, 97), 5))
    (packet,) = decoder
    assert built[-1] is packet.message
    assert packet.message == CardDrawn(3, ACE, GateMode.DEAL, 97)
