"""The gate's policy: which mode and limit each phase needs (C2, D1, F5), and why the gate
may not open at all (A1, C4, F2).

:class:`ShoeCondition` is what the shoe and the link reported of themselves; only the
machine's callbacks change it (:mod:`.shoe`).
"""

from __future__ import annotations

from dataclasses import dataclass

from firmware_protocol import GateMode
from shoe_controller.procedure.decisions import FaultCode
from shoe_controller.procedure.inputs import ShoeId
from shoe_controller.procedure.machine import Phase
from shoe_controller.procedure.record import Irregularity, RoundRecord
from shoe_controller.procedure.table import TableRules


@dataclass(slots=True)
class ShoeCondition:
    """What the shoe and the link last reported."""

    approved: bool = False
    link_up: bool = False
    jammed: bool = False
    door_open: bool = False
    #: The shoe the table deals with, once one was approved.
    shoe: ShoeId | None = None
    #: When the current outage began (monotonic seconds), or None while the link is up.
    outage_since: float | None = None
    #: The current outage has already been a fault (F2).
    outage_faulted: bool = False

    @property
    def held(self) -> bool:
        """The shoe reports a jam or its door open: it refuses to open its gate."""
        return self.jammed or self.door_open


class GateRefused(Exception):
    """The gate was about to open while the shoe may not deal; becomes a fault."""

    def __init__(self, irregularity: Irregularity) -> None:
        super().__init__(irregularity.reason)
        self.irregularity = irregularity


def gate_wanted(phase: Phase, rnd: RoundRecord | None, rules: TableRules) -> tuple[GateMode, int]:
    """The gate ``phase`` needs. Its limit is a draw index at most the gate window ahead of
    the last card journaled (F5), so that sending it again never lets more out and no card
    can leave after a fault the controller has seen."""
    if phase not in (Phase.DEALING, Phase.STUB_COUNT) or rnd is None:
        return GateMode.LOCKED, 0
    limit = rnd.last_draw + rules.gate_window
    if phase is Phase.DEALING:
        return GateMode.DEAL, min(limit, rules.deal_size)
    if rnd.last_draw >= rules.deck_size:
        # The deck's last card is out. A limit is a draw index of one deck: a command that
        # reached the shoe after the next deck went in would let that deck out.
        return GateMode.LOCKED, 0
    return GateMode.STUB, min(limit, rules.deck_size)


def gate_refusal(condition: ShoeCondition, phase: Phase) -> Irregularity | None:
    """Why the gate may not open now (A1, C4, F2), or None."""
    if not condition.approved:
        return Irregularity(
            FaultCode.SHOE_NOT_APPROVED, "refused to open the gate of an unapproved shoe", "A1"
        )
    if not condition.link_up:
        return Irregularity(
            FaultCode.LINK_LOST, "refused to open the gate without a link to the shoe", "F2"
        )
    if condition.jammed:
        return Irregularity(FaultCode.JAM, "refused to open the gate of a jammed shoe", "C4")
    if condition.door_open and phase is Phase.DEALING:
        return Irregularity(
            FaultCode.DOOR_OPENED, "refused to deal with the shoe's door open", "C4"
        )
    return None
