"""Card codes: the one-byte wire code and the two-character text form of every card.

Wire code: ``suit << 4 | rank`` with rank 1 (ace) .. 13 (king) and suit 0 (spades),
1 (hearts), 2 (diamonds), 3 (clubs); the joker is 0x40 and a card the reader could not
identify is 0xFF. Every other byte value is not a card.

Text form, used everywhere else in the product: rank ``A 2-9 T J Q K`` followed by suit
``S H D C`` ("AS", "TD", "7H"); the joker is "JK"; an unreadable card is "??".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

RANKS = "A23456789TJQK"
SUITS = "SHDC"
JOKER_CODE = 0x40
UNREADABLE_CODE = 0xFF


class CardError(ValueError):
    """A card code or text that is not a card."""


@dataclass(frozen=True, slots=True, order=True)
class Card:
    """One card, identified by its wire code. Build with :meth:`from_code` or :meth:`parse`."""

    code: int

    _by_code: ClassVar[dict[int, Card]]
    _by_text: ClassVar[dict[str, Card]]

    def __post_init__(self) -> None:
        if not _is_valid_code(self.code):
            raise CardError(f"0x{self.code:02X} is not a card code")

    @classmethod
    def from_code(cls, code: int) -> Card:
        try:
            return cls._by_code[code]
        except KeyError:
            raise CardError(f"0x{code:02X} is not a card code") from None

    @classmethod
    def parse(cls, text: str) -> Card:
        """Parse the text form ("AS", "td", "JK", "??"); case-insensitive."""
        try:
            return cls._by_text[text.strip().upper()]
        except KeyError:
            raise CardError(
                f"{text!r} is not a card: use rank A,2-9,T,J,Q,K and suit S,H,D,C "
                '(e.g. "AS", "TD"), "JK" for the joker or "??" for unreadable'
            ) from None

    @property
    def is_joker(self) -> bool:
        return self.code == JOKER_CODE

    @property
    def is_unreadable(self) -> bool:
        return self.code == UNREADABLE_CODE

    @property
    def rank(self) -> int | None:
        """1 (ace) .. 13 (king); None for the joker and an unreadable card."""
        if self.is_joker or self.is_unreadable:
            return None
        return self.code & 0x0F

    @property
    def suit(self) -> str | None:
        if self.is_joker or self.is_unreadable:
            return None
        return SUITS[self.code >> 4]

    @property
    def text(self) -> str:
        if self.is_joker:
            return "JK"
        if self.is_unreadable:
            return "??"
        return RANKS[(self.code & 0x0F) - 1] + SUITS[self.code >> 4]

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Card({self.text})"


def _is_valid_code(code: int) -> bool:
    if code in (JOKER_CODE, UNREADABLE_CODE):
        return True
    return 0 <= code >> 4 <= 3 and 1 <= code & 0x0F <= 13


def _build_tables() -> None:
    codes = [s << 4 | r for s in range(4) for r in range(1, 14)] + [JOKER_CODE, UNREADABLE_CODE]
    Card._by_code = {}
    Card._by_text = {}
    for code in codes:
        card = Card(code)
        Card._by_code[code] = card
        Card._by_text[card.text] = card


_build_tables()

JOKER = Card.from_code(JOKER_CODE)
UNREADABLE = Card.from_code(UNREADABLE_CODE)
#: The 52 standard cards in suit-major order (spades A..K, hearts, diamonds, clubs).
STANDARD_52: tuple[Card, ...] = tuple(
    Card.from_code(s << 4 | r) for s in range(4) for r in range(1, 14)
)
#: The deck the game uses: 52 cards and one joker.
DECK_53: tuple[Card, ...] = (*STANDARD_52, JOKER)
