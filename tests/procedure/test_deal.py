"""Rules A2, A3, B2, C1, C2: from the deck's loading through the 49th card."""

from __future__ import annotations

from collections import Counter

import pytest

from firmware_protocol import GateMode
from shoe_controller.errors import ProcedureError
from shoe_controller.procedure import (
    AuditCard,
    BetsClosed,
    CardAssigned,
    DealingDirection,
    FaultCode,
    FaultRaised,
    GateCommand,
    Outcome,
    Phase,
    Procedure,
    RoundEnded,
    RoundOpened,
    TableRules,
)
from tests.procedure.people import DEALER

from .table_driver import Table, of_type

# For each start, one turn round the table written out by hand (not computed by the code
# under test): counting k, k+1, ..., 7, 1, ...; reverse k, k-1, ..., 1, 7, ...
ONE_TURN = {
    DealingDirection.COUNTING: {
        1: (1, 2, 3, 4, 5, 6, 7),
        2: (2, 3, 4, 5, 6, 7, 1),
        3: (3, 4, 5, 6, 7, 1, 2),
        4: (4, 5, 6, 7, 1, 2, 3),
        5: (5, 6, 7, 1, 2, 3, 4),
        6: (6, 7, 1, 2, 3, 4, 5),
        7: (7, 1, 2, 3, 4, 5, 6),
    },
    DealingDirection.REVERSE: {
        1: (1, 7, 6, 5, 4, 3, 2),
        2: (2, 1, 7, 6, 5, 4, 3),
        3: (3, 2, 1, 7, 6, 5, 4),
        4: (4, 3, 2, 1, 7, 6, 5),
        5: (5, 4, 3, 2, 1, 7, 6),
        6: (6, 5, 4, 3, 2, 1, 7),
        7: (7, 6, 5, 4, 3, 2, 1),
    },
}
CASES = [(d, k) for d in ONE_TURN for k in ONE_TURN[d]]


@pytest.mark.rule("C1")
@pytest.mark.parametrize(("direction", "start"), CASES)
def test_seven_cards_go_to_each_position_in_turn(direction: DealingDirection, start: int) -> None:
    table = Table(TableRules(dealing_direction=direction), seed=start)
    table.approve()
    table.load()
    table.procedure.no_more_bets([2], by=DEALER)
    table.procedure.start_by_external_rng(start, by=DEALER)
    assigned = of_type(table.deal_all(), CardAssigned)
    assert [a.position for a in assigned] == list(ONE_TURN[direction][start] * 7)
    assert [a.draw_index for a in assigned] == list(range(1, 50))
    assert Counter(a.position for a in assigned) == dict.fromkeys(range(1, 8), 7)
    assert table.phase is Phase.STUB_COUNT


@pytest.mark.rule("C1")
def test_every_position_is_dealt_whether_or_not_it_holds_a_wager() -> None:
    table = Table()
    table.open(wagered=[])
    assigned = of_type(table.deal_all(), CardAssigned)
    assert {a.position for a in assigned} == set(range(1, 8))


@pytest.mark.rule("C2")
def test_every_card_is_read_and_assigned_to_the_position_whose_turn_it_is() -> None:
    table = Table(seed=11)
    table.open(dice=(2, 2, 1))  # total 5: position 5 first
    decisions = table.deal_all()
    assigned = of_type(decisions, CardAssigned)
    audited = of_type(decisions, AuditCard)
    assert [(a.draw_index, a.position) for a in assigned] == [
        (c.draw_index, c.destination) for c in audited
    ]
    assert [c.card for c in audited] == table.deck[:49]
    assert all(a.read for a in assigned)
    assert assigned[0].position == 5


@pytest.mark.rule("C2")
def test_the_gate_opens_for_exactly_the_deal_and_locks_after_the_49th_card() -> None:
    table = Table()
    opening = table.open()
    # The gate lets out one card ahead of the journal (F5): card N+1 only once the
    # caller has journaled card N, which it does before acting on any decision (E3).
    assert of_type(opening, GateCommand) == [GateCommand(GateMode.DEAL, 1)]
    for index in range(1, 49):
        assert of_type(table.draw(), GateCommand) == [GateCommand(GateMode.DEAL, index + 1)]
    last = table.draw()
    # The shoe locks by itself at its limit; the controller switches straight to stub mode,
    # where the stub's cards leave one window at a time too.
    assert of_type(last, GateCommand) == [GateCommand(GateMode.STUB, 50)]
    assert table.procedure.gate is GateMode.STUB
    assert of_type(table.stub(1), GateCommand) == [GateCommand(GateMode.STUB, 51)]


@pytest.mark.rule("F5")
@pytest.mark.parametrize("window", [1, 2, 4])
def test_no_card_leaves_more_than_the_window_ahead_of_the_journal(window: int) -> None:
    table = Table(TableRules(gate_window=window))
    limits = of_type(table.open(), GateCommand)
    for _ in range(table.rules.deal_size):
        limits += of_type(table.draw(), GateCommand)
    deal = [g.limit for g in limits if g.mode is GateMode.DEAL]
    # Before card N is decided (journaled), the shoe may let out at most N + window - 1.
    assert deal == [min(n + window, table.rules.deal_size) for n in range(len(deal))]


@pytest.mark.rule("F5")
def test_after_a_fault_no_further_card_may_leave() -> None:
    table = Table(TableRules(gate_window=1))
    table.open()
    table.deal(10)
    decisions = table.procedure.door_opened()
    assert GateCommand(GateMode.LOCKED, 0) in decisions
    # The shoe's own limit stopped it at card 11 at the latest: one card, not 39.
    assert table.procedure.gate_command() == GateCommand(GateMode.LOCKED, 0)


@pytest.mark.rule("C2")
@pytest.mark.rule("F1")
def test_a_50th_card_in_deal_mode_is_a_fault_never_accepted() -> None:
    table = Table()
    table.open()
    table.deal_all()
    decisions = table.draw(gate=GateMode.DEAL)
    [fault] = of_type(decisions, FaultRaised)
    assert fault.code is FaultCode.EXTRA_CARD and fault.rule == "C2" and fault.voids_round
    assert of_type(decisions, CardAssigned) == []
    assert of_type(decisions, GateCommand) == [GateCommand(GateMode.LOCKED, 0)]
    assert table.phase is Phase.FAULT


@pytest.mark.rule("C2")
@pytest.mark.rule("F1")
@pytest.mark.parametrize(
    ("index", "gate", "reason"),
    [
        (3, GateMode.DEAL, "the shoe reports card 3 where card 2 was due"),
        (1, GateMode.DEAL, "the shoe reports card 1 where card 2 was due"),
        (2, GateMode.LOCKED, "card 2 left the shoe with the gate in LOCKED mode, not DEAL"),
        (2, GateMode.STUB, "card 2 left the shoe with the gate in STUB mode, not DEAL"),
    ],
)
def test_a_card_outside_its_turn_is_a_fault(index: int, gate: GateMode, reason: str) -> None:
    table = Table()
    table.open()
    table.draw()
    decisions = table.draw(index=index, gate=gate)
    [fault] = of_type(decisions, FaultRaised)
    assert (fault.code, fault.reason, fault.rule) == (FaultCode.CARD_OUT_OF_TURN, reason, "F1")
    [ended] = of_type(decisions, RoundEnded)
    assert ended.outcome is Outcome.VOID_FAULT
    assert of_type(decisions, CardAssigned) == []
    assert table.procedure.cards_dealt == 1


@pytest.mark.rule("A2")
def test_a_loaded_deck_opens_a_round_with_its_id() -> None:
    table = Table()
    table.approve()
    decisions = table.load("2026-11-29/0042")
    assert of_type(decisions, RoundOpened) == [RoundOpened("2026-11-29/0042")]
    assert table.phase is Phase.DECK_LOADED
    assert table.procedure.round_id == "2026-11-29/0042"
    assert table.procedure.gate is GateMode.LOCKED


@pytest.mark.rule("A2")
def test_no_more_bets_needs_a_loaded_deck() -> None:
    table = Table()
    table.approve()
    with pytest.raises(ProcedureError, match=r"^no deck is loaded: .* \(A2\)$"):
        table.procedure.no_more_bets([2], by=DEALER)
    assert table.phase is Phase.IDLE


@pytest.mark.rule("A2")
def test_round_ids_come_from_the_callers_generator() -> None:
    ids = iter(["20261201T101500Z-7", "20261201T102100Z-90"])
    procedure = Procedure(round_ids=lambda: next(ids))
    procedure.shoe_approved()
    procedure.deck_loaded()
    assert procedure.round_id is None  # the round opens with the shuffle's confirmation
    procedure.confirm_shuffle(by=DEALER)
    assert procedure.round_id == "20261201T101500Z-7"


@pytest.mark.rule("A3")
def test_no_more_bets_freezes_the_wagered_positions() -> None:
    table = Table()
    table.approve()
    table.load()
    decisions = table.procedure.no_more_bets({7, 2, 4}, by=DEALER)
    assert of_type(decisions, BetsClosed) == [BetsClosed((2, 4, 7))]
    with pytest.raises(ProcedureError, match=r"^bets are already closed for round r1: .*\(A3\)$"):
        table.procedure.no_more_bets({2}, by=DEALER)
    table.procedure.start_by_external_rng(1, by=DEALER)
    decisions = table.deal_all() + table.stub() + table.shoe_empty() + table.count_stub()
    [ended] = of_type(decisions, RoundEnded)
    assert ended.wagered == (2, 4, 7)


@pytest.mark.rule("A3")
@pytest.mark.parametrize("position", [1, 0, 8, "3", 2.0])
def test_only_betting_positions_can_hold_a_wager(position: object) -> None:
    table = Table()
    table.approve()
    table.load()
    with pytest.raises(ProcedureError, match=r"cannot hold a wager: list betting positions 2 to 7"):
        table.procedure.no_more_bets([2, position], by=DEALER)  # type: ignore[list-item]
    assert table.phase is Phase.DECK_LOADED


@pytest.mark.rule("A3")
@pytest.mark.rule("B1")
def test_the_gate_stays_locked_until_bets_are_closed_and_the_start_is_set() -> None:
    table = Table()
    decisions = table.approve() + table.load()
    decisions += table.record(table.procedure.no_more_bets([3], by=DEALER))
    assert of_type(decisions, GateCommand) == []
    assert table.procedure.gate is GateMode.LOCKED


@pytest.mark.rule("A3")
def test_the_start_cannot_be_set_before_no_more_bets() -> None:
    table = Table()
    table.approve()
    table.load()
    with pytest.raises(ProcedureError, match=r"^announce no more bets before .*\(A3\)$"):
        table.procedure.start_by_external_rng(1, by=DEALER)
    assert table.phase is Phase.DECK_LOADED


@pytest.mark.rule("A3")
@pytest.mark.rule("F1")
@pytest.mark.parametrize("phase", ["deck_loaded", "bets_closed"])
def test_a_card_before_the_deal_is_an_irregularity_that_voids(phase: str) -> None:
    table = Table()
    table.approve()
    table.load()
    if phase == "bets_closed":
        table.procedure.no_more_bets([2], by=DEALER)
    decisions = table.draw(gate=GateMode.LOCKED)
    [fault] = of_type(decisions, FaultRaised)
    assert (fault.code, fault.rule, fault.voids_round) == (FaultCode.UNEXPECTED_CARD, "A3", True)
    assert fault.reason == "the card of draw 1 left the shoe before the deal began"
    [audit] = of_type(decisions, AuditCard)
    assert audit.destination == "unassigned"


@pytest.mark.rule("B2")
def test_with_the_dice_wager_the_gate_waits_until_it_is_settled() -> None:
    table = Table(TableRules(dice_wager=True))
    table.approve()
    table.load()
    table.procedure.no_more_bets([2], by=DEALER)
    decisions = table.procedure.start_by_dice(3, 3, 3, by=DEALER)
    assert table.phase is Phase.START_SET
    assert of_type(decisions, GateCommand) == []
    early = table.draw(gate=GateMode.LOCKED)
    assert of_type(early, FaultRaised)[0].rule == "A3"


@pytest.mark.rule("B2")
def test_settling_the_dice_wager_opens_the_gate() -> None:
    table = Table(TableRules(dice_wager=True))
    table.approve()
    table.load()
    table.procedure.no_more_bets([2], by=DEALER)
    with pytest.raises(ProcedureError, match=r"set the starting position before settling"):
        table.procedure.wager_settled(by=DEALER)
    table.procedure.start_by_dice(3, 3, 3, by=DEALER)
    decisions = table.procedure.wager_settled(by=DEALER)
    assert of_type(decisions, GateCommand) == [GateCommand(GateMode.DEAL, 1)]
    assert table.phase is Phase.DEALING
    with pytest.raises(ProcedureError, match=r"no dice wager is waiting"):
        table.procedure.wager_settled(by=DEALER)


@pytest.mark.rule("B2")
def test_a_table_without_the_dice_wager_refuses_to_settle_one() -> None:
    table = Table()
    table.open()
    with pytest.raises(ProcedureError, match=r"does not offer the dice wager"):
        table.procedure.wager_settled(by=DEALER)
    assert table.phase is Phase.DEALING
