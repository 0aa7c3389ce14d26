"""The users file: who may sign in to the box, with which role, and their PIN's hash.

One JSON document, mode 0600, written atomically (temporary file, fsync, rename). PINs are
never stored: only their argon2id hashes (``argon2-cffi``). A path that holds something
else than a users file (a device node, a FIFO, another document) is never replaced.

::

    {"format": "shoe-controller-users", "version": 1,
     "users": [{"name": "ana", "role": "dealer", "pin": "$argon2id$v=19$..."}]}
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from shoe_controller.api.roles import Role
from shoe_controller.errors import ConfigError
from shoe_controller.journal.paths import ensure_directory, fsync_directory

FORMAT: Final = "shoe-controller-users"
VERSION: Final = 1
FILE_NAME: Final = "users.json"
FILE_MODE: Final = 0o600
PIN_DIGITS: Final = (4, 12)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,31}")


class UsersFileError(ConfigError):
    """The users file cannot be read or written as asked (exit code 3)."""


@dataclass(frozen=True)
class User:
    """One person who may sign in. ``pin_hash`` is an argon2id hash, never the PIN."""

    name: str
    role: Role
    pin_hash: str


def default_users_path(journal: Path) -> Path:
    """The users file beside the journal: ``/var/lib/shoe-controller/users.json``."""
    return journal.parent / FILE_NAME


def check_name(name: str) -> str:
    """A user name: 1 to 32 letters, digits, dots, dashes or underscores."""
    if not _NAME.fullmatch(name):
        raise UsersFileError(
            f"{name!r} is not a user name: use 1 to 32 letters, digits, '.', '-' or '_', "
            "starting with a letter or digit"
        )
    return name


def check_pin(pin: str) -> str:
    """A PIN: 4 to 12 digits."""
    low, high = PIN_DIGITS
    if not (pin.isascii() and pin.isdigit() and low <= len(pin) <= high):
        raise UsersFileError(f"a PIN is {low} to {high} digits (0-9), nothing else")
    return pin


def new_hasher() -> PasswordHasher:
    """argon2id with RFC 9106's second recommended parameter set (64 MiB, 3 passes)."""
    return PasswordHasher()


class UsersFile:
    """The users file at ``path``: read, change and write it back atomically.

    Reading tolerates a missing file (no users yet). Every change reads the file afresh and
    writes the whole document, so two commands run one after the other never lose a user.
    """

    def __init__(self, path: Path, hasher: PasswordHasher | None = None) -> None:
        self.path = path
        self.hasher = hasher or new_hasher()

    # --- reading ---------------------------------------------------------------------------

    def load(self) -> dict[str, User]:
        """Every user by name; empty when the file does not exist yet."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise self._unusable(exc) from None
        if not stat.S_ISREG(st.st_mode):
            raise UsersFileError(
                f"users file {self.path} is not a regular file: give another path with --users"
            )
        try:
            data = json.loads(self.path.read_bytes().decode("utf-8"))
        except OSError as exc:
            raise self._unusable(exc) from None
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise self._foreign() from None
        return self._parse(data)

    def stamp(self) -> tuple[int, int, int] | None:
        """What changes when the file is rewritten (inode, size, mtime), or None."""
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns)

    def _parse(self, data: Any) -> dict[str, User]:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise self._foreign()
        if data.get("version") != VERSION:
            raise UsersFileError(
                f"users file {self.path} has version {data.get('version')!r}; this version "
                f"reads version {VERSION}: upgrade shoe-controller"
            )
        users: dict[str, User] = {}
        entries = data.get("users")
        if not isinstance(entries, list):
            raise self._damaged("'users' is not a list")
        for entry in entries:
            if not isinstance(entry, dict):
                raise self._damaged("a user is not an object")
            name, role, pin = entry.get("name"), entry.get("role"), entry.get("pin")
            if not (isinstance(name, str) and isinstance(pin, str) and isinstance(role, str)):
                raise self._damaged("a user lacks its name, role or PIN hash")
            try:
                users[name] = User(name, Role(role), pin)
            except ValueError:
                raise self._damaged(f"user {name!r} has an unknown role {role!r}") from None
        return users

    # --- changing --------------------------------------------------------------------------

    def add(self, name: str, role: Role, pin: str) -> User:
        """Add ``name`` with ``role`` and ``pin``; refused when the name exists."""
        users = self.load()
        check_name(name)
        if name in users:
            raise UsersFileError(
                f"user {name!r} exists already: 'users reset {name}' gives a new PIN, "
                f"'users remove {name}' removes it"
            )
        user = User(name, role, self.hasher.hash(check_pin(pin)))
        users[name] = user
        self._save(users)
        return user

    def get(self, name: str) -> User:
        """The user ``name``; a name not in the file is an error that says what to do."""
        return self._existing(self.load(), name)

    def reset(self, name: str, pin: str) -> User:
        """Give ``name`` a new PIN; its role stays."""
        users = self.load()
        old = self._existing(users, name)
        user = User(name, old.role, self.hasher.hash(check_pin(pin)))
        users[name] = user
        self._save(users)
        return user

    def remove(self, name: str) -> User:
        """Remove ``name``; it can no longer sign in."""
        users = self.load()
        user = self._existing(users, name)
        del users[name]
        self._save(users)
        return user

    def _existing(self, users: dict[str, User], name: str) -> User:
        try:
            return users[name]
        except KeyError:
            raise UsersFileError(
                f"no user {name!r} in {self.path}: 'users list' shows who there is"
            ) from None

    def _save(self, users: dict[str, User]) -> None:
        document = {
            "format": FORMAT,
            "version": VERSION,
            "users": [
                {"name": u.name, "role": u.role.value, "pin": u.pin_hash}
                for u in sorted(users.values(), key=lambda u: u.name)
            ],
        }
        data = (json.dumps(document, indent=2) + "\n").encode("utf-8")
        # load() has checked that the path is absent or a regular file holding our format.
        try:
            ensure_directory(self.path.parent)
            _write_atomically(self.path, data)
        except OSError as exc:
            raise self._unusable(exc) from None

    # --- verifying -------------------------------------------------------------------------

    def verify(self, user: User, pin: str) -> bool:
        """Whether ``pin`` is ``user``'s PIN (argon2's constant-time comparison)."""
        try:
            return self.hasher.verify(user.pin_hash, pin)
        except (VerificationError, InvalidHashError):
            return False

    # --- errors ----------------------------------------------------------------------------

    def _unusable(self, exc: OSError) -> UsersFileError:
        reason = exc.strerror or str(exc)
        return UsersFileError(
            f"cannot use users file {self.path}: {reason}; run as the service's user "
            "(root) or give another path with --users"
        )

    def _foreign(self) -> UsersFileError:
        return UsersFileError(
            f"{self.path} is not a shoe-controller users file; it is left as it is: give "
            "another path with --users"
        )

    def _damaged(self, what: str) -> UsersFileError:
        return UsersFileError(
            f"users file {self.path} is damaged ({what}): restore it from its backup"
        )


def _write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to a new file of ours beside ``path`` (a fresh name, mode 0600),
    fsync it, rename it over ``path`` and fsync the directory: a crash leaves the old file
    or the new one, never a part, and nothing another process placed is written through.

    Run by root, the file keeps the owner of the file it replaces, or takes the owner of
    its directory: ``sudo shoe-diag users add`` in the service's state directory leaves a
    file the service's user can read."""
    owner = path if path.exists() else path.parent
    st = owner.stat()
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".new", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as stream:
            os.fchmod(stream.fileno(), FILE_MODE)
            if os.geteuid() == 0:
                os.fchown(stream.fileno(), st.st_uid, st.st_gid)
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    fsync_directory(path.parent)


def dummy_verify(hasher: PasswordHasher) -> None:
    """Spend the time of one verification, so that an unknown name answers as slowly as a
    wrong PIN and names cannot be told apart by timing."""
    with contextlib.suppress(VerificationError, InvalidHashError):
        hasher.verify(_dummy_hash(hasher), "0000")


@functools.cache
def _dummy_hash(hasher: PasswordHasher) -> str:
    # A hash of no one's PIN, with the hasher's own parameters.
    return hasher.hash(os.urandom(8).hex())
