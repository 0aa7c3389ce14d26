"""How many PINs anyone may try: per user name and per client, checked and counted
atomically. The box's API and the floor's dashboard both sign in through it, each with
its own limits (the defaults are the box's).

User names are not secret (they are on the dealers' badges, and the console may list them),
so the PIN is all that stands between a guesser and the table. Two limits bound the guesses:

- per name: :data:`NAME_LIMIT` wrong PINs for one name lock that name, within the scope
  they came from: a caller may set apart the clients whose own people must always reach
  the sign-in (the box's API: the table's console), so that wrong PINs from elsewhere lock
  the name for elsewhere only, and the table's own wrong PINs for the table only;
- per client (the caller's key for it: the box's API keys an IPv6 client by its /64):
  :data:`CLIENT_LIMIT` failed sign-ins, whatever the names, lock that client.

A name is counted whether or not a user has it, so that a locked name and an unknown name
get the same answers, after the same time: a lock answers at once, without checking a PIN.

Every attempt takes its place before its PIN is checked (:meth:`Attempts.begin`) and counts
as a failure until it is known to be one, so concurrent attempts never check more PINs than
the limit allows. A name's wrong PINs are forgotten at its user's next sign-in in the same
scope; a client's are forgotten only with time. :meth:`Attempts.lift` ends a name's lock in
every scope (a new PIN, ``users reset``). Everything is kept in memory: a restart lifts
every lock.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final


@dataclass(frozen=True)
class Limit:
    """``failures`` failed sign-ins within ``window`` seconds lock for ``lockout`` seconds."""

    failures: int
    window: float
    lockout: float


#: Five wrong PINs for one name within 15 minutes lock the name for five minutes.
NAME_LIMIT: Final = Limit(failures=5, window=900.0, lockout=300.0)
#: Ten failed sign-ins from one client within 10 minutes lock the client for 10 minutes.
CLIENT_LIMIT: Final = Limit(failures=10, window=600.0, lockout=600.0)
#: Names and clients remembered at most; the idle ones are forgotten first.
MAX_TRACKED: Final = 10_000
#: A name is remembered by this many characters at most (a real one has 32 at most).
NAME_KEY_CHARS: Final = 64

Clock = Callable[[], float]
#: A track's key: a client's, or a name's with its scope.
Key = str | tuple[str, str]


@dataclass(frozen=True)
class Ticket:
    """An attempt under way: give it back to :meth:`Attempts.finish`."""

    #: The name's key: (scope, name).
    name: tuple[str, str]
    client: str


#: The scope of the clients nobody set apart.
ANYWHERE: Final = ""


@dataclass(frozen=True)
class Refused:
    """No attempt now: the name or the client is locked (or at its limit with attempts
    under way) for ``retry_after`` more seconds."""

    retry_after: float


@dataclass(frozen=True)
class Outcome:
    """What a failure locked: the name, the client, both or neither."""

    name_locked: bool = False
    client_locked: bool = False
    retry_after: float = 0.0


@dataclass
class _Track:
    failures: deque[float] = field(default_factory=deque)
    pending: int = 0
    locked_until: float = 0.0

    def locked(self, now: float) -> float:
        return max(0.0, self.locked_until - now)

    def forget_before(self, moment: float) -> None:
        while self.failures and self.failures[0] <= moment:
            self.failures.popleft()

    def idle(self, now: float) -> bool:
        return not self.pending and not self.failures and self.locked_until <= now


class _Tracks:
    """One limit's tracks by key, at most ``MAX_TRACKED`` of them."""

    def __init__(self, limit: Limit) -> None:
        self.limit = limit
        self._tracks: dict[Key, _Track] = {}

    def get(self, key: Key, now: float) -> _Track:
        track = self._tracks.get(key)
        if track is None:
            if len(self._tracks) >= MAX_TRACKED:
                self._shrink(now)
            track = self._tracks[key] = _Track()
        track.forget_before(now - self.limit.window)
        return track

    def full(self, track: _Track) -> bool:
        return len(track.failures) + track.pending >= self.limit.failures

    def fail(self, track: _Track, now: float) -> bool:
        """Count a failure; True when it locks."""
        track.failures.append(now)
        if len(track.failures) >= self.limit.failures:
            track.failures.clear()
            track.locked_until = now + self.limit.lockout
            return True
        return False

    def lift(self, key: Key) -> None:
        track = self._tracks.get(key)
        if track is not None:
            track.failures.clear()
            track.locked_until = 0.0

    def _shrink(self, now: float) -> None:
        for key in [k for k, t in self._tracks.items() if t.idle(now)]:
            del self._tracks[key]
        # Still full (a flood of names each tried once): forget the oldest tracks that
        # hold no lock and no attempt under way.
        for key in list(self._tracks):
            if len(self._tracks) < MAX_TRACKED:
                break
            track = self._tracks[key]
            if not track.pending and track.locked_until <= now:
                del self._tracks[key]


class Attempts:
    """The sign-in limits, per name and per client. Thread-safe."""

    def __init__(
        self,
        *,
        name_limit: Limit = NAME_LIMIT,
        client_limit: Limit = CLIENT_LIMIT,
        clock: Clock,
    ) -> None:
        self._names = _Tracks(name_limit)
        self._clients = _Tracks(client_limit)
        self._clock = clock
        self._lock = threading.Lock()
        self._scopes = {ANYWHERE}

    def begin(self, name: str, client: str, *, scope: str = ANYWHERE) -> Ticket | Refused:
        """Take a place for one attempt, or say how long to wait; ``name`` is counted
        within ``scope`` (see the module's description)."""
        key = _scoped(scope, name)
        now = self._clock()
        with self._lock:
            by_name = self._names.get(key, now)
            by_client = self._clients.get(client, now)
            wait = max(by_name.locked(now), by_client.locked(now))
            if wait > 0:
                return Refused(wait)
            if self._names.full(by_name) or self._clients.full(by_client):
                # At the limit with attempts under way: were they all to fail, this one
                # would be past it. Ask to come back once they are decided.
                return Refused(1.0)
            by_name.pending += 1
            by_client.pending += 1
            self._scopes.add(scope)
        return Ticket(key, client)

    def finish(self, ticket: Ticket, *, accepted: bool) -> Outcome:
        """Count the attempt's result; a failure may lock the name, the client or both."""
        now = self._clock()
        with self._lock:
            by_name = self._names.get(ticket.name, now)
            by_client = self._clients.get(ticket.client, now)
            by_name.pending -= 1
            by_client.pending -= 1
            if accepted:
                by_name.failures.clear()
                return Outcome()
            name_locked = self._names.fail(by_name, now)
            client_locked = self._clients.fail(by_client, now)
            wait = max(by_name.locked(now), by_client.locked(now))
        return Outcome(name_locked, client_locked, wait)

    def lift(self, name: str) -> None:
        """End the lock of ``name`` in every scope and forget its failures (its PIN was
        reset)."""
        with self._lock:
            for scope in self._scopes:
                self._names.lift(_scoped(scope, name))


def _scoped(scope: str, name: str) -> tuple[str, str]:
    # Apart from the name, so that no name a client sends can stand for another scope's.
    return (scope, name[:NAME_KEY_CHARS])
