"""The dashboard's users file: who may sign in to the pit's dashboard, with one of the
floor's roles (:mod:`.roles`), and their PIN's argon2id hash; never a PIN.

The file's rules are the box's (:mod:`shoe_controller.accounts`): written atomically with
mode 0600 (``shoe-floor users``), refused whole when other accounts may write it, when it
names a user twice or when a hash is below the floor::

    {"format": "shoe-floor-users", "version": 1,
     "users": [{"name": "rosa", "role": "pit", "pin": "$argon2id$v=19$..."}]}
"""

from __future__ import annotations

from pathlib import Path

from argon2 import PasswordHasher

from shoe_controller.accounts.users import UsersFile
from shoe_floor.dashboard.roles import USERS, FloorRole


class FloorUsers(UsersFile[FloorRole]):
    """The dashboard's users file at ``path``."""

    def __init__(self, path: Path, hasher: PasswordHasher | None = None) -> None:
        super().__init__(USERS, path, hasher)
