"""Rule D3: one standard deck plus one joker; a duplicate or foreign card voids and removes."""

from __future__ import annotations

import pytest

from firmware_protocol import JOKER, STANDARD_52, UNREADABLE, GateMode
from shoe_controller.errors import ProcedureError
from shoe_controller.procedure import (
    AuditCard,
    CardAssigned,
    Composition,
    Disclosure,
    FaultCode,
    FaultRaised,
    Outcome,
    Phase,
    RoundEnded,
    SecurityEvent,
    TableRules,
)
from shoe_controller.procedure.record import RoundRecord
from shoe_controller.procedure.start import start_from_rng
from tests.procedure.people import DEALER, SUPERVISOR, supervisor

from .table_driver import Table, of_type

pytestmark = pytest.mark.rule("D3")

RULES_52 = TableRules(positions=6, cards_per_position=8, deck_size=52, stub_size=4)


@pytest.mark.parametrize(("at", "copy_of"), [(2, 1), (49, 17), (30, 29)])
def test_a_duplicate_during_the_deal_voids_and_is_a_security_event(at: int, copy_of: int) -> None:
    table = Table(seed=at)
    table.open()
    table.deal(at - 1)
    duplicate = table.deck[copy_of - 1]
    decisions = table.draw(duplicate)
    [fault] = of_type(decisions, FaultRaised)
    assert (fault.code, fault.rule, fault.voids_round) == (FaultCode.COMPOSITION, "D3", True)
    # The public reason names the draw only; the restricted record says what is wrong.
    assert fault.reason == (
        f"the card of draw {at} fails the deck's composition check: a duplicate or a "
        "card foreign to the deck"
    )
    [event] = of_type(decisions, SecurityEvent)
    assert (event.draw_index, event.card, event.disclosure, event.reason) == (
        at,
        duplicate,
        Disclosure.RESTRICTED,
        "duplicates a card already read",
    )
    assert of_type(decisions, CardAssigned) == []
    [ended] = of_type(decisions, RoundEnded)
    assert ended.outcome is Outcome.VOID_FAULT


def test_a_duplicate_in_the_stub_voids_and_is_a_security_event() -> None:
    table = Table()
    table.open()
    table.deal_all()
    table.stub(1)
    decisions = table.draw(table.deck[0], gate=GateMode.STUB)
    assert of_type(decisions, SecurityEvent)[0].card == table.deck[0]
    assert of_type(decisions, RoundEnded)[0].outcome is Outcome.VOID_FAULT
    assert table.phase is Phase.FAULT


def test_a_foreign_card_voids_the_round() -> None:
    table = Table(RULES_52)
    table.open(wagered=(2,))
    table.deal(5)
    decisions = table.draw(JOKER)
    [fault] = of_type(decisions, FaultRaised)
    assert fault.code is FaultCode.COMPOSITION
    # "not part of a 52-card deck" would name the joker while the round is open (E1).
    assert "joker" not in fault.reason.lower() and "52" not in fault.reason
    [event] = of_type(decisions, SecurityEvent)
    assert (event.card, event.reason) == (JOKER, "not part of a 52-card deck")


def test_the_deck_leaves_the_table_after_a_composition_fault() -> None:
    table = Table()
    table.open()
    table.deal(3)
    table.draw(table.deck[0])
    decisions = table.record(table.procedure.clear_fault(by=supervisor("att-9")))
    assert table.phase is Phase.DECK_REMOVED
    assert of_type(decisions, RoundEnded) == []  # ended once, when the fault was raised
    table.procedure.deck_loaded()
    with pytest.raises(ProcedureError, match=r"different deck"):
        table.procedure.confirm_shuffle(by=DEALER)
    table.procedure.confirm_new_deck(by=SUPERVISOR)
    assert table.phase is Phase.DECK_LOADED


def test_the_composition_fault_never_publishes_the_card() -> None:
    table = Table()
    table.open()
    table.deal(10)
    decisions = table.draw(table.deck[4])
    card_text = table.deck[4].text
    public = [d for d in decisions if d.disclosure is Disclosure.PUBLIC]
    assert public  # the fault, said in public
    for decision in public:
        assert card_text not in repr(decision)
    assert of_type(decisions, AuditCard)[0].destination == "unassigned"


def _record(rules: TableRules | None = None) -> RoundRecord:
    rules = rules or TableRules()
    record = RoundRecord("r1", rules)
    record.set_start(start_from_rng(1, positions=rules.positions))
    return record


def test_a_full_deck_read_card_by_card_is_verified() -> None:
    rules = TableRules()
    record = _record(rules)
    for card in rules.deck[:49]:
        assert record.composition_irregularity(record.dealt + 1, card) is None
        record.assign(card)
    for index, card in enumerate(rules.deck[49:], start=50):
        record.record_stub_card(index, card)
    assert record.composition(4) is Composition.VERIFIED


def test_an_unknown_card_leaves_the_composition_unverified() -> None:
    record = _record()
    deck = TableRules().deck
    for card in (*deck[:48], UNREADABLE):
        record.assign(card)
    for index, card in enumerate(deck[49:], start=50):
        record.record_stub_card(index, card)
    assert record.composition(4) is Composition.UNVERIFIED


def test_a_standard_deck_without_its_joker_is_short() -> None:
    record = _record()
    for card in STANDARD_52[:49]:
        record.assign(card)
    for index, card in enumerate(STANDARD_52[49:], start=50):
        record.record_stub_card(index, card)
    assert record.composition(3) is Composition.SHORT
