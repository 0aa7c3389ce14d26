from firmware_protocol import DECK_53, Card, crc
from firmware_protocol.crc import crc16


def test_crc_catalogue_check_value() -> None:
    assert crc16(b"123456789") == crc.CHECK == 0x29B1


def test_card_text_round_trip() -> None:
    assert [c.text for c in DECK_53[:3]] == ["AS", "2S", "3S"]
    assert len({c.text for c in DECK_53}) == 53
    for card in DECK_53:
        assert Card.parse(card.text) is card
        assert Card.from_code(card.code) is card
