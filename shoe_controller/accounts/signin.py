"""Signing in: PIN checks within the limits of :mod:`.attempts`, against a users file
watched for changes.

It takes an injected clock (seconds, monotonic by default) so that lockouts are tested
without waiting. Nothing here is journaled or answered: the box's API and the floor's
dashboard each say and record what these objects decide.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic

from shoe_controller.accounts.attempts import ANYWHERE, Attempts, Refused
from shoe_controller.accounts.errors import UsersFileError
from shoe_controller.accounts.hashes import pin_matches
from shoe_controller.accounts.realm import R
from shoe_controller.accounts.users import User, UsersFile

Clock = Callable[[], float]
#: ``check(pin_hash, pin)``: whether the PIN matches (the box's API checks in a process of
#: its own).
PinCheck = Callable[[str, str], bool]


class Verdict(enum.Enum):
    ACCEPTED = "accepted"
    WRONG = "wrong"  # unknown name or wrong PIN: the caller is not told which
    LOCKED = "locked"  # the name or the client is locked: no PIN was checked
    LOCKED_NOW = "locked_now"  # this wrong PIN was the last one allowed
    #: The PIN is right, but the PIN policy refuses it (a hash edited into the file by
    #: hand): refused until the PIN is reset; counted as a failure.
    WEAK_PIN = "weak_pin"


@dataclass(frozen=True)
class SignIn(Generic[R]):
    verdict: Verdict
    user: User[R] | None = None
    retry_after: float = 0.0
    #: Whether the lock (LOCKED_NOW) is the client's, rather than the name's alone.
    client_locked: bool = False
    #: Why the PIN policy refuses the PIN (WEAK_PIN).
    weak: str = ""


@dataclass(frozen=True)
class UsersChange:
    """What a new version of the users file changed: the names whose sessions must end
    (removed, given a new PIN, given another role), or why the new version is refused."""

    ended: frozenset[str] = frozenset()
    refused: str | None = None


class Authenticator(Generic[R]):
    """Checks PINs against the users file, within the limits of :class:`Attempts`.

    The file is read at construction (a damaged or untrustworthy one raises UsersFileError)
    and again by :meth:`refresh` whenever it changed on disk: a user added with the users
    command can sign in without a restart, and a user removed or changed is reported so
    that their sessions end. A new version that is refused leaves the last good one in use
    (``keep_last_good``, the box: the table goes on with the people it had) or nobody (the
    floor's dashboard: nobody signs in until the file is fixed). ``check`` checks a PIN
    against a hash (in this process by default). Thread-safe; ``sign_in`` is slow on
    purpose (argon2id) and belongs on a worker thread."""

    def __init__(
        self,
        users: UsersFile[R],
        *,
        clock: Clock = time.monotonic,
        attempts: Attempts | None = None,
        check: PinCheck = pin_matches,
        keep_last_good: bool = True,
    ) -> None:
        self.users_file = users
        self.clock = clock
        self.attempts = attempts or Attempts(clock=clock)
        self.check = check
        self.keep_last_good = keep_last_good
        self._lock = threading.Lock()
        self._reading = threading.Lock()
        self._users: dict[str, User[R]] = {}
        self._stamp = users.stamp()
        self._users = users.load()

    def close(self) -> None:
        """Stop the PIN checker, if it is a process of its own."""
        close = getattr(self.check, "close", None)
        if close is not None:
            close()

    def users(self) -> dict[str, User[R]]:
        with self._lock:
            return dict(self._users)

    def refresh(self) -> UsersChange | None:
        """Read the users file again if it changed since it was last read; None when it did
        not. Cheap when nothing changed (one stat)."""
        refused = None
        with self._reading:
            stamp = self.users_file.stamp()
            if stamp == self._stamp:
                return None
            try:
                users = self.users_file.load()
            except UsersFileError as exc:
                # Reported once for this version of the file.
                self._stamp = stamp
                if self.keep_last_good:
                    return UsersChange(refused=str(exc))
                users, refused = {}, str(exc)
            with self._lock:
                old, self._users, self._stamp = self._users, users, stamp
        changed = {name for name in old.keys() | users.keys() if old.get(name) != users.get(name)}
        for name in changed:
            # A new PIN, a new user of a name tried before: the name's failures are over.
            self.attempts.lift(name)
        return UsersChange(
            ended=frozenset(name for name in changed if name in old), refused=refused
        )

    def sign_in(
        self,
        name: str,
        pin: str,
        client: str = "",
        *,
        scope: str = ANYWHERE,
        before_check: Callable[[], object] = lambda: None,
    ) -> SignIn[R]:
        """Check ``name``'s PIN for ``client`` (the caller's key for it), the name's
        attempts counted within ``scope`` (:mod:`.attempts`); ``before_check`` is called
        once the attempt has its place, before the PIN (or the decoy, for an unknown name)
        is checked."""
        ticket = self.attempts.begin(name, client, scope=scope)
        if isinstance(ticket, Refused):
            return SignIn(Verdict.LOCKED, retry_after=ticket.retry_after)
        before_check()
        with self._lock:
            user = self._users.get(name)
        # An unknown name is checked against a decoy, so that it answers after the same time.
        pin_hash = user.pin_hash if user is not None else self.users_file.decoy_hash()
        matches = self.check(pin_hash, pin) and user is not None
        weak = self._weakness(user, pin) if matches else ""
        accepted = matches and not weak
        outcome = self.attempts.finish(ticket, accepted=accepted)
        if accepted:
            return SignIn(Verdict.ACCEPTED, user)
        if weak:
            return SignIn(Verdict.WEAK_PIN, user, weak=weak)
        if outcome.name_locked or outcome.client_locked:
            return SignIn(Verdict.LOCKED_NOW, user, outcome.retry_after, outcome.client_locked)
        return SignIn(Verdict.WRONG, user)

    def _weakness(self, user: User[R] | None, pin: str) -> str:
        """Why the PIN policy refuses ``user``'s right ``pin``, or "" (the users command
        never writes such a PIN; a hash edited in by hand may hold one)."""
        if user is None:
            return ""
        return self.users_file.realm.pin_weakness(pin, user.role) or ""
