"""Drive a Procedure through rounds the way a shoe and a croupier would, keeping a log."""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import TypeVar

from firmware_protocol import Card, GateMode
from shoe_controller.procedure import Decision, Phase, Procedure, TableRules
from tests.procedure.people import DEALER, SUPERVISOR, supervisor

_T = TypeVar("_T", bound=Decision)


def of_type(decisions: Iterable[Decision], kind: type[_T]) -> list[_T]:
    return [d for d in decisions if isinstance(d, kind)]


def shuffled(rules: TableRules, seed: int) -> list[Card]:
    deck = list(rules.deck)
    random.Random(seed).shuffle(deck)
    return deck


class Table:
    """A procedure, the deck in its shoe, and every decision it produced so far."""

    def __init__(self, rules: TableRules | None = None, *, seed: int = 0) -> None:
        self.rules = rules if rules is not None else TableRules()
        self.next_round_id = "r1"
        self.procedure = Procedure(self.rules, round_ids=lambda: self.next_round_id)
        self.deck = shuffled(self.rules, seed)
        self.drawn = 0
        self.log: list[Decision] = []

    @property
    def phase(self) -> Phase:
        return self.procedure.phase

    def record(self, decisions: list[Decision]) -> list[Decision]:
        self.log.extend(decisions)
        return decisions

    def approve(self) -> list[Decision]:
        return self.record(self.procedure.shoe_approved())

    def load(self, round_id: str = "r1", *, new_deck: bool = False) -> list[Decision]:
        """A shuffled deck goes into the shoe and the croupier confirms it (A2): its
        shuffle, or, after a deck left the table, that it is a different deck (D2)."""
        self.drawn = 0
        self.next_round_id = round_id
        out = self.record(self.procedure.deck_loaded())
        if new_deck:
            return out + self.record(self.procedure.confirm_new_deck(by=SUPERVISOR))
        if self.procedure.phase is Phase.SHUFFLE_CHECK:
            out += self.record(self.procedure.confirm_shuffle(by=DEALER))
        return out

    def open(
        self,
        wagered: Sequence[int] = (2, 3),
        dice: tuple[int, int, int] = (1, 1, 1),
        round_id: str = "r1",
    ) -> list[Decision]:
        """From a fresh procedure to the first card of the deal."""
        out = self.approve() + self.load(round_id)
        out += self.record(self.procedure.no_more_bets(wagered, by=DEALER))
        out += self.record(self.procedure.start_by_dice(*dice, by=DEALER))
        if self.rules.dice_wager:
            out += self.record(self.procedure.wager_settled(by=DEALER))
        return out

    def draw(
        self,
        card: Card | None = None,
        *,
        gate: GateMode = GateMode.DEAL,
        index: int | None = None,
        unread: bool = False,
    ) -> list[Decision]:
        """The next card of the deck leaves the shoe (or ``card`` instead of it); past the
        end of the deck, a copy of its first cards (for irregular extra cards)."""
        if card is None and not unread:
            card = self.deck[self.drawn % len(self.deck)]
        self.drawn += 1
        return self.record(
            self.procedure.card_drawn(index if index is not None else self.drawn, card, gate)
        )

    def deal(self, count: int) -> list[Decision]:
        out: list[Decision] = []
        for _ in range(count):
            out += self.draw()
        return out

    def deal_all(self) -> list[Decision]:
        return self.deal(self.rules.deal_size - self.procedure.cards_dealt)

    def stub(self, count: int | None = None) -> list[Decision]:
        """``count`` stub cards pass the reader (default: the rest of the deck)."""
        left = len(self.deck) - self.drawn if count is None else count
        out: list[Decision] = []
        for _ in range(left):
            out += self.draw(gate=GateMode.STUB)
        return out

    def shoe_empty(self) -> list[Decision]:
        return self.record(self.procedure.shoe_empty(self.drawn))

    def count_stub(self, count: int | None = None) -> list[Decision]:
        """The croupier enters the stub's count (default: the stub's size)."""
        number = self.rules.stub_size if count is None else count
        return self.record(self.procedure.stub_counted(number, by=DEALER))

    def dealt_round(self, wagered: Sequence[int] = (2, 3)) -> list[Decision]:
        """A complete regular round up to the hands in play: the shoe passes the stub and
        reports itself empty, the croupier confirms the count (D1)."""
        out = self.open(wagered) + self.deal_all() + self.stub() + self.shoe_empty()
        return out + self.count_stub()


WAGER_TABLE = TableRules(dice_wager=True)
#: Every phase but the fault, in the order of the machine.
PHASES = [phase for phase in Phase if phase is not Phase.FAULT]


def reach(phase: Phase) -> Table:  # noqa: C901 (one branch per phase the driver walks through)
    """A table with the dice wager, driven to ``phase`` by regular inputs."""
    table = Table(WAGER_TABLE, seed=3)
    p = table.procedure
    if phase is Phase.STOPPED:
        p.stop()
        return table
    if phase is Phase.NO_SHOE:
        return table
    table.approve()
    if phase is Phase.IDLE:
        return table
    if phase is Phase.SHUFFLE_CHECK:
        p.deck_loaded()
        return table
    table.load()
    if phase is Phase.DECK_LOADED:
        return table
    p.no_more_bets([2, 6], by=DEALER)
    if phase is Phase.BETS_CLOSED:
        return table
    p.start_by_dice(4, 5, 6, by=DEALER)
    if phase is Phase.START_SET:
        return table
    p.wager_settled(by=DEALER)
    table.deal(10)
    if phase is Phase.DEALING:
        return table
    if phase is Phase.VOID_MISDEAL:
        p.double_card(table.drawn + 1)
        return table
    if phase is Phase.VOID_FAULT:
        p.door_opened()
        p.door_closed()
        p.clear_fault(by=supervisor("att-0"))
        return table
    table.deal_all()
    if phase is Phase.STUB_COUNT:
        return table
    if phase in (Phase.STUB_DISPUTE, Phase.MISDEAL_REVIEW, Phase.DECK_REMOVED):
        # A short deck: the shoe reads 3 stub cards, the croupier counts 3.
        table.stub(3)
        table.shoe_empty()
        table.count_stub(3)
        if phase is Phase.STUB_DISPUTE:
            return table
        p.accept_stub_count(by=SUPERVISOR)
        if phase is Phase.DECK_REMOVED:
            p.misdeal_determination(False, by=DEALER)
        return table
    table.stub()
    table.shoe_empty()
    if phase is Phase.STUB_CONFIRM:
        return table
    table.count_stub()
    if phase is Phase.DEALT:
        return table
    assert phase is Phase.CLOSED
    p.close_round(by=DEALER)
    return table


def reach_fault() -> Table:
    """A table whose deal stopped on a jam."""
    table = reach(Phase.DEALING)
    table.procedure.jam()
    return table
