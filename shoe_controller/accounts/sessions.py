"""Sessions: the random tokens signed-in people hold, kept in memory only."""

from __future__ import annotations

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


@dataclass
class Session(Generic[R]):
    """A signed-in person: who, with which role, since when, last seen when."""

    token: str = field(repr=False)
    user: str
    role: R
    issued: float
    last_used: float


class Sessions(Generic[R]):
    """Tokens: random (256 bits), kept in memory only, so a restart signs everyone out. A
    token ends at ``ttl`` after sign-in, or ``idle`` after its last use, or at sign-out.
    Thread-safe."""

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
        self._sessions: dict[str, Session[R]] = {}

    def open(self, user: str, role: R) -> Session[R]:
        now = self._clock()
        session = Session(secrets.token_urlsafe(32), user, role, now, now)
        with self._lock:
            self._prune(now)
            self._sessions[session.token] = session
        return session

    def get(self, token: str) -> Session[R] | None:
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

    def alive(self, session: Session[R]) -> bool:
        """Whether ``session`` is still live, without counting this as a use."""
        with self._lock:
            return session.token in self._sessions and self._alive(session, self._clock())

    def close(self, token: str) -> Session[R] | None:
        with self._lock:
            return self._sessions.pop(token, None)

    def end_user(self, user: str) -> list[Session[R]]:
        """End every session of ``user``; the sessions ended (each ends once)."""
        with self._lock:
            ended = [s for s in self._sessions.values() if s.user == user]
            for session in ended:
                del self._sessions[session.token]
        return ended

    def expires_in(self, session: Session[R]) -> float:
        return max(0.0, session.issued + self.ttl - self._clock())

    def _alive(self, session: Session[R], now: float) -> bool:
        return now < session.issued + self.ttl and now < session.last_used + self.idle

    def _prune(self, now: float) -> None:
        for token in [t for t, s in self._sessions.items() if not self._alive(s, now)]:
            del self._sessions[token]
