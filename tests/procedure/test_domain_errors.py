"""A person's input the procedure does not accept now is a ProcedureError that changes
nothing; the rule that refuses it is named in the message."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from shoe_controller.errors import ExitCode, ProcedureError
from shoe_controller.procedure import RULES, CardAssigned, Phase, Procedure
from shoe_controller.procedure.machine import UNDECIDED
from tests.procedure.people import DEALER, SUPERVISOR, supervisor

from .table_driver import PHASES, Table, of_type, reach, reach_fault

ALL_PHASES = [*PHASES, Phase.FAULT]

# input -> (its rule, the phases that accept it, the call)
INPUTS: dict[str, tuple[str, set[Phase], Callable[[Procedure], object]]] = {
    "confirm_shuffle": ("A2", {Phase.SHUFFLE_CHECK}, lambda p: p.confirm_shuffle(by=DEALER)),
    "confirm_new_deck": ("D2", set(), lambda p: p.confirm_new_deck(by=SUPERVISOR)),
    "set_wagers": ("A3", {Phase.DECK_LOADED}, lambda p: p.set_wagers([2], by=DEALER)),
    "no_more_bets": ("A3", {Phase.DECK_LOADED}, lambda p: p.no_more_bets([2], by=DEALER)),
    "set_start": ("B1", {Phase.BETS_CLOSED}, lambda p: p.start_by_dice(1, 2, 3, by=DEALER)),
    "wager_settled": ("B2", {Phase.START_SET}, lambda p: p.wager_settled(by=DEALER)),
    "stub_counted": (
        "D1",
        {Phase.STUB_CONFIRM, Phase.STUB_DISPUTE},
        lambda p: p.stub_counted(4, by=DEALER),
    ),
    "accept_stub_count": (
        "D1",
        {Phase.STUB_DISPUTE},
        lambda p: p.accept_stub_count(by=SUPERVISOR),
    ),
    "misdeal_determination": (
        "D2",
        {Phase.MISDEAL_REVIEW},
        lambda p: p.misdeal_determination(True, by=SUPERVISOR),
    ),
    "close_round": ("E2", {Phase.DEALT}, lambda p: p.close_round(by=DEALER)),
    "attendant_clear": ("F1", {Phase.FAULT}, lambda p: p.clear_fault(by=supervisor("att-1"))),
    "void_round": (
        "F6",
        {*UNDECIDED},
        lambda p: p.void_round("the dealer dropped a card face up", by=SUPERVISOR),
    ),
}

CASES = [pytest.param(name, phase, id=f"{name}-{phase}") for name in INPUTS for phase in ALL_PHASES]


def _snapshot(p: Procedure) -> tuple[object, ...]:
    return (p.phase, p.gate, p.round_id, p.cards_dealt, p.faults, p.round_open)


def _at(phase: Phase) -> Table:
    if phase is Phase.FAULT:
        table = reach_fault()
        table.procedure.jam_cleared(card_left=False)
        return table
    return reach(phase)


@pytest.mark.rule("A2")
@pytest.mark.rule("A3")
@pytest.mark.rule("B1")
@pytest.mark.rule("B2")
@pytest.mark.rule("D1")
@pytest.mark.rule("D2")
@pytest.mark.rule("E2")
@pytest.mark.rule("F1")
@pytest.mark.rule("F4")
@pytest.mark.rule("F6")
@pytest.mark.parametrize(("name", "phase"), CASES)
def test_an_input_is_accepted_only_where_the_rules_allow_it(name: str, phase: Phase) -> None:
    _, accepted, call = INPUTS[name]
    table = _at(phase)
    procedure = table.procedure
    before = _snapshot(procedure)
    if phase in accepted:
        assert call(procedure)  # accepted inputs always produce a decision
        return
    with pytest.raises(ProcedureError) as caught:
        call(procedure)
    message = str(caught.value)
    assert "\n" not in message
    # Every refusal ends naming the rules that refuse it.
    cited = re.search(r"\(([A-F][1-6](?:, [A-F][1-6])*)\)$", message)
    assert cited is not None, message
    assert set(cited.group(1).split(", ")) <= set(RULES), message
    assert caught.value.exit_code is ExitCode.PROCEDURE
    assert _snapshot(procedure) == before


@pytest.mark.rule("B1")
def test_a_refused_second_start_leaves_the_deal_untouched() -> None:
    table = reach(Phase.DEALING)
    with pytest.raises(ProcedureError):
        table.procedure.start_by_external_rng(4, by=DEALER)
    # The deal carries on from the same card, to the same positions: the dice gave 15,
    # the banker first, so the 11th card goes to position 4.
    [assigned] = of_type(table.deal(1), CardAssigned)
    assert (assigned.draw_index, assigned.position) == (11, 4)
