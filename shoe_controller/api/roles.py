"""Roles and what each may do (docs/api.md, "Roles").

A method needs one capability; a role holds a set of them. The dealer runs the round, the
supervisor also decides what a dealer may not (the inputs of the procedure's one table,
:mod:`shoe_controller.procedure.authority`: a new deck, clearing a fault, a disputed stub
count, a void; and a misdeal determination against a conclusive record, which the
procedure refuses a dealer), the technician reads the table and the shoe, the viewer only
follows events.
"""

from __future__ import annotations

import enum


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
