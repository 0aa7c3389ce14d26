"""The dashboard's users file: who may sign in to the pit's dashboard, with which role, and
their PIN's argon2id hash (``argon2-cffi``); never a PIN.

The floor's own file, apart from any box's: its people are the pit's, not a table's, and
its roles are the floor's:

- ``pit``: the board, and what the floor refused (the quarantine's latest messages);
- ``viewer``: the board.

One JSON document, written atomically with mode 0600 (``shoe-floor users add``)::

    {"format": "shoe-floor-users", "version": 1,
     "users": [{"name": "rosa", "role": "pit", "pin": "$argon2id$v=19$..."}]}

The file decides who sees the floor, so it is trusted only when nobody else could have
written it: one that other accounts may write, that names a user twice, or whose hashes are
weaker than :data:`HASH_FLOOR` is refused whole.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from argon2 import PasswordHasher, Type, extract_parameters
from argon2.exceptions import InvalidHashError, VerificationError

from shoe_controller.errors import ConfigError
from shoe_controller.files import FileTooLarge, NotRegularFile, read_regular
from shoe_controller.journal.paths import replace_file, write_new_file

FORMAT: Final = "shoe-floor-users"
VERSION: Final = 1
ROLES: Final = ("pit", "viewer")
#: PINs of 6 to 12 digits; none of the trivial ones.
PIN: Final = re.compile(r"[0-9]{6,12}")
_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,31}")
#: The weakest argon2id costs a users file may hold (OWASP's minimum: 19 MiB, 2 passes).
HASH_FLOOR: Final = {"memory_cost": 19 * 1024, "time_cost": 2}
_MAX_FILE: Final = 1 << 20


class UsersError(ConfigError):
    """The dashboard's users file cannot be used as it is (exit code 3)."""


@dataclass(frozen=True)
class FloorUser:
    name: str
    role: str
    pin_hash: str


def new_hasher() -> PasswordHasher:
    return PasswordHasher(time_cost=3, memory_cost=64 * 1024, parallelism=1, type=Type.ID)


def trivial(pin: str) -> bool:
    """One digit repeated, or a run up or down the keypad (123456, 987654)."""
    steps = {int(b) - int(a) for a, b in itertools.pairwise(pin)}
    return len(set(pin)) == 1 or steps in ({1}, {-1})


def check_pin(pin: str) -> str:
    if not PIN.fullmatch(pin):
        raise UsersError("a dashboard PIN is 6 to 12 digits")
    if trivial(pin):
        raise UsersError("that PIN is too easy to guess: choose another")
    return pin


class FloorUsers:
    """The users file at ``path``: ``load()`` (refusing a file others may write, a name
    twice or a weak hash), ``add()``, ``verify()``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._hasher = new_hasher()
        self._dummy = self._hasher.hash("not a pin")

    def load(self) -> dict[str, FloorUser]:
        try:
            data = read_regular(self.path, _MAX_FILE)
            st = self.path.stat()
        except FileNotFoundError:
            raise UsersError(
                f"the dashboard's users file {self.path} does not exist: add a user with "
                "shoe-floor users add NAME --role pit --users FILE"
            ) from None
        except (NotRegularFile, FileTooLarge, IsADirectoryError):
            raise UsersError(f"{self.path} is not a dashboard users file") from None
        except OSError as exc:
            raise UsersError(f"cannot read {self.path}: {exc.strerror or exc}") from None
        if stat.S_IMODE(st.st_mode) & 0o022:
            raise UsersError(
                f"the dashboard's users file {self.path} may be written by other accounts "
                f"(mode {stat.S_IMODE(st.st_mode):o}): chmod 600 it"
            )
        return self._parse(data)

    def _parse(self, data: bytes) -> dict[str, FloorUser]:
        try:
            document: Any = json.loads(data)
            entries = document["users"] if document.get("format") == FORMAT else None
        except (ValueError, AttributeError, KeyError, TypeError):
            entries = None
        if not isinstance(entries, list):
            raise UsersError(f"{self.path} is not a dashboard users file")
        users: dict[str, FloorUser] = {}
        for entry in entries:
            try:
                name, role, pin_hash = entry["name"], entry["role"], entry["pin"]
            except (KeyError, TypeError):
                raise UsersError(f"{self.path}: a user lacks its name, role or pin") from None
            if not isinstance(name, str) or not _NAME.fullmatch(name) or role not in ROLES:
                raise UsersError(f"{self.path}: user {name!r} or role {role!r} is not valid")
            if name in users:
                raise UsersError(f"{self.path} names user {name} twice: keep one")
            if not isinstance(pin_hash, str) or (weak := _weakness(pin_hash)):
                raise UsersError(f"{self.path}: the PIN hash of {name} {weak}: reset it")
            users[name] = FloorUser(name, role, pin_hash)
        return users

    def add(self, name: str, role: str, pin: str) -> FloorUser:
        if not _NAME.fullmatch(name):
            raise UsersError(f"{name!r} is not a user name: letters, digits, . _ -")
        if role not in ROLES:
            raise UsersError(f"role {role!r} is not one of {', '.join(ROLES)}")
        user = FloorUser(name, role, self._hasher.hash(check_pin(pin)))
        exists = os.path.lexists(self.path)
        users = self.load() if exists else {}
        if name in users:
            raise UsersError(f"user {name} is already in {self.path}")
        users[name] = user
        document = {
            "format": FORMAT,
            "version": VERSION,
            "users": [{"name": u.name, "role": u.role, "pin": u.pin_hash} for u in users.values()],
        }
        data = json.dumps(document, indent=1).encode() + b"\n"
        try:
            (replace_file if exists else write_new_file)(self.path, data)
        except OSError as exc:
            raise UsersError(f"cannot write {self.path}: {exc.strerror or exc}") from None
        return user

    def verify(self, users: dict[str, FloorUser], name: str, pin: str) -> FloorUser | None:
        """The user, when ``pin`` is theirs; an unknown name costs the same time."""
        user = users.get(name)
        try:
            self._hasher.verify(user.pin_hash if user else self._dummy, pin)
        except (VerificationError, InvalidHashError):
            return None
        return user


def _weakness(pin_hash: str) -> str | None:
    try:
        found = extract_parameters(pin_hash)
    except (InvalidHashError, ValueError):
        return "is not an argon2 hash"
    if found.type is not Type.ID:
        return "is not argon2id"
    if found.memory_cost < HASH_FLOOR["memory_cost"] or found.time_cost < HASH_FLOOR["time_cost"]:
        return "is weaker than the floor's minimum (19 MiB, 2 passes)"
    return None
