"""plain(): the project's values as JSON-ready data."""

from __future__ import annotations

import enum

from firmware_protocol import Card, GateMode
from shoe_controller.plain import plain


class _Colour(enum.Enum):
    RED = "red"


def test_scalars_pass_as_they_are_and_their_subclasses_are_converted() -> None:
    assert [plain(v) for v in (3, "QH", 1.5, True, None)] == [3, "QH", 1.5, True, None]
    assert plain(True) is True
    # An IntEnum is an int, and still goes by its name; another enum by its value.
    assert plain(GateMode.DEAL) == "deal"
    assert plain(_Colour.RED) == "red"


def test_containers_and_cards_are_converted_all_the_way_down() -> None:
    card = Card.parse("QH")
    assert plain({"cards": (card, None), 1: {GateMode.STUB}, "raw": b"\x01\xff"}) == {
        "cards": ["QH", None],
        "1": ["stub"],
        "raw": "01ff",
    }
