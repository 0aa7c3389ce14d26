"""The users file: who may sign in to the box, with which role, and their PIN's hash.

One JSON document, mode 0600, written atomically (temporary file, fsync, rename). PINs are
never stored: only their argon2id hashes (``argon2-cffi``). A path that holds something
else than a users file (a device node, a FIFO, another document) is never replaced.

The file decides who may act at the table, so it is trusted only when nobody else could
have written it and when nothing in it is weaker than this module allows: a file that
another account may write (or that sits in a directory another account may write), a hash
below :data:`HASH_FLOOR`, or a name listed twice is refused whole, never used in part.
A PIN given to :meth:`UsersFile.add` or :meth:`UsersFile.reset` must pass
:func:`check_pin`: 4 to 12 digits, 6 at least for a supervisor, and nothing on the
deny-list of trivial PINs (:func:`trivial_pin`).

::

    {"format": "shoe-controller-users", "version": 1,
     "users": [{"name": "ana", "role": "dealer", "pin": "$argon2id$v=19$..."}]}
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from argon2 import Parameters, PasswordHasher, Type, extract_parameters
from argon2.exceptions import InvalidHashError, VerificationError

from shoe_controller.api.roles import Role
from shoe_controller.errors import ConfigError
from shoe_controller.journal.paths import ensure_directory, fsync_directory

FORMAT: Final = "shoe-controller-users"
VERSION: Final = 1
FILE_NAME: Final = "users.json"
FILE_MODE: Final = 0o600
PIN_DIGITS: Final = (4, 12)
#: A supervisor clears faults and decides misdeals: their PIN is longer.
SUPERVISOR_PIN_DIGITS: Final = 6
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,31}")
#: PINs people choose most often that no simple rule below catches: keypad columns, the
#: word LOVE on a phone's keypad, and the like.
COMMON_PINS: Final = frozenset(
    {"2580", "0852", "1004", "1122", "1313", "2112", "5683", "6969", "7777", "159753", "147258"}
)


@dataclass(frozen=True)
class HashFloor:
    """The weakest argon2 parameters a users file may hold: argon2id, version 19, and at
    least these costs and lengths. The default is OWASP's minimum for argon2id (19 MiB of
    memory, two passes, one lane); :func:`new_hasher` hashes well above it."""

    memory_kib: int = 19 * 1024
    time_cost: int = 2
    parallelism: int = 1
    salt_bytes: int = 16
    hash_bytes: int = 16

    def shortfall(self, pin_hash: str) -> str | None:
        """What makes ``pin_hash`` weaker than this floor, or None when it is not."""
        try:
            found = extract_parameters(pin_hash)
        except (InvalidHashError, ValueError):
            return "it is not an argon2 hash"
        return self._below(found)

    def hasher_shortfall(self, hasher: PasswordHasher) -> str | None:
        """What makes the hashes ``hasher`` makes weaker than this floor, or None."""
        made = Parameters(
            type=hasher.type,
            version=19,
            salt_len=hasher.salt_len,
            hash_len=hasher.hash_len,
            time_cost=hasher.time_cost,
            memory_cost=hasher.memory_cost,
            parallelism=hasher.parallelism,
        )
        return self._below(made)

    def _below(self, found: Parameters) -> str | None:
        if found.type is not Type.ID or found.version != 19:
            return f"it is {found.type.name.lower()} version {found.version}, not argon2id 19"
        for what, have, floor in (
            ("memory", found.memory_cost, self.memory_kib),
            ("passes", found.time_cost, self.time_cost),
            ("lanes", found.parallelism, self.parallelism),
            ("salt bytes", found.salt_len, self.salt_bytes),
            ("hash bytes", found.hash_len, self.hash_bytes),
        ):
            if have < floor:
                return f"its {what} is {have}, below the floor of {floor}"
        return None


HASH_FLOOR: Final = HashFloor()


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


def check_pin(pin: str, role: Role | None = None) -> str:
    """A PIN: 4 to 12 digits (6 at least for a supervisor), and not a trivial one."""
    low, high = PIN_DIGITS
    if not (pin.isascii() and pin.isdigit() and low <= len(pin) <= high):
        raise UsersFileError(f"a PIN is {low} to {high} digits (0-9), nothing else")
    if role is Role.SUPERVISOR and len(pin) < SUPERVISOR_PIN_DIGITS:
        raise UsersFileError(
            f"a supervisor's PIN is {SUPERVISOR_PIN_DIGITS} to {high} digits: choose a longer one"
        )
    why = trivial_pin(pin)
    if why is not None:
        raise UsersFileError(f"that PIN is too easy to guess ({why}): choose another")
    return pin


def trivial_pin(pin: str) -> str | None:
    """Why ``pin`` (digits) is on the deny-list, or None: the same step from digit to digit
    (1111, 1234, 9876, 1357, 7890), a short group repeated (1212, 123123), a year from 1900
    to 2099, or one of :data:`COMMON_PINS`."""
    digits = [int(c) for c in pin]
    steps = {(b - a) % 10 for a, b in itertools.pairwise(digits)}
    if len(steps) == 1:
        step = steps.pop()
        if step == 0:
            return "one digit repeated"
        return "digits in a row" if step in (1, 9) else "digits in even steps"
    for size in range(2, len(pin) // 2 + 1):
        if len(pin) % size == 0 and pin == pin[:size] * (len(pin) // size):
            return "a group of digits repeated"
    if len(pin) == 4 and pin[:2] in ("19", "20"):
        return "a year"
    if pin in COMMON_PINS:
        return "one of the most common PINs"
    return None


def new_hasher() -> PasswordHasher:
    """argon2id with RFC 9106's second recommended parameter set (64 MiB, 3 passes)."""
    return PasswordHasher()


class UsersFile:
    """The users file at ``path``: read, change and write it back atomically.

    Reading tolerates a missing file (no users yet). Every change reads the file afresh and
    writes the whole document, so two commands run one after the other never lose a user.
    ``hasher`` hashes new PINs; it may not be weaker than ``floor``, which every hash in the
    file must reach.
    """

    def __init__(
        self, path: Path, hasher: PasswordHasher | None = None, floor: HashFloor = HASH_FLOOR
    ) -> None:
        self.path = path
        self.hasher = hasher or new_hasher()
        self.floor = floor
        weak = floor.hasher_shortfall(self.hasher)
        if weak is not None:
            raise ValueError(f"the hasher is below the users file's floor: {weak}")

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
        self._check_writers(st)
        try:
            data = json.loads(self.path.read_bytes().decode("utf-8"))
        except OSError as exc:
            raise self._unusable(exc) from None
        except (UnicodeDecodeError, json.JSONDecodeError):
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
        try:
            parent = self.path.parent.stat()
        except OSError as exc:
            raise self._unusable(exc) from None
        if parent.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not parent.st_mode & stat.S_ISVTX:
            raise UsersFileError(
                f"users file {self.path} is in a directory other accounts may write (mode "
                f"{stat.S_IMODE(parent.st_mode):04o}), so it is not used: 'chmod go-w "
                f"{self.path.parent}', or keep the file elsewhere"
            )

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
            if name in users:
                # Which entry would win is not for the reader to guess (a dealer's name
                # added again as a supervisor's): refuse the file.
                raise self._damaged(f"user {name!r} is listed twice")
            try:
                users[name] = User(name, Role(role), pin)
            except ValueError:
                raise self._damaged(f"user {name!r} has an unknown role {role!r}") from None
            weak = self.floor.shortfall(pin)
            if weak is not None:
                raise UsersFileError(
                    f"users file {self.path} is refused: the PIN hash of {name!r} is weaker "
                    f"than allowed ({weak}): give {name!r} a new PIN with 'shoe-diag users "
                    "reset'"
                )
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
        user = User(name, role, self.hasher.hash(check_pin(pin, role)))
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
        user = User(name, old.role, self.hasher.hash(check_pin(pin, old.role)))
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
        return pin_matches(user.pin_hash, pin)

    def decoy_hash(self) -> str:
        """A hash of no one's PIN, made as this file's hashes are: checking a PIN against it
        takes the time a real check takes, so that an unknown name answers as slowly as a
        wrong PIN and names cannot be told apart by timing."""
        return _dummy_hash(self.hasher)

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


def pin_matches(pin_hash: str, pin: str) -> bool:
    """Whether ``pin`` is the PIN ``pin_hash`` was made from (argon2's constant-time
    comparison; the hash names its own parameters)."""
    try:
        return _VERIFIER.verify(pin_hash, pin)
    except (VerificationError, InvalidHashError):
        return False


_VERIFIER = PasswordHasher()


@functools.cache
def _dummy_hash(hasher: PasswordHasher) -> str:
    # A hash of no one's PIN, with the hasher's own parameters.
    return hasher.hash(os.urandom(8).hex())
