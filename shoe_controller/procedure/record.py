"""What the controller knows about one round: wagers, start, every card and the stub.

Only the machine's callbacks change a record. It checks each card against the turn and the
deck (rules C1, C2, C3, D3) and gives the evidence of rule D2, never an identity in public.
"""

from __future__ import annotations

from dataclasses import dataclass

from firmware_protocol import UNREADABLE, Card, GateMode
from shoe_controller.procedure.decisions import (
    Composition,
    Evidence,
    FaultCode,
    Hand,
    Outcome,
    StubFigures,
)
from shoe_controller.procedure.start import StartPosition
from shoe_controller.procedure.table import BANKER, TableRules, UnreadCardPolicy


@dataclass(frozen=True, slots=True)
class Defect:
    """What is wrong with a deck's cards, as far as they were read (D3)."""

    missing: frozenset[Card] = frozenset()
    duplicated: frozenset[Card] = frozenset()
    foreign: frozenset[Card] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.missing or self.duplicated or self.foreign)

    def matches(self, other: Defect) -> bool:
        """Whether the two decks share a known defect: the same card missing, read twice,
        or foreign. Two decks with that in common are taken as one."""
        return bool(
            self.missing & other.missing
            or self.duplicated & other.duplicated
            or self.foreign & other.foreign
        )


@dataclass(frozen=True, slots=True)
class Irregularity:
    """Why a card cannot be accepted: becomes a fault with this code, reason and rule."""

    code: FaultCode
    reason: str
    rule: str


class RoundRecord:
    def __init__(self, round_id: str, rules: TableRules) -> None:
        self.round_id = round_id
        self.rules = rules
        self.wagered: frozenset[int] = frozenset()
        self.start: StartPosition | None = None
        self.order: tuple[int, ...] = ()
        self.hands: dict[int, list[Card]] = {p: [] for p in range(1, rules.positions + 1)}
        self.dealt = 0
        #: The highest draw index the shoe reported in this round (F5: the gate's limit
        #: follows it).
        self.last_draw = 0
        self.unread = 0
        self.jams = 0
        #: The jams while the deal was under way: two cards may have passed as one (D2).
        self.deal_jams = 0
        self.stub_cards: list[Card] = []
        self.stub_notes: list[str] = []
        #: The stub count once entered or reported (rule D1).
        self.stub_count = 0
        #: The shoe's own count of the stub, when it reported one (D1, D2).
        self.shoe_stub_count: int | None = None
        #: The croupier's count, while a supervisor has not yet accepted it (D1), and
        #: who entered it: another person accepts it (E5).
        self.croupier_count: int | None = None
        self.count_entered_by: str | None = None
        #: Cards read twice, and cards foreign to the deck (D3).
        self.duplicated: set[Card] = set()
        self.foreign: set[Card] = set()
        self.outcome: Outcome | None = None
        #: Set when the croupier closes the round and the record is published (E2).
        self.closed = False
        #: Set once the gate opened for the deal: from then on cards are at stake (F4).
        self.gate_opened = False
        self._seen: set[Card] = set()

    # --- the deal --------------------------------------------------------------------

    def set_start(self, start: StartPosition) -> None:
        self.start = start
        self.order = self.rules.deal_order(start.position)

    def saw_draw(self, draw_index: int) -> None:
        self.last_draw = max(self.last_draw, draw_index)

    @property
    def remaining(self) -> int:
        return self.rules.deal_size - self.dealt

    @property
    def next_position(self) -> int:
        return self.order[self.dealt]

    def deal_irregularity(self, draw_index: int, card: Card, gate: GateMode) -> Irregularity | None:
        """Why this card cannot be the next card of the deal, or None when it can."""
        expected = self.dealt + 1
        if gate is not GateMode.DEAL:
            return Irregularity(
                FaultCode.CARD_OUT_OF_TURN,
                f"card {draw_index} left the shoe with the gate in {gate.name} mode, not DEAL",
                "F1",
            )
        if draw_index != expected:
            return Irregularity(
                FaultCode.CARD_OUT_OF_TURN,
                f"the shoe reports card {draw_index} where card {expected} was due",
                "F1",
            )
        if card.is_unreadable and self.rules.unread_card_policy is UnreadCardPolicy.VOID:
            return Irregularity(
                FaultCode.UNREAD_CARD,
                f"card {draw_index} left the shoe unread (Section 10.13)",
                "C3",
            )
        return self.composition_irregularity(draw_index, card)

    def assign(self, card: Card) -> int:
        """Give ``card`` to the position whose turn it is; returns that position."""
        position = self.next_position
        self.hands[position].append(card)
        self.dealt += 1
        self._note_identity(card)
        return position

    # --- the stub --------------------------------------------------------------------

    @property
    def next_stub_index(self) -> int:
        return self.dealt + len(self.stub_cards) + 1

    def record_stub_card(self, draw_index: int, card: Card) -> None:
        expected = self.next_stub_index
        if draw_index != expected:
            self.stub_notes.append(f"stub card reported as card {draw_index}, {expected} was due")
        self.stub_cards.append(card)
        self._note_identity(card)

    def note_stub(self, note: str) -> None:
        self.stub_notes.append(note)

    # --- the deck (D3) ---------------------------------------------------------------

    def composition_irregularity(self, draw_index: int, card: Card) -> Irregularity | None:
        """Why ``card`` cannot be part of this deck (D3), or None. The reason names the
        draw only: saying "not part of a 52-card deck" would name the joker (E1)."""
        if card.is_unreadable:
            return None
        if card not in self.rules.deck or card in self._seen:
            return Irregularity(
                FaultCode.COMPOSITION,
                f"the card of draw {draw_index} fails the deck's composition check: a "
                "duplicate or a card foreign to the deck",
                "D3",
            )
        return None

    def composition_detail(self, card: Card) -> str:
        """The restricted journal's account of a composition fault (the card is there)."""
        if card not in self.rules.deck:
            return f"not part of a {self.rules.deck_size}-card deck"
        return "duplicates a card already read"

    def note_defect_card(self, card: Card) -> None:
        """A card that failed the composition check (D3)."""
        if card not in self.rules.deck:
            self.foreign.add(card)
        else:
            self.duplicated.add(card)

    def defect(self, *, every_card_read: bool) -> Defect:
        """The deck's defect as far as its cards were read: cards read twice or foreign,
        and, once ``every_card_read``, the cards missing."""
        missing: frozenset[Card] = frozenset()
        if every_card_read and not self.unread and UNREADABLE not in self.stub_cards:
            missing = frozenset(self.rules.deck) - self._seen
        return Defect(missing, frozenset(self.duplicated), frozenset(self.foreign))

    @property
    def stub_cards_read(self) -> int:
        """The stub cards the shoe's reader read: one that passed it unread is not "read"
        (D4)."""
        return sum(1 for card in self.stub_cards if not card.is_unreadable)

    def stub_read_whole(self) -> bool:
        """The shoe's count of the stub is the stub cards its reader reported, each read."""
        return (
            self.shoe_stub_count is not None
            and self.shoe_stub_count == self.stub_cards_read == len(self.stub_cards)
            and not self.stub_notes
        )

    def reading_conclusive(self) -> bool:
        """The shoe read every card of the deck: the deal's 49, each read and given in
        turn, and every stub card its count says (D4). The deck's size is then a fact of
        the reading, whatever anyone counts."""
        return self.conclusive() and self.stub_read_whole()

    def read_stub(self) -> int | None:
        """The stub's size as the reading decides it, or None where it does not (D4)."""
        return len(self.stub_cards) if self.reading_conclusive() else None

    def against_reading(self, count: int) -> bool:
        """Whether a stub count of ``count`` contradicts a conclusive reading (D4, E5)."""
        read = self.read_stub()
        return read is not None and read != count

    def misdeal_excluded(self, stub_count: int) -> bool:
        """Whether the record rules a misdeal out for a stub of ``stub_count``: the deal's
        cards show every position with its 7, and the stub holds no fewer than it should.
        A stub short of its size beside a complete deal may be two cards that passed the
        reader as one, which put 8 at a position (D2): then a misdeal contradicts
        nothing."""
        return self.conclusive() and stub_count >= self.rules.stub_size

    def stub_figures(self) -> StubFigures:
        """The figures a stub count is checked against (D1)."""
        return StubFigures(
            shoe_count=self.shoe_stub_count,
            stub_cards_read=self.stub_cards_read,
            by_deal=self.rules.deck_size - self.dealt,
            expected=self.rules.stub_size,
            croupier_count=self.croupier_count,
        )

    def _note_identity(self, card: Card) -> None:
        if card.is_unreadable:
            self.unread += 1
        else:
            self._seen.add(card)

    def composition(self, stub_count: int) -> Composition:
        stub_known = len(self.stub_cards) == stub_count and UNREADABLE not in self.stub_cards
        if self.unread or not stub_known or self.stub_notes:
            return Composition.UNVERIFIED
        if len(self._seen) == self.rules.deck_size:
            return Composition.VERIFIED
        return Composition.SHORT

    # --- rule D2 ---------------------------------------------------------------------

    def conclusive(self) -> bool:
        """Whether the deal's own cards show every position with its cards: each card
        read and given in turn, and no jam while the deal was under way (two cards may have
        passed as one). Whether a position holds more or fewer than 7 is a fact of the
        deal, so the stub (its count, its notes, its unread cards) is no part of it."""
        per_position = self.rules.cards_per_position
        return (
            self.dealt == self.rules.deal_size
            and all(len(hand) == per_position for hand in self.hands.values())
            and not any(card.is_unreadable for hand in self.hands.values() for card in hand)
            and not self.deal_jams
        )

    def evidence(self, stub_count: int) -> Evidence:
        return Evidence(
            cards_per_position=self.cards_per_position(),
            unread_cards=self.unread,
            jams=self.jams,
            stub_count=stub_count,
            stub_expected=self.rules.stub_size,
            stub_cards_read=self.stub_cards_read,
            composition=self.composition(stub_count),
            conclusive=self.misdeal_excluded(stub_count),
            notes=tuple(self.stub_notes),
        )

    # --- the outcome -----------------------------------------------------------------

    def cards_per_position(self) -> tuple[int, ...]:
        return tuple(len(self.hands[p]) for p in sorted(self.hands))

    def collected_unseen(self, outcome: Outcome) -> tuple[int, ...]:
        """Positions whose cards go to the discard rack unseen: the betting positions
        without a wager when the hands are in play, every hand dealt when the round is
        void, none when no card was dealt."""
        if outcome is Outcome.DEALT:
            return tuple(p for p in self.rules.betting_positions if p not in self.wagered)
        return tuple(p for p in sorted(self.hands) if self.hands[p])

    @classmethod
    def restore(
        cls,
        round_id: str,
        rules: TableRules,
        *,
        start: StartPosition | None,
        wagered: frozenset[int],
        cards: tuple[tuple[int, int, Card], ...],
        stub_count: int | None,
    ) -> RoundRecord:
        """A round rebuilt from the journal at start-up: ``cards`` as (draw index,
        position, card) in draw order (F3, F4)."""
        record = cls(round_id, rules)
        record.wagered = wagered
        if start is not None:
            record.set_start(start)
        for _index, position, card in cards:
            record.hands[position].append(card)
            record.dealt += 1
            record._note_identity(card)
        record.last_draw = max((index for index, _, _ in cards), default=0)
        record.gate_opened = record.dealt > 0
        if stub_count is not None:
            record.stub_count = stub_count
        return record

    def closed_hands(self) -> tuple[Hand, ...]:
        """The hands E2 lets the round record show: the banker's and the wagered ones."""
        shown = sorted({BANKER, *self.wagered})
        return tuple(Hand(p, tuple(self.hands[p])) for p in shown)
