"""The dashboard's people: the floor's roles, and their realm of users (the floor's users
file, apart from any box's, under the box's rules: :mod:`shoe_controller.accounts`).

- ``pit``: the board, and what the floor refused (the quarantine's latest messages);
- ``viewer``: the board.

Every role's PIN has 6 to 12 digits, as a box's supervisor's: the dashboard may serve the
whole floor's network (over TLS), where a box's console serves one table, and the pit's
role reads what the floor refused.
"""

from __future__ import annotations

import enum
from typing import Final

from shoe_controller.accounts.pins import PinPolicy
from shoe_controller.accounts.realm import Realm


class FloorRole(enum.StrEnum):
    PIT = "pit"
    VIEWER = "viewer"


#: A PIN's digits on the floor, at least and at most.
PIN_DIGITS: Final = (6, 12)

#: The floor's users: these roles, in the floor's users file, under the PIN policy above.
USERS: Final = Realm(
    roles=FloorRole,
    format="shoe-floor-users",
    product="shoe-floor",
    command="shoe-floor users",
    pins=PinPolicy(*PIN_DIGITS),
    roles_help="pit: the board and what the floor refused; viewer: the board",
)
