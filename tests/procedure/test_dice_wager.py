"""Rule B2, Section 10.15: "todas tales apuestas adicionales serán determinadas y pagadas ...
antes de repartir". No card before the settlement, whatever the start method; while a wager
that the dice decide is offered, a start by a random number is refused."""

from __future__ import annotations

import pytest

from firmware_protocol import GateMode
from shoe_controller.errors import ProcedureError
from shoe_controller.procedure import (
    FaultRaised,
    GateCommand,
    Phase,
    StartMethod,
    StartPosition,
    TableRules,
    WagerDecider,
)
from tests.procedure.people import DEALER

from .table_driver import Table, of_type

pytestmark = pytest.mark.rule("B2")

REFUSAL = (
    "this table offers the dice wager, which the dice decide and which is settled before the "
    "first card: set the starting position with three dice (B2)"
)


def _bets_closed(rules: TableRules) -> Table:
    table = Table(rules)
    table.approve()
    table.load()
    table.procedure.no_more_bets([2], by=DEALER)
    return table


@pytest.mark.parametrize("method", ["controller", "external"])
def test_a_start_by_rng_is_refused_while_a_dice_decided_wager_is_offered(method: str) -> None:
    table = _bets_closed(TableRules(dice_wager=True))
    p = table.procedure
    with pytest.raises(ProcedureError) as refused:
        if method == "controller":
            p.start_by_rng(by=DEALER)
        else:
            p.start_by_external_rng(5, by=DEALER)
    assert str(refused.value) == REFUSAL
    assert table.phase is Phase.BETS_CLOSED
    assert p.gate is GateMode.LOCKED
    p.start_by_dice(2, 2, 2, by=DEALER)
    assert table.phase is Phase.START_SET


@pytest.mark.parametrize(
    "start",
    [
        StartPosition(StartMethod.CONTROLLER_RNG, (3,), 3),
        StartPosition(StartMethod.EXTERNAL_RNG, (6,), 6),
        StartPosition(StartMethod.DICE, (1, 2, 3), 6),
    ],
)
def test_a_wager_that_settles_on_the_start_number_is_settled_before_the_first_card(
    start: StartPosition,
) -> None:
    rules = TableRules(dice_wager=True, dice_wager_decided_by=WagerDecider.START_NUMBER)
    table = _bets_closed(rules)
    decisions = table.procedure.set_start(start, by=DEALER)
    assert table.phase is Phase.START_SET
    assert of_type(decisions, GateCommand) == []
    early = table.draw(gate=GateMode.LOCKED)
    assert of_type(early, FaultRaised)[0].rule == "A3"


def test_the_settlement_alone_opens_the_gate_after_a_start_by_rng() -> None:
    rules = TableRules(dice_wager=True, dice_wager_decided_by=WagerDecider.START_NUMBER)
    table = _bets_closed(rules)
    table.procedure.start_by_external_rng(4, by=DEALER)
    decisions = table.procedure.wager_settled(by=DEALER)
    assert of_type(decisions, GateCommand) == [GateCommand(GateMode.DEAL, 1)]
    assert table.phase is Phase.DEALING


def test_without_the_dice_wager_a_start_by_rng_deals_at_once() -> None:
    table = _bets_closed(TableRules())
    table.procedure.start_by_rng(by=DEALER)
    assert table.phase is Phase.DEALING
