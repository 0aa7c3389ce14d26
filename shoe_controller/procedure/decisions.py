"""What the procedure decides, as frozen records the caller journals before acting (E3).

Every decision class says, in its ``disclosure``, who may see it (E1, E2):

``PUBLIC``        no card identity; may be shown or published as soon as it is journaled.
``ROUND_RECORD``  the identities E2 allows (the banker's hand and the wagered hands); the
                  procedure emits it only when the croupier closes the round.
``RESTRICTED``    card identities for the restricted audit journal only (every card, the
                  stub, unwagered hands); never shown or published, before or after.
``INTERNAL``      the table's own bookkeeping (its durable facts), journaled, not published.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from firmware_protocol import Card, GateMode
from shoe_controller.procedure.start import StartPosition


class Disclosure(enum.StrEnum):
    PUBLIC = "public"
    ROUND_RECORD = "round_record"
    RESTRICTED = "restricted"
    INTERNAL = "internal"


class Outcome(enum.StrEnum):
    """How a round ends: exactly one of these, each with a reason."""

    DEALT = "dealt"
    VOID_MISDEAL = "void_misdeal"
    VOID_DECK_REMOVED = "void_deck_removed"
    VOID_FAULT = "void_fault"
    #: The service stopped before the round's gate opened: no card was at stake (F4).
    NOT_PLAYED = "not_played"


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
    #: Another shoe answered at the table's address while cards were at stake (F2).
    SHOE_CHANGED = "shoe_changed"
    SHOE_NOT_APPROVED = "shoe_not_approved"
    #: The shoe refused, or never answered, a gate command that the deal needs (F1).
    GATE_REFUSED = "gate_refused"
    CONTROLLER_RESTARTED = "controller_restarted"
    #: A deck whose composition defect matches one removed from this table recently: the
    #: removed deck came back (D2, D3).
    DECK_RETURNED = "deck_returned"
    #: The controller failed while processing an input; the machine fails safe.
    INTERNAL = "internal"


class NoticeCode(enum.StrEnum):
    """Things journaled for maintenance that do not block dealing."""

    #: The croupier's stub count differs from the shoe's: the reader needs service (D2).
    STUB_COUNT_MISMATCH = "stub_count_mismatch"
    #: The shoe refused a gate command while it reported its door open or a jam; the gate
    #: is set again when that ends.
    GATE_DEFERRED = "gate_deferred"
    #: The shoe lost events while no round was in it; the deck's state is taken as unknown.
    EVENTS_LOST = "events_lost"
    #: The controller had stopped without being asked to while no round was open (F3).
    UNCLEAN_STOP = "unclean_stop"
    #: The system clock is not synchronised (at start, or it lost its synchronisation): the
    #: journal's times may drift from other records'.
    CLOCK_UNSYNCHRONIZED = "clock_unsynchronized"
    #: The system clock is synchronised again.
    CLOCK_SYNCHRONIZED = "clock_synchronized"


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
    #: Fails closed: a decision that declares nothing of its own is restricted (and a test
    #: fails on it), so a new record is never published by mistake.
    disclosure: ClassVar[Disclosure] = Disclosure.RESTRICTED


# --- round progress (public) ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StateChanged(Decision):
    disclosure: ClassVar[Disclosure] = Disclosure.PUBLIC

    old: str
    new: str
    trigger: str


@dataclass(frozen=True, slots=True)
class RoundOpened(Decision):
    disclosure: ClassVar[Disclosure] = Disclosure.PUBLIC

    round_id: str


@dataclass(frozen=True, slots=True)
class WagersEntered(Decision):
    """Rule A3: the positions a dealer entered as holding a wager, while bets are open."""

    disclosure: ClassVar[Disclosure] = Disclosure.PUBLIC

    positions: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class BetsClosed(Decision):
    """Rule A3: the positions holding a wager, frozen for the round."""

    disclosure: ClassVar[Disclosure] = Disclosure.PUBLIC

    wagered: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class StartPositionSet(Decision):
    disclosure: ClassVar[Disclosure] = Disclosure.PUBLIC

    start: StartPosition


@dataclass(frozen=True, slots=True)
class WagerSettled(Decision):
    """Rule B2: the croupier marked the dice wager settled."""

    disclosure: ClassVar[Disclosure] = Disclosure.PUBLIC


@dataclass(frozen=True, slots=True)
class GateCommand(Decision):
    """Set the shoe's gate. In ``DEAL`` and ``STUB`` mode the shoe locks it by itself when
    its draw index reaches ``limit`` (rule F5: at most the gate window ahead of the
    journal)."""

    disclosure: ClassVar[Disclosure] = Disclosure.PUBLIC

    mode: GateMode
    limit: int = 0


@dataclass(frozen=True, slots=True)
class CardAssigned(Decision):
    """The card at ``draw_index`` belongs to ``position``; ``read`` is false for a card
    recorded as unknown (rule C3, policy ``record_unknown``)."""

    disclosure: ClassVar[Disclosure] = Disclosure.PUBLIC

    draw_index: int
    position: int
    read: bool


@dataclass(frozen=True, slots=True)
class StubFigures:
    """What the controller knows of the stub (rule D1): the shoe's count (None when the
    shoe did not count it), the stub cards its reader reported, and the deck's size minus
    the cards dealt; with the croupier's count once entered."""

    shoe_count: int | None
    stub_cards_read: int
    by_deal: int
    expected: int
    croupier_count: int | None = None

    def agree(self, count: int) -> bool:
        """Whether every figure is known and equal to ``count``."""
        return self.shoe_count == self.stub_cards_read == self.by_deal == count


@dataclass(frozen=True, slots=True)
class StubCounted(Decision):
    """The stub's count and who counted it: the shoe's reader, or the croupier's hands. A
    croupier's count comes with the figures it was checked against and whether they all
    agree with it (D1)."""

    disclosure: ClassVar[Disclosure] = Disclosure.PUBLIC

    count: int
    expected: int
    source: Literal["shoe", "croupier"]
    figures: StubFigures | None = None
    agrees: bool | None = None
    #: The count is against a conclusive reading of the deck (D4, E5).
    contradicts: bool = False


@dataclass(frozen=True, slots=True)
class StubAccepted(Decision):
    """A supervisor accepted the croupier's count that the figures disagree with (D1)."""

    disclosure: ClassVar[Disclosure] = Disclosure.PUBLIC

    count: int
    figures: StubFigures
    #: The count accepted is against a conclusive reading, which decides (D4, E5).
    contradicts: bool = False


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the controller shows the croupier for a stub that is not 4 (rule D2)."""

    #: Cards dealt to each position, position 1 first.
    cards_per_position: tuple[int, ...]
    unread_cards: int
    jams: int
    stub_count: int
    stub_expected: int
    #: Stub cards the shoe reported passing its reader.
    stub_cards_read: int
    composition: Composition
    #: True when the record alone decides whether the cards were misdealt.
    conclusive: bool
    notes: tuple[str, ...] = ()


#: A value a prompt's words are made of: a count, a position, a round, fault codes.
PromptValue = int | str | None | tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Prompt(Decision):
    """A person's input is needed to go on. ``need`` names it (docs/integrators.md) and
    ``role`` who gives it (E4); ``proposal`` is what the record supports where the procedure
    can propose something: the outcome of a determination (D2), or the shoe's count of the
    stub (D1), never filled in as an answer; ``evidence`` what it shows; ``options`` the
    inputs beside the usual one that answer it (a clear that voids the round, F2).

    ``code`` names the prompt's variant (a need asks in more than one way: the shoe
    counted the stub or could not) and ``values`` what its words are made of, so
    that a console words it in its own language from these two alone, never from
    ``message`` (:data:`~shoe_controller.procedure.prompts.CODES` lists them)."""

    disclosure: ClassVar[Disclosure] = Disclosure.PUBLIC

    need: str
    message: str
    rule: str = ""
    proposal: Outcome | int | None = None
    evidence: Evidence | StubFigures | None = None
    role: str = "dealer"
    options: tuple[str, ...] = ()
    code: str = ""
    values: Mapping[str, PromptValue] = field(default_factory=dict, hash=False)


@dataclass(frozen=True, slots=True)
class DeterminationRecorded(Decision):
    """The croupier's determination (D2); ``contradicts`` when it goes against a conclusive
    record (a supervisor's, then)."""

    disclosure: ClassVar[Disclosure] = Disclosure.PUBLIC

    misdealt: bool
    proposal: Outcome | None
    contradicts: bool = False


@dataclass(frozen=True, slots=True)
class FaultRaised(Decision):
    """Dealing is blocked until an attendant clears the fault (rule F1). ``reason`` names
    the draw, never the card."""

    disclosure: ClassVar[Disclosure] = Disclosure.PUBLIC

    code: FaultCode
    reason: str
    rule: str
    #: True when this fault ended the round as ``void_fault``.
    voids_round: bool


@dataclass(frozen=True, slots=True)
class FaultCleared(Decision):
    disclosure: ClassVar[Disclosure] = Disclosure.PUBLIC

    by: str
    codes: tuple[FaultCode, ...]


@dataclass(frozen=True, slots=True)
class Notice(Decision):
    """Something worth a maintenance record that does not block dealing."""

    disclosure: ClassVar[Disclosure] = Disclosure.PUBLIC

    code: NoticeCode
    reason: str
    rule: str = ""


@dataclass(frozen=True, slots=True)
class RoundEnded(Decision):
    """The outcome of the round. ``collected_unseen`` lists the positions whose cards go
    to the discard rack unseen; the stub always does."""

    disclosure: ClassVar[Disclosure] = Disclosure.PUBLIC

    round_id: str
    outcome: Outcome
    reason: str
    rule: str
    start: StartPosition | None
    #: Cards dealt to each position, position 1 first.
    cards_per_position: tuple[int, ...]
    wagered: tuple[int, ...]
    collected_unseen: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TableFacts(Decision):
    """What the table must remember across a stop or a crash (F3, F4), journaled whenever
    it changes: the phase, the faults nobody cleared and where they happened, whether the
    deck must change, whether an unused deck waits in the shoe or a void round's deck must
    come out, which shoe the table deals with, and the round in progress."""

    disclosure: ClassVar[Disclosure] = Disclosure.INTERNAL

    phase: str
    faults: tuple[FaultCode, ...]
    fault_origin: str | None
    deck_must_change: bool
    deck_waiting: bool
    #: The deck of a void round is still in the shoe: it must be taken out.
    deck_spent: bool
    shoe: tuple[str, str] | None
    round_id: str | None


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
class DeckDefect(Decision):
    """Rule D3: what is wrong with a deck that leaves the table, as far as its cards were
    read: cards missing, read twice, or foreign to the deck. ``returned`` names when a deck
    with a matching defect left this table (the removed deck came back), else None. For the
    restricted journal: it names cards."""

    disclosure: ClassVar[Disclosure] = Disclosure.RESTRICTED

    missing: tuple[Card, ...]
    duplicated: tuple[Card, ...]
    foreign: tuple[Card, ...]
    returned: float | None = None


@dataclass(frozen=True, slots=True)
class SecurityEvent(Decision):
    """Rule D3: a duplicate or foreign card, with the card, for the restricted journal."""

    disclosure: ClassVar[Disclosure] = Disclosure.RESTRICTED

    draw_index: int
    reason: str
    card: Card
