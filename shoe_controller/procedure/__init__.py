"""The regulated dealing procedure as a pure state machine (no I/O, no threads, no clock).

:class:`Procedure` takes the table's inputs and returns decisions; :class:`TableRules` holds
the table's rules; the starting position comes from :func:`start_from_dice`,
:func:`start_from_rng` or :func:`draw_rng`. The rules are in docs/procedure.md and
:data:`RULES`.
"""

from shoe_controller.procedure.decisions import (
    AskCroupier,
    AuditCard,
    BetsClosed,
    CardAssigned,
    Composition,
    Decision,
    DeterminationRecorded,
    Disclosure,
    Evidence,
    FaultCleared,
    FaultCode,
    FaultRaised,
    GateCommand,
    Hand,
    Outcome,
    RoundClosed,
    RoundEnded,
    RoundOpened,
    SecurityEvent,
    StartPositionSet,
    StateChanged,
    StubCounted,
    WagerSettled,
)
from shoe_controller.procedure.diagram import procedure_diagram
from shoe_controller.procedure.machine import Phase
from shoe_controller.procedure.procedure import Procedure
from shoe_controller.procedure.rules_catalogue import RULES, Rule
from shoe_controller.procedure.start import (
    RandomSource,
    StartMethod,
    StartPosition,
    draw_rng,
    start_from_dice,
    start_from_rng,
)
from shoe_controller.procedure.table import (
    BANKER,
    CountingDirection,
    DealingDirection,
    TableRules,
    UnreadCardPolicy,
)

__all__ = [
    "BANKER",
    "RULES",
    "AskCroupier",
    "AuditCard",
    "BetsClosed",
    "CardAssigned",
    "Composition",
    "CountingDirection",
    "DealingDirection",
    "Decision",
    "DeterminationRecorded",
    "Disclosure",
    "Evidence",
    "FaultCleared",
    "FaultCode",
    "FaultRaised",
    "GateCommand",
    "Hand",
    "Outcome",
    "Phase",
    "Procedure",
    "RandomSource",
    "RoundClosed",
    "RoundEnded",
    "RoundOpened",
    "Rule",
    "SecurityEvent",
    "StartMethod",
    "StartPosition",
    "StartPositionSet",
    "StateChanged",
    "StubCounted",
    "TableRules",
    "UnreadCardPolicy",
    "WagerSettled",
    "draw_rng",
    "procedure_diagram",
    "start_from_dice",
    "start_from_rng",
]
