"""A users file: who may sign in, with which role, and their PIN's hash.

One JSON document, mode 0600, written atomically (temporary file, fsync, rename). PINs are
never stored: only their argon2id hashes (:mod:`.hashes`). A path that holds something
else than a users file (a device node, a FIFO, another document) is never replaced.

The box and the floor each have their own file, of their own format and roles (a
:class:`~.realm.Realm`), under the same rules. The file decides who may act, so it is trusted only
when nobody else could have written it and when nothing in it is weaker than this module
allows: a file that another account may write (or that sits in a directory another
account may write), a hash below :data:`~.hashes.HASH_FLOOR`, or a name listed twice is
refused whole, never used in part. A PIN given to :meth:`UsersFile.add` or
:meth:`UsersFile.reset` must pass the realm's PIN policy (:class:`~.pins.PinPolicy`).

::

    {"format": "shoe-controller-users", "version": 1,
     "users": [{"name": "ana", "role": "dealer", "pin": "$argon2id$v=19$..."}]}
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Generic

from argon2 import PasswordHasher

from shoe_controller.accounts.errors import UsersFileError
from shoe_controller.accounts.hashes import (
    HASH_FLOOR,
    HashFloor,
    decoy_hash,
    new_hasher,
    pin_matches,
)
from shoe_controller.accounts.realm import R, Realm
from shoe_controller.files import FileTooLarge, NotRegularFile, open_regular
from shoe_controller.journal.paths import ensure_directory, fsync_directory

VERSION: Final = 1
FILE_MODE: Final = 0o600
#: A users file is a few kilobytes; one far larger is not one of ours.
MAX_FILE: Final = 1 << 20
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,31}")


@dataclass(frozen=True)
class User(Generic[R]):
    """One person who may sign in. ``pin_hash`` is an argon2id hash, never the PIN."""

    name: str
    role: R
    pin_hash: str


def check_name(name: str) -> str:
    """A user name: 1 to 32 letters, digits, dots, dashes or underscores."""
    if not _NAME.fullmatch(name):
        raise UsersFileError(
            f"{name!r} is not a user name: use 1 to 32 letters, digits, '.', '-' or '_', "
            "starting with a letter or digit"
        )
    return name


class UsersFile(Generic[R]):
    """The users file of ``realm`` at ``path``: read, change and write it back atomically.

    Reading tolerates a missing file (no users yet) unless asked not to. Every change
    reads the file afresh and writes the whole document, so two commands run one after
    the other never lose a user. ``hasher`` hashes new PINs; it may not be weaker than
    ``floor``, which every hash in the file must reach.
    """

    def __init__(
        self,
        realm: Realm[R],
        path: Path,
        hasher: PasswordHasher | None = None,
        floor: HashFloor = HASH_FLOOR,
    ) -> None:
        self.realm = realm
        self.path = path
        self.hasher = hasher or new_hasher()
        self.floor = floor
        weak = floor.hasher_shortfall(self.hasher)
        if weak is not None:
            raise ValueError(f"the hasher is below the users file's floor: {weak}")

    # --- reading ---------------------------------------------------------------------------

    def load(self, *, required: bool = False) -> dict[str, User[R]]:
        """Every user by name; empty when the file does not exist yet, unless
        ``required``."""
        try:
            with open_regular(self.path, MAX_FILE) as stream:
                self._check_writers(os.fstat(stream.fileno()))
                raw = stream.read(MAX_FILE + 1)
        except FileNotFoundError:
            if required:
                raise UsersFileError(
                    f"users file {self.path} does not exist: add a user with "
                    f"'{self.realm.command} add NAME --role ROLE --users {self.path}'"
                ) from None
            return {}
        except (NotRegularFile, IsADirectoryError):
            raise UsersFileError(
                f"users file {self.path} is not a regular file: give another path with --users"
            ) from None
        except FileTooLarge:
            raise self._foreign() from None
        except OSError as exc:
            raise self._unusable(exc) from None
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
            raise self._foreign() from None
        return self._parse(data)

    def stamp(self) -> tuple[int, ...] | None:
        """What changes when the file is rewritten or its mode changes (inode, size, mtime,
        ctime), or None."""
        try:
            st = self.path.stat()
        except OSError:
            return None
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    def _check_writers(self, st: os.stat_result) -> None:
        """Refuse a file that another account could have written: writable by its group or
        by others, or in a directory they may write without the sticky bit."""
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise UsersFileError(
                f"users file {self.path} may be written by other accounts (mode "
                f"{stat.S_IMODE(st.st_mode):04o}), so it is not used: check who changed it, "
                f"then 'chmod 600 {self.path}'"
            )
        parent = self.path.parent.stat()
        if parent.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not parent.st_mode & stat.S_ISVTX:
            raise UsersFileError(
                f"users file {self.path} is in a directory other accounts may write (mode "
                f"{stat.S_IMODE(parent.st_mode):04o}), so it is not used: 'chmod go-w "
                f"{self.path.parent}', or keep the file elsewhere"
            )

    def _parse(self, data: Any) -> dict[str, User[R]]:
        if not isinstance(data, dict) or data.get("format") != self.realm.format:
            raise self._foreign()
        if data.get("version") != VERSION:
            raise UsersFileError(
                f"users file {self.path} has version {data.get('version')!r}; this version "
                f"reads version {VERSION}: upgrade shoe-controller"
            )
        users: dict[str, User[R]] = {}
        entries = data.get("users")
        if not isinstance(entries, list):
            raise self._damaged("'users' is not a list")
        for entry in entries:
            if not isinstance(entry, dict):
                raise self._damaged("a user is not an object")
            name, role, pin = entry.get("name"), entry.get("role"), entry.get("pin")
            if not (isinstance(name, str) and isinstance(pin, str) and isinstance(role, str)):
                raise self._damaged("a user lacks its name, role or PIN hash")
            if name in users:
                # Which entry would win is not for the reader to guess (a dealer's name
                # added again as a supervisor's): refuse the file.
                raise self._damaged(f"user {name!r} is listed twice")
            try:
                users[name] = User(name, self.realm.roles(role), pin)
            except ValueError:
                raise self._damaged(f"user {name!r} has an unknown role {role!r}") from None
            weak = self.floor.shortfall(pin)
            if weak is not None:
                raise UsersFileError(
                    f"users file {self.path} is refused: the PIN hash of {name!r} is weaker "
                    f"than allowed ({weak}): give {name!r} a new PIN with "
                    f"'{self.realm.command} reset {name}'"
                )
        return users

    # --- changing --------------------------------------------------------------------------

    def add(self, name: str, role: R | str, pin: str) -> User[R]:
        """Add ``name`` with ``role`` and ``pin``; refused when the name exists."""
        users = self.load()
        check_name(name)
        if name in users:
            raise UsersFileError(
                f"user {name!r} exists already: 'users reset {name}' gives a new PIN, "
                f"'users remove {name}' removes it"
            )
        given = self.realm.role(role)
        user = User(name, given, self.hasher.hash(self.realm.check_pin(pin, given)))
        users[name] = user
        self._save(users)
        return user

    def get(self, name: str) -> User[R]:
        """The user ``name``; a name not in the file is an error that says what to do."""
        return self._existing(self.load(), name)

    def reset(self, name: str, pin: str) -> User[R]:
        """Give ``name`` a new PIN; its role stays."""
        users = self.load()
        old = self._existing(users, name)
        user = User(name, old.role, self.hasher.hash(self.realm.check_pin(pin, old.role)))
        users[name] = user
        self._save(users)
        return user

    def remove(self, name: str) -> User[R]:
        """Remove ``name``; it can no longer sign in."""
        users = self.load()
        user = self._existing(users, name)
        del users[name]
        self._save(users)
        return user

    def _existing(self, users: dict[str, User[R]], name: str) -> User[R]:
        try:
            return users[name]
        except KeyError:
            raise UsersFileError(
                f"no user {name!r} in {self.path}: 'users list' shows who there is"
            ) from None

    def _save(self, users: dict[str, User[R]]) -> None:
        document = {
            "format": self.realm.format,
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

    def verify(self, user: User[R], pin: str) -> bool:
        """Whether ``pin`` is ``user``'s PIN (argon2's constant-time comparison)."""
        return pin_matches(user.pin_hash, pin)

    def decoy_hash(self) -> str:
        """A hash of no one's PIN, made as this file's hashes are: checking a PIN against it
        takes the time a real check takes, so that an unknown name answers as slowly as a
        wrong PIN and names cannot be told apart by timing."""
        return decoy_hash(self.hasher)

    # --- errors ----------------------------------------------------------------------------

    def _unusable(self, exc: OSError) -> UsersFileError:
        reason = exc.strerror or str(exc)
        return UsersFileError(
            f"cannot use users file {self.path}: {reason}; run as the service's user "
            "(root) or give another path with --users"
        )

    def _foreign(self) -> UsersFileError:
        return UsersFileError(
            f"{self.path} is not a {self.realm.product} users file; it is left as it is: give "
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
