"""Coverage-guided fuzz targets for long runs (atheris / libFuzzer).

- ``decoder`` (the default): each input is cut into reads at points the input itself
  chooses and fed to one :class:`StreamDecoder`. The invariants are those of
  benchmarks/fuzz.py: ``receive_data`` never raises on any bytes, it yields only packets,
  ``frames_ok`` counts them, the unfinished buffer stays within its bound, and the
  counters never go down. Every packet is encoded again and must decode to the same packet.
- ``config``: each input is a configuration file given to ``load_config``: a Config or a
  ConfigError (one line), never another exception (a deeply nested input included).
- ``address``: each input, as text, is a device address given to ``check_shoe_address``:
  an Address or a ShoeControllerError (one line).

    pip install atheris
    python benchmarks/fuzz_atheris.py --make-corpus corpus/     # inputs to start from
    python benchmarks/fuzz_atheris.py corpus/ -max_total_time=3600
    python benchmarks/fuzz_atheris.py --target config --make-corpus config-corpus/
    python benchmarks/fuzz_atheris.py --target config config-corpus/ -max_total_time=3600

Arguments after the script's own are libFuzzer's (``-runs=N``, ``-max_total_time=S``,
``-jobs=N``). The module imports without atheris, so that the targets can be run by
other harnesses and tests; only running them as a fuzzer needs atheris.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
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
from shoe_controller.errors import ConfigError, ShoeControllerError
from shoe_controller.hal.addresses import check_shoe_address
from shoe_controller.service.config import load_config

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


_CONFIG_FILE = Path(tempfile.gettempdir()) / f"fuzz-atheris-{os.getpid()}.toml"
EXAMPLE_CONFIG = Path(__file__).resolve().parents[1] / "docs" / "config.example.toml"


def config_input(data: bytes) -> None:
    """Give ``data`` to the configuration loader as a file; raise on anything but a
    Config or a one-line ConfigError."""
    _CONFIG_FILE.write_bytes(data)
    try:
        load_config(_CONFIG_FILE)
    except ConfigError as exc:
        if "\n" in str(exc) or not str(exc).strip():
            raise AssertionError(f"not one line: {exc!r}") from None
    finally:
        _CONFIG_FILE.unlink()


def address_input(data: bytes) -> None:
    """Give ``data``, as text, to the address check; raise on anything but an Address or
    a one-line ShoeControllerError."""
    text = data.decode("utf-8", "replace")
    try:
        check_shoe_address(text)
    except ShoeControllerError as exc:
        if "\n" in str(exc) or not str(exc).strip():
            raise AssertionError(f"not one line: {exc!r}") from None


def seed_corpus() -> list[bytes]:
    """A few streams of valid frames, for the fuzzer to start from."""
    frames = [
        encode_frame(DeckLoaded(), 1),
        encode_frame(CardDrawn(1, DECK_53[0], GateMode.DEAL, 97), 2),
        encode_frame(CardDrawn(2, UNREADABLE, GateMode.DEAL, 0), 3),
        encode_frame(Heartbeat(1000, 0, 3), 0),
    ]
    return [bytes([0]) + frame for frame in frames] + [bytes([3]) + b"".join(frames)]


def config_corpus() -> list[bytes]:
    """The annotated example, a profile's adjustments, a constant it fixes, deep nesting."""
    return [
        EXAMPLE_CONFIG.read_bytes(),
        b'[table]\nprofile = "pr-pai-gow-poker"\ndice_wager = true\ngate_window = 2\n',
        b"[table]\npositions = 6\n",
        b"a = " + b"[" * 2000 + b"]" * 2000 + b"\n",
    ]


def address_corpus() -> list[bytes]:
    return [
        b"sim://?seed=7&deck=short&faults=misread@12&pace=0",
        b"sim://?window=0",
        b"usb://1209:0001?serial=SN1",
        b"socket://127.0.0.1:7000",
        b"loop://",
        b"/dev/electronic-shoe",
        b"auto",
    ]


#: name: (the function libFuzzer calls, its seed corpus)
TARGETS: dict[str, tuple[Callable[[bytes], None], Callable[[], list[bytes]]]] = {
    "decoder": (one_input, seed_corpus),
    "config": (config_input, config_corpus),
    "address": (address_input, address_corpus),
}


def main(argv: list[str]) -> int:
    target = "decoder"
    if len(argv) >= 3 and argv[1] == "--target":
        target = argv[2]
        argv = [argv[0], *argv[3:]]
        if target not in TARGETS:
            print(f"unknown target {target}: use one of {', '.join(TARGETS)}", file=sys.stderr)
            return 2
    check, corpus = TARGETS[target]
    if len(argv) == 3 and argv[1] == "--make-corpus":
        directory = Path(argv[2])
        directory.mkdir(parents=True, exist_ok=True)
        for i, stream in enumerate(corpus()):
            (directory / f"seed-{i}").write_bytes(stream)
        return 0
    if atheris is None:
        print("atheris is not installed: pip install atheris", file=sys.stderr)
        return 2
    # Coverage of the Python code already imported (the decoder and the messages, the
    # configuration and address parsers) guides the fuzzer.
    atheris.instrument_all()
    atheris.Setup(argv, check)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
