"""Signing in: PIN checks within the limits of :mod:`.attempts`, the users file watched for
changes, and the bearer tokens of signed-in sessions.

Both take an injected clock (seconds, monotonic by default) so that lockouts and expiry
are tested without waiting. Nothing here is journaled: the server journals what these
objects decide, through the controller's ``record_access``.
"""

from __future__ import annotations

import enum
import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from shoe_controller.api.attempts import NAME_LIMIT, Attempts, Refused
from shoe_controller.api.roles import Role
from shoe_controller.api.users import User, UsersFile, UsersFileError, pin_matches

log = logging.getLogger(__name__)

#: Wrong PINs for one name that lock it, and for how long (seconds): see attempts.py.
MAX_FAILURES = NAME_LIMIT.failures
LOCKOUT_S = NAME_LIMIT.lockout
#: A session's longest life, and how long it may stay unused (seconds).
TOKEN_TTL_S = 12 * 3600.0
IDLE_TIMEOUT_S = 30 * 60.0

Clock = Callable[[], float]
#: ``check(pin_hash, pin)``: whether the PIN matches (see :mod:`.pinchecks`).
PinCheck = Callable[[str, str], bool]


class Verdict(enum.Enum):
    ACCEPTED = "accepted"
    WRONG = "wrong"  # unknown name or wrong PIN: the caller is not told which
    LOCKED = "locked"  # the name or the client is locked: no PIN was checked
    LOCKED_NOW = "locked_now"  # this wrong PIN was the last one allowed


@dataclass(frozen=True)
class SignIn:
    verdict: Verdict
    user: User | None = None
    retry_after: float = 0.0
    #: Whether the lock (LOCKED_NOW) is the client's, rather than the name's alone.
    client_locked: bool = False


@dataclass(frozen=True)
class UsersChange:
    """What a new version of the users file changed: the names whose sessions must end
    (removed, given a new PIN, given another role), or why the new version is refused (the
    last good one stays in use)."""

    ended: frozenset[str] = frozenset()
    refused: str | None = None


class Authenticator:
    """Checks PINs against the users file, within the limits of :class:`Attempts`.

    The file is read at construction (a damaged or untrustworthy one raises UsersFileError)
    and again by :meth:`refresh` whenever it changed on disk: a user added with
    ``shoe-diag users`` can sign in without a restart, and a user removed or changed is
    reported so that their sessions end. A new version that is refused leaves the last
    good one in use. ``check`` checks a PIN against a hash (in this process by default; the
    service checks in a process of its own, :class:`~.pinchecks.PinChecker`). Thread-safe;
    ``sign_in`` is slow on purpose (argon2id) and belongs on a worker thread."""

    def __init__(
        self,
        users: UsersFile,
        *,
        clock: Clock = time.monotonic,
        attempts: Attempts | None = None,
        check: PinCheck = pin_matches,
    ) -> None:
        self.users_file = users
        self.clock = clock
        self.attempts = attempts or Attempts(clock=clock)
        self.check = check
        self._lock = threading.Lock()
        self._reading = threading.Lock()
        self._users: dict[str, User] = {}
        self._stamp = users.stamp()
        self._users = users.load()

    def close(self) -> None:
        """Stop the PIN checker, if it is a process of its own."""
        close = getattr(self.check, "close", None)
        if close is not None:
            close()

    def reload(self) -> None:
        """Read the users file now (a damaged one raises UsersFileError)."""
        stamp = self.users_file.stamp()
        users = self.users_file.load()
        with self._lock:
            self._users, self._stamp = users, stamp

    def users(self) -> dict[str, User]:
        with self._lock:
            return dict(self._users)

    def refresh(self) -> UsersChange | None:
        """Read the users file again if it changed since it was last read; None when it did
        not. Cheap when nothing changed (one stat)."""
        with self._reading:
            stamp = self.users_file.stamp()
            if stamp == self._stamp:
                return None
            try:
                users = self.users_file.load()
            except UsersFileError as exc:
                # Reported once for this version of the file; the last good one stays.
                self._stamp = stamp
                return UsersChange(refused=str(exc))
            with self._lock:
                old, self._users, self._stamp = self._users, users, stamp
        changed = {name for name in old.keys() | users.keys() if old.get(name) != users.get(name)}
        for name in changed:
            # A new PIN, a new user of a name tried before: the name's failures are over.
            self.attempts.lift(name)
        return UsersChange(ended=frozenset(name for name in changed if name in old))

    def sign_in(
        self,
        name: str,
        pin: str,
        client: str = "",
        *,
        before_check: Callable[[], object] = lambda: None,
    ) -> SignIn:
        """Check ``name``'s PIN for ``client`` (its key, see :mod:`.peers`);
        ``before_check`` is called once the attempt has its place, before the PIN (or the
        decoy, for an unknown name) is checked."""
        ticket = self.attempts.begin(name, client)
        if isinstance(ticket, Refused):
            return SignIn(Verdict.LOCKED, retry_after=ticket.retry_after)
        before_check()
        with self._lock:
            user = self._users.get(name)
        # An unknown name is checked against a decoy, so that it answers after the same time.
        pin_hash = user.pin_hash if user is not None else self.users_file.decoy_hash()
        accepted = self.check(pin_hash, pin) and user is not None
        outcome = self.attempts.finish(ticket, accepted=accepted)
        if accepted:
            return SignIn(Verdict.ACCEPTED, user)
        if outcome.name_locked or outcome.client_locked:
            return SignIn(Verdict.LOCKED_NOW, user, outcome.retry_after, outcome.client_locked)
        return SignIn(Verdict.WRONG, user)


class Ending(enum.StrEnum):
    """Why a session ended."""

    SIGN_OUT = "sign_out"
    IDLE = "idle"  # unused for longer than the idle timeout
    EXPIRED = "expired"  # older than a session's longest life
    USER_CHANGED = "user_changed"  # its user removed from the users file, or changed


@dataclass
class Session:
    """A signed-in person: who, with which role, since when, last seen when.

    ``id`` names the session in the journal: random, and nothing of the token, which is
    the secret. ``ended`` says why it ended, once it has."""

    token: str = field(repr=False)
    user: str
    role: Role
    issued: float
    last_used: float
    id: str = field(default_factory=lambda: secrets.token_hex(8))
    ended: Ending | None = None


class Sessions:
    """Bearer tokens: random (256 bits), kept in memory only, so a restart of the service
    signs everyone out. A token ends at ``ttl`` after sign-in, or ``idle`` after its last
    use, or at sign-out. Thread-safe.

    ``on_ended`` is told of each session that ends, once, however it ends (``ended`` says
    how): at its sign-out, when its user is ended, and, for an end by time (idle or
    expired), as soon as it is found over: whenever any method looks at it, or
    :meth:`sweep` runs. It is called without the lock held, before the method that ended
    the session or found it over returns, so that a caller told "signed out" is told after
    the end was handed on."""

    def __init__(
        self,
        *,
        ttl: float = TOKEN_TTL_S,
        idle: float = IDLE_TIMEOUT_S,
        clock: Clock = time.monotonic,
        on_ended: Callable[[Session], None] = lambda session: None,
    ) -> None:
        self.ttl = ttl
        self.idle = idle
        self.clock = clock
        self.on_ended = on_ended
        self._lock = threading.Lock()
        self._sessions: dict[str, Session] = {}

    def open(self, user: str, role: Role) -> Session:
        now = self.clock()
        session = Session(secrets.token_urlsafe(32), user, role, now, now)
        with self._lock:
            over = self._prune(now)
            self._sessions[session.token] = session
        self._told(over)
        return session

    def get(self, token: str) -> Session | None:
        """The live session of ``token`` (its last use now), or None when unknown or over."""
        now = self.clock()
        with self._lock:
            session = self._sessions.get(token)
            if session is None:
                return None
            if self._over(session, now):
                del self._sessions[token]
                over = [session]
            else:
                session.last_used = now
                return session
        self._told(over)
        return None

    def alive(self, session: Session) -> bool:
        """Whether ``session`` is still live, without counting this as a use."""
        with self._lock:
            if self._sessions.get(session.token) is not session:
                return False
            if not self._over(session, self.clock()):
                return True
            del self._sessions[session.token]
        self._told([session])
        return False

    def sweep(self) -> list[Session]:
        """End every session whose time is over now; those ended (each told once)."""
        with self._lock:
            over = self._prune(self.clock())
        self._told(over)
        return over

    def next_end(self) -> float | None:
        """When (on the clock) the first live session ends if nobody uses it; None: none."""
        with self._lock:
            ends = [self._end(session) for session in self._sessions.values()]
        return min(ends, default=None)

    def close(self, token: str) -> Session | None:
        """Sign ``token``'s session out; the session, or None when there was none live."""
        with self._lock:
            session = self._sessions.pop(token, None)
        if session is not None:
            session.ended = Ending.SIGN_OUT
            self._told([session])
        return session

    def end_user(self, user: str) -> list[Session]:
        """End every session of ``user``; the sessions ended (each ends once)."""
        with self._lock:
            ended = [s for s in self._sessions.values() if s.user == user]
            for session in ended:
                del self._sessions[session.token]
                session.ended = Ending.USER_CHANGED
        self._told(ended)
        return ended

    def expires_in(self, session: Session) -> float:
        return max(0.0, session.issued + self.ttl - self.clock())

    def _end(self, session: Session) -> float:
        return min(session.issued + self.ttl, session.last_used + self.idle)

    def _over(self, session: Session, now: float) -> bool:
        """Whether ``session``'s time is over at ``now``; if so, why is noted."""
        if now >= session.issued + self.ttl:
            session.ended = Ending.EXPIRED
        elif now >= session.last_used + self.idle:
            session.ended = Ending.IDLE
        return session.ended is not None

    def _prune(self, now: float) -> list[Session]:
        over = [s for s in self._sessions.values() if self._over(s, now)]
        for session in over:
            del self._sessions[session.token]
        return over

    def _told(self, over: list[Session]) -> None:
        for session in over:
            self.on_ended(session)
