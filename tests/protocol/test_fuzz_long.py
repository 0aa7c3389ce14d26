"""Long fuzzing of the decoder, run only with SHOE_SOAK=1 (minutes, random every run)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firmware_protocol import Flags, Message, StreamDecoder, decode_frame
from tests.protocol.strategies import frames
from tests.protocol.test_stream import GOOD, GOOD_PACKET, decode_all, streams

pytestmark = [
    pytest.mark.soak,
]

LONG = settings(deadline=None, max_examples=5_000, suppress_health_check=[HealthCheck.too_slow])


@LONG
@given(frames())
def test_round_trip_long(frame: tuple[Message, int, Flags, bytes]) -> None:
    message, seq, flags, data = frame
    packet = decode_frame(data[:-1])
    assert (packet.seq, packet.flags, packet.message) == (seq, flags, message)


@LONG
@given(streams(), st.lists(st.integers(0, 5000), max_size=40))
def test_chunking_invariance_long(stream: bytes, cuts: list[int]) -> None:
    points = sorted({c % (len(stream) + 1) for c in cuts})
    pieces = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    assert decode_all(*pieces) == decode_all(stream)


@LONG
@given(frames(known_only=True))
def test_bit_flips_long(frame: tuple[Message, int, Flags, bytes]) -> None:
    data = frame[3]
    for index in range(len(data) - 1):
        for bit in range(8):
            corrupted = bytearray(data)
            corrupted[index] ^= 1 << bit
            packets, _ = decode_all(bytes(corrupted) + GOOD)
            assert packets == [GOOD_PACKET], (data.hex(), index, bit)


@LONG
@given(st.binary(min_size=1, max_size=600))
def test_random_bytes_never_raise(noise: bytes) -> None:
    decoder = StreamDecoder()
    decoder.receive_data(noise)
    decoder.receive_data(b"\x00" + GOOD)
    assert list(decoder)[-1] == GOOD_PACKET
