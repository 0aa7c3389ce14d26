"""The table controller: one event-loop thread owning the procedure, the link and the journal.

The public names for a table's UI or another program embedding the service (see
docs/integrators.md): :class:`TableController` and the :class:`Actor` who gives an input,
:class:`TableMovedOn`, the refusal of an input whose prompt the table has left,
the configuration (:class:`Config`, :func:`load_config`, :func:`parse_config`) and the
published events (:mod:`shoe_controller.service.events`, also importable from here).
"""

from shoe_controller.service import events
from shoe_controller.service.config import Config, load_config, parse_config
from shoe_controller.service.controller import Actor, TableController, TableMovedOn
from shoe_controller.service.events import (
    BetsClosedEvent,
    ButtonEvent,
    CardEvent,
    ConnectedEvent,
    DeterminationEvent,
    FaultClearedEvent,
    FaultEvent,
    LinkStatusEvent,
    NoticeEvent,
    PromptEvent,
    RoundClosedEvent,
    RoundEndEvent,
    ServiceEvent,
    StartedEvent,
    StartPositionEvent,
    StateEvent,
    StoppedEvent,
    StubAcceptedEvent,
    StubEvent,
    WagerSettledEvent,
    WagersEvent,
)

__all__ = [
    "Actor",
    "BetsClosedEvent",
    "ButtonEvent",
    "CardEvent",
    "Config",
    "ConnectedEvent",
    "DeterminationEvent",
    "FaultClearedEvent",
    "FaultEvent",
    "LinkStatusEvent",
    "NoticeEvent",
    "PromptEvent",
    "RoundClosedEvent",
    "RoundEndEvent",
    "ServiceEvent",
    "StartPositionEvent",
    "StartedEvent",
    "StateEvent",
    "StoppedEvent",
    "StubAcceptedEvent",
    "StubEvent",
    "TableController",
    "TableMovedOn",
    "WagerSettledEvent",
    "WagersEvent",
    "events",
    "load_config",
    "parse_config",
]
