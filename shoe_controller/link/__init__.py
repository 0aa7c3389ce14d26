"""The conversation with the shoe: acknowledged delivery, heartbeat, reconnect, approval.

:class:`LinkCore` is the protocol without I/O; :class:`LinkDriver` runs it over a transport
on one reader thread. docs/link.md describes what they guarantee and what an operator sees.
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
