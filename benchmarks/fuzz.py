"""Fuzz: the stream decoder and the configuration loader under hypothesis.

Targets, each with its own example budget:

- ``decoder``: byte streams (random bytes, valid frames, valid frames with bytes flipped,
  cut, dropped or repeated) fed to :class:`StreamDecoder` in random chunks. Remote garbage
  is counted, never raised: ``receive_data`` never raises, the packets it yields are
  decoded packets, every valid frame that arrives whole between two delimiters is decoded,
  the unfinished buffer stays within its bound, and the counters only grow.
- ``config``: mappings shaped like the TOML document (known sections and keys with values
  of any TOML type, and unknown ones) given to ``parse_config``: a Config or ConfigError.
- ``table``: ``[table]`` sections (a profile name, the profile's adjustable keys, the
  game's constants it fixes, unknown keys) given to the rules profile: TableRules or
  ConfigError.
- ``config_file``: files given to ``load_config``: random bytes, random text, the annotated
  example configuration with random edits, and the shapes a path a person types may have:
  a FIFO (which must not block), a character device, a directory, a file over the size
  limit, arrays or tables nested up to 200,000 deep: a Config or ConfigError, at once.
- ``address``: device addresses (every scheme, ``sim://`` with its options and values of
  every kind, ``usb://`` ids and options, random text) given to ``check_shoe_address``: an
  Address, or a ShoeControllerError (ConfigError, or a missing USB library).

A failure is any other exception (a traceback for a person who mistyped a file, or for a
shoe that sent garbage) or a broken decoder invariant; hypothesis shrinks it to a minimal
example, which the report shows.

    python benchmarks/fuzz.py [--examples N] [--quick] [--only TARGET ...]

prints one JSON line: inputs tried and failures per target; exits 1 on a failure.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firmware_protocol import (
    DECK_53,
    UNREADABLE,
    Ack,
    CardDrawn,
    DeckLoaded,
    GateMode,
    Heartbeat,
    Packet,
    StreamDecoder,
    encode_frame,
)
from firmware_protocol.framing import MAX_ENCODED_FRAME
from shoe_controller.errors import ConfigError, ShoeControllerError
from shoe_controller.hal.addresses import check_shoe_address
from shoe_controller.profiles import DEFAULT_PROFILE, load_profile
from shoe_controller.service.config import load_config, parse_config
from shoe_controller.simulator.options import OPTION_NAMES as SIM_OPTION_NAMES

EXAMPLE_CONFIG = Path(__file__).resolve().parents[1] / "docs" / "config.example.toml"

# --- decoder -------------------------------------------------------------------------------

_messages = st.one_of(
    st.builds(
        CardDrawn,
        st.integers(1, 60),
        st.sampled_from((*DECK_53, UNREADABLE)),
        st.sampled_from(GateMode),
        st.integers(0, 100),
    ),
    st.builds(Heartbeat, st.integers(0, 2**32 - 1), st.integers(0, 0xFFFF), st.integers(0, 99)),
    st.just(DeckLoaded()),
    st.just(Ack()),
)
_frames = st.builds(encode_frame, _messages, st.integers(0, 2**32 - 1))


@st.composite
def _mangled(draw: st.DrawFn, frame: bytes) -> bytes:
    """``frame`` with one thing gone wrong on the line."""
    how = draw(st.sampled_from(("flip", "cut", "drop_delimiter", "repeat", "insert")))
    if how == "flip":
        i = draw(st.integers(0, len(frame) - 1))
        return frame[:i] + bytes([frame[i] ^ draw(st.integers(1, 255))]) + frame[i + 1 :]
    if how == "cut":
        return frame[: draw(st.integers(0, len(frame) - 1))]
    if how == "drop_delimiter":
        return frame[:-1]
    if how == "repeat":
        return frame * 2
    i = draw(st.integers(0, len(frame)))
    return frame[:i] + draw(st.binary(min_size=1, max_size=8)) + frame[i:]


@st.composite
def _stream(draw: st.DrawFn) -> tuple[list[bytes], list[bool]]:
    """Pieces of a stream, and for each whether it is a valid frame left whole."""
    pieces: list[bytes] = []
    whole: list[bool] = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(("frame", "mangled", "garbage", "long")))
        if kind == "frame":
            pieces.append(draw(_frames))
        elif kind == "mangled":
            pieces.append(draw(_frames.flatmap(_mangled)))
        elif kind == "garbage":
            pieces.append(draw(st.binary(max_size=64)))
        else:
            pieces.append(draw(st.binary(min_size=MAX_ENCODED_FRAME, max_size=600)))
        whole.append(kind == "frame")
    return pieces, whole


def _chunks(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


def check_decoder(stream: tuple[list[bytes], list[bool]], cuts: list[int]) -> None:
    pieces, whole = stream
    # A delimiter before each valid frame: whatever garbage came before, the frame that
    # follows a delimiter and ends with its own is decoded (resynchronisation).
    data = b"".join(b"\x00" + p if ok else p for p, ok in zip(pieces, whole, strict=True))
    decoder = StreamDecoder()
    packets: list[Packet] = []
    previous = (0, 0, 0, 0, 0)
    for chunk in _chunks(data, cuts):
        decoder.receive_data(chunk)
        packets.extend(decoder)
        s = decoder.stats
        now = (s.frames_ok, s.crc_errors, s.malformed, s.oversized, s.bytes_discarded)
        if any(b < a for a, b in zip(previous, now, strict=True)):
            raise AssertionError(f"a counter went down: {previous} -> {now}")
        previous = now
        if decoder.pending_bytes > MAX_ENCODED_FRAME:
            raise AssertionError(f"{decoder.pending_bytes} bytes held, over the bound")
    if not all(isinstance(p, Packet) for p in packets):
        raise AssertionError("the decoder yielded something that is not a Packet")
    if decoder.stats.frames_ok != len(packets):
        raise AssertionError(f"frames_ok {decoder.stats.frames_ok} != {len(packets)} packets")
    if len(packets) < sum(whole):
        raise AssertionError(f"{sum(whole)} whole frames sent, {len(packets)} decoded")


# --- configuration -------------------------------------------------------------------------

_scalars = st.one_of(
    st.text(max_size=20),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=True),
    st.booleans(),
    st.datetimes(),
    st.dates(),
    st.times(),
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=8,
)
_TABLE_KEYS = (
    "profile",
    "gate_window",
    "positions",
    "cards_per_position",
    "deck_size",
    "stub_size",
    "counting_direction",
    "dealing_direction",
    "dice_wager",
    "unread_card_policy",
    "seat_labels",
)
_TABLE_VALUES = {
    "profile": st.sampled_from((DEFAULT_PROFILE, "nj-pai-gow", "../../etc/passwd", ""))
    | st.text(max_size=12),
    "gate_window": st.integers(-1, 6) | st.booleans(),
    "positions": st.integers(0, 12),
    "cards_per_position": st.integers(0, 14),
    "deck_size": st.sampled_from((52, 53, 54)),
    "stub_size": st.integers(0, 6),
    "counting_direction": st.sampled_from(("counterclockwise", "clockwise", "sideways")),
    "dealing_direction": st.sampled_from(("counting", "reverse", "")),
    "dice_wager": st.booleans(),
    "unread_card_policy": st.sampled_from(("void", "record_unknown", "ignore")),
    "seat_labels": st.dictionaries(st.text(max_size=3), st.text(max_size=6), max_size=8)
    | st.lists(st.text(max_size=6), max_size=8),
}


def _section(keys: tuple[str, ...], typed: dict[str, st.SearchStrategy[Any]]) -> Any:
    key = st.sampled_from(keys) | st.text(max_size=10)
    value = st.one_of(_values, *typed.values()) if typed else _values
    return st.dictionaries(key, value, max_size=len(keys) + 1) | st.builds(
        dict, st.fixed_dictionaries({}, optional={k: typed.get(k, _values) for k in keys})
    )


_tables = _section(_TABLE_KEYS, _TABLE_VALUES)
#: Paths a person may write, and the awkward ones: a home directory that does not exist,
#: a NUL byte, a directory, blanks.
_paths = st.sampled_from(
    ("~", "~/x.bin", "~no-such-user-here/x.bin", "a\x00b", "/", ".", " ", "", "/dev/null")
) | st.text(max_size=20)
_hex = st.text("0123456789abcdefABCDEF", min_size=62, max_size=66)
_digest = st.text("0123456789abcdef", min_size=64, max_size=64)
_names = st.text(min_size=1, max_size=10)
_approved_entry = st.fixed_dictionaries(
    {"model": _names, "firmware_version": _names, "firmware_digest": _digest},
    optional={"image": _paths},
) | st.fixed_dictionaries(
    {},
    optional={
        "model": _values | _names,
        "firmware_version": _values | _names,
        "firmware_digest": _hex | _values,
        "image": _paths | _values,
        "serial": _values,
    },
)
_configs = st.fixed_dictionaries(
    {},
    optional={
        "device": _section(("address",), {"address": st.text(max_size=40)}),
        "journal": _section(("path", "key"), {"path": _paths, "key": _paths}),
        "table": _tables,
        "approved_shoes": st.lists(_approved_entry, max_size=3) | _values,
        "output": _section(("color",), {"color": st.sampled_from(("auto", "always", "x"))}),
    },
) | st.dictionaries(st.text(max_size=12), _values, max_size=4)


def check_config(data: dict[str, Any]) -> None:
    try:
        parse_config(data, source=Path("/nonexistent/fuzz.toml"))
    except ConfigError as exc:
        _one_line(exc)


def check_table(data: dict[str, Any]) -> None:
    try:
        profile = load_profile(data.get("profile", DEFAULT_PROFILE))
        profile.apply({k: v for k, v in data.items() if k != "profile"})
    except ConfigError as exc:
        _one_line(exc)


def _one_line(exc: ConfigError) -> None:
    text = str(exc)
    if not text.strip():
        raise AssertionError("a ConfigError without a message")


def _edited_example(edits: list[tuple[int, int, bytes]]) -> bytes:
    data = bytearray(EXAMPLE_CONFIG.read_bytes())
    for where, remove, insert in edits:
        i = where % (len(data) + 1)
        data[i : i + remove] = insert
    return bytes(data)


_file_contents = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.lists(
        st.tuples(st.integers(0, 10_000), st.integers(0, 8), st.binary(max_size=6)),
        min_size=1,
        max_size=6,
    ).map(_edited_example),
)


def _nested(depth: int, opener: str) -> bytes:
    closer = {"[": "]", "{": "}"}[opener]
    inner = (
        "a = " + opener * depth + closer * depth
        if opener == "["
        else "a = " + ("{ b = " * depth + "1" + " }" * depth)
    )
    return inner.encode() + b"\n"


#: What a configuration path may turn out to be: ("file", content) is a regular file.
_file_shapes = st.one_of(
    st.tuples(st.just("file"), _file_contents),
    st.tuples(st.just("file"), st.builds(_nested, st.integers(1, 200_000), st.sampled_from("[{"))),
    st.tuples(
        st.just("file"),
        st.builds(
            lambda table: ("[table]\n" + _toml_table(table)).encode("utf-8", "surrogatepass"),
            _tables,
        ),
    ),
    st.tuples(st.just("huge"), st.integers(0, 4096)),
    st.tuples(st.sampled_from(("fifo", "device", "directory")), st.just(b"")),
)


def _toml_table(table: Any) -> str:
    """A [table] section's keys as TOML lines (values TOML cannot hold are skipped)."""
    lines = []
    if isinstance(table, dict):
        for key, value in table.items():
            text = _toml_value(value)
            if text is not None:
                lines.append(f"{json.dumps(str(key))} = {text}")
    return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        items = [_toml_value(v) for v in value]
        return None if None in items else "[" + ", ".join(i for i in items if i) + "]"
    if isinstance(value, dict):
        pairs = [(json.dumps(str(k)), _toml_value(v)) for k, v in value.items()]
        if any(v is None for _, v in pairs):
            return None
        return "{" + ", ".join(f"{k} = {v}" for k, v in pairs) + "}"
    return None


# --- addresses -----------------------------------------------------------------------------

_option_values = st.sampled_from(
    ("0", "1", "-1", "nan", "inf", "1e400", "", "7", "0.5", "bogus", "misread@12", "4096")
) | st.text(max_size=12)
_sim_queries = st.lists(
    st.tuples(st.sampled_from(SIM_OPTION_NAMES) | st.text(max_size=8), _option_values),
    max_size=4,
).map(lambda pairs: "&".join(f"{k}={v}" for k, v in pairs))
_addresses = st.one_of(
    st.builds(lambda q: f"sim://?{q}" if q else "sim://", _sim_queries),
    st.builds(
        lambda ids, query: f"usb://{ids}{query}",
        st.sampled_from(("", "1209:0001", "zz:1", "0x1209:0x0001", "1209", ":")),
        st.sampled_from(("", "?serial=SN1", "?serial=", "?colour=red", "?", "?serial")),
    ),
    st.builds(
        lambda scheme, rest: f"{scheme}://{rest}",
        st.sampled_from(("loop", "spy", "socket", "rfc2217", "alt", "hwgrep", "sim", "x", "")),
        st.text(max_size=20),
    ),
    st.sampled_from(("auto", "AUTO", "/dev/electronic-shoe", "./tty", "", " ", "spy://loop://")),
    st.text(max_size=40),
)


def check_address(address: str) -> None:
    try:
        check_shoe_address(address)
    except ShoeControllerError as exc:
        text = str(exc)
        if not text.strip() or "\n" in text:
            raise AssertionError(f"not one line: {text!r}") from None


# --- running -------------------------------------------------------------------------------


@dataclass
class TargetResult:
    name: str
    tried: int = 0
    failure: str | None = None
    example: str | None = None


@dataclass
class FuzzReport:
    targets: list[TargetResult] = field(default_factory=list)

    @property
    def failures(self) -> int:
        return sum(t.failure is not None for t in self.targets)

    def line(self, examples: int, elapsed: float) -> dict[str, Any]:
        return {
            "name": "fuzz",
            "ok": self.failures == 0,
            "inputs_tried": sum(t.tried for t in self.targets),
            "failures": self.failures,
            "targets": {
                t.name: {"tried": t.tried, "failure": t.failure, "example": t.example}
                for t in self.targets
            },
            "examples_per_target": examples,
            "elapsed_s": round(elapsed, 1),
        }


def _run(
    name: str,
    strategy: st.SearchStrategy[Any],
    check: Callable[..., None],
    examples: int,
    unpack: bool = False,
) -> TargetResult:
    result = TargetResult(name)
    seen: list[str] = []

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )
    @given(strategy)
    def target(value: Any) -> None:
        result.tried += 1
        try:
            check(*value) if unpack else check(value)
        except BaseException:
            seen.append(repr(value)[:300])
            raise

    try:
        target()
    except Exception as exc:
        result.failure = "".join(traceback.format_exception_only(exc)).strip()[:500]
        result.example = seen[-1] if seen else None
    return result


def _config_file_target(directory: Path) -> Callable[[tuple[str, Any]], None]:
    regular = directory / "config.toml"
    huge = directory / "huge.toml"
    fifo = directory / "fifo.toml"
    os.mkfifo(fifo)
    huge.write_bytes(b"#" * (1 << 20))
    paths = {"huge": huge, "fifo": fifo, "device": Path("/dev/zero"), "directory": directory}

    def check(shape: tuple[str, Any]) -> None:
        kind, content = shape
        if kind == "file":
            regular.write_bytes(content)
            path = regular
        else:
            if kind == "huge":
                with huge.open("ab") as more:  # just over the limit, by a varying amount
                    more.truncate((1 << 20) + 1 + content)
            path = paths[kind]
        try:
            load_config(path)
        except ConfigError as exc:
            _one_line(exc)

    return check


TARGETS = ("decoder", "config", "table", "config_file", "address")


def fuzz(examples: int, only: tuple[str, ...] = TARGETS) -> FuzzReport:
    report = FuzzReport()
    with tempfile.TemporaryDirectory(prefix="fuzz-") as tmp:
        plan: dict[str, tuple[st.SearchStrategy[Any], Callable[..., None], bool]] = {
            "decoder": (
                st.tuples(_stream(), st.lists(st.integers(0, 10_000), max_size=8)),
                check_decoder,
                True,
            ),
            "config": (_configs, check_config, False),
            "table": (_tables, check_table, False),
            "config_file": (_file_shapes, _config_file_target(Path(tmp)), False),
            "address": (_addresses, check_address, False),
        }
        for name in only:
            strategy, check, unpack = plan[name]
            report.targets.append(_run(name, strategy, check, examples, unpack))
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--examples", type=int, default=20_000, help="examples per target (default 20,000)"
    )
    parser.add_argument("--quick", action="store_true", help="a short run (300 per target)")
    parser.add_argument("--only", action="append", choices=TARGETS, help="run only this target")
    args = parser.parse_args(argv)
    examples = 300 if args.quick else args.examples
    if examples < 1:
        parser.error("--examples must be 1 or more")
    started = time.perf_counter()
    report = fuzz(examples, tuple(args.only) if args.only else TARGETS)
    line = report.line(examples, time.perf_counter() - started)
    print(json.dumps(line))
    return 0 if line["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
