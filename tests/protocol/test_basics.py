from __future__ import annotations

import subprocess
import sys

import pytest

from firmware_protocol import (
    DECK_53,
    JOKER,
    STANDARD_52,
    UNREADABLE,
    Card,
    CardError,
    crc,
    negotiate_version,
)
from firmware_protocol.crc import crc16


def test_crc_catalogue_check_value() -> None:
    assert crc16(b"123456789") == crc.CHECK == 0x29B1


def test_crc_residue_and_continuation() -> None:
    data = b"any frame body"
    value = crc16(data)
    assert crc16(data + value.to_bytes(2, "big")) == crc.RESIDUE
    assert crc16(data[5:], crc16(data[:5])) == value


def test_card_text_round_trip() -> None:
    assert [c.text for c in DECK_53[:3]] == ["AS", "2S", "3S"]
    assert len({c.text for c in DECK_53}) == 53
    for card in DECK_53:
        assert Card.parse(card.text) is card
        assert Card.from_code(card.code) is card


def test_card_codes_are_suit_and_rank() -> None:
    assert Card.parse("QH").code == 0x1C and Card.parse("TD").code == 0x2A
    assert JOKER.code == 0x40 and JOKER.text == "JK" and JOKER.rank is None
    assert UNREADABLE.code == 0xFF and UNREADABLE.text == "??" and UNREADABLE.is_unreadable
    assert Card.parse("kc").rank == 13 and Card.parse("kc").suit == "C"
    assert len(STANDARD_52) == 52 and JOKER not in STANDARD_52


@pytest.mark.parametrize("code", [0x00, 0x0E, 0x0F, 0x10, 0x41, 0x4F, 0xFE])
def test_other_codes_are_not_cards(code: int) -> None:
    with pytest.raises(CardError, match="is not a card code"):
        Card.from_code(code)


@pytest.mark.parametrize("text", ["", "1S", "AX", "10H", "JOKER"])
def test_other_texts_are_not_cards_and_the_error_says_the_format(text: str) -> None:
    with pytest.raises(CardError, match=r'e\.g\. "AS"'):
        Card.parse(text)


def test_negotiation_picks_the_highest_common_version() -> None:
    assert negotiate_version((1,), (1,)) == 1
    assert negotiate_version((1, 2, 3), (2, 3, 4)) == 3
    assert negotiate_version((1,), (2, 3)) is None
    assert negotiate_version((), (1,)) is None


def test_importing_the_protocol_imports_nothing_of_the_controller() -> None:
    code = (
        "import firmware_protocol, firmware_protocol.vectors, sys; "
        "assert not any(m.startswith('shoe_controller') for m in sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
