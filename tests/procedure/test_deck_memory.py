"""Rules D2 and D3: "el paquete de cartas completo" leaves the table and a different deck is
used. That it is different is a supervisor's determination; a deck whose defect (the card
missing, the card read twice) matches one removed from this table within a day is refused
as the removed deck, the evidence kept in the restricted journal."""

from __future__ import annotations

import random

import pytest

from firmware_protocol import Card
from shoe_controller.procedure import (
    Carry,
    DeckDefect,
    Disclosure,
    FaultCode,
    FaultRaised,
    Outcome,
    Phase,
    RoundEnded,
    TableRules,
)
from shoe_controller.procedure.core import DECK_MEMORY
from shoe_controller.procedure.inputs import RemovedDeck
from shoe_controller.procedure.record import Defect
from tests.procedure.people import DEALER, SUPERVISOR

from .table_driver import Table, of_type

pytestmark = [pytest.mark.rule("D2"), pytest.mark.rule("D3")]

DECK = list(TableRules().deck)
NOON = 1_800_000_000.0


def _duplicate_deck(seed: int) -> tuple[list[Card], Card]:
    """A deck with one card twice (and one missing), the second copy at draw 30."""
    cards = list(DECK)
    random.Random(seed).shuffle(cards)
    twice = cards[10]
    cards[29] = twice
    return cards, twice


def _short_deck(seed: int) -> tuple[list[Card], Card]:
    cards = list(DECK)
    random.Random(seed).shuffle(cards)
    return cards[:-1], cards[-1]


def _play(table: Table, deck: list[Card], *, new: bool, round_id: str) -> None:
    table.deck = deck
    table.load(round_id, new_deck=new)
    table.procedure.no_more_bets([2], by=DEALER)
    table.procedure.start_by_dice(1, 2, 3, by=DEALER)


def test_a_deck_with_a_card_twice_that_comes_back_is_refused_as_the_removed_deck() -> None:
    table = Table()
    table.approve()
    table.procedure.tick(0.0, wall=NOON)
    first, twice = _duplicate_deck(1)
    _play(table, first, new=False, round_id="r1")
    decisions = table.deal(30)
    assert of_type(decisions, FaultRaised)[0].code is FaultCode.COMPOSITION
    [defect] = of_type(decisions, DeckDefect)
    assert (defect.duplicated, defect.returned) == ((twice,), None)
    assert DeckDefect.disclosure is Disclosure.RESTRICTED
    table.procedure.clear_fault(by=SUPERVISOR)
    assert table.phase is Phase.DECK_REMOVED

    # The same deck, reshuffled, is put back and a supervisor confirms it as different.
    again = list(first)
    random.Random(2).shuffle(again)
    again.remove(twice)
    again.insert(5, twice)
    again.insert(20, twice)
    del again[-1]
    table.procedure.tick(1.0, wall=NOON + 3600)
    _play(table, again, new=True, round_id="r2")
    decisions = table.deal(21)
    [fault] = of_type(decisions, FaultRaised)
    assert (fault.code, fault.rule, fault.voids_round) == (FaultCode.DECK_RETURNED, "D3", True)
    assert "it is the removed deck, refused" in fault.reason
    assert "2027-01-15 08:00 UTC" in fault.reason
    [back] = of_type(decisions, DeckDefect)
    assert (back.duplicated, back.returned) == ((twice,), NOON)
    assert of_type(decisions, RoundEnded)[0].outcome is Outcome.VOID_FAULT
    table.procedure.clear_fault(by=SUPERVISOR)
    assert table.phase is Phase.DECK_REMOVED


def _short_round(table: Table, deck: list[Card], *, new: bool, round_id: str) -> list[object]:
    _play(table, deck, new=new, round_id=round_id)
    table.deal_all()
    table.stub()
    return list(table.shoe_empty())


def test_a_short_deck_that_comes_back_is_refused_at_its_stub() -> None:
    table = Table()
    table.approve()
    table.procedure.tick(0.0, wall=NOON)
    deck, missing = _short_deck(3)
    _short_round(table, deck, new=False, round_id="r1")
    table.count_stub(3)
    table.procedure.accept_stub_count(by=SUPERVISOR)
    removed = table.record(table.procedure.misdeal_determination(False, by=DEALER))
    [defect] = of_type(removed, DeckDefect)
    assert defect.missing == (missing,)

    reshuffled = list(deck)
    random.Random(4).shuffle(reshuffled)
    decisions = _short_round(table, reshuffled, new=True, round_id="r2")
    [fault] = of_type(decisions, FaultRaised)
    assert fault.code is FaultCode.DECK_RETURNED
    assert table.phase is Phase.FAULT


def test_a_deck_removed_more_than_a_day_ago_is_forgotten() -> None:
    table = Table()
    table.approve()
    table.procedure.tick(0.0, wall=NOON)
    first, _ = _duplicate_deck(5)
    _play(table, first, new=False, round_id="r1")
    table.deal(30)
    table.procedure.clear_fault(by=SUPERVISOR)
    table.procedure.tick(1.0, wall=NOON + DECK_MEMORY + 60)
    again, _ = _duplicate_deck(5)
    _play(table, again, new=True, round_id="r2")
    decisions = table.deal(30)
    assert of_type(decisions, FaultRaised)[0].code is FaultCode.COMPOSITION


def test_another_defect_is_not_the_removed_deck() -> None:
    table = Table()
    table.approve()
    first, _ = _duplicate_deck(6)
    _play(table, first, new=False, round_id="r1")
    table.deal(30)
    table.procedure.clear_fault(by=SUPERVISOR)
    other, other_twice = _duplicate_deck(7)
    assert other_twice != first[10]
    _play(table, other, new=True, round_id="r2")
    assert of_type(table.deal(30), FaultRaised)[0].code is FaultCode.COMPOSITION


def test_the_decks_removed_are_remembered_across_a_restart() -> None:
    first, twice = _duplicate_deck(8)
    table = Table()
    table.procedure.recover(
        Carry(removed_decks=(RemovedDeck(Defect(duplicated=frozenset({twice})), NOON),))
    )
    table.approve()
    table.procedure.tick(0.0, wall=NOON + 600)
    _play(table, first, new=False, round_id="r1")
    assert of_type(table.deal(30), FaultRaised)[0].code is FaultCode.DECK_RETURNED
