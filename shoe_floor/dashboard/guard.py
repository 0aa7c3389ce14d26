"""The dashboard's defences, as the box's API has them: every request's ``Host`` and
``Origin`` checked, JSON only, sign-in before anything but the page itself (the box's own
sign-in, users file rules and attempt limits per client and per name:
:mod:`shoe_controller.accounts`), WebSockets capped per client and in all. A limit that
is reached refuses the newcomer; nothing a client does reaches the collectors or the
store (the dashboard only reads).
"""

from __future__ import annotations

import collections
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

from aiohttp import web

from shoe_controller.accounts.attempts import Attempts, Limit
from shoe_controller.accounts.sessions import Session, Sessions
from shoe_controller.accounts.signin import Authenticator, SignIn
from shoe_floor.dashboard.roles import FloorRole

log = logging.getLogger(__name__)

COOKIE: Final = "floor_session"
#: 5 wrong PINs for one name, or 20 failed sign-ins from one client, within 5 minutes lock
#: the name or the client for 5 minutes.
NAME_ATTEMPTS: Final = Limit(failures=5, window=300.0, lockout=300.0)
CLIENT_ATTEMPTS: Final = Limit(failures=20, window=300.0, lockout=300.0)


@dataclass(frozen=True)
class Limits:
    """The documented defaults (docs/floor.md, "serve")."""

    sockets: int = 64
    sockets_per_client: int = 8
    name_attempts: Limit = NAME_ATTEMPTS
    client_attempts: Limit = CLIENT_ATTEMPTS
    session_seconds: float = 12 * 3600.0
    body_bytes: int = 4096

    def attempts(self, clock: Callable[[], float] = time.monotonic) -> Attempts:
        """The sign-in limits, counted from now."""
        return Attempts(
            name_limit=self.name_attempts, client_limit=self.client_attempts, clock=clock
        )


@dataclass
class Guard:
    """What the dashboard knows of its clients: who may sign in (the box's sign-in, with
    the floor's users file and :meth:`Limits.attempts`), sessions, sockets."""

    authenticator: Authenticator[FloorRole]
    allowed_hosts: frozenset[str]
    scheme: str
    limits: Limits = field(default_factory=Limits)
    sockets: collections.Counter[str] = field(default_factory=collections.Counter)
    sessions: Sessions[FloorRole] = field(init=False)

    def __post_init__(self) -> None:
        # A session lasts its 12 hours however long the page stays idle: the pit's
        # screen shows the board all shift.
        seconds = self.limits.session_seconds
        self.sessions = Sessions(ttl=seconds, idle=seconds, clock=self.authenticator.clock)

    # -- the users file, read again when it changed -----------------------------------------

    def refresh(self) -> None:
        """Take in a new version of the users file: the sessions of a user removed, given
        a new PIN or another role end. A file that became untrustworthy (or vanished) lets
        nobody in until it is fixed."""
        change = self.authenticator.refresh()
        if change is None:
            return
        if change.refused is not None:
            log.warning("nobody may sign in: %s", change.refused)
        for name in change.ended:
            self.sessions.end_user(name)

    # -- signing in -------------------------------------------------------------------------

    def sign_in(self, name: str, pin: str, client: str) -> SignIn[FloorRole]:
        """Check ``name``'s PIN within the attempt limits (slow on purpose: argon2id)."""
        self.refresh()
        return self.authenticator.sign_in(name, pin, client)

    # -- sessions ---------------------------------------------------------------------------

    def open(self, name: str, role: FloorRole) -> str:
        return self.sessions.open(name, role).token

    def session(self, request: web.Request) -> Session[FloorRole] | None:
        token = request.cookies.get(COOKIE)
        if not token:
            return None
        self.refresh()
        return self.sessions.get(token)

    def close(self, request: web.Request) -> None:
        token = request.cookies.get(COOKIE)
        if token:
            self.sessions.close(token)


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
