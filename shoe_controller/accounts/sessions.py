"""Sessions: the random tokens signed-in people hold, kept in memory only."""

from __future__ import annotations

import enum
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic

from shoe_controller.accounts.realm import R

#: A session's longest life, and how long it may stay unused (seconds): the box's.
TOKEN_TTL_S = 12 * 3600.0
IDLE_TIMEOUT_S = 30 * 60.0

Clock = Callable[[], float]


class Ending(enum.StrEnum):
    """Why a session ended."""

    SIGN_OUT = "sign_out"
    IDLE = "idle"  # unused for longer than the idle timeout
    EXPIRED = "expired"  # older than a session's longest life
    USER_CHANGED = "user_changed"  # its user removed from the users file, or changed


@dataclass
class Session(Generic[R]):
    """A signed-in person: who, with which role, since when, last seen when.

    ``id`` names the session in a journal: random, and nothing of the token, which is the
    secret. ``ended`` says why it ended, once it has."""

    token: str = field(repr=False)
    user: str
    role: R
    issued: float
    last_used: float
    id: str = field(default_factory=lambda: secrets.token_hex(8))
    ended: Ending | None = None


class Sessions(Generic[R]):
    """Tokens: random (256 bits), kept in memory only, so a restart signs everyone out. A
    token ends at ``ttl`` after sign-in, or ``idle`` after its last use, or at sign-out.
    Thread-safe.

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
        on_ended: Callable[[Session[R]], None] = lambda session: None,
    ) -> None:
        self.ttl = ttl
        self.idle = idle
        self.clock = clock
        self.on_ended = on_ended
        self._lock = threading.Lock()
        self._sessions: dict[str, Session[R]] = {}

    def open(self, user: str, role: R) -> Session[R]:
        now = self.clock()
        session = Session(secrets.token_urlsafe(32), user, role, now, now)
        with self._lock:
            over = self._prune(now)
            self._sessions[session.token] = session
        self._told(over)
        return session

    def get(self, token: str) -> Session[R] | None:
        """The live session of ``token`` (its last use now), or None when unknown or over."""
        now = self.clock()
        with self._lock:
            session = self._sessions.get(token)
            if session is None:
                return None
            if not self._over(session, now):
                session.last_used = now
                return session
            del self._sessions[token]
        self._told([session])
        return None

    def alive(self, session: Session[R]) -> bool:
        """Whether ``session`` is still live, without counting this as a use."""
        with self._lock:
            if self._sessions.get(session.token) is not session:
                return False
            if not self._over(session, self.clock()):
                return True
            del self._sessions[session.token]
        self._told([session])
        return False

    def sweep(self) -> list[Session[R]]:
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

    def close(self, token: str) -> Session[R] | None:
        """Sign ``token``'s session out; the session, or None when there was none live."""
        with self._lock:
            session = self._sessions.pop(token, None)
        if session is not None:
            session.ended = Ending.SIGN_OUT
            self._told([session])
        return session

    def end_user(self, user: str) -> list[Session[R]]:
        """End every session of ``user``; the sessions ended (each ends once)."""
        with self._lock:
            ended = [s for s in self._sessions.values() if s.user == user]
            for session in ended:
                del self._sessions[session.token]
                session.ended = Ending.USER_CHANGED
        self._told(ended)
        return ended

    def expires_in(self, session: Session[R]) -> float:
        return max(0.0, session.issued + self.ttl - self.clock())

    def _end(self, session: Session[R]) -> float:
        return min(session.issued + self.ttl, session.last_used + self.idle)

    def _over(self, session: Session[R], now: float) -> bool:
        """Whether ``session``'s time is over at ``now``; if so, why is noted."""
        if now >= session.issued + self.ttl:
            session.ended = Ending.EXPIRED
        elif now >= session.last_used + self.idle:
            session.ended = Ending.IDLE
        return session.ended is not None

    def _prune(self, now: float) -> list[Session[R]]:
        over = [s for s in self._sessions.values() if self._over(s, now)]
        for session in over:
            del self._sessions[session.token]
        return over

    def _told(self, over: list[Session[R]]) -> None:
        for session in over:
            self.on_ended(session)
