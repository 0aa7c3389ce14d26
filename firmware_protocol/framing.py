"""Frames on the wire, and the sans-I/O stream decoder.

A frame, before stuffing::

    offset  size  field
    0       1     protocol version
    1       1     message type
    2       1     flags (see Flags)
    3       4     sequence number, u32 little-endian
    7       n     payload (0..MAX_PAYLOAD bytes)
    7+n     2     CRC-16/IBM-3740 over bytes 0..6+n, most significant byte first

The frame is COBS-encoded and followed by one 0x00 delimiter. The header layout is the same
in every protocol version, so that a peer can always read the version and the type.

Remote garbage never raises: :class:`StreamDecoder` drops what does not decode, counts it
in :class:`DecoderStats`, and resynchronises at the next delimiter. Misuse by the caller
(encoding a message that does not fit, a sequence number out of range) raises ValueError.
"""

from __future__ import annotations

import enum
import struct
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from cobs import cobs

from firmware_protocol.crc import crc16
from firmware_protocol.messages import MalformedPayload, Message, decode_message, type_code_of

PROTOCOL_VERSION = 1
#: Versions this implementation speaks, newest last.
SUPPORTED_VERSIONS: tuple[int, ...] = (1,)

HEADER = struct.Struct("<BBBI")
HEADER_SIZE = HEADER.size  # 7
CRC_SIZE = 2
MAX_PAYLOAD = 244
#: Largest frame before stuffing: 7 + 244 + 2 = 253 bytes, which COBS stuffs in one block.
MAX_FRAME = HEADER_SIZE + MAX_PAYLOAD + CRC_SIZE
#: Largest stuffed frame, without its delimiter.
MAX_ENCODED_FRAME = MAX_FRAME + 1
DELIMITER = b"\x00"
MAX_SEQ = 0xFFFFFFFF


class Flags(enum.IntFlag):
    NONE = 0
    #: A sequenced event: retransmitted until acknowledged with AckEvents.
    EVENT = 0x01
    #: This frame was sent before (an event retransmitted, or a command repeated).
    RETRANSMIT = 0x02
    #: A reply; the sequence number is that of the host command it answers.
    RESPONSE = 0x04


@dataclass(frozen=True, slots=True)
class Packet:
    """One decoded frame: its header and its message."""

    version: int
    seq: int
    flags: Flags
    message: Message


@dataclass(slots=True)
class DecoderStats:
    frames_ok: int = 0
    crc_errors: int = 0
    malformed: int = 0
    oversized: int = 0
    bytes_discarded: int = 0

    @property
    def frames_dropped(self) -> int:
        return self.crc_errors + self.malformed + self.oversized


def encode_frame(
    message: Message, seq: int, flags: Flags = Flags.NONE, version: int = PROTOCOL_VERSION
) -> bytes:
    """The bytes to send for ``message``: stuffed frame plus delimiter."""
    if not 0 <= seq <= MAX_SEQ:
        raise ValueError(f"sequence number {seq} is outside 0..{MAX_SEQ}")
    if not 0 <= version <= 0xFF:
        raise ValueError(f"protocol version {version} is outside 0..255")
    payload = message.encode_payload()
    if len(payload) > MAX_PAYLOAD:
        raise ValueError(
            f"{type(message).__name__} payload is {len(payload)} bytes; the maximum is "
            f"{MAX_PAYLOAD}"
        )
    if message.EVENT:
        flags |= Flags.EVENT
    body = HEADER.pack(version, type_code_of(message), int(flags), seq) + payload
    body += crc16(body).to_bytes(2, "big")
    stuffed: bytes = cobs.encode(body)
    return stuffed + DELIMITER


def decode_frame(stuffed: bytes | bytearray | memoryview) -> Packet:
    """Decode one stuffed frame (without its delimiter). Raises :class:`FrameError`."""
    if len(stuffed) > MAX_ENCODED_FRAME:
        raise FrameError("oversized", f"{len(stuffed)} bytes exceed {MAX_ENCODED_FRAME}")
    try:
        body = cobs.decode(stuffed)
    except cobs.DecodeError as exc:
        raise FrameError("malformed", f"bad COBS: {exc}") from None
    if len(body) < HEADER_SIZE + CRC_SIZE:
        raise FrameError("malformed", f"{len(body)} bytes is shorter than a header and CRC")
    if crc16(body) != 0:
        raise FrameError("crc", "CRC mismatch")
    version, type_code, flags, seq = HEADER.unpack_from(body)
    try:
        message = decode_message(type_code, memoryview(body)[HEADER_SIZE:-CRC_SIZE])
    except MalformedPayload as exc:
        raise FrameError("malformed", f"type 0x{type_code:02X}: {exc}") from None
    return Packet(version, seq, Flags(flags & 0xFF), message)


class FrameError(Exception):
    """A frame that does not decode. ``kind`` is "crc", "malformed" or "oversized"."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


class StreamDecoder:
    """Turns a byte stream, in any chunking, into :class:`Packet` objects.

    Feed bytes with :meth:`receive_data`, then take packets with :meth:`next_packet` (None
    when no complete frame is waiting) or iterate. At most :data:`MAX_ENCODED_FRAME` bytes
    of an unfinished frame are held; a longer run without a delimiter is discarded and
    counted, and the decoder resynchronises at the next delimiter.
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        # True while discarding an over-long run up to the next delimiter.
        self._skipping = False
        self._ready: deque[Packet] = deque()
        self.stats = DecoderStats()
        #: The last frame error, for diagnostics.
        self.last_error: FrameError | None = None

    def receive_data(self, data: bytes | bytearray | memoryview) -> None:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise TypeError(f"receive_data takes bytes, not {type(data).__name__}")
        if not data:
            return
        data = bytes(data)
        start = 0
        while True:
            end = data.find(0, start)
            if end < 0:
                self._hold(data, start)
                return
            self._frame_complete(data, start, end)
            start = end + 1

    def _hold(self, data: bytes, start: int) -> None:
        tail = len(data) - start
        if self._skipping:
            self.stats.bytes_discarded += tail
            return
        if len(self._buf) + tail > MAX_ENCODED_FRAME:
            self.stats.bytes_discarded += len(self._buf) + tail
            self.stats.oversized += 1
            self._buf.clear()
            self._skipping = True
            return
        self._buf += data[start:]

    def _frame_complete(self, data: bytes, start: int, end: int) -> None:
        if self._skipping:
            self.stats.bytes_discarded += end - start
            self._skipping = False
            return
        if self._buf:
            self._buf += data[start:end]
            chunk: bytes | bytearray = self._buf
        else:
            chunk = data[start:end]
        if chunk:  # consecutive delimiters are idle fill, not frames
            self._decode(chunk)
        if self._buf:
            self._buf = bytearray()

    def _decode(self, chunk: bytes | bytearray) -> None:
        try:
            packet = decode_frame(chunk)
        except FrameError as exc:
            self.last_error = exc
            self.stats.bytes_discarded += len(chunk)
            if exc.kind == "crc":
                self.stats.crc_errors += 1
            elif exc.kind == "oversized":
                self.stats.oversized += 1
            else:
                self.stats.malformed += 1
            return
        self.stats.frames_ok += 1
        self._ready.append(packet)

    def next_packet(self) -> Packet | None:
        return self._ready.popleft() if self._ready else None

    def __iter__(self) -> Iterator[Packet]:
        while self._ready:
            yield self._ready.popleft()

    @property
    def pending_bytes(self) -> int:
        """Bytes of an unfinished frame held in the buffer."""
        return len(self._buf)
