"""The machine's model, whole: the state of :mod:`.core` with the callbacks of every part
of the regulation, each in its own module."""

from __future__ import annotations

from shoe_controller.procedure.bets import BetsCallbacks
from shoe_controller.procedure.cards import CardCallbacks
from shoe_controller.procedure.clock import ClockCallbacks
from shoe_controller.procedure.deck import DeckCallbacks
from shoe_controller.procedure.faults import FaultCallbacks
from shoe_controller.procedure.shoe import ShoeCallbacks
from shoe_controller.procedure.stub import StubCallbacks


class ProcedureModel(
    ShoeCallbacks,
    DeckCallbacks,
    BetsCallbacks,
    CardCallbacks,
    StubCallbacks,
    FaultCallbacks,
    ClockCallbacks,
):
    """Every guard and side effect the machine's table (:mod:`.machine`) names."""
