"""The table rules: validated configuration, deal order, seat labels."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

from shoe_controller.errors import ConfigError
from shoe_controller.procedure import (
    CountingDirection,
    DealingDirection,
    TableRules,
    UnreadCardPolicy,
)

C1 = pytest.mark.rule("C1")
D1 = pytest.mark.rule("D1")


@D1
@C1
def test_the_defaults_are_the_regulation() -> None:
    rules = TableRules()
    assert (rules.positions, rules.cards_per_position, rules.deck_size, rules.stub_size) == (
        7,
        7,
        53,
        4,
    )
    assert rules.deal_size == 49
    assert rules.counting_direction is CountingDirection.COUNTERCLOCKWISE
    assert rules.dealing_direction is DealingDirection.COUNTING
    assert rules.dice_wager is False
    assert rules.unread_card_policy is UnreadCardPolicy.VOID
    assert len(rules.deck) == 53 and len(set(rules.deck)) == 53


@pytest.mark.rule("B2")
@pytest.mark.rule("C3")
@C1
def test_the_table_section_of_the_configuration() -> None:
    section = tomllib.loads(
        """
        [table]
        positions = 7
        cards_per_position = 7
        deck_size = 53
        stub_size = 4
        counting_direction = "clockwise"
        dealing_direction = "reverse"
        dice_wager = true
        unread_card_policy = "record_unknown"
        [table.seat_labels]
        1 = "Banker"
        2 = "Seat 1"
        3 = "Seat 2"
        4 = "Seat 3"
        5 = "Seat 4"
        6 = "Seat 5"
        7 = "Seat 6"
        """
    )["table"]
    rules = TableRules.from_mapping(section)
    assert rules.counting_direction is CountingDirection.CLOCKWISE
    assert rules.dealing_direction is DealingDirection.REVERSE
    assert rules.dice_wager is True
    assert rules.unread_card_policy is UnreadCardPolicy.RECORD_UNKNOWN
    assert rules.seat_label(1) == "Banker"
    assert rules.seat_label(7) == "Seat 6"


@C1
def test_an_empty_section_gives_the_defaults() -> None:
    assert TableRules.from_mapping({}) == TableRules()
    assert TableRules().seat_label(3) == "3"


@pytest.mark.parametrize(
    ("section", "message"),
    [
        pytest.param(
            {"positions": 0},
            r"^table\.positions is 0; expected an integer from 2 to 10$",
            marks=C1,
        ),
        pytest.param(
            {"positions": "seven"}, r"^table\.positions is 'seven'; expected an integer", marks=C1
        ),
        pytest.param({"positions": True}, r"^table\.positions is True", marks=C1),
        pytest.param({"cards_per_position": 14}, r"^table\.cards_per_position is 14", marks=C1),
        pytest.param({"deck_size": 54}, r"^table\.deck_size is 54; expected 53", marks=D1),
        pytest.param({"stub_size": 0}, r"^table\.stub_size is 0; expected an integer", marks=D1),
        pytest.param(
            {"stub_size": 3},
            r"^table: positions x cards_per_position \+ stub_size must equal deck_size, "
            r"but 7 x 7 \+ 3 = 52, not 53$",
            marks=D1,
        ),
        pytest.param(
            {"counting_direction": "left"},
            r"^table\.counting_direction is 'left'; expected one of 'counterclockwise', "
            r"'clockwise'$",
            marks=C1,
        ),
        pytest.param(
            {"dealing_direction": 1},
            r"^table\.dealing_direction is 1; expected one of 'counting', 'reverse'$",
            marks=C1,
        ),
        pytest.param(
            {"unread_card_policy": "ignore"},
            r"^table\.unread_card_policy is 'ignore'; expected one of 'void', "
            r"'record_unknown'$",
            marks=pytest.mark.rule("C3"),
        ),
        pytest.param(
            {"dice_wager": "yes"},
            r"^table\.dice_wager is 'yes'; expected true or false$",
            marks=pytest.mark.rule("B2"),
        ),
        pytest.param(
            {"shoes": 2}, r"^table\.shoes is not a known key; expected one of positions", marks=C1
        ),
        pytest.param(
            {"seat_labels": {"1": "Banker"}},
            r"^table\.seat_labels names positions \[1\]; expected exactly one label for each "
            r"position 1 to 7$",
            marks=C1,
        ),
        pytest.param(
            {"seat_labels": {str(p): "Seat" for p in range(1, 8)}},
            r"^table\.seat_labels gives two positions the same label",
            marks=C1,
        ),
        pytest.param(
            {"seat_labels": {**{str(p): f"S{p}" for p in range(1, 7)}, "7": ""}},
            r"^table\.seat_labels: position 7 has label ''; expected a non-empty string$",
            marks=C1,
        ),
        pytest.param(
            {"seat_labels": {"one": "Banker"}},
            r"^table\.seat_labels has key 'one'; expected a position number$",
            marks=C1,
        ),
        pytest.param(
            {"seat_labels": ["Banker"]},
            r"^table\.seat_labels must be a table of position",
            marks=C1,
        ),
    ],
)
def test_an_invalid_value_names_the_field_and_what_is_expected(
    section: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        TableRules.from_mapping(section)
    assert "\n" not in str(caught.value)


@D1
def test_other_consistent_sizes_are_accepted() -> None:
    rules = TableRules.from_mapping(
        {"positions": 6, "cards_per_position": 8, "deck_size": 52, "stub_size": 4}
    )
    assert rules.deal_size == 48
    assert len(rules.deck) == 52
    assert all(not card.is_joker for card in rules.deck)


@C1
@pytest.mark.parametrize(
    ("direction", "start", "one_turn"),
    [
        (DealingDirection.COUNTING, 1, (1, 2, 3, 4, 5, 6, 7)),
        (DealingDirection.COUNTING, 5, (5, 6, 7, 1, 2, 3, 4)),
        (DealingDirection.COUNTING, 7, (7, 1, 2, 3, 4, 5, 6)),
        (DealingDirection.REVERSE, 1, (1, 7, 6, 5, 4, 3, 2)),
        (DealingDirection.REVERSE, 5, (5, 4, 3, 2, 1, 7, 6)),
        (DealingDirection.REVERSE, 7, (7, 6, 5, 4, 3, 2, 1)),
    ],
)
def test_the_deal_order_goes_round_seven_times(
    direction: DealingDirection, start: int, one_turn: tuple[int, ...]
) -> None:
    order = TableRules(dealing_direction=direction).deal_order(start)
    assert order == one_turn * 7


@C1
def test_a_start_outside_the_table_has_no_deal_order() -> None:
    with pytest.raises(ValueError, match="start position 8"):
        TableRules().deal_order(8)
