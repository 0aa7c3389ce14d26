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
from shoe_controller.procedure.start import StartMethod

if TYPE_CHECKING:
    from transitions import EventData


class BetsRules(ModelCore):
    def ask_wagers(self, event: EventData) -> None:
        self.ask(prompts.no_more_bets())

    def ask_wagers_first(self, event: EventData) -> None:
        self.ask(prompts.wagers_first())

    def ask_start(self, event: EventData) -> None:
        self.ask(prompts.start_position())

    def ask_wager_settled(self, event: EventData) -> None:
        self.ask(prompts.wager_settled())

    def record_wagers(self, event: EventData) -> None:
        wagered = data(event, Wagers).wagered
        self.wagers_entered = wagered
        self.emit(WagersEntered(tuple(sorted(wagered))))

    def close_bets(self, event: EventData) -> None:
        wagered = data(event, Wagers).wagered
        self.round_record().wagered = wagered
        self.emit(BetsClosed(tuple(sorted(wagered))))

    def dice_wager_due(self, event: EventData) -> bool:
        """The dice wager is settled before the first card, and only when dice set the
        start: with an RNG there are no dice to settle it by (B2)."""
        return self.rules.dice_wager and data(event, Start).start.method is StartMethod.DICE

    def record_start(self, event: EventData) -> None:
        start = data(event, Start).start
        self.round_record().set_start(start)
        self.emit(StartPositionSet(start))

    def settle_wager(self, event: EventData) -> None:
        self.emit(WagerSettled())

    def mark_gate_opened(self, event: EventData) -> None:
        self.round_record().gate_opened = True
