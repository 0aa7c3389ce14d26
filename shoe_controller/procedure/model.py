"""The machine's model, whole: the state of :mod:`.core` with the callbacks of every part
of the regulation, each in its own module."""

from __future__ import annotations

from shoe_controller.procedure.bets import BetsRules
from shoe_controller.procedure.cards import CardRules
from shoe_controller.procedure.clock import ClockRules
from shoe_controller.procedure.deck import DeckRules
from shoe_controller.procedure.faults import FaultRules
from shoe_controller.procedure.shoe import ShoeRules
from shoe_controller.procedure.stub import StubRules


class ProcedureModel(ShoeRules, DeckRules, BetsRules, CardRules, StubRules, FaultRules, ClockRules):
    """Every guard and side effect the machine's table (:mod:`.machine`) names."""
