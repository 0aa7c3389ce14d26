"""Frames a shoe would send, made by hand, and a reader for what the link sent."""

from __future__ import annotations

import hashlib

from firmware_protocol import (
    Ack,
    Capability,
    Flags,
    Heartbeat,
    Hello,
    Message,
    Nak,
    NakReason,
    Packet,
    StreamDecoder,
    encode_frame,
)

DIGEST = hashlib.sha256(b"approved image").digest()
ALL_CAPABILITIES = int(sum(Capability))
#: A shoe of the protocol's first release: every capability but FAST_RECOVERY.
FIRST_RELEASE = ALL_CAPABILITIES & ~Capability.FAST_RECOVERY


def hello(
    *,
    seq: int = 0,
    boot_id: int = 0xB0071,
    next_event_seq: int = 1,
    versions: tuple[int, ...] = (1,),
    model: str = "ES-7",
    serial: str = "SN-0001",
    firmware: str = "1.4.2",
    digest: bytes = DIGEST,
    capabilities: int = ALL_CAPABILITIES,
    flags: Flags = Flags.RESPONSE,
) -> bytes:
    message = Hello(
        versions, model, serial, "B", firmware, digest, capabilities, boot_id, next_event_seq
    )
    return encode_frame(message, seq, flags)


def event(seq: int, message: Message, *, retransmit: bool = False) -> bytes:
    return encode_frame(message, seq, Flags.RETRANSMIT if retransmit else Flags.NONE)


def heartbeat(*, last_event_seq: int = 0, unacked: int = 0, uptime_ms: int = 1000) -> bytes:
    return encode_frame(Heartbeat(uptime_ms, unacked, last_event_seq), 0)


def ack(seq: int) -> bytes:
    return encode_frame(Ack(), seq, Flags.RESPONSE)


def nak(seq: int, reason: NakReason = NakReason.NOT_NOW, text: str = "gate busy") -> bytes:
    return encode_frame(Nak(reason, text), seq, Flags.RESPONSE)


def reply(seq: int, message: Message) -> bytes:
    return encode_frame(message, seq, Flags.RESPONSE)


def packets(data: bytes) -> list[Packet]:
    """Decode bytes the link wrote; they must be nothing but valid frames."""
    decoder = StreamDecoder()
    decoder.receive_data(data)
    out = list(decoder)
    assert decoder.stats.frames_dropped == 0 and decoder.pending_bytes == 0
    return out
