"""Every message survives encoding and decoding, with any field values that fit."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_protocol import (
    PROTOCOL_VERSION,
    Flags,
    Message,
    Packet,
    StreamDecoder,
    Unknown,
    decode_frame,
    decode_message,
    encode_frame,
)
from tests.protocol.strategies import MESSAGE_CLASSES, frames, messages_of

ROUND_TRIP = settings(deadline=None, max_examples=60)


@pytest.mark.parametrize("cls", MESSAGE_CLASSES, ids=lambda cls: cls.__name__)
@ROUND_TRIP
@given(data=st.data())
def test_every_message_type_round_trips(cls: type[Message], data: st.DataObject) -> None:
    message = data.draw(messages_of(cls))
    seq = data.draw(st.integers(0, 0xFFFFFFFF))
    decoder = StreamDecoder()
    decoder.receive_data(encode_frame(message, seq))
    packet = decoder.next_packet()
    expected_flags = Flags.EVENT if cls.EVENT else Flags.NONE
    assert packet == Packet(PROTOCOL_VERSION, seq, expected_flags, message)
    assert decoder.next_packet() is None
    assert decoder.stats.frames_ok == 1
    assert decoder.stats.frames_dropped == 0
    assert decode_message(cls.TYPE, message.encode_payload()) == message


@settings(deadline=None, max_examples=200)
@given(frames())
def test_frames_round_trip_with_their_header(frame: tuple[Message, int, Flags, bytes]) -> None:
    message, seq, flags, data = frame
    assert data.endswith(b"\x00") and data.count(0) == 1
    packet = decode_frame(data[:-1])
    assert (packet.version, packet.seq, packet.flags, packet.message) == (
        PROTOCOL_VERSION,
        seq,
        flags,
        message,
    )


@settings(deadline=None, max_examples=100)
@given(st.integers(0, 0xFF), st.binary(max_size=40))
def test_unknown_types_keep_type_and_payload(type_code: int, payload: bytes) -> None:
    from firmware_protocol import REGISTRY

    if type_code in REGISTRY:
        return
    assert decode_message(type_code, payload) == Unknown(type_code, payload)


def test_decoded_messages_are_frozen_and_equal_to_constructed_ones() -> None:
    from dataclasses import FrozenInstanceError

    from firmware_protocol import Card, CardDrawn, GateMode

    message = CardDrawn(3, Card.parse("7H"), GateMode.DEAL, 90)
    decoded = decode_frame(encode_frame(message, 5)[:-1]).message
    assert decoded == message and hash(decoded) == hash(message)
    assert repr(decoded) == repr(message)
    with pytest.raises(FrozenInstanceError):
        decoded.quality = 1  # type: ignore[misc]
    # No new attribute either (CPython 3.11 reports it as TypeError for slotted frozen
    # dataclasses, later versions as AttributeError).
    with pytest.raises((AttributeError, TypeError)):
        decoded.extra = 1  # type: ignore[attr-defined]
