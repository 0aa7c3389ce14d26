"""The deck (A2, D2, D3): loaded and confirmed, opening a round, taken out, and the deck that
must leave the table for a different one."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from shoe_controller.procedure import prompts
from shoe_controller.procedure.core import ModelCore
from shoe_controller.procedure.decisions import FaultCode, Outcome, RoundOpened
from shoe_controller.procedure.inputs import RemovedDeck
from shoe_controller.procedure.machine import Phase
from shoe_controller.procedure.record import Irregularity, RoundRecord

if TYPE_CHECKING:
    from transitions import EventData


def returned_irregularity(returned: RemovedDeck) -> Irregularity:
    """The removed deck came back (D2, D3): refused as the removed deck."""
    if returned.at is None:
        when = "recently"
    else:
        when = "at " + datetime.fromtimestamp(returned.at, UTC).strftime("%Y-%m-%d %H:%M UTC")
    return Irregularity(
        FaultCode.DECK_RETURNED,
        f"the deck's defect matches the deck removed from this table {when}: it is the "
        "removed deck, refused; a different deck must be loaded",
        "D3",
    )


class DeckCallbacks(ModelCore):
    """The machine's callbacks (guards and side effects) for the deck (A2, D2, D3): a part of
    :class:`~.model.ProcedureModel`, named in the table of :mod:`.machine`."""

    # --- what the shoe reports (INTAKE) -------------------------------------------------

    def note_deck_loaded(self, event: EventData) -> None:
        """A deck reported loaded has the door closed and no round has used it."""
        self.condition.door_open = False
        self.deck.loaded()

    def note_deck_removed(self, event: EventData) -> None:
        self.deck.taken_out()

    # --- conditions -------------------------------------------------------------------

    def deck_must_change(self, event: EventData) -> bool:
        return self.deck.must_change

    def deck_is_spent(self, event: EventData) -> bool:
        return self.deck.spent

    def deck_is_waiting(self, event: EventData) -> bool:
        return self.deck.waiting

    def new_deck_waiting(self, event: EventData) -> bool:
        """After a deck left the table, a deck loaded since is in the shoe (D2)."""
        return self.deck.waiting

    # --- callbacks --------------------------------------------------------------------

    def ask_shuffle(self, event: EventData) -> None:
        self.ask(prompts.confirm_shuffle())

    def ask_new_deck(self, event: EventData) -> None:
        self.ask(prompts.new_deck())

    def next_deck(self, event: EventData) -> None:
        """Between rounds, a deck already waiting in the shoe goes to its shuffle check;
        after a void the croupier is asked to take the deck out."""
        if self.deck.waiting:
            if self.condition.approved and self.condition.link_up:
                self.trigger("deck_ready")
            else:
                # A deck the journal remembers may have left the shoe while nobody
                # listened: it opens a round only once its shoe is heard and approved (A1).
                self.trigger("await_shoe")
            return
        phase = self.phase
        if phase in (Phase.VOID_MISDEAL, Phase.VOID_FAULT):
            rnd = self.round
            voided = rnd is not None and rnd.outcome in (Outcome.VOID_FAULT, Outcome.VOID_MISDEAL)
            self.ask(
                prompts.remove_void_deck(
                    rnd.round_id if voided and rnd is not None else None,
                    "F1" if phase is Phase.VOID_FAULT else "D2",
                )
            )
        else:
            self.ask(prompts.load_deck())

    def require_new_deck(self, event: EventData) -> None:
        self.deck.condemn()
        if self.deck.waiting:
            self.ask(prompts.new_deck())
        else:
            self.ask(prompts.remove_deck_for_good())

    def open_round(self, event: EventData) -> None:
        round_id = self.round_ids()
        self.round = RoundRecord(round_id, self.rules)
        self.deck.used()
        self.wagers_entered = None
        self.proposal = None
        self.first_round_opened = True
        self.emit(RoundOpened(round_id))

    def fault_unexpected_deck(self, event: EventData) -> None:
        self.raise_fault(
            Irregularity(
                FaultCode.UNEXPECTED_DECK, "the shoe reports a deck loaded during a round", "F1"
            )
        )

    def fault_deck_removed(self, event: EventData) -> None:
        self.raise_fault(
            Irregularity(
                FaultCode.DECK_REMOVED, "the deck was taken out of the shoe during the round", "F1"
            )
        )
