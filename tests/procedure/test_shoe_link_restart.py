"""Rules A1, F2, F3: the approved shoe, the link to it, and a restart of the controller."""

from __future__ import annotations

import pytest

from firmware_protocol import GateMode
from shoe_controller.errors import ProcedureError
from shoe_controller.procedure import (
    FaultCleared,
    FaultCode,
    FaultRaised,
    GateCommand,
    Outcome,
    Phase,
    Procedure,
    RoundEnded,
)

from .table_driver import Table, of_type

A1 = pytest.mark.rule("A1")
F2 = pytest.mark.rule("F2")
F3 = pytest.mark.rule("F3")


# --- A1 -------------------------------------------------------------------------------


@A1
def test_a_shoe_that_is_not_approved_cannot_start_a_round() -> None:
    table = Table()
    decisions = table.load()
    [fault] = of_type(decisions, FaultRaised)
    assert (fault.code, fault.rule, fault.voids_round) == (
        FaultCode.SHOE_NOT_APPROVED,
        "A1",
        False,
    )
    assert table.procedure.round_id is None
    assert all(g.mode is GateMode.LOCKED for g in of_type(decisions, GateCommand))
    table.procedure.attendant_clear("att-1")
    assert table.phase is Phase.NO_SHOE


@A1
def test_approval_lets_a_round_start() -> None:
    table = Table()
    assert of_type(table.approve(), GateCommand) == []
    assert table.phase is Phase.IDLE
    table.load()
    assert table.phase is Phase.DECK_LOADED


@A1
def test_a_shoe_unapproved_during_the_round_voids_it() -> None:
    table = Table()
    table.open()
    table.deal(9)
    decisions = table.procedure.shoe_unapproved("firmware digest does not match the image")
    [fault] = of_type(decisions, FaultRaised)
    assert fault.code is FaultCode.SHOE_NOT_APPROVED
    assert fault.reason == "the shoe is not approved: firmware digest does not match the image"
    assert of_type(decisions, RoundEnded)[0].outcome is Outcome.VOID_FAULT
    table.procedure.attendant_clear("att-1")
    assert table.phase is Phase.NO_SHOE
    with pytest.raises(ProcedureError, match=r"needs an approved shoe.*\(A1\)$"):
        table.procedure.no_more_bets([2])


@A1
def test_an_unapproved_shoe_between_rounds_is_no_shoe() -> None:
    table = Table()
    table.approve()
    table.procedure.shoe_unapproved("serial number not on the list")
    assert table.phase is Phase.NO_SHOE
    assert of_type(table.load(), FaultRaised)[0].code is FaultCode.SHOE_NOT_APPROVED


@A1
def test_a_shoe_unapproved_while_hands_are_in_play_does_not_touch_them() -> None:
    table = Table()
    table.dealt_round()
    assert table.procedure.shoe_unapproved("re-verification failed") == []
    table.procedure.close_round()
    assert of_type(table.load("r2"), FaultRaised)[0].code is FaultCode.SHOE_NOT_APPROVED


# --- F2 -------------------------------------------------------------------------------


@F2
def test_a_lost_link_blocks_the_deal_and_the_kept_events_let_it_resume() -> None:
    table = Table()
    table.open()
    table.deal(25)
    decisions = table.procedure.link_lost()
    [fault] = of_type(decisions, FaultRaised)
    assert (fault.code, fault.rule, fault.voids_round) == (FaultCode.LINK_LOST, "F2", False)
    assert table.procedure.gate is GateMode.LOCKED
    assert table.procedure.link_restored(events_lost=False) == []
    assert table.phase is Phase.FAULT
    cleared = table.procedure.attendant_clear("att-5")
    assert of_type(cleared, GateCommand) == [GateCommand(GateMode.DEAL, 49)]
    table.deal_all()
    table.stub()
    assert of_type(table.shoe_empty(), RoundEnded)[0].outcome is Outcome.DEALT


@F2
def test_events_lost_while_the_link_was_down_void_the_round() -> None:
    table = Table()
    table.open()
    table.deal(25)
    table.procedure.link_lost()
    decisions = table.procedure.link_restored(events_lost=True)
    [fault] = of_type(decisions, FaultRaised)
    assert (fault.code, fault.rule, fault.voids_round) == (FaultCode.EVENTS_LOST, "F2", True)
    [ended] = of_type(decisions, RoundEnded)
    assert ended.outcome is Outcome.VOID_FAULT
    table.procedure.attendant_clear("att-5")
    assert table.phase is Phase.VOID_FAULT


@F2
def test_a_restarted_shoe_that_lost_events_voids_even_without_a_lost_link_report() -> None:
    table = Table()
    table.open()
    table.deal(3)
    decisions = table.procedure.link_restored(events_lost=True)
    assert of_type(decisions, RoundEnded)[0].outcome is Outcome.VOID_FAULT


@F2
def test_clearing_while_the_link_is_still_down_voids_the_round() -> None:
    table = Table()
    table.open()
    table.deal(25)
    table.procedure.link_lost()
    decisions = table.procedure.attendant_clear("att-5")
    assert of_type(decisions, FaultCleared)[0].by == "att-5"
    [ended] = of_type(decisions, RoundEnded)
    assert (ended.outcome, ended.rule) == (Outcome.VOID_FAULT, "F2")
    assert table.phase is Phase.NO_SHOE
    table.approve()
    assert table.phase is Phase.IDLE


@F2
def test_a_lost_link_between_rounds_is_not_a_fault() -> None:
    table = Table()
    table.dealt_round()
    assert table.procedure.link_lost() == []
    assert table.procedure.link_restored(events_lost=True) == []
    assert table.phase is Phase.DEALT


# --- F3 -------------------------------------------------------------------------------


@F3
@pytest.mark.parametrize("approved_first", [False, True])
def test_a_restart_mid_round_voids_it_at_start_up_and_keeps_the_gate_locked(
    approved_first: bool,
) -> None:
    procedure = Procedure()
    if approved_first:
        procedure.shoe_approved()
    decisions = procedure.restarted_mid_round("r17", "power failure")
    assert decisions[0] == FaultRaised(
        FaultCode.CONTROLLER_RESTARTED,
        "the controller restarted during round r17: power failure (Section 10.13)",
        "F3",
        True,
    )
    assert GateCommand(GateMode.LOCKED, 0) in decisions
    [ended] = of_type(decisions, RoundEnded)
    assert (ended.round_id, ended.outcome, ended.rule) == ("r17", Outcome.VOID_FAULT, "F3")
    assert ended.cards_per_position is None
    assert ended.collected_unseen == tuple(range(1, 8))
    assert procedure.phase is Phase.FAULT
    assert not procedure.round_open
    procedure.attendant_clear("att-2")
    assert procedure.phase is (Phase.VOID_FAULT if approved_first else Phase.NO_SHOE)
    assert procedure.gate is GateMode.LOCKED


@F3
def test_a_restart_is_recorded_only_at_start_up() -> None:
    table = Table()
    table.open()
    with pytest.raises(ProcedureError, match=r"only at start-up.*\(F3\)$"):
        table.procedure.restarted_mid_round("r0", "crash")
    assert table.phase is Phase.DEALING
    with pytest.raises(ProcedureError, match=r"round id and the reason"):
        Procedure().restarted_mid_round("r0", " ")
