"""The table's rules as validated data: positions, deal sizes, directions and policies.

Positions are numbered 1..N in the counting direction with the banker as 1 (rule B1); the
procedure works in positions only, and ``seat_labels`` maps them to what the table shows.

The values a table runs with come from a rules profile shipped with the package
(``shoe_controller/profiles/*.toml``, read by :mod:`shoe_controller.profiles`): the game's
constants are the profile's, and an operator may set only what the profile lets them.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, Final, TypeVar

from firmware_protocol import DECK_53, STANDARD_52, Card
from shoe_controller.errors import ConfigError

#: The banker's position: always 1, always in play.
BANKER: Final = 1

MIN_POSITIONS: Final = 2
MAX_POSITIONS: Final = 10
DECK_SIZES: Final = (52, 53)
MAX_GATE_WINDOW: Final = 4

_E = TypeVar("_E", bound=enum.StrEnum)


class CountingDirection(enum.StrEnum):
    """How the positions are numbered around the table, seen from the banker. It fixes which
    physical seat each position is; the arithmetic of the procedure does not depend on it."""

    COUNTERCLOCKWISE = "counterclockwise"
    CLOCKWISE = "clockwise"


class DealingDirection(enum.StrEnum):
    """``counting``: k, k+1, ..., N, 1, ... (the regulation's "right to left", the default);
    ``reverse``: k, k-1, ..., 1, N, ... for jurisdictions that deal the other way."""

    COUNTING = "counting"
    REVERSE = "reverse"


class WagerDecider(enum.StrEnum):
    """Rule B2: what decides the optional dice wager. ``dice``: the three dice of the
    starting position, so a start by a random number is refused while the wager is offered;
    ``start_number``: the starting position's number, however it was obtained. Either way
    the wager is settled before the first card."""

    DICE = "dice"
    START_NUMBER = "start_number"


class UnreadCardPolicy(enum.StrEnum):
    """Rule C3: an unread card voids the round (``void``), or is recorded as an unknown card
    and the deal goes on (``record_unknown``; the count holds, the composition check cannot)."""

    VOID = "void"
    RECORD_UNKNOWN = "record_unknown"


@dataclass(frozen=True, slots=True)
class TableRules:
    """The rules of one table. Invalid values raise :class:`ConfigError` naming the field."""

    positions: int = 7
    cards_per_position: int = 7
    deck_size: int = 53
    stub_size: int = 4
    counting_direction: CountingDirection = CountingDirection.COUNTERCLOCKWISE
    dealing_direction: DealingDirection = DealingDirection.COUNTING
    dice_wager: bool = False
    dice_wager_decided_by: WagerDecider = WagerDecider.DICE
    unread_card_policy: UnreadCardPolicy = UnreadCardPolicy.VOID
    #: (position, label) pairs, one for every position, or empty for the plain numbers.
    seat_labels: tuple[tuple[int, str], ...] = ()
    #: Rule F5: how many cards may leave the shoe ahead of the journal.
    gate_window: int = 1
    #: No round opens before the system clock is synchronised (the journal's times).
    require_synchronized_clock: bool = False

    def __post_init__(self) -> None:
        _check_int("positions", self.positions, MIN_POSITIONS, MAX_POSITIONS)
        _check_int("cards_per_position", self.cards_per_position, 1, 13)
        if type(self.deck_size) is not int or self.deck_size not in DECK_SIZES:
            raise ConfigError(
                f"table.deck_size is {self.deck_size!r}; expected 53 (52 cards and the joker) or 52"
            )
        _check_int("stub_size", self.stub_size, 1, self.deck_size - 1)
        dealt = self.positions * self.cards_per_position
        if dealt + self.stub_size != self.deck_size:
            raise ConfigError(
                f"table: positions x cards_per_position + stub_size must equal deck_size, "
                f"but {self.positions} x {self.cards_per_position} + {self.stub_size} = "
                f"{dealt + self.stub_size}, not {self.deck_size}"
            )
        for name, kind in (
            ("counting_direction", CountingDirection),
            ("dealing_direction", DealingDirection),
            ("dice_wager_decided_by", WagerDecider),
            ("unread_card_policy", UnreadCardPolicy),
        ):
            if not isinstance(getattr(self, name), kind):
                raise ConfigError(
                    f"table.{name} is {getattr(self, name)!r}; expected one of "
                    + ", ".join(repr(member.value) for member in kind)
                )
        _check_int("gate_window", self.gate_window, 1, MAX_GATE_WINDOW)
        for flag in ("dice_wager", "require_synchronized_clock"):
            if type(getattr(self, flag)) is not bool:
                raise ConfigError(
                    f"table.{flag} is {getattr(self, flag)!r}; expected true or false"
                )
        _check_labels(self.seat_labels, self.positions)
        _check_int("gate_window", self.gate_window, 1, dealt)

    def plain(self) -> dict[str, Any]:
        """The rules as plain JSON values (enumerations by value, labels by position), as
        the journal records them."""
        values: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, enum.Enum):
                value = value.value
            elif f.name == "seat_labels":
                value = {str(number): label for number, label in value}
            values[f.name] = value
        return values

    @property
    def deal_size(self) -> int:
        """Cards dealt in a round: positions x cards per position (49)."""
        return self.positions * self.cards_per_position

    @property
    def deck(self) -> tuple[Card, ...]:
        """The cards the deck must hold (rule D3)."""
        return DECK_53 if self.deck_size == 53 else STANDARD_52

    @property
    def betting_positions(self) -> tuple[int, ...]:
        return tuple(range(BANKER + 1, self.positions + 1))

    def deal_order(self, start: int) -> tuple[int, ...]:
        """The position of every card of the deal, first card first (rule C1)."""
        if not 1 <= start <= self.positions:
            raise ValueError(f"start position {start} is not 1..{self.positions}")
        step = 1 if self.dealing_direction is DealingDirection.COUNTING else -1
        turn = tuple((start - 1 + step * i) % self.positions + 1 for i in range(self.positions))
        return turn * self.cards_per_position

    def seat_label(self, position: int) -> str:
        for number, label in self.seat_labels:
            if number == position:
                return label
        return str(position)

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any]) -> TableRules:
        """Build from the ``[table]`` section of the configuration; missing keys take the
        defaults."""
        known = [f.name for f in fields(cls)]
        for key in mapping:
            if key not in known:
                raise ConfigError(
                    f"table.{key} is not a known key; expected one of {', '.join(known)}"
                )
        values: dict[str, Any] = dict(mapping)
        for name, kind in (
            ("counting_direction", CountingDirection),
            ("dealing_direction", DealingDirection),
            ("dice_wager_decided_by", WagerDecider),
            ("unread_card_policy", UnreadCardPolicy),
        ):
            if name in values:
                values[name] = _enum_value(name, values[name], kind)
        if "seat_labels" in values:
            values["seat_labels"] = _labels_from_mapping(values["seat_labels"])
        return cls(**values)


def _check_int(name: str, value: object, low: int, high: int) -> None:
    if type(value) is not int or not low <= value <= high:
        raise ConfigError(f"table.{name} is {value!r}; expected an integer from {low} to {high}")


def _enum_value(name: str, value: object, kind: type[_E]) -> _E:
    if isinstance(value, str):
        for member in kind:
            if member.value == value:
                return member
    raise ConfigError(
        f"table.{name} is {value!r}; expected one of "
        + ", ".join(repr(member.value) for member in kind)
    )


def _labels_from_mapping(value: object) -> tuple[tuple[int, str], ...]:
    if not isinstance(value, Mapping):
        raise ConfigError(
            'table.seat_labels must be a table of position = "label" (e.g. 1 = "Banker")'
        )
    pairs: list[tuple[int, str]] = []
    for key, label in value.items():
        try:
            position = int(key)
        except (TypeError, ValueError):
            raise ConfigError(
                f"table.seat_labels has key {key!r}; expected a position number"
            ) from None
        pairs.append((position, label))
    return tuple(sorted(pairs))


def _check_labels(labels: tuple[tuple[int, str], ...], positions: int) -> None:
    if not labels:
        return
    numbers = [number for number, _ in labels]
    if sorted(numbers) != list(range(1, positions + 1)):
        raise ConfigError(
            f"table.seat_labels names positions {sorted(numbers)}; expected exactly one "
            f"label for each position 1 to {positions}"
        )
    texts = [label for _, label in labels]
    for number, label in labels:
        if not isinstance(label, str) or not label.strip():
            raise ConfigError(
                f"table.seat_labels: position {number} has label {label!r}; expected a "
                "non-empty string"
            )
    if len(set(texts)) != len(texts):
        raise ConfigError("table.seat_labels gives two positions the same label; make each unique")
