"""Rules E1 and E2: no identity while the round is open; the stub and unwagered hands are
never shown; the banker's and wagered hands appear in the round record at close."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterator

import pytest

from firmware_protocol import Card
from shoe_controller.procedure import (
    AuditCard,
    Decision,
    Disclosure,
    Phase,
    RoundClosed,
    StateChanged,
    decisions,
)
from tests.procedure.people import DEALER, supervisor

from .scenarios import SCENARIOS
from .table_driver import Table, of_type

E1 = pytest.mark.rule("E1")
E2 = pytest.mark.rule("E2")


def _decision_classes() -> list[type[Decision]]:
    """The decision classes that exist: those the decisions module holds. (Walking
    ``__subclasses__()`` would also find the classes ``slots=True`` replaced, which no
    record is ever made of.)"""
    found = {
        value
        for value in vars(decisions).values()
        if isinstance(value, type) and issubclass(value, Decision) and value is not Decision
    }
    return sorted(found, key=lambda c: c.__name__)


def test_the_guard_sees_the_classes_records_are_made_of() -> None:
    classes = _decision_classes()
    assert len(classes) == len({c.__name__ for c in classes}), "a replaced class was kept"
    made = decisions.RoundOpened(round_id="R1")
    assert type(made) in classes


@E1
@pytest.mark.parametrize("cls", _decision_classes(), ids=lambda c: c.__name__)
def test_every_decision_declares_its_disclosure(cls: type[Decision]) -> None:
    """Confidentiality fails closed: a record says who may see it, in its own class."""
    assert "disclosure" in vars(cls), f"{cls.__name__} declares no disclosure"


def test_a_decision_that_declares_nothing_is_restricted() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Undeclared(Decision):
        value: str

    assert Undeclared.disclosure is Disclosure.RESTRICTED


def _types_in(hint: object) -> Iterator[object]:
    yield hint
    for arg in typing.get_args(hint):
        yield from _types_in(arg)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        for inner in typing.get_type_hints(hint).values():
            if typing.get_origin(inner) is not typing.ClassVar:
                yield from _types_in(inner)


def _can_hold_a_card(cls: type) -> bool:
    return any(t is Card for t in _types_in(cls))


def _cards_in(value: object) -> Iterator[Card]:
    if isinstance(value, Card):
        yield value
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from _cards_in(getattr(value, field.name))
    elif isinstance(value, tuple | list | frozenset):
        for item in value:
            yield from _cards_in(item)


@E1
@pytest.mark.parametrize("cls", _decision_classes(), ids=lambda c: c.__name__)
def test_only_decisions_declared_non_public_can_hold_an_identity(cls: type[Decision]) -> None:
    holds = cls.disclosure in (Disclosure.RESTRICTED, Disclosure.ROUND_RECORD)
    assert _can_hold_a_card(cls) is holds


@E1
def test_the_audit_records_are_restricted_and_the_round_record_is_not_public() -> None:
    assert decisions.AuditCard.disclosure is Disclosure.RESTRICTED
    assert decisions.SecurityEvent.disclosure is Disclosure.RESTRICTED
    assert decisions.RoundClosed.disclosure is Disclosure.ROUND_RECORD
    restricted = {c.__name__ for c in _decision_classes() if c.disclosure is Disclosure.RESTRICTED}
    assert restricted == {"AuditCard", "SecurityEvent", "DeckDefect"}
    assert isinstance(decisions.StateChanged("a", "b", "t"), Decision)
    assert StateChanged("a", "b", "t").disclosure is Disclosure.PUBLIC


@E1
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_no_public_decision_ever_carries_an_identity(scenario: str) -> None:
    table = SCENARIOS[scenario]()
    assert table.log
    for decision in table.log:
        if decision.disclosure is Disclosure.PUBLIC:
            assert list(_cards_in(decision)) == [], decision


#: The round records each scenario shows: one for each round closed after its deal, none
#: for a round voided, misdealt or still open.
ROUND_RECORDS = {
    "regular": 1,
    "misdeal_review": 0,
    "duplicate_card": 0,
    "door_then_next_round": 1,
    "unknown_card": 1,
    "faults_everywhere": 0,
    "foreign_card": 0,
}


def test_every_scenario_says_how_many_round_records_it_shows() -> None:
    assert set(ROUND_RECORDS) == set(SCENARIOS)


@E1
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_identities_outside_the_restricted_journal_appear_only_at_close(scenario: str) -> None:
    table = SCENARIOS[scenario]()
    phase = Phase.NO_SHOE.value
    shown_in: list[str] = []
    looked_at = 0
    for decision in table.log:
        if isinstance(decision, StateChanged):
            phase = decision.new
        if decision.disclosure is Disclosure.RESTRICTED:
            continue
        looked_at += 1
        if list(_cards_in(decision)):
            assert isinstance(decision, RoundClosed), decision
            assert decision.disclosure is Disclosure.ROUND_RECORD
            shown_in.append(phase)
    assert looked_at > 0
    # Identities were shown exactly in the round records expected, each once the round closed.
    assert shown_in == [Phase.CLOSED.value] * ROUND_RECORDS[scenario]


@E1
def test_the_round_is_open_from_the_deck_until_it_is_closed() -> None:
    table = Table()
    table.approve()
    assert not table.procedure.round_open
    table.load()
    assert table.procedure.round_open
    table.procedure.no_more_bets([2], by=DEALER)
    table.procedure.start_by_external_rng(1, by=DEALER)
    table.deal_all()
    table.stub()
    table.shoe_empty()
    table.count_stub()
    assert table.procedure.round_open  # hands in play: still open
    table.procedure.close_round(by=DEALER)
    assert not table.procedure.round_open


WAGER_SETS = [(), (2,), (3, 5), (2, 3, 4, 5, 6, 7), (7,)]


@E2
@pytest.mark.parametrize("wagered", WAGER_SETS, ids=str)
def test_the_round_record_shows_the_banker_and_the_wagered_hands_only(
    wagered: tuple[int, ...],
) -> None:
    table = Table(seed=len(wagered))
    decisions_before_close = table.dealt_round(wagered=wagered)
    assert of_type(decisions_before_close, RoundClosed) == []
    [record] = of_type(table.procedure.close_round(by=DEALER), RoundClosed)
    assert record.round_id == "r1" and record.wagered == wagered
    assert [hand.position for hand in record.hands] == [1, *wagered]

    audited = of_type(table.log, AuditCard)
    for hand in record.hands:
        assert hand.cards == tuple(a.card for a in audited if a.destination == hand.position)
    shown = {card for hand in record.hands for card in hand.cards}
    hidden = {a.card for a in audited if a.destination not in (1, *wagered)}
    assert len(hidden) == 4 + 7 * (6 - len(wagered))  # the stub and every unwagered hand
    assert shown.isdisjoint(hidden)


@E2
def test_a_void_round_never_publishes_a_round_record() -> None:
    for name in ("misdeal_review", "duplicate_card", "foreign_card"):
        table = SCENARIOS[name]()
        assert of_type(table.log, RoundClosed) == []


@E2
def test_a_fault_after_the_close_does_not_publish_the_record_again() -> None:
    table = Table()
    table.dealt_round()
    table.record(table.procedure.close_round(by=DEALER))
    table.record(table.procedure.jam())
    table.record(table.procedure.jam_cleared(card_left=False))
    table.record(table.procedure.clear_fault(by=supervisor("att-1")))
    assert table.phase is Phase.CLOSED
    assert len(of_type(table.log, RoundClosed)) == 1
