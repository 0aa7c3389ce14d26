"""Rule E4: every determination comes from a signed-in person whose role allows it; one
table says which inputs need a supervisor; the shoe's buttons act for the dealer signed in
at the table and never give what needs a supervisor."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from shoe_controller.errors import ProcedureError
from shoe_controller.procedure import (
    Outcome,
    Person,
    Phase,
    Procedure,
    RoundEnded,
    StartMethod,
    StartPositionSet,
    StubCounted,
)
from shoe_controller.procedure.authority import SUPERVISOR_INPUTS, needs_supervisor
from tests.procedure.people import DEALER, SUPERVISOR

from .table_driver import Table, of_type, reach, reach_fault

pytestmark = pytest.mark.rule("E4")


def test_the_inputs_a_supervisor_alone_gives() -> None:
    assert set(SUPERVISOR_INPUTS) == {
        "confirm_new_deck",
        "clear_fault",
        "accept_stub_count",
        "void_round",
    }
    assert needs_supervisor("misdeal_determination", contradicts=True)
    assert not needs_supervisor("misdeal_determination")
    assert not needs_supervisor("confirm_shuffle")


def _new_deck(p: Procedure, by: Person) -> object:
    p.deck_loaded()
    return p.confirm_new_deck(by=by)


# input -> (the phase it is given in, the call)
SUPERVISORS: dict[str, tuple[Phase, Callable[[Procedure, Person], object]]] = {
    "confirm_new_deck": (Phase.DECK_REMOVED, _new_deck),
    "accept_stub_count": (Phase.STUB_DISPUTE, lambda p, by: p.accept_stub_count(by=by)),
    "void_round": (Phase.DEALING, lambda p, by: p.void_round("a card face up", by=by)),
    "attendant_clear": (Phase.FAULT, lambda p, by: p.clear_fault(by=by)),
}


@pytest.mark.parametrize("name", sorted(SUPERVISORS))
def test_a_dealer_may_not_give_a_supervisors_input(name: str) -> None:
    phase, call = SUPERVISORS[name]
    if phase is Phase.FAULT:
        table = reach_fault()
        table.procedure.jam_cleared(card_left=False)
    else:
        table = reach(phase)
    p = table.procedure
    refusal = r"^dealer-1 is a dealer: .* is a supervisor's; .*\(E4\)$"
    with pytest.raises(ProcedureError, match=refusal):
        call(p, DEALER)
    assert p.phase is phase
    call(p, SUPERVISOR)
    assert p.phase is not phase


def test_a_person_with_another_role_gives_no_input() -> None:
    with pytest.raises(ProcedureError, match=r"sign in as a dealer or a supervisor \(E4\)$"):
        Person("tec", "technician")  # type: ignore[arg-type]
    with pytest.raises(ProcedureError, match=r"needs the name of the person"):
        Person(" ", SUPERVISOR.role)


# --- the shoe's confirm button -----------------------------------------------------------


def test_the_confirm_button_answers_what_is_asked_with_the_proposal() -> None:
    table = Table(seed=9)
    p = table.procedure
    table.approve()
    p.deck_loaded()
    assert p.phase is Phase.SHUFFLE_CHECK
    p.confirm_button(by=DEALER)
    p.set_wagers([2, 5], by=DEALER)
    p.no_more_bets_button(by=DEALER)
    started = p.confirm_button(by=DEALER)
    [start] = of_type(started, StartPositionSet)
    assert start.start.method is StartMethod.CONTROLLER_RNG
    table.deal_all()
    table.stub()
    table.shoe_empty()
    counted = p.confirm_button(by=DEALER)
    assert of_type(counted, StubCounted)[0].count == 4
    assert of_type(counted, RoundEnded)[0].outcome is Outcome.DEALT
    p.confirm_button(by=DEALER)
    assert p.phase is Phase.CLOSED


def test_the_confirm_button_follows_the_records_proposal() -> None:
    table = reach(Phase.MISDEAL_REVIEW)
    decisions = table.procedure.confirm_button(by=DEALER)
    assert of_type(decisions, RoundEnded)[0].outcome is Outcome.VOID_DECK_REMOVED


@pytest.mark.parametrize("phase", [Phase.DECK_REMOVED, Phase.STUB_DISPUTE, Phase.DEALING])
def test_the_confirm_button_never_gives_what_a_supervisor_gives(phase: Phase) -> None:
    table = reach(phase)
    if phase is Phase.DECK_REMOVED:
        table.procedure.deck_loaded()
    with pytest.raises(ProcedureError, match=r"^the shoe's confirm button cannot answer .*\(E4\)$"):
        table.procedure.confirm_button(by=SUPERVISOR)
    assert table.phase is phase


def test_the_confirm_button_acts_as_a_dealer_even_for_a_supervisor() -> None:
    """A supervisor signed in at the console presses the button: it acts with a dealer's
    authority, so a determination against a conclusive record is not given by it."""
    table = reach(Phase.MISDEAL_REVIEW)
    p = table.procedure
    assert p.prompt is not None and p.prompt.proposal is Outcome.VOID_DECK_REMOVED
    # The proposal itself is never contradicting: the button gives it.
    p.confirm_button(by=SUPERVISOR)
    assert p.phase is Phase.DECK_REMOVED
