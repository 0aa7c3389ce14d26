"""The rules of the dealing procedure, by id, as docs/procedure.md states them.

Tests name the rule they check with ``@pytest.mark.rule("<id>")``; the traceability matrix
(:mod:`shoe_controller.traceability`) reads those markers against this catalogue.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Final


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    title: str


_RULES: Final = (
    Rule("A1", "Approved shoe"),
    Rule("A2", "Deck prepared and loaded"),
    Rule("A3", "No more bets"),
    Rule("B1", "Starting position"),
    Rule("B2", "Optional additional wager"),
    Rule("C1", "Order"),
    Rule("C2", "Every card is read"),
    Rule("C3", "Card that cannot be read"),
    Rule("C4", "Double card, jam, door"),
    Rule("D1", "Stub count"),
    Rule("D2", "Stub not 4"),
    Rule("D3", "Composition"),
    Rule("D4", "The reading binds"),
    Rule("E1", "No identities while open"),
    Rule("E2", "Round record at close"),
    Rule("E3", "Journal first"),
    Rule("E4", "Who decides"),
    Rule("E5", "Two people against the machine"),
    Rule("F1", "Faults block dealing"),
    Rule("F2", "Lost link"),
    Rule("F3", "Controller restart"),
    Rule("F4", "Stopping"),
    Rule("F5", "The gate's window"),
    Rule("F6", "Every phase has a way out"),
)

#: Every rule of the procedure, by id, in the order of docs/procedure.md.
RULES: Final = MappingProxyType({rule.id: rule for rule in _RULES})
