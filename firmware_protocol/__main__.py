"""``python -m firmware_protocol``: print example frames and decode them back."""

from __future__ import annotations

import hashlib

from firmware_protocol import (
    Card,
    CardDrawn,
    Flags,
    GateMode,
    GetIdentity,
    Hello,
    StreamDecoder,
    encode_frame,
)


def main() -> None:
    messages = [
        (GetIdentity((1,)), 1, Flags.NONE),
        (
            Hello(
                (1,),
                "ES-7",
                "SIM-0001",
                "B",
                "1.4.2",
                hashlib.sha256(b"image").digest(),
                0x1F,
                0xC0FFEE,
                1,
            ),
            1,
            Flags.RESPONSE,
        ),
        (CardDrawn(1, Card.parse("AS"), GateMode.DEAL, 98), 1, Flags.EVENT),
    ]
    decoder = StreamDecoder()
    for message, seq, flags in messages:
        frame = encode_frame(message, seq, flags)
        print(f"{type(message).__name__:12} {frame.hex(' ')}")
        decoder.receive_data(frame)
    for packet in decoder:
        print(f"decoded seq={packet.seq} {packet.message}")
    print(decoder.stats)


if __name__ == "__main__":
    main()
