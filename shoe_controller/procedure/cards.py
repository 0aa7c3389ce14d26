"""Cards leaving the shoe (C1-C4, D3): each assigned in turn or a fault, a double card, a
jam, the door."""

from __future__ import annotations

from typing import TYPE_CHECKING

from firmware_protocol import GateMode
from shoe_controller.procedure.core import ModelCore
from shoe_controller.procedure.decisions import (
    AuditCard,
    CardAssigned,
    FaultCode,
    Outcome,
    SecurityEvent,
)
from shoe_controller.procedure.deck import returned_irregularity
from shoe_controller.procedure.inputs import DoubleDraw, Draw, JamEnd, ShoeFault, data
from shoe_controller.procedure.machine import IN_SHOE, PRE_DEAL, Phase
from shoe_controller.procedure.record import Irregularity

if TYPE_CHECKING:
    from transitions import EventData


class CardCallbacks(ModelCore):
    """The machine's callbacks (guards and side effects) for the cards that leave the shoe
    (C1-C4, D3): a part of :class:`~.model.ProcedureModel`, named in the table of
    :mod:`.machine`."""

    # --- C1-C3, D3: a card ------------------------------------------------------------

    def deal_card_irregular(self, event: EventData) -> bool:
        draw = data(event, Draw)
        irregularity = self.round_record().deal_irregularity(draw.draw_index, draw.card, draw.gate)
        return irregularity is not None

    def deal_card_is_last(self, event: EventData) -> bool:
        return self.round_record().remaining == 1

    def assign_card(self, event: EventData) -> None:
        draw = data(event, Draw)
        rnd = self.round_record()
        position = rnd.assign(draw.card)
        rnd.saw_draw(draw.draw_index)
        self.emit(CardAssigned(draw.draw_index, position, not draw.card.is_unreadable))
        self.emit(AuditCard(draw.draw_index, position, draw.card))

    def fault_deal_card(self, event: EventData) -> None:
        draw = data(event, Draw)
        irregularity = self.round_record().deal_irregularity(draw.draw_index, draw.card, draw.gate)
        assert irregularity is not None
        self.card_fault(draw, irregularity)

    def card_in_stub_mode(self, event: EventData) -> bool:
        return data(event, Draw).gate is GateMode.STUB

    def stub_card_irregular(self, event: EventData) -> bool:
        draw = data(event, Draw)
        return self.round_record().composition_irregularity(draw.draw_index, draw.card) is not None

    def record_stub_card(self, event: EventData) -> None:
        draw = data(event, Draw)
        rnd = self.round_record()
        rnd.record_stub_card(draw.draw_index, draw.card)
        rnd.saw_draw(draw.draw_index)
        self.emit(AuditCard(draw.draw_index, "stub", draw.card))

    def fault_stub_card(self, event: EventData) -> None:
        draw = data(event, Draw)
        irregularity = self.round_record().composition_irregularity(draw.draw_index, draw.card)
        assert irregularity is not None
        self.card_fault(draw, irregularity)

    def fault_unexpected_card(self, event: EventData) -> None:
        draw = data(event, Draw)
        if self.origin() is Phase.STUB_COUNT and draw.gate is GateMode.DEAL:
            irregularity = Irregularity(
                FaultCode.EXTRA_CARD,
                f"the card of draw {draw.draw_index} left the shoe in deal mode after the last "
                "card of the deal",
                "C2",
            )
        else:
            irregularity = self.unexpected(f"the card of draw {draw.draw_index} left the shoe")
        self.card_fault(draw, irregularity)

    def unexpected(self, what: str) -> Irregularity:
        """A card where none may leave the shoe: before the deal (A3), otherwise F1."""
        origin = self.origin()
        if origin in PRE_DEAL:
            return Irregularity(FaultCode.UNEXPECTED_CARD, f"{what} before the deal began", "A3")
        if origin is Phase.DEALING:
            return Irregularity(
                FaultCode.UNEXPECTED_CARD, f"{what} while a fault blocked the deal", "F1"
            )
        return Irregularity(FaultCode.UNEXPECTED_CARD, f"{what} while no card was expected", "F1")

    def card_fault(self, draw: Draw, irregularity: Irregularity) -> None:
        rnd = self.round
        if rnd is not None:
            rnd.saw_draw(draw.draw_index)
        self.deck_broken()
        self.emit(AuditCard(draw.draw_index, "unassigned", draw.card))
        if irregularity.code is FaultCode.COMPOSITION and rnd is not None:
            self.emit(SecurityEvent(draw.draw_index, rnd.composition_detail(draw.card), draw.card))
            # The deck leaves the table: its defect is remembered, and a deck with the same
            # defect is the removed deck coming back (D2, D3).
            rnd.note_defect_card(draw.card)
            defect = rnd.defect(every_card_read=False)
            returned = self.returned_deck(defect)
            self.remember_defect(defect, returned)
            if returned is not None:
                irregularity = returned_irregularity(returned)
        self.raise_fault(irregularity)

    # --- C4: double card, jam, door ---------------------------------------------------

    def end_on_double_card(self, event: EventData) -> None:
        index = data(event, DoubleDraw).draw_index
        self.round_record().saw_draw(index + 1)
        self.end_round(
            Outcome.VOID_MISDEAL,
            f"two cards left the shoe together at draw {index}: a misdeal (Section 10.13)",
            "C4",
        )

    def note_stub_double(self, event: EventData) -> None:
        index = data(event, DoubleDraw).draw_index
        rnd = self.round_record()
        rnd.saw_draw(index + 1)
        rnd.note_stub(f"two stub cards passed the reader together at draw {index}")

    def fault_unexpected_double(self, event: EventData) -> None:
        index = data(event, DoubleDraw).draw_index
        if self.round is not None:
            self.round.saw_draw(index + 1)
        self.deck_broken()
        self.raise_fault(self.unexpected(f"two cards left the shoe together at draw {index}"))

    def fault_jam(self, event: EventData) -> None:
        if self.round is not None and self.origin() in IN_SHOE:
            self.round.jams += 1
            if self.origin() is Phase.DEALING:
                self.round.deal_jams += 1
        self.raise_fault(Irregularity(FaultCode.JAM, "the shoe reports a jam", "C4"), voids=False)

    def fault_reported_by_shoe(self, event: EventData) -> None:
        fault = data(event, ShoeFault)
        self.raise_fault(
            Irregularity(
                FaultCode.SHOE_FAULT, f"the shoe reports fault {fault.code}: {fault.text}", "F1"
            ),
            voids=False,
        )

    def card_left(self, event: EventData) -> bool:
        return data(event, JamEnd).card_left

    def card_left_in_jam(self, event: EventData) -> None:
        origin = self.origin()
        if origin is Phase.STUB_COUNT:
            self.round_record().note_stub("a stub card left the shoe unread during a jam")
        elif origin is Phase.DEALING:
            self.raise_fault(
                Irregularity(
                    FaultCode.UNREAD_CARD,
                    "a card left the shoe unread during a jam (Section 10.13)",
                    "C3",
                )
            )
        else:
            self.deck_broken()
            self.raise_fault(self.unexpected("a card left the shoe during a jam"))

    def fault_door(self, event: EventData) -> None:
        self.raise_fault(
            Irregularity(FaultCode.DOOR_OPENED, "the shoe's door was opened during the round", "C4")
        )
