"""A coverage-guided fuzz target for long runs of the stream decoder (atheris / libFuzzer).

Each input is cut into reads at points the input itself chooses and fed to one
:class:`StreamDecoder`. The invariants are those of benchmarks/fuzz.py: ``receive_data``
never raises on any bytes, it yields only packets, ``frames_ok`` counts them, the
unfinished buffer stays within its bound, and the counters never go down. Every packet is
encoded again and must decode to the same packet.

    pip install atheris
    python benchmarks/fuzz_atheris.py --make-corpus corpus/     # valid frames to start from
    python benchmarks/fuzz_atheris.py corpus/ -max_total_time=3600

Arguments after the script's own are libFuzzer's (``-runs=N``, ``-max_total_time=S``,
``-jobs=N``). The module imports without atheris, so that ``one_input`` can be run by
other harnesses and tests; only running it as a fuzzer needs atheris.
"""

from __future__ import annotations

import sys
from pathlib import Path

from firmware_protocol import (
    DECK_53,
    UNREADABLE,
    CardDrawn,
    DeckLoaded,
    GateMode,
    Heartbeat,
    Packet,
    StreamDecoder,
    decode_frame,
    encode_frame,
)
from firmware_protocol.framing import MAX_ENCODED_FRAME

try:
    import atheris  # type: ignore[import-untyped, import-not-found, unused-ignore]
except ImportError:  # only running the fuzzer needs it
    atheris = None

#: The first byte of an input says how many reads the rest is cut into (1..16).
MAX_READS = 16


def one_input(data: bytes) -> None:
    """Feed ``data`` to a fresh decoder in reads the input chooses; raise on a broken
    invariant (the fuzzer reports it with the input)."""
    if not data:
        return
    reads = 1 + data[0] % MAX_READS
    body = data[1:]
    step = max(1, len(body) // reads)
    decoder = StreamDecoder()
    packets: list[Packet] = []
    previous = (0, 0, 0, 0, 0)
    for start in range(0, len(body), step):
        decoder.receive_data(body[start : start + step])
        packets.extend(decoder)
        s = decoder.stats
        now = (s.frames_ok, s.crc_errors, s.malformed, s.oversized, s.bytes_discarded)
        if any(b < a for a, b in zip(previous, now, strict=True)):
            raise AssertionError(f"a counter went down: {previous} -> {now}")
        previous = now
        if decoder.pending_bytes > MAX_ENCODED_FRAME:
            raise AssertionError(f"{decoder.pending_bytes} bytes held, over the bound")
    if decoder.stats.frames_ok != len(packets):
        raise AssertionError(f"frames_ok {decoder.stats.frames_ok} != {len(packets)} packets")
    for packet in packets:
        if not isinstance(packet, Packet):
            raise AssertionError(f"the decoder yielded {packet!r}")
        again = decode_frame(
            encode_frame(packet.message, packet.seq, packet.flags, packet.version)[:-1]
        )
        if (again.seq, again.message) != (packet.seq, packet.message):
            raise AssertionError(f"{packet!r} does not survive encoding again: {again!r}")


def seed_corpus() -> list[bytes]:
    """A few streams of valid frames, for the fuzzer to start from."""
    frames = [
        encode_frame(DeckLoaded(), 1),
        encode_frame(CardDrawn(1, DECK_53[0], GateMode.DEAL, 97), 2),
        encode_frame(CardDrawn(2, UNREADABLE, GateMode.DEAL, 0), 3),
        encode_frame(Heartbeat(1000, 0, 3), 0),
    ]
    return [bytes([0]) + frame for frame in frames] + [bytes([3]) + b"".join(frames)]


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[1] == "--make-corpus":
        directory = Path(argv[2])
        directory.mkdir(parents=True, exist_ok=True)
        for i, stream in enumerate(seed_corpus()):
            (directory / f"seed-{i}").write_bytes(stream)
        return 0
    if atheris is None:
        print("atheris is not installed: pip install atheris", file=sys.stderr)
        return 2
    # Coverage of the Python code already imported (the decoder and the messages) guides
    # the fuzzer.
    atheris.instrument_all()
    atheris.Setup(argv, one_input)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
