"""Before the first card (A3, B1, B2): the wagers entered and frozen, the starting position,
the dice wager settled."""

from __future__ import annotations

from typing import TYPE_CHECKING

from shoe_controller.procedure import prompts
from shoe_controller.procedure.core import ModelCore
from shoe_controller.procedure.decisions import (
    BetsClosed,
    StartPositionSet,
    WagersEntered,
    WagerSettled,
)
from shoe_controller.procedure.inputs import Start, Wagers, data
from shoe_controller.procedure.table import WagerDecider

if TYPE_CHECKING:
    from transitions import EventData


class BetsCallbacks(ModelCore):
    """The machine's callbacks (guards and side effects) for the wagers, the starting position
    and the dice wager (A3, B1, B2): a part of :class:`~.model.ProcedureModel`, named in the
    table of :mod:`.machine`."""

    def ask_wagers(self, event: EventData) -> None:
        self.ask(prompts.no_more_bets())

    def ask_wagers_first(self, event: EventData) -> None:
        self.ask(prompts.wagers_first())

    def ask_start(self, event: EventData) -> None:
        rules = self.rules
        dice_only = rules.dice_wager and rules.dice_wager_decided_by is WagerDecider.DICE
        self.ask(prompts.start_position(dice_only=dice_only))

    def ask_wager_settled(self, event: EventData) -> None:
        self.ask(prompts.wager_settled())

    def ask_deal(self, event: EventData) -> None:
        rnd = self.round_record()
        assert rnd.start is not None
        self.ask(prompts.deal(rnd.order[rnd.dealt] if rnd.remaining else rnd.start.position))

    def record_wagers(self, event: EventData) -> None:
        wagered = data(event, Wagers).wagered
        self.wagers_entered = wagered
        self.emit(WagersEntered(tuple(sorted(wagered))))

    def close_bets(self, event: EventData) -> None:
        wagered = data(event, Wagers).wagered
        self.round_record().wagered = wagered
        self.emit(BetsClosed(tuple(sorted(wagered))))

    def dice_wager_due(self, event: EventData) -> bool:
        """Where the table offers the dice wager, it is settled before the first card,
        whatever the start method (B2)."""
        return self.rules.dice_wager

    def record_start(self, event: EventData) -> None:
        start = data(event, Start).start
        self.round_record().set_start(start)
        self.emit(StartPositionSet(start))

    def settle_wager(self, event: EventData) -> None:
        self.emit(WagerSettled())

    def mark_gate_opened(self, event: EventData) -> None:
        self.round_record().gate_opened = True
