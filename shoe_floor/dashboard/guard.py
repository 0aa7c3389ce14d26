"""The dashboard's defences, as the box's API has them: every request's ``Host`` and
``Origin`` checked, JSON only, sign-in before anything but the page itself, attempts
limited per client and per name, WebSockets capped per client and in all. A limit that
is reached refuses the newcomer; nothing a client does reaches the collectors or the
store (the dashboard only reads).
"""

from __future__ import annotations

import collections
import json
import secrets
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

from aiohttp import web

from shoe_floor.dashboard.users import FloorUser, FloorUsers

COOKIE: Final = "floor_session"


@dataclass(frozen=True)
class Limits:
    """The documented defaults (docs/floor.md, "serve")."""

    sockets: int = 64
    sockets_per_client: int = 8
    attempts_per_name: int = 5
    attempts_per_client: int = 20
    attempts_window: float = 300.0
    session_seconds: float = 12 * 3600.0
    body_bytes: int = 4096


@dataclass
class Session:
    user: str
    role: str
    expires: float


@dataclass
class Guard:
    """What the dashboard knows of its clients: sessions, failed attempts, sockets."""

    users_file: FloorUsers
    allowed_hosts: frozenset[str]
    scheme: str
    limits: Limits = field(default_factory=Limits)
    clock: Callable[[], float] = time.monotonic
    sessions: dict[str, Session] = field(default_factory=dict)
    sockets: collections.Counter[str] = field(default_factory=collections.Counter)
    _failures: dict[str, collections.deque[float]] = field(default_factory=dict)
    _users: dict[str, FloorUser] = field(default_factory=dict)
    _stamp: tuple[int, int, int] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- the users file, read again when it changed -----------------------------------------

    def users(self) -> dict[str, FloorUser]:
        try:
            st = self.users_file.path.stat()
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            stamp = None
        if stamp != self._stamp:
            # A file that became untrustworthy (or vanished) lets nobody in until fixed.
            try:
                self._users = self.users_file.load()
            except Exception:
                self._users = {}
            self._stamp = stamp
        return self._users

    # -- attempts ---------------------------------------------------------------------------

    def limited(self, client: str, name: str) -> bool:
        now = self.clock()
        with self._lock:
            return self._count(f"client {client}", now) >= self.limits.attempts_per_client or (
                self._count(f"name {name}", now) >= self.limits.attempts_per_name
            )

    def failed(self, client: str, name: str) -> None:
        now = self.clock()
        with self._lock:
            for key in (f"client {client}", f"name {name[:64]}"):
                self._failures.setdefault(key, collections.deque()).append(now)
            # Bounded: the oldest keys go first when a flood of names grows the table.
            while len(self._failures) > 10_000:
                del self._failures[next(iter(self._failures))]

    def _count(self, key: str, now: float) -> int:
        times = self._failures.get(key)
        if not times:
            return 0
        while times and times[0] < now - self.limits.attempts_window:
            times.popleft()
        return len(times)

    # -- sessions ---------------------------------------------------------------------------

    def open(self, user: FloorUser) -> str:
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._prune()
            self.sessions[token] = Session(
                user.name, user.role, self.clock() + self.limits.session_seconds
            )
        return token

    def session(self, request: web.Request) -> Session | None:
        token = request.cookies.get(COOKIE)
        if not token:
            return None
        with self._lock:
            found = self.sessions.get(token)
            if found is None or found.expires < self.clock():
                return None
        # A user removed from the file, or given another role, is signed out.
        current = self.users().get(found.user)
        if current is None or current.role != found.role:
            with self._lock:
                self.sessions.pop(token, None)
            return None
        return found

    def close(self, request: web.Request) -> None:
        token = request.cookies.get(COOKIE)
        if token:
            with self._lock:
                self.sessions.pop(token, None)

    def _prune(self) -> None:
        now = self.clock()
        for token in [t for t, s in self.sessions.items() if s.expires < now]:
            del self.sessions[token]


def error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def middleware(guard: Guard) -> Any:
    """Host, Origin and content type, before any handler runs."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        host = request.headers.get("Host", "")
        if host not in guard.allowed_hosts:
            return error(421, "this dashboard does not answer to that host name")
        origin = request.headers.get("Origin")
        if origin is not None and origin != f"{guard.scheme}://{host}":
            return error(403, "requests from another site are refused")
        if request.method == "POST" and request.content_type != "application/json":
            return error(415, "send application/json")
        return await handler(request)

    return check


async def read_json(request: web.Request) -> dict[str, Any] | None:
    """The request's JSON object; None for anything else (too deep, not UTF-8, ...)."""
    try:
        body = await request.read()
        value = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return value if isinstance(value, dict) else None
