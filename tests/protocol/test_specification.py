"""docs/protocol.md states what the code does: tables, constants and the inline example."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from firmware_protocol import Button, Capability, GateMode, NakReason, timing
from firmware_protocol.vectors import build

DOC = (Path(__file__).resolve().parents[2] / "docs" / "protocol.md").read_text(encoding="utf-8")


def table_rows(first_cell: str) -> list[list[str]]:
    """The rows of every Markdown table whose first cell matches ``first_cell``."""
    rows = []
    for line in DOC.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and re.fullmatch(first_cell, cells[0]):
            rows.append(cells)
    return rows


def test_the_capability_table_is_the_capability_flags() -> None:
    rows = {(int(r[0], 16), r[1]) for r in table_rows(r"0x[0-9A-F]{2}") if r[1].isupper()}
    flags = {(int(c), c.name) for c in Capability}
    assert flags <= rows


def test_the_nak_reason_table_is_the_enumeration() -> None:
    rows = {(int(r[0]), r[1]) for r in table_rows(r"[1-9]") if r[1].isupper()}
    assert rows == {(int(r), r.name) for r in NakReason}


TIMING_NAMES = sorted(name for name in vars(timing) if name.isupper())


def test_every_timing_value_is_in_the_table() -> None:
    assert len(TIMING_NAMES) >= 17
    for name in TIMING_NAMES:
        assert table_rows(name), name


@pytest.mark.parametrize("name", TIMING_NAMES)
def test_the_timing_table_is_timing_py(name: str) -> None:
    (row,) = table_rows(name)
    value = float(row[1].removesuffix(" s"))
    assert value == getattr(timing, name)


def test_enumerations_are_written_with_their_codes() -> None:
    gate = ", ".join(f"{m.value} {m.name}" for m in GateMode)
    assert f"gate mode: {gate};" in DOC
    buttons = ", ".join(f"{m.value} {m.name}" for m in Button)
    assert f"| 1 | {buttons};" in DOC


def test_the_cobs_example_is_the_ping_vector() -> None:
    ping = next(v for v in build().valid if v.name == "ping")
    body, stuffed, sent = re.search(
        r"the body `([0-9a-f ]+)` \(a `Ping`\) stuffs to\n`([0-9a-f ]+)`, sent as `([0-9a-f ]+)`",
        DOC,
    ).groups()  # type: ignore[union-attr]
    assert bytes.fromhex(body) == ping.body
    assert bytes.fromhex(sent) == ping.frame == bytes.fromhex(stuffed) + b"\x00"
