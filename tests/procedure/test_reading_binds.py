"""Rules D4 and E5: the reading binds. When the shoe read every card of the deck, the deck's
size is a fact whatever anyone counts; no one person overrides what the controller read;
a stub card that passed the reader unread is not "read"."""

from __future__ import annotations

import pytest

from firmware_protocol import GateMode
from shoe_controller.errors import ProcedureError
from shoe_controller.procedure import (
    Decision,
    DeckDefect,
    Disclosure,
    Outcome,
    Phase,
    RoundEnded,
    StubAccepted,
    StubCounted,
)
from tests.procedure.people import DEALER, SUPERVISOR, supervisor

from .table_driver import Table, of_type

D4 = pytest.mark.rule("D4")
E5 = pytest.mark.rule("E5")


def _read_whole(stub: int) -> Table:
    """Every card of the deal read and given in turn, ``stub`` stub cards read, the shoe
    empty after them: a conclusive reading."""
    table = Table()
    table.open((2, 3))
    table.deal_all()
    table.stub(stub)
    table.shoe_empty()
    return table


@D4
@pytest.mark.parametrize("count", [3, 4, 5])
def test_a_short_deck_read_whole_is_never_a_dealt_round(count: int) -> None:
    """``deck=short``: the shoe counts 3 and read 3. Whatever the croupier counts and
    another person accepts, the reading decides a stub of 3: the round goes to the
    determination, never to the hands in play."""
    table = _read_whole(3)
    counted = table.count_stub(count)
    assert of_type(counted, StubCounted)[0].contradicts is (count != 3)
    table.record(table.procedure.accept_stub_count(by=SUPERVISOR))
    assert table.phase is Phase.MISDEAL_REVIEW
    assert table.procedure.prompt is not None
    assert table.procedure.prompt.code == "misdeal_determination_read"
    decisions = table.record(table.procedure.misdeal_determination(False, by=DEALER))
    [ended] = of_type(decisions, RoundEnded)
    assert ended.outcome is Outcome.VOID_DECK_REMOVED
    assert table.procedure.facts().deck_must_change


@D4
def test_the_missing_card_of_a_deck_read_whole_is_its_restricted_defect() -> None:
    table = _read_whole(3)
    table.count_stub(4)
    table.record(table.procedure.accept_stub_count(by=SUPERVISOR))
    table.record(table.procedure.misdeal_determination(True, by=DEALER))
    [defect] = of_type(table.log, DeckDefect)
    assert defect.disclosure is Disclosure.RESTRICTED
    assert defect.missing == (table.deck[-1],)
    public: list[Decision] = [d for d in table.log if d.disclosure is Disclosure.PUBLIC]
    assert table.deck[-1].text not in repr(public)


@E5
def test_one_supervisor_alone_cannot_void_a_clean_round() -> None:
    """Shoe, reader and deal all say 4; a supervisor enters 3 and accepts her own count:
    refused. A second supervisor may accept it: two people, each journaled with the
    figures and with the count recorded as contradicting the reading."""
    table = _read_whole(4)
    counted = table.record(table.procedure.stub_counted(3, by=SUPERVISOR))
    [entered] = of_type(counted, StubCounted)
    assert entered.contradicts and entered.figures is not None
    with pytest.raises(ProcedureError, match=r"^super-1 entered this count") as refused:
        table.procedure.accept_stub_count(by=SUPERVISOR)
    assert (refused.value.code, refused.value.values) == (
        "second_person",
        {"person": SUPERVISOR.name},
    )
    assert table.phase is Phase.STUB_DISPUTE
    accepted = table.record(table.procedure.accept_stub_count(by=supervisor("super-2")))
    [acceptance] = of_type(accepted, StubAccepted)
    assert acceptance.contradicts and acceptance.count == 3
    assert table.phase is Phase.MISDEAL_REVIEW


@E5
def test_a_dealer_s_count_is_accepted_by_a_supervisor_who_is_another_person() -> None:
    table = _read_whole(4)
    table.count_stub(5)
    with pytest.raises(ProcedureError, match=r"is a dealer: accepting"):
        table.procedure.accept_stub_count(by=DEALER)
    table.record(table.procedure.accept_stub_count(by=SUPERVISOR))
    assert table.phase is Phase.MISDEAL_REVIEW


@D4
def test_a_stub_card_that_passed_the_reader_unread_is_not_read() -> None:
    """``??`` among the stub's cards: the shoe counts 4, its reader read 3. The figures
    disagree, nothing of the reading is conclusive, and a supervisor accepts the count."""
    table = Table()
    table.open((2, 3))
    table.deal_all()
    table.stub(3)
    table.draw(gate=GateMode.STUB, unread=True)
    table.shoe_empty()
    counted = table.count_stub(4)
    [entered] = of_type(counted, StubCounted)
    assert entered.figures is not None and entered.figures.stub_cards_read == 3
    assert (entered.agrees, entered.contradicts) == (False, False)
    assert table.phase is Phase.STUB_DISPUTE
    decisions = table.record(table.procedure.accept_stub_count(by=SUPERVISOR))
    assert of_type(decisions, RoundEnded)[0].outcome is Outcome.DEALT
