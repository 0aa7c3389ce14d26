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
(encoding a message that does not fit, a sequence number out of range, feeding something
that is not bytes) raises TypeError or ValueError.
"""

from __future__ import annotations

import binascii
import enum
import struct
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from cobs import cobs

from firmware_protocol.crc import INIT, RESIDUE, crc16
from firmware_protocol.messages import (
    PAYLOAD_DECODERS,
    GetIdentity,
    Hello,
    MalformedPayload,
    Message,
    Unknown,
    type_code_of,
)

PROTOCOL_VERSION = 1
#: Versions this implementation speaks, newest last.
SUPPORTED_VERSIONS: tuple[int, ...] = (1,)
#: GetIdentity and Hello are decoded whatever the version byte says: their layout never
#: changes except by appended fields, so that any two versions can negotiate.
HANDSHAKE_TYPES: frozenset[int] = frozenset((GetIdentity.TYPE, Hello.TYPE))

HEADER = struct.Struct("<BBBI")
HEADER_SIZE = HEADER.size  # 7
CRC_SIZE = 2
MIN_FRAME = HEADER_SIZE + CRC_SIZE
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


#: Flag bits this version defines; the others are reserved, sent as 0 and ignored.
KNOWN_FLAGS = Flags.EVENT | Flags.RETRANSMIT | Flags.RESPONSE
# Building or masking an IntFlag is slow; a decoded flags byte is looked up instead.
_KNOWN_BITS = int(KNOWN_FLAGS)
_FLAGS_BY_BITS: tuple[Flags, ...] = tuple(Flags(bits) for bits in range(_KNOWN_BITS + 1))


@dataclass(frozen=True, slots=True)
class Packet:
    """One decoded frame: its header and its message."""

    version: int
    seq: int
    flags: Flags
    message: Message


@dataclass(slots=True)
class DecoderStats:
    """What a :class:`StreamDecoder` accepted and dropped. Delimiters are not counted."""

    frames_ok: int = 0
    crc_errors: int = 0
    malformed: int = 0
    oversized: int = 0
    bytes_discarded: int = 0

    @property
    def frames_dropped(self) -> int:
        return self.crc_errors + self.malformed + self.oversized


class FrameError(Exception):
    """A frame that does not decode. ``kind`` is "crc", "malformed" or "oversized"."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail


def negotiate_version(host_versions: Iterable[int], shoe_versions: Iterable[int]) -> int | None:
    """The highest protocol version both sides speak, or None when they share none."""
    common = set(host_versions) & set(shoe_versions)
    return max(common) if common else None


def encode_frame(
    message: Message, seq: int, flags: Flags = Flags.NONE, version: int = PROTOCOL_VERSION
) -> bytes:
    """The bytes to send for ``message``: stuffed frame plus delimiter.

    An event message always gets the EVENT flag.
    """
    if not isinstance(message, Message):
        raise TypeError(f"encode_frame takes a Message, not {type(message).__name__}")
    if not isinstance(seq, int) or not 0 <= seq <= MAX_SEQ:
        raise ValueError(f"sequence number {seq!r} is outside 0..{MAX_SEQ}")
    if not isinstance(version, int) or not 1 <= version <= 0xFF:
        raise ValueError(f"protocol version {version!r} is outside 1..255")
    if not 0 <= int(flags) <= 0xFF:
        raise ValueError(f"flags {int(flags):#x} do not fit one byte")
    if message.EVENT:
        flags |= Flags.EVENT
    if flags & Flags.EVENT and flags & Flags.RESPONSE:
        raise ValueError("a frame is an event or a response, not both")
    payload = message.encode_payload()
    if len(payload) > MAX_PAYLOAD:
        raise ValueError(
            f"{type(message).__name__} payload is {len(payload)} bytes; the maximum is "
            f"{MAX_PAYLOAD}"
        )
    body = HEADER.pack(version, type_code_of(message), int(flags), seq) + payload
    body += crc16(body).to_bytes(CRC_SIZE, "big")
    stuffed: bytes = cobs.encode(body)
    return stuffed + DELIMITER


_cobs_decode = cobs.decode
_CobsError = cobs.DecodeError
_crc_hqx = binascii.crc_hqx
_unpack_header = HEADER.unpack_from
_versions = frozenset(SUPPORTED_VERSIONS)
_payload_decoders = PAYLOAD_DECODERS


def decode_frame(stuffed: bytes | bytearray | memoryview) -> Packet:
    """Decode one stuffed frame (without its delimiter). Raises :class:`FrameError`.

    The checks run in the order the specification gives, and the first failure decides
    the kind: length, COBS, minimum size, CRC, version, payload.
    """
    if len(stuffed) > MAX_ENCODED_FRAME:
        raise FrameError("oversized", f"{len(stuffed)} bytes exceed {MAX_ENCODED_FRAME}")
    try:
        body: bytes = _cobs_decode(stuffed)
    except _CobsError as exc:
        raise FrameError("malformed", f"bad COBS: {exc}") from None
    size = len(body)
    if size < MIN_FRAME:
        raise FrameError("malformed", f"{size} bytes is shorter than a header and CRC")
    # XOROUT is 0, so the CRC register over a whole good frame is the residue.
    if _crc_hqx(body, INIT) != RESIDUE:
        raise FrameError("crc", "CRC mismatch")
    version, type_code, flags, seq = _unpack_header(body)
    if version not in _versions and not (version and type_code in HANDSHAKE_TYPES):
        raise FrameError("malformed", f"protocol version {version} is not supported")
    decode_payload = _payload_decoders.get(type_code)
    message: Message
    if decode_payload is None:
        message = Unknown(type_code, body[HEADER_SIZE:-CRC_SIZE])
    else:
        try:
            message = decode_payload(body, HEADER_SIZE, size - CRC_SIZE)
        except MalformedPayload as exc:
            raise FrameError("malformed", f"type 0x{type_code:02X}: {exc}") from None
    return Packet(version, seq, _FLAGS_BY_BITS[flags & _KNOWN_BITS], message)


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
        """Take bytes from the link, in any chunking. Never raises on their content."""
        if type(data) is not bytes:
            if not isinstance(data, bytes | bytearray | memoryview):
                raise TypeError(f"receive_data takes bytes, not {type(data).__name__}")
            data = bytes(data)
        parts = data.split(DELIMITER)
        # The last part is unfinished; every other ends at a delimiter: a frame, or nothing
        # (idle fill). The first continues what an earlier call left unfinished.
        tail = parts.pop()
        if parts:
            if self._buf or self._skipping:
                parts[0] = self._join_held(parts[0])
            ready = self._ready
            ok = 0
            for chunk in parts:
                if chunk:
                    try:
                        ready.append(decode_frame(chunk))
                    except FrameError as exc:
                        self._drop(exc, len(chunk))
                    else:
                        ok += 1
            self.stats.frames_ok += ok
        if tail:
            self._hold(tail)

    def _join_held(self, head: bytes) -> bytes:
        """The frame made of what is held and ``head``; empty when it was discarded."""
        if self._skipping:
            self.stats.bytes_discarded += len(head)
            self._skipping = False
            return b""
        size = len(self._buf) + len(head)
        held, self._buf = self._buf, bytearray()
        if size > MAX_ENCODED_FRAME:
            self._drop(FrameError("oversized", f"{size} bytes exceed {MAX_ENCODED_FRAME}"), size)
            return b""
        return bytes(held + head)

    def _hold(self, tail: bytes) -> None:
        """Keep the unfinished ``tail`` for the next call, within the bound."""
        if self._skipping:
            self.stats.bytes_discarded += len(tail)
            return
        size = len(self._buf) + len(tail)
        if size > MAX_ENCODED_FRAME:
            self._buf = bytearray()
            self._skipping = True
            self._drop(FrameError("oversized", f"no delimiter within {size} bytes"), size)
            return
        self._buf += tail

    def _drop(self, exc: FrameError, size: int) -> None:
        self.last_error = exc
        stats = self.stats
        stats.bytes_discarded += size
        if exc.kind == "crc":
            stats.crc_errors += 1
        elif exc.kind == "oversized":
            stats.oversized += 1
        else:
            stats.malformed += 1

    def next_packet(self) -> Packet | None:
        return self._ready.popleft() if self._ready else None

    def __iter__(self) -> Iterator[Packet]:
        """Take the decoded packets, oldest first (also those decoded while iterating)."""
        ready = self._ready
        while ready:
            yield ready.popleft()

    @property
    def pending_bytes(self) -> int:
        """Bytes of an unfinished frame held in the buffer."""
        return len(self._buf)
