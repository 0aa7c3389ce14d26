"""The shoe and its link (A1, C4, F2): what they report of themselves, and the faults that
follow when an unapproved or another shoe answers, or the link stays down too long."""

from __future__ import annotations

from typing import TYPE_CHECKING

from firmware_protocol import GateMode
from shoe_controller.procedure import prompts
from shoe_controller.procedure.core import ModelCore
from shoe_controller.procedure.decisions import FaultCode, Notice, NoticeCode
from shoe_controller.procedure.inputs import Hello, Moment, Reason, data
from shoe_controller.procedure.record import Irregularity

if TYPE_CHECKING:
    from transitions import EventData


class ShoeCallbacks(ModelCore):
    """The machine's callbacks (guards and side effects) for the shoe and its link (A1, C4, F2):
    a part of :class:`~.model.ProcedureModel`, named in the table of :mod:`.machine`."""

    # --- what the shoe and the link report (INTAKE) -----------------------------------

    def note_link_up(self, event: EventData) -> None:
        """The link is up: the outage is over. Another shoe's jam or open door is
        forgotten: kept, it would refuse every clear for good, since this shoe never
        reports that it ended; this shoe refuses a gate command while it is jammed or
        open, if it is."""
        shoe = data(event, Hello).shoe
        condition = self.condition
        condition.link_up = True
        condition.outage_since = None
        condition.outage_faulted = False
        if condition.shoe is not None and shoe != condition.shoe:
            self.deck.lost_sight()
            condition.jammed = False
            condition.door_open = False

    def note_approved(self, event: EventData) -> None:
        self.condition.shoe = data(event, Hello).shoe
        self.condition.approved = True

    def note_unapproved(self, event: EventData) -> None:
        self.condition.approved = False

    def note_link_lost(self, event: EventData) -> None:
        """The outage counts from its first loss, however often the link drops (F2)."""
        condition = self.condition
        condition.link_up = False
        if condition.outage_since is None:
            condition.outage_since = data(event, Moment).now
            condition.outage_faulted = False

    def note_link_timeout(self, event: EventData) -> None:
        self.condition.outage_faulted = True

    def note_jam(self, event: EventData) -> None:
        self.condition.jammed = True

    def note_jam_cleared(self, event: EventData) -> None:
        self.condition.jammed = False

    def note_door_opened(self, event: EventData) -> None:
        self.condition.door_open = True

    def note_door_closed(self, event: EventData) -> None:
        self.condition.door_open = False

    def note_events_lost(self, event: EventData) -> None:
        """The end of a jam or of an open door may be among the lost events: what the shoe
        reported of those is forgotten, as a shoe still jammed or open refuses the gate by
        itself (kept, it would refuse every clear for good). So may the removal of a deck
        waiting in the shoe: no round opens on it."""
        self.condition.jammed = False
        self.condition.door_open = False
        self.deck.lost_sight()

    # --- conditions -------------------------------------------------------------------

    def shoe_is_free(self, event: EventData) -> bool:
        return not self.condition.held

    def shoe_is_held(self, event: EventData) -> bool:
        return self.condition.held

    def gate_is_open(self, event: EventData) -> bool:
        return self.gate is not GateMode.LOCKED

    # --- A1 ---------------------------------------------------------------------------

    def forget_approval(self, event: EventData) -> None:
        self.condition.approved = False

    def ask_shoe(self, event: EventData) -> None:
        self.ask(prompts.connect_shoe())

    def fault_not_approved(self, event: EventData) -> None:
        reason = data(event, Reason).text
        self.raise_fault(
            Irregularity(FaultCode.SHOE_NOT_APPROVED, f"the shoe is not approved: {reason}", "A1")
        )

    def fault_shoe_changed(self, event: EventData) -> None:
        reason = data(event, Reason).text
        self.raise_fault(
            Irregularity(
                FaultCode.SHOE_CHANGED,
                f"another shoe answered while cards were at stake: {reason}",
                "F2",
            )
        )

    def tell_clear_possible(self, event: EventData) -> None:
        self.ask(prompts.clear_possible())

    # --- F2 ---------------------------------------------------------------------------

    def fault_link_lost(self, event: EventData) -> None:
        self.raise_fault(
            Irregularity(
                FaultCode.LINK_LOST,
                f"the link to the shoe was lost for longer than {self.link_grace:g} s",
                "F2",
            ),
            voids=False,
        )

    def fault_events_lost(self, event: EventData) -> None:
        self.raise_fault(
            Irregularity(
                FaultCode.EVENTS_LOST,
                f"events of the shoe were lost: {data(event, Reason).text}",
                "F2",
            )
        )

    def note_events_lost_between_rounds(self, event: EventData) -> None:
        self.emit(
            Notice(
                NoticeCode.EVENTS_LOST,
                f"events of the shoe were lost while no round was in it "
                f"({data(event, Reason).text}): the deck in the shoe, if any, must be taken out "
                "and loaded again",
                "F2",
            )
        )

    def defer_gate(self, event: EventData) -> None:
        self.emit(
            Notice(
                NoticeCode.GATE_DEFERRED,
                f"the shoe did not take the gate command ({data(event, Reason).text}); it is "
                "sent again when the shoe reports the door closed and no jam",
            )
        )

    def fault_gate_refused(self, event: EventData) -> None:
        self.raise_fault(
            Irregularity(
                FaultCode.GATE_REFUSED,
                f"the shoe did not take the gate command: {data(event, Reason).text}",
                "F1",
            ),
            voids=False,
        )
