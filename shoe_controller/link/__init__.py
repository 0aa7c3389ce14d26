"""The conversation with the shoe: acknowledged delivery, heartbeat, reconnect, approval.

:class:`LinkCore` is the protocol without I/O, and :class:`~.arming.Arming` the approval of
the shoe, also without I/O; :class:`LinkDriver` runs both over a transport on one reader
thread (:mod:`.reader`), which other threads reach through its inbox. A
:class:`ResumePoint` carries the numbering over a restart of the program. docs/link.md
describes what they guarantee and what an operator sees.
"""

from shoe_controller.link.approval import ApprovalList, ApprovedShoe, Challenge, Verdict
from shoe_controller.link.core import LinkCore, LinkState
from shoe_controller.link.driver import LinkDriver
from shoe_controller.link.events import (
    ApprovalChanged,
    CommandCompleted,
    CommandFailed,
    CommandHandle,
    Connected,
    DriverError,
    EventsLost,
    LinkDown,
    LinkEvent,
    ProtocolMismatch,
    Reconnecting,
    ShoeEvent,
    ShoeReport,
)
from shoe_controller.link.identity import ShoeIdentity
from shoe_controller.link.pending import PendingCommand
from shoe_controller.link.sequence import ResumePoint
from shoe_controller.link.stats import LinkStats

__all__ = [
    "ApprovalChanged",
    "ApprovalList",
    "ApprovedShoe",
    "Challenge",
    "CommandCompleted",
    "CommandFailed",
    "CommandHandle",
    "Connected",
    "DriverError",
    "EventsLost",
    "LinkCore",
    "LinkDown",
    "LinkDriver",
    "LinkEvent",
    "LinkState",
    "LinkStats",
    "PendingCommand",
    "ProtocolMismatch",
    "Reconnecting",
    "ResumePoint",
    "ShoeEvent",
    "ShoeIdentity",
    "ShoeReport",
    "Verdict",
]
