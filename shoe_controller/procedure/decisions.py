"""What the procedure decides, as frozen records the caller journals before acting (E3).

Every decision class says, in its ``disclosure``, who may see it (E1, E2):

``PUBLIC``        no card identity; may be shown or published as soon as it is journaled.
``ROUND_RECORD``  the identities E2 allows (the banker's hand and the wagered hands); the
                  procedure emits it only when the croupier closes the round.
``RESTRICTED``    card identities for the restricted audit journal only (every card, the
                  stub, unwagered hands); never shown or published, before or after.
"""

from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from firmware_protocol import Card, GateMode
from shoe_controller.procedure.start import StartPosition


class Disclosure(enum.StrEnum):
    PUBLIC = "public"
    ROUND_RECORD = "round_record"
    RESTRICTED = "restricted"


class Outcome(enum.StrEnum):
    """How a round ends: exactly one of these, each with a reason."""

    DEALT = "dealt"
    VOID_MISDEAL = "void_misdeal"
    VOID_DECK_REMOVED = "void_deck_removed"
    VOID_FAULT = "void_fault"


class FaultCode(enum.StrEnum):
    JAM = "jam"
    #: A fault the shoe detected in itself (sensor, reader, mechanism).
    SHOE_FAULT = "shoe_fault"
    DOOR_OPENED = "door_opened"
    UNREAD_CARD = "unread_card"
    #: A card left the shoe while the procedure expected none (gate locked, round over).
    UNEXPECTED_CARD = "unexpected_card"
    #: A card with the wrong draw index or gate mode for its turn.
    CARD_OUT_OF_TURN = "card_out_of_turn"
    #: A card in deal mode after the last card of the deal.
    EXTRA_CARD = "extra_card"
    UNEXPECTED_DECK = "unexpected_deck"
    DECK_REMOVED = "deck_removed"
    SHOE_EMPTY = "shoe_empty"
    COMPOSITION = "composition"
    LINK_LOST = "link_lost"
    EVENTS_LOST = "events_lost"
    SHOE_NOT_APPROVED = "shoe_not_approved"
    CONTROLLER_RESTARTED = "controller_restarted"
    #: The controller failed while processing an input; the machine fails safe.
    INTERNAL = "internal"


class Composition(enum.StrEnum):
    """What the record says about the deck's composition (rule D3), without identities."""

    #: Every card was read and together they are exactly the deck.
    VERIFIED = "verified"
    #: Some card was not read (or the stub was counted by hand): it cannot be checked.
    UNVERIFIED = "unverified"
    #: Every card was read, no duplicate, but the deck is short.
    SHORT = "short"


@dataclass(frozen=True, slots=True)
class Decision:
    disclosure: ClassVar[Disclosure] = Disclosure.PUBLIC

    @property
    def restricted(self) -> bool:
        """True for records that only the restricted audit journal may hold."""
        return self.disclosure is Disclosure.RESTRICTED

    def to_record(self) -> dict[str, Any]:
        """A JSON-ready dict for the journal: the class name under ``"type"``, then the
        fields, with enums as their values and cards in their text form."""
        record: dict[str, Any] = {"type": type(self).__name__}
        for item in dataclasses.fields(self):
            record[item.name] = _plain(getattr(self, item.name))
        return record


def _plain(value: object) -> Any:
    if isinstance(value, Card):
        return value.text
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list | frozenset):
        return [_plain(item) for item in value]
    return value


# --- round progress (public) ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StateChanged(Decision):
    old: str
    new: str
    trigger: str


@dataclass(frozen=True, slots=True)
class RoundOpened(Decision):
    round_id: str


@dataclass(frozen=True, slots=True)
class BetsClosed(Decision):
    """Rule A3: the positions holding a wager, frozen for the round."""

    wagered: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class StartPositionSet(Decision):
    start: StartPosition


@dataclass(frozen=True, slots=True)
class WagerSettled(Decision):
    """Rule B2: the croupier marked the dice wager settled."""


@dataclass(frozen=True, slots=True)
class GateCommand(Decision):
    """Set the shoe's gate. In ``DEAL`` mode the shoe locks by itself after ``limit`` cards."""

    mode: GateMode
    limit: int = 0


@dataclass(frozen=True, slots=True)
class CardAssigned(Decision):
    """The card at ``draw_index`` belongs to ``position``; ``read`` is false for a card
    recorded as unknown (rule C3, policy ``record_unknown``)."""

    draw_index: int
    position: int
    read: bool


@dataclass(frozen=True, slots=True)
class StubCounted(Decision):
    count: int
    expected: int


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the controller shows the croupier for a stub that is not 4 (rule D2)."""

    #: Cards dealt to each position, position 1 first.
    cards_per_position: tuple[int, ...]
    unread_cards: int
    jams: int
    stub_count: int
    stub_expected: int
    #: Stub cards the shoe reported passing its reader (0 when counted by hand).
    stub_cards_read: int
    composition: Composition
    #: True when the record alone decides whether the cards were misdealt.
    conclusive: bool
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AskCroupier(Decision):
    """The croupier must determine something; ``proposal`` is the outcome the record
    supports, or None when the record cannot decide."""

    question: str
    evidence: Evidence
    proposal: Outcome | None
    rule: str


@dataclass(frozen=True, slots=True)
class DeterminationRecorded(Decision):
    misdealt: bool
    proposal: Outcome | None


@dataclass(frozen=True, slots=True)
class FaultRaised(Decision):
    """Dealing is blocked until an attendant clears the fault (rule F1)."""

    code: FaultCode
    reason: str
    rule: str
    #: True when this fault ended the round as ``void_fault``.
    voids_round: bool


@dataclass(frozen=True, slots=True)
class FaultCleared(Decision):
    by: str
    codes: tuple[FaultCode, ...]


@dataclass(frozen=True, slots=True)
class RoundEnded(Decision):
    """The outcome of the round. ``collected_unseen`` lists the positions whose cards go
    to the discard rack unseen; the stub always does."""

    round_id: str
    outcome: Outcome
    reason: str
    rule: str
    start: StartPosition | None
    #: Cards dealt to each position, position 1 first; None when unknown (rule F3).
    cards_per_position: tuple[int, ...] | None
    wagered: tuple[int, ...]
    collected_unseen: tuple[int, ...]


# --- identities ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hand:
    position: int
    cards: tuple[Card, ...]


@dataclass(frozen=True, slots=True)
class RoundClosed(Decision):
    """Rule E2: the round record, with the banker's hand and the wagered hands only."""

    disclosure: ClassVar[Disclosure] = Disclosure.ROUND_RECORD

    round_id: str
    start: StartPosition
    wagered: tuple[int, ...]
    hands: tuple[Hand, ...]


@dataclass(frozen=True, slots=True)
class AuditCard(Decision):
    """A card's identity for the restricted journal: dealt to a position, in the stub, or
    ``unassigned`` (it left the shoe outside the procedure)."""

    disclosure: ClassVar[Disclosure] = Disclosure.RESTRICTED

    draw_index: int
    destination: int | Literal["stub", "unassigned"]
    card: Card


@dataclass(frozen=True, slots=True)
class SecurityEvent(Decision):
    """Rule D3: a duplicate or foreign card, with the card, for the restricted journal."""

    disclosure: ClassVar[Disclosure] = Disclosure.RESTRICTED

    draw_index: int
    reason: str
    card: Card
