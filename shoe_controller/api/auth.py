"""Signing in to the box: :mod:`shoe_controller.accounts`' sign-in and sessions, with the
box's roles, limits and durations.

Nothing here is journaled: the server journals what these objects decide, through the
controller's ``record_access``.
"""

from __future__ import annotations

from typing import TypeAlias

from shoe_controller.accounts import sessions, signin
from shoe_controller.accounts.attempts import NAME_LIMIT
from shoe_controller.accounts.sessions import IDLE_TIMEOUT_S, TOKEN_TTL_S, Ending
from shoe_controller.accounts.signin import UsersChange, Verdict
from shoe_controller.api.roles import Role

__all__ = [
    "IDLE_TIMEOUT_S",
    "LOCKOUT_S",
    "MAX_FAILURES",
    "TOKEN_TTL_S",
    "Authenticator",
    "Ending",
    "Session",
    "Sessions",
    "SignIn",
    "UsersChange",
    "Verdict",
]

#: Wrong PINs for one name that lock it, and for how long (seconds): see
#: :mod:`shoe_controller.accounts.attempts`.
MAX_FAILURES = NAME_LIMIT.failures
LOCKOUT_S = NAME_LIMIT.lockout

#: The box's sign-in: its users file's users, its roles. The service checks PINs in a
#: process of its own (:class:`~.pinchecks.PinChecker`).
Authenticator: TypeAlias = signin.Authenticator[Role]
SignIn: TypeAlias = signin.SignIn[Role]
Session: TypeAlias = sessions.Session[Role]
Sessions: TypeAlias = sessions.Sessions[Role]
