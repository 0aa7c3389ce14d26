"""Rules A1, F2, F3, F4: the approved shoe, the link to it, a restart of the controller and
a stop the operator asks for. Time is passed in; nothing here waits."""

from __future__ import annotations

import pytest

from firmware_protocol import GateMode
from shoe_controller.errors import ProcedureError
from shoe_controller.procedure import (
    LINK_GRACE,
    AuditCard,
    Carry,
    FaultCleared,
    FaultCode,
    FaultRaised,
    GateCommand,
    Notice,
    NoticeCode,
    Outcome,
    Phase,
    Procedure,
    Prompt,
    RoundClosed,
    RoundEnded,
    RoundFacts,
    TableFacts,
    start_from_dice,
)
from shoe_controller.procedure.procedure import SOME_SHOE
from tests.procedure.people import DEALER, supervisor

from .table_driver import Table, of_type

A1 = pytest.mark.rule("A1")
F2 = pytest.mark.rule("F2")
F3 = pytest.mark.rule("F3")
F4 = pytest.mark.rule("F4")
F1 = pytest.mark.rule("F1")

OTHER_MODEL = ("ES-9", SOME_SHOE[1])


def _needs(decisions: list[object]) -> list[str]:
    return [p.need for p in of_type(decisions, Prompt)]  # type: ignore[arg-type]


# --- A1 -------------------------------------------------------------------------------


@A1
def test_a_deck_in_an_unapproved_shoe_waits_for_the_approval() -> None:
    table = Table()
    decisions = table.load()
    assert of_type(decisions, FaultRaised) == []
    assert table.phase is Phase.NO_SHOE
    assert table.procedure.round_id is None
    assert all(g.mode is GateMode.LOCKED for g in of_type(decisions, GateCommand))
    table.approve()
    assert table.phase is Phase.SHUFFLE_CHECK


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
    table.procedure.clear_fault(by=supervisor("att-1"))
    assert table.phase is Phase.NO_SHOE
    with pytest.raises(ProcedureError, match=r"needs an approved shoe.*\(A1\)$"):
        table.procedure.no_more_bets([2], by=DEALER)


@A1
def test_an_unapproved_shoe_between_rounds_is_no_shoe() -> None:
    table = Table()
    table.approve()
    table.procedure.shoe_unapproved("serial number not on the list")
    assert table.phase is Phase.NO_SHOE
    table.load()
    assert table.phase is Phase.NO_SHOE and table.procedure.round_id is None


@A1
def test_a_shoe_unapproved_while_hands_are_in_play_does_not_touch_them() -> None:
    table = Table()
    table.dealt_round()
    assert table.procedure.shoe_unapproved("re-verification failed") == []
    table.procedure.close_round(by=DEALER)
    assert table.phase is Phase.CLOSED


# --- F2: the link ----------------------------------------------------------------------


@F2
def test_a_link_back_within_the_grace_lets_the_deal_go_on() -> None:
    table = Table()
    table.open()
    table.deal(25)
    assert table.procedure.link_lost(100.0) == []
    assert table.procedure.next_deadline() == 100.0 + LINK_GRACE
    assert table.procedure.tick(100.0 + LINK_GRACE - 0.1) == []
    assert of_type(table.procedure.shoe_approved(), FaultRaised) == []
    assert table.phase is Phase.DEALING
    assert table.procedure.next_deadline() is None
    # The gate the service sends again is the one the procedure holds: one card ahead.
    assert table.procedure.gate_command() == GateCommand(GateMode.DEAL, 26)
    table.deal_all()
    table.stub()
    table.shoe_empty()
    assert of_type(table.count_stub(), RoundEnded)[0].outcome is Outcome.DEALT


@F2
def test_the_outage_counts_from_its_first_loss_however_often_the_link_drops() -> None:
    table = Table()
    table.open()
    table.deal(10)
    table.procedure.link_lost(0.0)
    table.procedure.link_lost(4.0)  # a reconnection attempt failed again
    table.procedure.link_lost(9.0)
    decisions = table.procedure.tick(LINK_GRACE)
    [fault] = of_type(decisions, FaultRaised)
    assert (fault.code, fault.rule, fault.voids_round) == (FaultCode.LINK_LOST, "F2", False)
    assert table.phase is Phase.FAULT
    assert _needs(decisions) == ["wait_shoe"]


@F2
@F1
def test_past_the_grace_the_shoe_back_lets_an_attendant_resume_the_deal() -> None:
    table = Table()
    table.open()
    table.deal(25)
    table.procedure.link_lost(0.0)
    table.procedure.tick(LINK_GRACE)
    assert table.procedure.gate is GateMode.LOCKED
    back = table.procedure.shoe_approved()
    assert _needs(back) == ["attendant_clear"]
    assert table.phase is Phase.FAULT
    cleared = table.procedure.clear_fault(by=supervisor("att-5"))
    assert of_type(cleared, GateCommand) == [GateCommand(GateMode.DEAL, 26)]
    table.deal_all()
    table.stub()
    table.shoe_empty()
    assert of_type(table.count_stub(), RoundEnded)[0].outcome is Outcome.DEALT


@F2
def test_events_lost_void_the_round() -> None:
    table = Table()
    table.open()
    table.deal(25)
    decisions = table.procedure.events_lost("events 40..42 were lost")
    [fault] = of_type(decisions, FaultRaised)
    assert (fault.code, fault.rule, fault.voids_round) == (FaultCode.EVENTS_LOST, "F2", True)
    [ended] = of_type(decisions, RoundEnded)
    assert ended.outcome is Outcome.VOID_FAULT
    cleared = table.procedure.clear_fault(by=supervisor("att-5"))
    assert table.phase is Phase.VOID_FAULT
    # The croupier is told what to do next (integrators.md promises this prompt).
    assert _needs(cleared) == ["remove_deck"]


@F2
@pytest.mark.rule("F6")
def test_a_clear_while_the_shoe_is_away_must_choose_to_void_the_round() -> None:
    table = Table()
    table.open()
    table.deal(25)
    table.procedure.link_lost(0.0)
    waiting = table.procedure.tick(LINK_GRACE)
    [ask] = of_type(waiting, Prompt)
    assert (ask.need, ask.role, ask.options) == ("wait_shoe", "supervisor", ("void_round",))
    with pytest.raises(ProcedureError) as refused:
        table.procedure.clear_fault(by=supervisor("att-5"))
    assert str(refused.value) == (
        "the shoe is away with cards of round r1 at stake: wait until it is back (it sends "
        "what it holds), or clear choosing to void the round (F2)"
    )
    assert table.phase is Phase.FAULT
    decisions = table.procedure.clear_fault(by=supervisor("att-5"), void_round=True)
    assert of_type(decisions, FaultCleared)[0].by == "att-5"
    [ended] = of_type(decisions, RoundEnded)
    assert (ended.outcome, ended.rule) == (Outcome.VOID_FAULT, "F2")
    assert "att-5 cleared the fault while the shoe was away choosing to void" in ended.reason
    assert table.phase is Phase.NO_SHOE
    # The shoe back: the void round's deck is still in it, to be taken out.
    assert _needs(table.approve()) == ["remove_deck"]
    assert table.phase is Phase.VOID_FAULT


@F2
def test_a_lost_link_with_no_card_in_the_shoe_is_not_a_fault() -> None:
    table = Table()
    table.dealt_round()
    assert table.procedure.link_lost(0.0) == []
    assert table.procedure.tick(LINK_GRACE * 10) == []
    assert table.procedure.events_lost("the shoe restarted") == []
    assert table.phase is Phase.DEALT


@F2
@pytest.mark.parametrize("other", [OTHER_MODEL, ("ES-7", "SN-0002")], ids=["model", "serial"])
def test_another_shoe_while_cards_are_at_stake_voids_the_round(other: tuple[str, str]) -> None:
    table = Table()
    table.open()
    table.deal(12)
    table.procedure.link_lost(0.0)
    decisions = table.procedure.shoe_approved(other)
    [fault] = of_type(decisions, FaultRaised)
    assert (fault.code, fault.rule, fault.voids_round) == (FaultCode.SHOE_CHANGED, "F2", True)
    table.procedure.clear_fault(by=supervisor("att-1"))
    assert table.phase is Phase.VOID_FAULT


@F2
def test_a_deck_waiting_in_a_shoe_that_was_swapped_is_forgotten() -> None:
    table = Table()
    table.approve()
    table.procedure.deck_loaded()
    assert table.phase is Phase.SHUFFLE_CHECK
    table.procedure.link_lost(0.0)
    table.procedure.shoe_approved(OTHER_MODEL)
    assert table.phase is Phase.IDLE


@F1
@F2
@pytest.mark.parametrize("other", [OTHER_MODEL, ("ES-7", "SN-0002")], ids=["model", "serial"])
@pytest.mark.parametrize("condition", ["jam", "door"])
def test_a_jam_or_door_of_a_shoe_swapped_out_does_not_block_the_clear(
    other: tuple[str, str], condition: str
) -> None:
    """The shoe that reported a jam or an open door leaves the table; the one that comes
    in never reports its end, so the clear must not wait for it (F3: no dead end)."""
    table = Table()
    table.open()
    table.deal(12)
    if condition == "jam":
        table.procedure.jam()
    else:
        table.procedure.door_opened()
    assert table.phase is Phase.FAULT
    table.procedure.link_lost(0.0)
    table.procedure.shoe_approved(other)
    table.procedure.clear_fault(by=supervisor("att-1"))
    assert table.phase is Phase.VOID_FAULT
    table.procedure.deck_loaded()
    table.procedure.confirm_shuffle(by=DEALER)
    table.procedure.no_more_bets([2], by=DEALER)
    decisions = table.procedure.start_by_external_rng(1, by=DEALER)
    assert GateCommand(GateMode.DEAL, 1) in decisions


@F1
@F2
def test_a_jam_whose_end_was_lost_with_the_events_does_not_block_the_clear() -> None:
    """The jam was cleared at the shoe while the link was down, and the shoe restarted
    without keeping the event that said so: the clear must not wait for it."""
    table = Table()
    table.open()
    table.deal(12)
    table.procedure.jam()
    table.procedure.link_lost(0.0)
    table.procedure.shoe_approved()
    table.procedure.events_lost("events 20..21 lost (not_held)")
    table.procedure.clear_fault(by=supervisor("att-1"))
    assert table.phase is Phase.VOID_FAULT


@F2
@F3
@pytest.mark.parametrize("where", ["fault", "dealt"])
def test_a_deck_whose_removal_was_lost_with_the_events_opens_no_round(where: str) -> None:
    """A deck waited in the shoe (loaded during a fault, or while hands were in play); it
    was taken out again and the shoe restarted without keeping the event that said so: no
    round may open on a deck that is not there (its gate would open on an empty shoe)."""
    table = Table()
    table.open()
    p = table.procedure
    if where == "fault":
        table.deal(5)
        p.deck_removed()  # a fault: the round is void
    else:
        table.deal_all()
        table.stub()
        table.shoe_empty()
        table.count_stub()
    p.deck_loaded()
    assert p.facts().deck_waiting
    p.events_lost("events 44..45 were lost: the shoe restarted without keeping them")
    if where == "fault":
        p.clear_fault(by=supervisor("att-1"))
    else:
        p.close_round(by=DEALER)
    assert table.phase is not Phase.SHUFFLE_CHECK
    with pytest.raises(ProcedureError):
        p.confirm_shuffle(by=DEALER)
    table.load("r2")  # a deck the shoe reports now goes to its shuffle check
    assert table.phase is Phase.DECK_LOADED


@F2
def test_events_lost_between_rounds_forget_the_deck_and_say_why() -> None:
    table = Table()
    table.approve()
    table.procedure.deck_loaded()
    decisions = table.procedure.events_lost("the shoe numbered its events afresh")
    [notice] = of_type(decisions, Notice)
    assert notice.code is NoticeCode.EVENTS_LOST
    assert table.phase is Phase.IDLE


@F1
def test_a_gate_the_shoe_will_not_take_is_a_fault_the_attendant_clears() -> None:
    table = Table()
    table.open()
    table.deal(3)
    decisions = table.procedure.gate_refused("SetGate refused by the shoe: BUSY")
    [fault] = of_type(decisions, FaultRaised)
    assert (fault.code, fault.rule, fault.voids_round) == (FaultCode.GATE_REFUSED, "F1", False)
    assert _needs(decisions) == ["attendant_clear"]
    table.procedure.clear_fault(by=supervisor("att-3"))
    assert table.phase is Phase.DEALING
    assert table.procedure.gate_command() == GateCommand(GateMode.DEAL, 4)


@F1
def test_a_gate_refused_while_the_door_is_open_waits_for_the_door() -> None:
    table = Table()
    table.open()
    table.deal_all()
    table.procedure.door_opened()  # taking the stub out: not a fault (D1)
    decisions = table.procedure.gate_refused("SetGate refused by the shoe: NOT_NOW door open")
    assert of_type(decisions, FaultRaised) == []
    assert of_type(decisions, Notice)[0].code is NoticeCode.GATE_DEFERRED
    # When the door closes, the procedure asks for the same gate again.
    assert table.procedure.door_closed() == [GateCommand(GateMode.STUB, 50)]


# --- F3: a restart of the controller --------------------------------------------------

START = start_from_dice(2, 3, 4)


def _facts(phase: str, *, round_id: str | None = "r7", **changes: object) -> TableFacts:
    values: dict[str, object] = {
        "phase": phase,
        "faults": (),
        "fault_origin": None,
        "deck_must_change": False,
        "deck_waiting": False,
        "deck_spent": False,
        "shoe": SOME_SHOE,
        "round_id": round_id,
    }
    values.update(changes)
    return TableFacts(**values)  # type: ignore[arg-type]


def _round(outcome: Outcome | None = None, cards: int = 20) -> RoundFacts:
    table = Table(seed=7)
    order = table.rules.deal_order(START.position)
    dealt = tuple((i + 1, order[i], table.deck[i]) for i in range(cards))
    return RoundFacts("r7", outcome, START, frozenset({2, 5}), dealt, 4 if outcome else None)


@F3
def test_a_crash_mid_deal_voids_the_round_at_start_up_with_what_the_journal_knows() -> None:
    procedure = Procedure()
    decisions = procedure.recover(Carry(_facts("dealing"), _round(cards=20)))
    [fault] = of_type(decisions, FaultRaised)
    assert (fault.code, fault.rule, fault.voids_round) == (
        FaultCode.CONTROLLER_RESTARTED,
        "F3",
        True,
    )
    [ended] = of_type(decisions, RoundEnded)
    assert (ended.round_id, ended.outcome, ended.rule) == ("r7", Outcome.VOID_FAULT, "F3")
    # The public record of the void has the round's start, wagers and counts (not None).
    assert ended.start == START and ended.wagered == (2, 5)
    assert sum(ended.cards_per_position) == 20
    assert ended.reason.count("Section 10.13") == 1
    assert procedure.phase is Phase.FAULT and procedure.gate is GateMode.LOCKED
    assert not procedure.round_open


@F3
def test_after_a_crash_a_clear_and_a_deck_lead_to_a_dealt_round() -> None:
    table = Table()
    table.record(table.procedure.recover(Carry(_facts("dealing"), _round(cards=20))))
    # The restarted shoe reports a deck while the fault waits for the attendant.
    table.approve()
    assert of_type(table.record(table.procedure.deck_loaded()), FaultRaised) == []
    table.record(table.procedure.clear_fault(by=supervisor("att-2")))
    assert table.phase is Phase.SHUFFLE_CHECK
    table.next_round_id = "r8"
    table.record(table.procedure.confirm_shuffle(by=DEALER))
    table.drawn = 0
    table.record(table.procedure.no_more_bets([2], by=DEALER))
    table.record(table.procedure.start_by_external_rng(3, by=DEALER))
    table.deal_all()
    table.stub()
    table.shoe_empty()
    assert of_type(table.count_stub(), RoundEnded)[0].outcome is Outcome.DEALT


@F3
@pytest.mark.parametrize("phase", ["fault", "stopped"])
def test_a_fault_nobody_cleared_is_still_a_fault_after_a_restart(phase: str) -> None:
    facts = _facts(phase, round_id=None, faults=(FaultCode.JAM,), fault_origin="idle")
    procedure = Procedure()
    decisions = procedure.recover(Carry(facts, None))
    assert procedure.phase is Phase.FAULT
    assert FaultCode.JAM in procedure.faults
    crashed = phase == "fault"
    assert (FaultCode.CONTROLLER_RESTARTED in procedure.faults) is crashed
    assert _needs(decisions) == ["attendant_clear"]
    procedure.shoe_approved()
    procedure.clear_fault(by=supervisor("att-9"))
    assert procedure.phase is Phase.IDLE


@F3
def test_hands_in_play_when_the_controller_crashed_stay_in_play_after_a_clear() -> None:
    procedure = Procedure()
    procedure.recover(Carry(_facts("dealt"), _round(Outcome.DEALT, cards=49)))
    assert procedure.phase is Phase.FAULT
    assert procedure.round_open
    procedure.shoe_approved()
    procedure.clear_fault(by=supervisor("att-1"))
    assert procedure.phase is Phase.DEALT
    [record] = of_type(procedure.close_round(by=DEALER), RoundClosed)
    assert [h.position for h in record.hands] == [1, 2, 5]
    assert all(len(h.cards) == 7 for h in record.hands)


@A1
@F3
@pytest.mark.parametrize("facts", ["dealt", "stopped"])
def test_a_deck_the_journal_remembers_opens_no_round_before_the_shoe_is_heard(facts: str) -> None:
    # The deck the journal says waits may have left the shoe while the controller was down:
    # closing the hands in play must not open a round on it (found by the crash harness:
    # the round reached the gate and was void as "unapproved").
    procedure = Procedure()
    procedure.recover(Carry(_facts(facts, deck_waiting=True), _round(Outcome.DEALT, cards=49)))
    if procedure.phase is Phase.FAULT:
        procedure.clear_fault(by=supervisor("att-1"))
    assert procedure.phase is Phase.DEALT
    decisions = procedure.close_round(by=DEALER)
    assert of_type(decisions, RoundClosed)
    assert procedure.phase is Phase.NO_SHOE
    assert not procedure.round_open
    assert "confirm_shuffle" not in _needs(decisions)
    with pytest.raises(ProcedureError):
        procedure.confirm_shuffle(by=DEALER)
    procedure.shoe_approved()
    assert procedure.phase is Phase.SHUFFLE_CHECK


@F3
@F4
def test_hands_in_play_at_a_stop_are_closed_after_the_next_start() -> None:
    procedure = Procedure()
    decisions = procedure.recover(Carry(_facts("stopped"), _round(Outcome.DEALT, cards=49)))
    assert of_type(decisions, FaultRaised) == []
    assert procedure.phase is Phase.DEALT
    assert _needs(decisions) == ["close_round"]
    assert of_type(procedure.close_round(by=DEALER), RoundClosed)


@F3
def test_a_crash_between_rounds_is_noted_and_blocks_nothing() -> None:
    procedure = Procedure()
    decisions = procedure.recover(Carry(_facts("closed", round_id=None), None))
    assert of_type(decisions, Notice)[0].code is NoticeCode.UNCLEAN_STOP
    assert procedure.phase is Phase.NO_SHOE
    procedure.shoe_approved()
    assert procedure.phase is Phase.IDLE


@F3
def test_the_journal_is_taken_over_only_at_start_up() -> None:
    table = Table()
    table.open()
    with pytest.raises(ProcedureError, match=r"only at start-up.*\(F3\)$"):
        table.procedure.recover(Carry())
    assert table.phase is Phase.DEALING


# --- F4: a stop the operator asks for -------------------------------------------------


def _restart(procedure: Procedure) -> Procedure:
    """The next start, from the facts the stopped procedure left in its journal."""
    facts = procedure.facts()
    assert facts.phase == "stopped"
    again = Procedure()
    again.recover(Carry(facts, None))
    return again


@F4
@pytest.mark.parametrize("phase", [Phase.DECK_LOADED, Phase.BETS_CLOSED])
def test_a_round_whose_gate_never_opened_closes_as_not_played(phase: Phase) -> None:
    table = Table()
    table.approve()
    table.load()
    if phase is Phase.BETS_CLOSED:
        table.procedure.no_more_bets([2], by=DEALER)
    decisions = table.procedure.stop()
    [ended] = of_type(decisions, RoundEnded)
    assert (ended.outcome, ended.rule) == (Outcome.NOT_PLAYED, "F4")
    assert of_type(decisions, FaultRaised) == []
    assert table.phase is Phase.STOPPED and table.procedure.gate is GateMode.LOCKED
    # The next start needs no attendant: the untouched deck waits for its shuffle check.
    again = _restart(table.procedure)
    assert again.phase is Phase.NO_SHOE
    again.shoe_approved()
    assert again.phase is Phase.SHUFFLE_CHECK


@F4
def test_a_stop_with_cards_at_stake_voids_the_round_now_not_at_the_next_start() -> None:
    table = Table()
    table.open()
    table.deal(17)
    decisions = table.procedure.stop()
    [ended] = of_type(decisions, RoundEnded)
    assert (ended.outcome, ended.rule) == (Outcome.VOID_FAULT, "F4")
    again = _restart(table.procedure)
    # No fault to clear: the croupier is asked to take the void round's deck out.
    assert _needs(again.shoe_approved()) == ["remove_deck"]
    assert again.phase is Phase.VOID_FAULT
    again.deck_removed()
    again.deck_loaded()
    assert again.phase is Phase.SHUFFLE_CHECK


@F4
def test_a_stop_before_the_stub_is_settled_makes_the_deck_change() -> None:
    table = Table()
    table.open()
    table.deal_all()
    table.stub(3)
    table.shoe_empty()
    assert table.phase is Phase.STUB_CONFIRM
    table.procedure.stop()
    again = _restart(table.procedure)
    again.shoe_approved()
    assert again.phase is Phase.DECK_REMOVED


@F4
def test_a_stop_keeps_the_faults_nobody_cleared() -> None:
    table = Table()
    table.approve()
    table.procedure.jam()
    table.procedure.stop()
    again = _restart(table.procedure)
    assert again.phase is Phase.FAULT and again.faults == (FaultCode.JAM,)


@F4
def test_nothing_happens_after_the_stop() -> None:
    table = Table()
    table.open()
    table.procedure.stop()
    assert table.procedure.card_drawn(1, table.deck[0], GateMode.DEAL) == []
    assert table.procedure.stop() == []
    with pytest.raises(ProcedureError, match=r"stopped \(F4\)$"):
        table.procedure.close_round(by=DEALER)
    assert of_type(table.log, AuditCard) == []
