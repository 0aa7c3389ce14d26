"""Rules F1, C3, C4: every fault in every phase blocks dealing until an attendant clears it.

The matrix below states, for each irregular event in each phase, what the rules require:
no fault (the event means nothing there), a fault, or a fault that voids the round.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from firmware_protocol import UNREADABLE, GateMode
from shoe_controller.errors import ProcedureError
from shoe_controller.procedure import (
    LINK_GRACE,
    AuditCard,
    CardAssigned,
    Decision,
    FaultCleared,
    FaultCode,
    FaultRaised,
    GateCommand,
    Outcome,
    Phase,
    Procedure,
    RoundEnded,
    TableRules,
    UnreadCardPolicy,
)
from shoe_controller.procedure.model import ProcedureModel
from tests.procedure.people import DEALER, SUPERVISOR, supervisor

from .table_driver import PHASES, Table, of_type, reach

F1 = pytest.mark.rule("F1")
C3 = pytest.mark.rule("C3")
C4 = pytest.mark.rule("C4")


def _card(table: Table) -> list[Decision]:
    return table.draw(gate=GateMode.LOCKED)


EVENTS: dict[str, Callable[[Table], list[Decision]]] = {
    "jam": lambda t: t.procedure.jam(),
    "shoe_fault": lambda t: t.procedure.shoe_fault(7, "reader lamp failed"),
    "door_opened": lambda t: t.procedure.door_opened(),
    "card_drawn": _card,
    "double_card": lambda t: t.procedure.double_card(t.drawn + 1),
    "deck_loaded": lambda t: t.procedure.deck_loaded(),
    "deck_removed": lambda t: t.procedure.deck_removed(),
    "link_lost": lambda t: t.procedure.link_lost(0.0) + t.procedure.tick(LINK_GRACE),
    "events_lost": lambda t: t.procedure.events_lost("the shoe restarted without keeping them"),
    "shoe_unapproved": lambda t: t.procedure.shoe_unapproved("digest mismatch"),
    "card_left_in_jam": lambda t: t.procedure.jam_cleared(card_left=True),
    "shoe_empty": lambda t: t.procedure.shoe_empty(t.drawn),
}

P = Phase
PRE_DEAL = {P.DECK_LOADED, P.BETS_CLOSED, P.START_SET}
LIVE = PRE_DEAL | {P.DEALING}
IN_SHOE = LIVE | {P.STUB_COUNT}
EVERYWHERE: set[Phase] = set(PHASES) - {P.STOPPED}

# event -> (phases where it is a fault, phases where that fault voids the round)
EXPECTED: dict[str, tuple[set[Phase], set[Phase]]] = {
    "jam": (EVERYWHERE, set()),
    "shoe_fault": (EVERYWHERE, set()),
    "door_opened": (LIVE, LIVE),
    "card_drawn": (EVERYWHERE, IN_SHOE),
    "double_card": (EVERYWHERE - {P.DEALING, P.STUB_COUNT}, PRE_DEAL),
    "deck_loaded": (IN_SHOE, IN_SHOE),
    "deck_removed": (LIVE, LIVE),
    "link_lost": (IN_SHOE, set()),
    "events_lost": (IN_SHOE, IN_SHOE),
    "shoe_unapproved": (IN_SHOE, IN_SHOE),
    "card_left_in_jam": (EVERYWHERE - {P.STUB_COUNT}, LIVE),
    "shoe_empty": (PRE_DEAL, PRE_DEAL),
}


#: Events by which cards leave the shoe.
CARDS_OUT = frozenset({"card_drawn", "double_card", "card_left_in_jam"})


def _resolve(table: Table, event: str) -> None:
    """Undo the physical condition, as an attendant would before clearing."""
    p = table.procedure
    if event == "jam":
        p.jam_cleared(card_left=False)
    elif event == "door_opened":
        p.door_closed()
    elif event in {"link_lost", "shoe_unapproved"}:
        p.shoe_approved()


@F1
@pytest.mark.parametrize("phase", PHASES, ids=str)
@pytest.mark.parametrize("event", list(EVENTS))
def test_every_fault_in_every_phase(event: str, phase: Phase) -> None:
    table = reach(phase)
    assert table.phase is phase
    faults, voids = EXPECTED[event]
    decisions = table.record(EVENTS[event](table))
    raised = of_type(decisions, FaultRaised)
    if phase not in faults:
        assert raised == []
        assert table.phase is not Phase.FAULT
        return

    # The fault is raised with a reason, the gate locks, the round is void where required.
    assert len(raised) == 1 and raised[0].reason and raised[0].rule
    assert table.phase is Phase.FAULT
    assert GateCommand(GateMode.LOCKED, 0) in decisions
    assert table.procedure.gate is GateMode.LOCKED
    ended = of_type(decisions, RoundEnded)
    assert raised[0].voids_round is (phase in voids)
    assert [e.outcome for e in ended] == ([Outcome.VOID_FAULT] if phase in voids else [])

    # Dealing is blocked: the croupier's inputs are refused.
    for refused in (
        lambda: table.procedure.no_more_bets([2], by=DEALER),
        lambda: table.procedure.start_by_external_rng(1, by=DEALER),
        lambda: table.procedure.wager_settled(by=DEALER),
        lambda: table.procedure.stub_counted(4, by=DEALER),
        lambda: table.procedure.close_round(by=DEALER),
    ):
        with pytest.raises(ProcedureError, match=r"blocked by a fault .*attendant.*\(F1\)$"):
            refused()
    assert table.phase is Phase.FAULT

    # Only the attendant's clear leaves the fault, and it is recorded.
    _resolve(table, event)
    cleared = table.record(table.procedure.clear_fault(by=supervisor("att-42")))
    [record] = of_type(cleared, FaultCleared)
    assert record.by == "att-42"
    assert record.codes[0] is raised[0].code
    # A void round ends there (a deck loaded meanwhile then waits for its shuffle check);
    # a card (or two together) that left a deck waiting for its shuffle check sends that
    # deck out (A2); otherwise the procedure resumes where it stopped.
    if event in CARDS_OUT and phase is Phase.SHUFFLE_CHECK:
        assert table.phase is Phase.VOID_FAULT
    elif phase not in voids:
        assert table.phase is phase
    elif event == "deck_loaded":
        assert table.phase is Phase.SHUFFLE_CHECK
    else:
        assert table.phase is Phase.VOID_FAULT


@F1
@pytest.mark.rule("A2")
@pytest.mark.parametrize("event", ["card_drawn", "double_card", "card_left_in_jam"])
@pytest.mark.parametrize("phase", [P.SHUFFLE_CHECK, P.DEALT], ids=str)
def test_cards_out_of_a_waiting_deck_send_it_out(event: str, phase: Phase) -> None:
    """A deck that lost cards before its round never opens one: the deal's first gate
    limit would be behind the shoe's draw index, and the shoe's gate would stay locked for
    good. Two cards together or a card out during a jam count as a card does."""
    table = reach(phase)
    p = table.procedure
    if phase is P.DEALT:
        p.deck_loaded()  # the next deck waits in the shoe while the hands are in play
    assert p.facts().deck_waiting
    EVENTS[event](table)
    p.clear_fault(by=supervisor("att-1"))
    if phase is P.DEALT:
        assert table.phase is P.DEALT
        p.close_round(by=DEALER)
    assert table.phase is not P.SHUFFLE_CHECK
    assert not p.facts().deck_waiting and p.facts().deck_spent
    with pytest.raises(ProcedureError):
        p.confirm_shuffle(by=DEALER)
    # A fresh deck goes to its shuffle check.
    p.deck_removed()
    table.load("r2")
    assert table.phase is P.DECK_LOADED


@F1
@pytest.mark.parametrize(
    ("phase", "code"),
    [
        (P.DEALING, FaultCode.UNEXPECTED_CARD),
        (P.STUB_COUNT, FaultCode.EXTRA_CARD),
        (P.DEALT, FaultCode.UNEXPECTED_CARD),
    ],
    ids=str,
)
def test_a_card_drawn_during_a_fault_is_another_fault(phase: Phase, code: FaultCode) -> None:
    table = reach(phase)
    table.procedure.jam()
    decisions = table.draw(gate=GateMode.DEAL)
    assert of_type(decisions, CardAssigned) == []
    [fault] = of_type(decisions, FaultRaised)
    assert fault.code is code
    assert of_type(decisions, AuditCard)[0].destination == "unassigned"
    assert fault.voids_round is (phase in IN_SHOE)
    assert table.procedure.faults == (FaultCode.JAM, code)


@F1
def test_a_warning_is_not_enough_dealing_waits_for_the_attendant() -> None:
    table = Table(seed=5)
    table.open()
    table.deal(20)
    table.procedure.jam()
    decisions = table.procedure.jam_cleared(card_left=False)
    assert [type(x).__name__ for x in decisions] == ["Prompt"]  # the attendant may clear
    assert table.phase is Phase.FAULT
    assert table.procedure.gate is GateMode.LOCKED
    cleared = table.procedure.clear_fault(by=supervisor("att-1"))
    # Dealing resumes where it stopped: the shoe may let out one card more than the
    # journal holds (F5), and the limit is a draw index, wherever the deal resumes.
    assert of_type(cleared, GateCommand) == [GateCommand(GateMode.DEAL, 21)]
    assert table.phase is Phase.DEALING
    table.deal_all()
    assert table.phase is Phase.STUB_COUNT


@F1
def test_the_fault_cannot_be_cleared_while_the_shoe_is_jammed() -> None:
    table = Table()
    table.open()
    table.procedure.jam()
    with pytest.raises(ProcedureError, match=r"still reports a jam"):
        table.procedure.clear_fault(by=supervisor("att-1"))
    assert table.phase is Phase.FAULT
    assert table.procedure.faults == (FaultCode.JAM,)


@F1
@pytest.mark.rule("E4")
@pytest.mark.parametrize("attendant", ["", "   "])
def test_clearing_needs_the_attendants_id(attendant: str) -> None:
    table = Table()
    table.open()
    table.procedure.door_opened()
    with pytest.raises(ProcedureError, match=r"needs the name of the person who gives it"):
        table.procedure.clear_fault(by=supervisor(attendant))
    assert table.phase is Phase.FAULT


@F1
def test_there_is_nothing_to_clear_without_a_fault() -> None:
    table = Table()
    table.open()
    with pytest.raises(ProcedureError, match=r"^there is no fault to clear \(F1\)$"):
        table.procedure.clear_fault(by=supervisor("att-1"))


@F1
def test_every_fault_of_an_episode_is_cleared_together() -> None:
    table = Table()
    table.open()
    table.deal(2)
    table.procedure.jam()
    table.procedure.door_opened()
    table.procedure.door_closed()
    table.procedure.jam_cleared(card_left=False)
    [cleared] = of_type(table.procedure.clear_fault(by=supervisor("att-3")), FaultCleared)
    assert cleared.codes == (FaultCode.JAM, FaultCode.DOOR_OPENED)
    assert table.phase is Phase.VOID_FAULT


@F1
def test_a_controller_failure_fails_safe_into_the_fault_state() -> None:
    table = Table()
    table.open()
    table.deal(4)
    model = table.procedure._model

    def broken(event: object) -> None:
        raise RuntimeError("disk on fire")

    model.assign_card = broken  # type: ignore[method-assign]
    decisions = table.draw()
    [fault] = of_type(decisions, FaultRaised)
    assert fault.code is FaultCode.INTERNAL
    assert "RuntimeError: disk on fire" in fault.reason
    assert GateCommand(GateMode.LOCKED, 0) in decisions
    assert of_type(decisions, RoundEnded)[0].outcome is Outcome.VOID_FAULT
    assert table.phase is Phase.FAULT


@pytest.mark.rule("A1")
@F1
def test_the_gate_never_opens_for_a_shoe_that_may_not_deal() -> None:
    # Defence in depth: even if the approval were lost without the input that reports it,
    # opening the gate is refused and becomes a fault.
    for flag, code in [
        ("approved", FaultCode.SHOE_NOT_APPROVED),
        ("link_up", FaultCode.LINK_LOST),
    ]:
        table = Table()
        table.approve()
        table.load()
        table.procedure.no_more_bets([2], by=DEALER)
        model: ProcedureModel = table.procedure._model
        setattr(model.condition, flag, False)
        decisions = table.procedure.start_by_external_rng(3, by=DEALER)
        assert GateCommand(GateMode.DEAL, 49) not in decisions
        assert of_type(decisions, FaultRaised)[0].code is code
        assert table.phase is Phase.FAULT
        assert table.procedure.gate is GateMode.LOCKED


# --- C3: a card that cannot be read ---------------------------------------------------


@C3
def test_an_unread_card_voids_the_round_by_default() -> None:
    table = Table()
    table.open()
    table.deal(12)
    decisions = table.draw(unread=True)
    [fault] = of_type(decisions, FaultRaised)
    assert (fault.code, fault.rule, fault.voids_round) == (FaultCode.UNREAD_CARD, "C3", True)
    assert "Section 10.13" in fault.reason
    assert of_type(decisions, AuditCard)[0].card is UNREADABLE
    assert table.phase is Phase.FAULT


@C3
def test_the_policy_may_record_an_unknown_card_and_carry_on() -> None:
    table = Table(TableRules(unread_card_policy=UnreadCardPolicy.RECORD_UNKNOWN))
    table.open()
    table.deal(12)
    decisions = table.draw(unread=True)
    [assigned] = of_type(decisions, CardAssigned)
    assert (assigned.draw_index, assigned.read) == (13, False)
    assert of_type(decisions, FaultRaised) == []
    table.deal_all()
    table.stub()
    table.shoe_empty()
    ended = of_type(table.count_stub(), RoundEnded)
    assert ended[0].outcome is Outcome.DEALT


# --- C4: double card, jam, door -------------------------------------------------------


@C4
def test_a_double_card_is_a_misdeal() -> None:
    table = Table()
    table.open()
    table.deal(30)
    decisions = table.procedure.double_card(31)
    assert GateCommand(GateMode.LOCKED, 0) in decisions
    [ended] = of_type(decisions, RoundEnded)
    assert (ended.outcome, ended.rule) == (Outcome.VOID_MISDEAL, "C4")
    assert "draw 31" in ended.reason
    assert table.phase is Phase.VOID_MISDEAL


@C4
def test_dealing_resumes_after_a_jam_when_no_card_left_unread() -> None:
    table = Table()
    table.open()
    table.deal(7)
    table.procedure.jam()
    table.procedure.jam_cleared(card_left=False)
    table.procedure.clear_fault(by=supervisor("att-1"))
    table.deal_all()
    table.stub()
    table.shoe_empty()
    assert of_type(table.count_stub(), RoundEnded)[0].outcome is Outcome.DEALT


@C4
def test_a_card_that_left_unread_during_a_jam_voids_the_round() -> None:
    table = Table()
    table.open()
    table.deal(7)
    table.procedure.jam()
    decisions = table.procedure.jam_cleared(card_left=True)
    [fault] = of_type(decisions, FaultRaised)
    assert (fault.code, fault.rule) == (FaultCode.UNREAD_CARD, "C3")
    assert of_type(decisions, RoundEnded)[0].outcome is Outcome.VOID_FAULT
    table.procedure.clear_fault(by=supervisor("att-1"))
    assert table.phase is Phase.VOID_FAULT


@C4
def test_an_opened_door_during_the_round_voids_it() -> None:
    table = Table()
    table.open()
    table.deal(40)
    decisions = table.procedure.door_opened()
    [fault] = of_type(decisions, FaultRaised)
    assert (fault.code, fault.rule, fault.voids_round) == (FaultCode.DOOR_OPENED, "C4", True)
    [ended] = of_type(decisions, RoundEnded)
    assert ended.collected_unseen == tuple(range(1, 8))


@C4
def test_the_door_may_open_to_remove_the_stub_and_between_rounds() -> None:
    table = Table()
    table.open()
    table.deal_all()
    assert table.procedure.door_opened() == []
    # The stub taken out without passing the reader: the croupier counts it, and with no
    # figure to check it against, a supervisor accepts the count (D1).
    table.procedure.deck_removed()
    assert table.phase is Phase.STUB_CONFIRM
    table.procedure.stub_counted(4, by=DEALER)
    table.procedure.accept_stub_count(by=SUPERVISOR)
    table.procedure.close_round(by=DEALER)
    assert table.procedure.door_opened() == []
    table.load("r2")
    assert table.phase is Phase.DECK_LOADED


def test_a_fresh_procedure_has_no_shoe() -> None:
    procedure = Procedure()
    assert procedure.phase is Phase.NO_SHOE
    assert procedure.gate is GateMode.LOCKED
    assert procedure.round_id is None
