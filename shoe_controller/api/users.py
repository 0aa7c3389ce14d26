"""The box's users file: who may sign in to the console and the API, with one of the box's
roles (dealer, supervisor, technician, viewer), and their PIN's argon2id hash.

The file's rules (its format, the hash floor, who may have written it, a name listed
twice, the PIN policy, adding, resetting and removing users) are
:mod:`shoe_controller.accounts`', the floor dashboard's too; this module gives them the
box's roles, its format and its PIN lengths: 4 to 12 digits, 6 at least for a supervisor,
who clears faults and decides misdeals.

::

    {"format": "shoe-controller-users", "version": 1,
     "users": [{"name": "ana", "role": "dealer", "pin": "$argon2id$v=19$..."}]}
"""

from __future__ import annotations

from pathlib import Path
from typing import Final, TypeAlias

from argon2 import PasswordHasher

from shoe_controller.accounts import users
from shoe_controller.accounts.errors import UsersFileError
from shoe_controller.accounts.hashes import HASH_FLOOR, HashFloor, new_hasher, pin_matches
from shoe_controller.accounts.pins import trivial_pin
from shoe_controller.accounts.users import VERSION, check_name
from shoe_controller.api.roles import PIN_DIGITS, SUPERVISOR_PIN_DIGITS, USERS, Role

__all__ = [
    "FILE_NAME",
    "FORMAT",
    "HASH_FLOOR",
    "PIN_DIGITS",
    "SUPERVISOR_PIN_DIGITS",
    "USERS",
    "VERSION",
    "HashFloor",
    "User",
    "UsersFile",
    "UsersFileError",
    "check_name",
    "check_pin",
    "default_users_path",
    "new_hasher",
    "pin_matches",
    "trivial_pin",
]

FORMAT: Final = USERS.format
FILE_NAME: Final = "users.json"

User: TypeAlias = users.User[Role]


class UsersFile(users.UsersFile[Role]):
    """The box's users file at ``path`` (see :class:`shoe_controller.accounts.users.UsersFile`)."""

    def __init__(
        self, path: Path, hasher: PasswordHasher | None = None, floor: HashFloor = HASH_FLOOR
    ) -> None:
        super().__init__(USERS, path, hasher, floor)


def default_users_path(journal: Path) -> Path:
    """The users file beside the journal: ``/var/lib/shoe-controller/users.json``."""
    return journal.parent / FILE_NAME


def check_pin(pin: str, role: Role | None = None) -> str:
    """A PIN: 4 to 12 digits (6 at least for a supervisor), and not a trivial one."""
    return USERS.check_pin(pin, role)
