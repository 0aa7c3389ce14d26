"""The shipped test vectors: checked both ways, up to date, and shown in the specification."""

from __future__ import annotations

import importlib.resources
import json
import re
from pathlib import Path

import pytest

from firmware_protocol import REGISTRY, StreamDecoder, crc, decode_frame, encode_frame
from firmware_protocol.vectors import (
    COUNTERS,
    EXAMPLE_PATTERN,
    VECTORS_PATH,
    InvalidVector,
    ValidVector,
    build,
    dumps,
    generate,
    load,
    update_document,
)
from tools import protocol_vectors

SHIPPED = load()
DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
FOLLOWER = encode_frame(REGISTRY[0x02](), 99)  # a Ping, to show the decoder kept its step


def name_of(vector: ValidVector | InvalidVector) -> str:
    return vector.name


def test_the_vectors_file_ships_inside_the_package() -> None:
    shipped = importlib.resources.files("firmware_protocol") / "vectors.json"
    assert shipped.is_file()
    assert json.loads(shipped.read_text(encoding="utf-8"))["format"] == 1


def test_the_vectors_file_is_what_the_code_generates() -> None:
    # If this fails, run: python -m tools.protocol_vectors --doc docs/protocol.md
    assert VECTORS_PATH.read_text(encoding="utf-8") == dumps(generate())
    assert load() == build()


def test_the_crc_block_matches_the_crc_module() -> None:
    block = json.loads(VECTORS_PATH.read_text(encoding="utf-8"))["crc"]
    assert block["name"] == crc.NAME == "CRC-16/IBM-3740"
    assert int(block["poly"], 16) == crc.POLY == 0x1021
    assert int(block["init"], 16) == crc.INIT == 0xFFFF
    assert (block["refin"], block["refout"]) == (False, False)
    assert int(block["xorout"], 16) == crc.XOROUT == 0
    assert int(block["check"], 16) == crc.crc16(b"123456789") == 0x29B1
    assert int(block["residue"], 16) == crc.RESIDUE == 0


def test_every_message_type_has_a_valid_vector() -> None:
    covered = {type(v.message) for v in SHIPPED.valid}
    assert set(REGISTRY.values()) <= covered
    assert any(type(v.message).__name__ == "Unknown" for v in SHIPPED.valid)


@pytest.mark.parametrize("vector", SHIPPED.valid, ids=name_of)
def test_valid_vectors_encode_to_their_frame(vector: ValidVector) -> None:
    assert encode_frame(vector.message, vector.seq, vector.flags, vector.version) == vector.frame


@pytest.mark.parametrize("vector", SHIPPED.valid + SHIPPED.tolerated, ids=name_of)
def test_valid_and_tolerated_vectors_decode_to_their_fields(vector: ValidVector) -> None:
    decoder = StreamDecoder()
    decoder.receive_data(vector.frame)
    packet = decoder.next_packet()
    assert packet is not None, decoder.last_error
    assert (packet.version, packet.seq, packet.flags) == (vector.version, vector.seq, vector.flags)
    assert packet.message == vector.message
    assert decoder.stats.frames_ok == 1 and decoder.stats.frames_dropped == 0


@pytest.mark.parametrize("vector", SHIPPED.valid, ids=name_of)
def test_the_body_is_the_frame_unstuffed_and_has_the_residue(vector: ValidVector) -> None:
    body = vector.body
    assert crc.crc16(body) == crc.RESIDUE
    assert body[0] == vector.version and int.from_bytes(body[3:7], "little") == vector.seq
    assert 0 not in vector.frame[:-1] and vector.frame.endswith(b"\x00")


@pytest.mark.parametrize("vector", SHIPPED.invalid, ids=name_of)
def test_invalid_vectors_are_rejected_and_counted(vector: InvalidVector) -> None:
    assert vector.counter in COUNTERS
    decoder = StreamDecoder()
    decoder.receive_data(vector.frame + FOLLOWER)
    assert list(decoder) == [decode_frame(FOLLOWER[:-1])]
    stats = decoder.stats
    assert getattr(stats, vector.counter) == 1
    assert stats.frames_dropped == 1
    assert stats.bytes_discarded == vector.bytes_discarded


@pytest.mark.parametrize("vector", SHIPPED.invalid, ids=name_of)
def test_invalid_vectors_are_rejected_the_same_fed_byte_by_byte(vector: InvalidVector) -> None:
    decoder = StreamDecoder()
    for i in range(len(vector.frame)):
        decoder.receive_data(vector.frame[i : i + 1])
    assert getattr(decoder.stats, vector.counter) == 1
    assert decoder.stats.bytes_discarded == vector.bytes_discarded


@pytest.mark.parametrize("vector", SHIPPED.valid, ids=name_of)
def test_every_single_bit_flip_of_a_vector_is_rejected(vector: ValidVector) -> None:
    for index in range(len(vector.frame) - 1):
        for bit in range(8):
            corrupted = bytearray(vector.frame)
            corrupted[index] ^= 1 << bit
            decoder = StreamDecoder()
            decoder.receive_data(bytes(corrupted) + FOLLOWER)
            assert [p.seq for p in decoder] == [99], (index, bit)


# --- the specification -------------------------------------------------------------------


def test_every_example_in_the_specification_matches_the_vectors() -> None:
    text = DOC.read_text(encoding="utf-8")
    # If this fails, run: python -m tools.protocol_vectors --doc docs/protocol.md
    assert update_document(text, SHIPPED) == text


def test_the_specification_shows_every_valid_and_tolerated_vector() -> None:
    shown = {m["name"] for m in EXAMPLE_PATTERN.finditer(DOC.read_text(encoding="utf-8"))}
    assert shown == {v.name for v in SHIPPED.valid + SHIPPED.tolerated}


def test_every_hex_example_in_the_specification_is_a_vector_frame() -> None:
    text = DOC.read_text(encoding="utf-8")
    frames = {v.frame for v in SHIPPED.valid + SHIPPED.tolerated}
    shown = 0
    for match in EXAMPLE_PATTERN.finditer(text):
        lines = match["body"].splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("frame   "))
        hex_text = " ".join(line[8:] for line in lines[start:])
        assert bytes.fromhex(hex_text) in frames
        shown += 1
    assert shown == len(frames)


def test_the_specification_describes_every_message_and_invalid_vector() -> None:
    text = DOC.read_text(encoding="utf-8")
    for code, cls in REGISTRY.items():
        assert re.search(rf"^#### {cls.__name__} \(0x{code:02X}\)$", text, re.MULTILINE), cls
    for vector in SHIPPED.invalid:
        assert f"| {vector.name} |" in text


def test_the_specification_states_the_crc_parameters_and_sizes() -> None:
    from firmware_protocol import MAX_ENCODED_FRAME, MAX_FRAME, MAX_PAYLOAD

    text = DOC.read_text(encoding="utf-8")
    for row in (
        "| poly | 0x1021",
        "| init | 0xFFFF |",
        "| xorout | 0x0000 |",
        "| check | 0x29B1",
        "| residue | 0x0000 |",
        f"| maximum payload | {MAX_PAYLOAD} |",
        f"| maximum body | {MAX_FRAME} |",
        f"| maximum stuffed frame | {MAX_ENCODED_FRAME} |",
    ):
        assert row in text


# --- the maintainers' script that writes them --------------------------------------------


def test_the_vectors_script_finds_the_shipped_files_up_to_date() -> None:
    assert protocol_vectors.main(["--check", "--doc", str(DOC)]) == 0


def test_the_vectors_script_rewrites_a_stale_example_and_check_reports_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stale = tmp_path / "protocol.md"
    text = DOC.read_text(encoding="utf-8")
    stale.write_text(text.replace("frame   05 01 84 01 01", "frame   05 01 84 01 02"), "utf-8")
    assert protocol_vectors.main(["--check", "--doc", str(stale)]) == 1
    error = capsys.readouterr().err
    assert "out of date" in error and str(stale) in error
    assert protocol_vectors.main(["--doc", str(stale)]) == 0
    assert stale.read_text(encoding="utf-8") == text
    assert protocol_vectors.main(["--check", "--doc", str(stale)]) == 0
