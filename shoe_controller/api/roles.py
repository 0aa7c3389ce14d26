"""Roles and what each may do (docs/api.md, "Roles").

A method needs one capability; a role holds a set of them. The dealer runs the round, the
supervisor also decides what a dealer may not (the inputs of the procedure's one table,
:mod:`shoe_controller.procedure.authority`: a new deck, clearing a fault, a disputed stub
count, a void; and a misdeal determination against a conclusive record, which the
procedure refuses a dealer), the technician reads the table and the shoe, the viewer only
follows events.

:data:`USERS` is the box's realm of users: these roles, the box's users file format, and
the PIN policy (4 to 12 digits, 6 at least for a supervisor).
"""

from __future__ import annotations

import enum
from typing import Final

from shoe_controller.accounts.pins import PinPolicy
from shoe_controller.accounts.realm import Realm


class Role(enum.StrEnum):
    DEALER = "dealer"
    SUPERVISOR = "supervisor"
    TECHNICIAN = "technician"
    VIEWER = "viewer"


class Capability(enum.StrEnum):
    NOTIFICATIONS = "notifications"
    READ_STATE = "read_state"
    DEAL = "deal"
    SUPERVISE = "supervise"


_CAPABILITIES: dict[Role, frozenset[Capability]] = {
    Role.VIEWER: frozenset({Capability.NOTIFICATIONS}),
    Role.TECHNICIAN: frozenset({Capability.NOTIFICATIONS, Capability.READ_STATE}),
    Role.DEALER: frozenset({Capability.NOTIFICATIONS, Capability.READ_STATE, Capability.DEAL}),
    Role.SUPERVISOR: frozenset(Capability),
}


def may(role: Role, capability: Capability) -> bool:
    """Whether ``role`` holds ``capability``."""
    return capability in _CAPABILITIES[role]


def roles_with(capability: Capability) -> tuple[Role, ...]:
    """The roles holding ``capability``, in the order of :class:`Role`."""
    return tuple(role for role in Role if may(role, capability))


#: A PIN's digits, at least and at most.
PIN_DIGITS: Final = (4, 12)
#: A supervisor clears faults and decides misdeals: their PIN is longer.
SUPERVISOR_PIN_DIGITS: Final = 6

#: The box's users: these roles, in the box's users file, under the box's PIN policy.
USERS: Final = Realm(
    roles=Role,
    format="shoe-controller-users",
    product="shoe-controller",
    command="shoe-diag users",
    pins=PinPolicy(*PIN_DIGITS, longer={Role.SUPERVISOR.value: SUPERVISOR_PIN_DIGITS}),
    roles_help="dealer: runs rounds; supervisor: also clears faults, decides misdeals, "
    "confirms a new deck; technician: reads the table and the shoe; viewer: notifications "
    "only",
)
