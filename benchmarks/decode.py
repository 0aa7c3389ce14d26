"""Decoding throughput: our StreamDecoder against pymodbus' RTU framer, in the same run.

Both sides do the same work for every frame: find it in the byte stream, check its CRC-16,
and decode it into a message object. Ours decodes CardDrawn events (16 bytes on the wire:
COBS frame and delimiter); pymodbus decodes Read Holding Registers responses carrying five
registers (15 bytes), the most common Modbus reply, which is one byte shorter and so, if
anything, favours the baseline. The frames are all different, as in real traffic.

pymodbus' RTU framer finds frames by their length and the silence between them, so it is
given one frame per call, its normal use. Our decoder finds frames by their delimiter and
is given the stream in reads of READ_SIZE bytes, frames cut across reads, as a serial port
delivers them; ``value_one_frame_per_call`` is ours given one frame per call as well.

    python benchmarks/decode.py [--quick]

prints one JSON line (see _common.py). ``--quick`` is a smoke run for CI (a few seconds).
``wire_frames_per_s`` is how many of our frames a 115200-baud line carries a second: the
bound of the card path, far below the decoder's rate.
"""

from __future__ import annotations

import argparse
import random
import sys

from _common import best_rate, emit, result

from firmware_protocol import DECK_53, UNREADABLE, CardDrawn, GateMode, StreamDecoder, encode_frame

try:
    import pymodbus
    from pymodbus.framer.rtu import FramerRTU
    from pymodbus.pdu import DecodePDU
    from pymodbus.pdu.register_message import ReadHoldingRegistersResponse
except ImportError:
    sys.exit("pymodbus is not installed: pip install -e '.[bench]'")

READ_SIZE = 256
REGISTERS = 5
#: The card path is bound by the wire: a 115200-baud line carries 11,520 bytes a second.
WIRE_BYTES_PER_S = 115_200 // 10


def our_frames(count: int, rng: random.Random) -> list[bytes]:
    cards = (*DECK_53, UNREADABLE)
    return [
        encode_frame(
            CardDrawn(1 + i % 53, rng.choice(cards), GateMode.DEAL, rng.randint(0, 100)),
            1 + i,
        )
        for i in range(count)
    ]


def modbus_frames(count: int, rng: random.Random) -> list[bytes]:
    framer = FramerRTU(DecodePDU(is_server=False))
    return [
        framer.buildFrame(
            ReadHoldingRegistersResponse(
                dev_id=1 + i % 247, registers=[rng.randrange(0x10000) for _ in range(REGISTERS)]
            )
        )
        for i in range(count)
    ]


def decode_stream(stream: bytes, expected: int) -> int:
    decoder = StreamDecoder()
    decoded = 0
    for start in range(0, len(stream), READ_SIZE):
        decoder.receive_data(stream[start : start + READ_SIZE])
        for _packet in decoder:
            decoded += 1
    if decoded != expected or decoder.stats.frames_dropped:
        raise RuntimeError(f"our decoder returned {decoded} of {expected} frames")
    return decoded


def decode_one_per_call(frames: list[bytes]) -> int:
    decoder = StreamDecoder()
    decoded = 0
    for frame in frames:
        decoder.receive_data(frame)
        if decoder.next_packet() is not None:
            decoded += 1
    if decoded != len(frames):
        raise RuntimeError(f"our decoder returned {decoded} of {len(frames)} frames")
    return decoded


def decode_modbus(frames: list[bytes]) -> int:
    framer = FramerRTU(DecodePDU(is_server=False))
    decoded = 0
    for frame in frames:
        used, pdu = framer.handleFrame(frame, 0, 0)
        if pdu is not None and used == len(frame):
            decoded += 1
    if decoded != len(frames):
        raise RuntimeError(f"pymodbus returned {decoded} of {len(frames)} frames")
    return decoded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run, for CI")
    args = parser.parse_args(argv)
    count, rounds = (2_000, 2) if args.quick else (20_000, 7)
    rng = random.Random(2)
    ours = our_frames(count, rng)
    theirs = modbus_frames(count, rng)
    stream = b"".join(ours)
    # Interleaved, so that both sides see the same state of the machine.
    stream_rate = one_call_rate = modbus_rate = 0.0
    for _ in range(rounds):
        stream_rate = max(stream_rate, best_rate(lambda: decode_stream(stream, count), 1))
        one_call_rate = max(one_call_rate, best_rate(lambda: decode_one_per_call(ours), 1))
        modbus_rate = max(modbus_rate, best_rate(lambda: decode_modbus(theirs), 1))
    emit(
        result(
            "decode",
            stream_rate,
            "frames/s",
            "pymodbus FramerRTU",
            modbus_rate,
            value_one_frame_per_call=round(one_call_rate, 1),
            ratio_one_frame_per_call=round(one_call_rate / modbus_rate, 2),
            frame_bytes=len(ours[0]),
            wire_frames_per_s=round(WIRE_BYTES_PER_S / len(ours[0]), 1),
            baseline_frame_bytes=len(theirs[0]),
            read_size=READ_SIZE,
            frames=count,
            rounds=rounds,
            pymodbus=pymodbus.__version__,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
