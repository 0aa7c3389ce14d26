"""Signing in: PIN checks with a lockout, and the bearer tokens of signed-in sessions.

Both take an injected clock (seconds, monotonic by default) so that lockouts and expiry
are tested without waiting. Nothing here is journaled: the server journals what these
objects decide, through the controller's ``record_access``.
"""

from __future__ import annotations

import enum
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from shoe_controller.api.roles import Role
from shoe_controller.api.users import User, UsersFile, dummy_verify

#: Wrong PINs in a row that lock a user, and for how long (seconds).
MAX_FAILURES = 5
LOCKOUT_S = 300.0
#: A session's longest life, and how long it may stay unused (seconds).
TOKEN_TTL_S = 12 * 3600.0
IDLE_TIMEOUT_S = 30 * 60.0

Clock = Callable[[], float]


class Verdict(enum.Enum):
    ACCEPTED = "accepted"
    WRONG = "wrong"  # unknown name or wrong PIN: the caller is not told which
    LOCKED = "locked"  # locked already: the PIN was not even checked
    LOCKED_NOW = "locked_now"  # this wrong PIN was the last one allowed


@dataclass(frozen=True)
class SignIn:
    verdict: Verdict
    user: User | None = None
    retry_after: float = 0.0


@dataclass
class _Failures:
    count: int = 0
    locked_until: float = 0.0


class Authenticator:
    """Checks PINs against the users file, re-read whenever it changes on disk (a user
    added with ``shoe-diag users`` can sign in without a restart). ``MAX_FAILURES`` wrong
    PINs in a row lock that name for ``LOCKOUT_S`` seconds. Thread-safe; ``sign_in`` is
    slow on purpose (argon2id) and belongs on a worker thread."""

    def __init__(
        self,
        users: UsersFile,
        *,
        clock: Clock = time.monotonic,
        max_failures: int = MAX_FAILURES,
        lockout: float = LOCKOUT_S,
    ) -> None:
        self.users_file = users
        self._clock = clock
        self._max_failures = max_failures
        self._lockout = lockout
        self._lock = threading.Lock()
        self._users: dict[str, User] = {}
        self._stamp: tuple[int, int, int] | None = None
        self._failures: dict[str, _Failures] = {}
        self.reload()

    def reload(self) -> None:
        """Read the users file now (a damaged one raises UsersFileError)."""
        stamp = self.users_file.stamp()
        users = self.users_file.load()
        with self._lock:
            self._users, self._stamp = users, stamp

    def users(self) -> dict[str, User]:
        self._refresh()
        with self._lock:
            return dict(self._users)

    def _refresh(self) -> None:
        if self.users_file.stamp() != self._stamp:
            self.reload()

    def sign_in(self, name: str, pin: str) -> SignIn:
        self._refresh()
        now = self._clock()
        with self._lock:
            user = self._users.get(name)
            failures = self._failures.get(name)
            if user is not None and failures is not None and failures.locked_until > now:
                return SignIn(Verdict.LOCKED, user, failures.locked_until - now)
        if user is None:
            dummy_verify(self.users_file.hasher)
            return SignIn(Verdict.WRONG)
        if self.users_file.verify(user, pin):
            with self._lock:
                self._failures.pop(name, None)
            return SignIn(Verdict.ACCEPTED, user)
        with self._lock:
            failures = self._failures.setdefault(name, _Failures())
            failures.count += 1
            if failures.count >= self._max_failures:
                failures.count = 0
                failures.locked_until = now + self._lockout
                return SignIn(Verdict.LOCKED_NOW, user, self._lockout)
        return SignIn(Verdict.WRONG, user)


@dataclass
class Session:
    """A signed-in person: who, with which role, since when, last seen when."""

    token: str = field(repr=False)
    user: str
    role: Role
    issued: float
    last_used: float


class Sessions:
    """Bearer tokens: random (256 bits), kept in memory only, so a restart of the service
    signs everyone out. A token ends at ``ttl`` after sign-in, or ``idle`` after its last
    use, or at sign-out. Thread-safe."""

    def __init__(
        self,
        *,
        ttl: float = TOKEN_TTL_S,
        idle: float = IDLE_TIMEOUT_S,
        clock: Clock = time.monotonic,
    ) -> None:
        self.ttl = ttl
        self.idle = idle
        self._clock = clock
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}

    def open(self, user: str, role: Role) -> Session:
        now = self._clock()
        session = Session(secrets.token_urlsafe(32), user, role, now, now)
        with self._lock:
            self._prune(now)
            self._sessions[session.token] = session
        return session

    def get(self, token: str) -> Session | None:
        """The live session of ``token`` (its last use now), or None when unknown or over."""
        now = self._clock()
        with self._lock:
            session = self._sessions.get(token)
            if session is None:
                return None
            if not self._alive(session, now):
                del self._sessions[token]
                return None
            session.last_used = now
            return session

    def alive(self, session: Session) -> bool:
        """Whether ``session`` is still live, without counting this as a use."""
        with self._lock:
            return session.token in self._sessions and self._alive(session, self._clock())

    def close(self, token: str) -> Session | None:
        with self._lock:
            return self._sessions.pop(token, None)

    def expires_in(self, session: Session) -> float:
        return max(0.0, session.issued + self.ttl - self._clock())

    def _alive(self, session: Session, now: float) -> bool:
        return now < session.issued + self.ttl and now < session.last_used + self.idle

    def _prune(self, now: float) -> None:
        for token in [t for t, s in self._sessions.items() if not self._alive(s, now)]:
            del self._sessions[token]
