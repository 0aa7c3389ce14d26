"""The box's HTTP and WebSocket server (aiohttp), on its own asyncio loop in its own thread.

Routes (docs/api.md):

- ``GET /``: the dealer console (static files shipped in the package);
- ``GET /api/v1/state``: the public snapshot (``Authorization: Bearer``);
- ``POST /api/v1/login``: ``{user, pin}`` -> a bearer token;
- ``POST /api/v1/rpc``: one JSON-RPC message with a bearer token;
- ``GET /api/v1/ws``: JSON-RPC 2.0 on a WebSocket, with ``notify_event`` notifications;
- ``GET /api/v1/schema``: the OpenRPC document of every method and event.

The controller's events arrive on its loop thread; they are serialized once there and
handed to this loop, which queues them to every signed-in WebSocket. A client too slow to
keep up is disconnected (it reconnects and reads the snapshot) rather than holding the
others or growing memory without bound.

The table's console is a WebSocket that declares itself the table's (``?console=table``)
from one of the addresses configured as the console's (``[api] console_addresses``,
loopback by default). The shoe's buttons act for the dealer signed in on it (E4): the
server journals, through the controller, when a dealer's session becomes the console's
(``at_console``) and every way it stops being so (``left_console``), and the end of every
session by time (``session_ended``), at once, so that the controller, which follows these
records alone, never acts for a session that is over.

Every client is assumed hostile (docs/api.md, "Threat model"): connections are counted and
capped below the table's descriptors (:mod:`.limits`), a request must name one of the
box's host names and, from a browser, come from the box's own origin (:mod:`.origins`),
bodies are ``application/json`` only, and a message that is not JSON, however malformed,
is answered with JSON-RPC's parse error on a connection that stays open.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import logging
import ssl
import threading
import weakref
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from aiohttp import WSMsgType, web

from shoe_controller.api import rpc
from shoe_controller.api.auth import Authenticator, Ending, Session, Sessions
from shoe_controller.api.limits import (
    Admission,
    ClientLimits,
    Connection,
    Listener,
    connection_budget,
    listeners,
)
from shoe_controller.api.methods import Api, Caller
from shoe_controller.api.origins import HostNames
from shoe_controller.api.peers import ConsoleAddresses
from shoe_controller.api.roles import Capability, Role, may
from shoe_controller.api.service import TableService
from shoe_controller.errors import ConfigError
from shoe_controller.procedure.machine import Phase
from shoe_controller.service.config import LOOPBACK, Network
from shoe_controller.service.events import (
    ConnectedEvent,
    LinkStatusEvent,
    ServiceEvent,
    StateEvent,
)
from shoe_controller.service.table_console import AT_CONSOLE, LEFT_CONSOLE, SESSION_ENDED

log = logging.getLogger(__name__)

PREFIX: Final = "/api/v1"
#: Notifications queued for one WebSocket before it counts as too slow.
MAX_QUEUED: Final = 2048
#: A WebSocket ping every so many seconds finds dead peers (a console whose tablet slept).
HEARTBEAT_S: Final = 20.0
MAX_MESSAGE_BYTES: Final = 64 * 1024
#: Connections waiting to be accepted (each is accepted, or refused, at once).
BACKLOG: Final = 128
#: How often the users file and the failed sign-ins gathered are looked at (seconds): a
#: change of the file takes effect within a second.
HOUSEKEEPING_S: Final = 0.5
#: The housekeeping also wakes this long after a session's end, to end it (seconds).
SESSION_END_MARGIN_S: Final = 0.001
#: What the console's WebSocket adds to its address to declare itself the table's.
CONSOLE_QUERY: Final = ("console", "table")
#: With ``wait_for_link``, clients are let in at the shoe's first news, or after this long.
LINK_WAIT_S: Final = 10.0
#: The close code of a WebSocket that did not sign in in time (4000-4999: the application's).
CLOSE_NOT_SIGNED_IN: Final = 4001
#: Response headers every answer carries: nothing is cached, framed or sniffed.
SECURITY_HEADERS: Final = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": (
        "default-src 'self'; connect-src 'self'; img-src 'self' data:; "
        "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    ),
}


def console_files() -> Path:
    """The directory of the console's static files inside the installed package."""
    return Path(str(resources.files("shoe_controller.api") / "console"))


def schema_text() -> str:
    """The OpenRPC document shipped in the package."""
    return (resources.files("shoe_controller.api") / "schema.json").read_text(encoding="utf-8")


@dataclass(frozen=True)
class Listen:
    """Where the API listens: ``HOST:PORT`` (``[::1]:8750`` for IPv6)."""

    host: str
    port: int

    @classmethod
    def parse(cls, text: str, where: str = "--api") -> Listen:
        split = urlsplit(f"//{text}")
        try:
            port = split.port
        except ValueError:
            port = None
        host = split.hostname
        if not host or port is None or not text.rstrip().endswith(str(port)):
            raise ConfigError(
                f"{where} is {text!r}; give HOST:PORT, e.g. 127.0.0.1:8750 or [::1]:8750"
            )
        return cls(host, port)

    @property
    def loopback(self) -> bool:
        """Whether only this machine can reach the address (then no TLS is needed)."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def tls_context(cert: Path, key: Path) -> ssl.SSLContext:
    """A server TLS context from a PEM certificate chain and key (TLS 1.2 or newer)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
    except FileNotFoundError as exc:
        raise ConfigError(
            f"TLS file {exc.filename} does not exist: check [api] tls_cert and tls_key"
        ) from None
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(
            f"cannot use TLS certificate {cert} with key {key}: {exc}; give a PEM certificate "
            "chain and its private key in [api] tls_cert and tls_key"
        ) from None
    return context


class _Client:
    """One WebSocket: its caller and the queue of text frames to send it."""

    def __init__(self, ws: web.WebSocketResponse, caller: Caller) -> None:
        self.ws = ws
        self.caller = caller
        self.outbox: asyncio.Queue[str] = asyncio.Queue(MAX_QUEUED)
        self.events = False
        #: Closes the WebSocket if it is still not signed in when it fires.
        self.deadline: asyncio.TimerHandle | None = None
        #: Whether this is the table's console (declared, from a console address).
        self.console = False
        #: The dealer's session journaled as the console's (the buttons act for it).
        self.at_console: Session | None = None

    async def pump(self) -> None:
        while True:
            text = await self.outbox.get()
            await self.ws.send_str(text)


class ApiServer:
    """Serves the API and the console for ``controller`` until stopped.

    ``start()`` binds the address (a port in use or a bad TLS file raises ConfigError
    there) and subscribes to the controller: start it before the controller, so that the
    first events reach the clients' snapshot. With ``wait_for_link``, no client is let in
    before the controller has had news of the shoe (its port opened, or found absent), so
    that the card path holds its descriptors first. ``stop()`` closes every connection.
    """

    def __init__(
        self,
        controller: TableService,
        authenticator: Authenticator,
        listen: Listen,
        *,
        sessions: Sessions | None = None,
        tls: ssl.SSLContext | None = None,
        limits: ClientLimits | None = None,
        host_names: tuple[str, ...] = (),
        console_addresses: tuple[Network, ...] = LOOPBACK,
    ) -> None:
        if not listen.loopback and tls is None:
            raise ConfigError(
                f"the API at {listen} would be reachable from the network without TLS: set "
                "[api] tls_cert and tls_key, or listen on 127.0.0.1"
            )
        self.controller = controller
        self.listen = listen
        self.sessions = sessions or Sessions()
        # Every end of a session is followed at once (E4): journaled, by time, as soon as
        # it is found; and the console's dealer leaves with her session.
        self.sessions.on_ended = self._session_ended
        #: Where the table's console connects from: its WebSocket has the shoe's buttons,
        #: and every client there keeps room of its own under the shared limits.
        self.console_addresses = ConsoleAddresses(console_addresses)
        #: Once the last records are journaled before a stop, nothing more is.
        self._final = False
        #: The console WebSockets holding each dealer's session at the console, by its id.
        self._at_console: dict[str, set[_Client]] = {}
        self.api = Api(
            controller, authenticator, self.sessions, console_addresses=self.console_addresses
        )
        self.api.on_sessions_ended = self._sessions_ended
        self.limits = limits or ClientLimits()
        self._host_names = host_names
        #: The host names and origins served; set once the port is known.
        self.names: HostNames | None = None
        self.admission: Admission | None = None
        self._tls = tls
        self._clients: set[_Client] = set()
        self._closing: set[asyncio.Future[Any]] = set()
        self._connections: weakref.WeakValueDictionary[Any, Connection] = (
            weakref.WeakValueDictionary()
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stopping: asyncio.Event | None = None
        self._accepting: asyncio.Event | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._wait_for_link = False
        self.port: int = listen.port

    @property
    def max_connections(self) -> int:
        """The connections taken at most: the configured limit, or less when the open-file
        limit leaves less room (see :func:`~.limits.connection_budget`)."""
        return self.admission.total if self.admission is not None else 0

    @property
    def url(self) -> str:
        scheme = "https" if self._tls else "http"
        host = f"[{self.listen.host}]" if ":" in self.listen.host else self.listen.host
        return f"{scheme}://{host}:{self.port}/"

    # --- life cycle --------------------------------------------------------------------------

    def start(self, *, wait_for_link: bool = False) -> None:
        self._wait_for_link = wait_for_link
        ready: Future[None] = Future()
        self._thread = threading.Thread(
            target=self._serve, args=(ready,), name="api-server", daemon=True
        )
        self._thread.start()
        try:
            ready.result()
        except BaseException:
            self._thread.join()
            self._thread = None
            raise
        self._unsubscribe = self.controller.subscribe(self._on_event)

    def flush(self, timeout: float = 5.0) -> None:
        """Journal what the API still holds, before the controller stops: the failed
        sign-ins gathered, and the console's dealer leaving as the service stops."""
        loop = self._loop
        if loop is None or self._thread is None:
            return
        try:
            done = asyncio.run_coroutine_threadsafe(self._last_records(), loop)
            done.result(timeout)
        except (RuntimeError, TimeoutError) as exc:
            log.error("the API's last records not journaled at the stop: %s", exc)

    async def _last_records(self) -> None:
        for clients in list(self._at_console.values()):
            for client in list(clients):
                self._leave_console(client, "stopped")
        self._final = True
        await self.api.flush_sign_ins(everything=True)

    def stop(self) -> None:
        """Close every connection and stop the loop. Idempotent."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._thread is None:
            return
        loop, stopping = self._loop, self._stopping
        if loop is not None and stopping is not None:
            with contextlib.suppress(RuntimeError):  # the loop ended already
                loop.call_soon_threadsafe(stopping.set)
        self._thread.join()
        self._thread = None

    def _serve(self, ready: Future[None]) -> None:
        try:
            asyncio.run(self._main(ready))
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:
                log.exception("the API server stopped on an error")

    async def _main(self, ready: Future[None]) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self._accepting = asyncio.Event()
        runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await runner.setup()
        housekeeping: asyncio.Task[None] | None = None
        try:
            total = connection_budget(self.limits.max_connections)
            self.admission = Admission(total, self.limits.max_per_client, self.console_addresses)
            try:
                sockets = listeners(self.listen.host, self.listen.port, BACKLOG)
            except OSError as exc:
                raise _bind_error(self.listen, exc) from None
            self.port = sockets[0].getsockname()[1]
            self.names = HostNames(
                self.listen.host,
                scheme="https" if self._tls else "http",
                port=self.port,
                configured=self._host_names,
                loopback=self.listen.loopback,
            )
            if not self._wait_for_link:
                self._accepting.set()
            ready.set_result(None)
            housekeeping = asyncio.create_task(self._housekeeping())
            await self._admit_clients(runner, sockets)
            await self._stopping.wait()
            for client in list(self._clients):
                await client.ws.close(code=1001, message=b"the service is stopping")
        finally:
            if housekeeping is not None:
                housekeeping.cancel()
            self.api.close()
            await runner.cleanup()

    async def _admit_clients(self, runner: web.AppRunner, sockets: list[Listener]) -> None:
        """Serve ``sockets`` once clients may come in (see ``wait_for_link``)."""
        assert self._accepting is not None and self._stopping is not None
        admission = self.admission
        assert admission is not None
        for sock in sockets:
            sock.admission = admission
            sock.on_admitted = self._admitted
        waits = [asyncio.ensure_future(e.wait()) for e in (self._accepting, self._stopping)]
        await asyncio.wait(waits, timeout=LINK_WAIT_S, return_when=asyncio.FIRST_COMPLETED)
        for wait in waits:
            wait.cancel()
        if self._stopping.is_set():
            for sock in sockets:
                sock.close()
            return
        for sock in sockets:
            site = web.SockSite(runner, sock, ssl_context=self._tls, backlog=BACKLOG)
            await site.start()

    async def _housekeeping(self) -> None:
        """Take in changes of the users file; end the sessions whose time is over (woken
        at the first one's end); journal the failed sign-ins gathered over a minute that
        is over."""
        while True:
            await asyncio.sleep(self._until_housekeeping())
            try:
                self.api.reconcile()
                self._end_sessions_over()
                await self.api.flush_sign_ins()
            except Exception:  # a bug must not end the housekeeping silently
                log.exception("the API's housekeeping failed")

    def _until_housekeeping(self) -> float:
        end = self.sessions.next_end()
        if end is None:
            return HOUSEKEEPING_S
        # Just past the end: a session is over at its end, not before.
        return min(HOUSEKEEPING_S, max(0.0, end - self.sessions.clock()) + SESSION_END_MARGIN_S)

    def _end_sessions_over(self) -> None:
        """End the sessions whose time is over (each journaled as it ends), and tell their
        WebSockets now rather than at the next event."""
        self.sessions.sweep()
        for client in list(self._clients):
            session = client.caller.session
            if session is not None and not self.sessions.alive(session):
                self._session_over(client)

    # --- connections -------------------------------------------------------------------------

    def _admitted(self, conn: Connection) -> None:
        """A connection came in (on this loop): it must start a request in time."""
        self._connections[conn.peer] = conn
        self._idle(conn)

    def _idle(self, conn: Connection) -> None:
        loop = self._loop
        assert loop is not None
        if conn.idle_timer is not None:
            conn.idle_timer.cancel()
        conn.idle_timer = loop.call_later(self.limits.sign_in_deadline, self._expire, conn)

    def _expire(self, conn: Connection) -> None:
        conn.idle_timer = None
        if conn.busy == 0:
            conn.cut()

    def _connection(self, request: web.Request) -> Connection | None:
        transport = request.transport
        peer = transport.get_extra_info("peername") if transport is not None else None
        return self._connections.get(peer) if peer is not None else None

    # --- the application ---------------------------------------------------------------------

    def app(self) -> web.Application:
        app = web.Application(
            middlewares=[_headers, self._guard, self._busy], client_max_size=MAX_MESSAGE_BYTES
        )
        app.router.add_get("/", self._index)
        app.router.add_get(PREFIX + "/state", self._state)
        app.router.add_get(PREFIX + "/schema", self._schema)
        app.router.add_post(PREFIX + "/login", self._login)
        app.router.add_post(PREFIX + "/rpc", self._rpc)
        app.router.add_get(PREFIX + "/ws", self._ws)
        app.router.add_static("/console/", console_files(), follow_symlinks=False)
        return app

    async def _index(self, request: web.Request) -> web.StreamResponse:
        return web.FileResponse(console_files() / "index.html")

    async def _schema(self, request: web.Request) -> web.Response:
        return web.Response(text=schema_text(), content_type="application/json")

    async def _state(self, request: web.Request) -> web.Response:
        session = self._bearer(request)
        if not may(session.role, Capability.READ_STATE):
            await self.api.journal_access(
                "refused", session, accepted=False, detail="GET /api/v1/state"
            )
            return _json_error(403, rpc.ROLE_NOT_ALLOWED, f"a {session.role} may not read it")
        return web.json_response(self.controller.snapshot(), dumps=rpc.dumps)

    async def _login(self, request: web.Request) -> web.Response:
        body = await self._body(request)
        try:
            params = rpc.loads(body)
        except rpc.RpcError as exc:
            return _json_error(400, exc.code, "the body is not JSON: send {user, pin}")
        caller = Caller(peer=_peer(request))
        try:
            result = await self.api.call(caller, "session.login", _object(params))
        except rpc.RpcError as exc:
            status = {
                rpc.INVALID_PARAMS: 400,
                rpc.SIGN_IN_REFUSED: 401,
                rpc.LOCKED_OUT: 429,
            }.get(exc.code, 503)
            return _json_error(status, exc.code, exc.message, exc.data)
        return web.json_response(result, dumps=rpc.dumps)

    async def _rpc(self, request: web.Request) -> web.Response:
        caller = Caller(peer=_peer(request))
        token = _token(request)
        if token is not None:
            self.api.reconcile()
            caller.session = self.sessions.get(token)
            if caller.session is None:
                return _unauthorized("the token is unknown or has expired: sign in again")
        body = await self._body(request)
        reply = await rpc.handle(body, lambda m, p: self.api.call(caller, m, p))
        if reply is None:
            return web.Response(status=204)
        return web.Response(text=reply, content_type="application/json")

    async def _body(self, request: web.Request) -> bytes:
        """The request's body, which must arrive within the deadline."""
        try:
            async with asyncio.timeout(self.limits.sign_in_deadline):
                return await request.read()
        except TimeoutError:
            raise _error(
                web.HTTPRequestTimeout, rpc.INVALID_REQUEST, "the body came too slowly"
            ) from None

    async def _ws(self, request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse(
            heartbeat=HEARTBEAT_S, max_msg_size=MAX_MESSAGE_BYTES, decode_text=False
        )
        await ws.prepare(request)
        client = _Client(ws, Caller(peer=_peer(request)))
        key, value = CONSOLE_QUERY
        client.console = (
            request.query.get(key) == value and client.caller.peer in self.console_addresses
        )
        client.caller.on_session = lambda session: self._session_changed(client, session)
        self._clients.add(client)
        self._await_sign_in(client)
        pump = asyncio.create_task(client.pump())
        try:
            async for message in ws:
                if message.type not in (WSMsgType.TEXT, WSMsgType.BINARY):
                    continue
                # Bytes either way (decode_text=False): text that is not UTF-8 is answered
                # as a parse error, and the connection stays.
                call = _bound(self.api, client.caller)
                reply = await rpc.handle(message.data, call)
                if reply is not None:
                    self._send(client, reply)
        finally:
            self._clients.discard(client)
            self._leave_console(client, "closed")
            if client.deadline is not None:
                client.deadline.cancel()
            pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pump
        return ws

    def _session_changed(self, client: _Client, session: Session | None) -> None:
        self._follow_console(client, session)
        client.events = session is not None and may(session.role, Capability.NOTIFICATIONS)
        if session is None:
            self._await_sign_in(client)
        elif client.deadline is not None:
            client.deadline.cancel()
            client.deadline = None

    def _await_sign_in(self, client: _Client) -> None:
        """Close ``client`` unless it signs in within the deadline."""
        loop = self._loop
        assert loop is not None
        if client.deadline is not None:
            client.deadline.cancel()
        client.deadline = loop.call_later(
            self.limits.sign_in_deadline, self._sign_in_overdue, client
        )

    def _sign_in_overdue(self, client: _Client) -> None:
        client.deadline = None
        if client.caller.session is None and client in self._clients:
            seconds = f"{self.limits.sign_in_deadline:g}"
            self._close(client, CLOSE_NOT_SIGNED_IN, f"sign in within {seconds} s")

    # --- the table's console (E4) ------------------------------------------------------------

    def _follow_console(self, client: _Client, session: Session | None) -> None:
        """``client`` signed in as ``session`` (None: signed out, or its session ended):
        the console's dealer leaves, or arrives."""
        if client.at_console is not None and session is not client.at_console:
            self._leave_console(client, "replaced" if session is not None else "closed")
        if (
            session is not None
            and client.console
            and session.role is Role.DEALER
            and client.at_console is None
        ):
            client.at_console = session
            holders = self._at_console.setdefault(session.id, set())
            holders.add(client)
            if len(holders) == 1:
                self._journal(AT_CONSOLE, session, client.caller.peer)

    def _leave_console(self, client: _Client, why: str) -> None:
        """``client``'s dealer is no longer at the console on it; journaled once no console
        WebSocket holds the session (a console that reconnects may resume it on a new one
        before the old one is closed): why the session ended when it did, else ``why``."""
        session, client.at_console = client.at_console, None
        if session is None:
            return
        holders = self._at_console[session.id]
        holders.discard(client)
        if not holders:
            del self._at_console[session.id]
            self._journal(LEFT_CONSOLE, session, session.ended.value if session.ended else why)

    def _session_ended(self, session: Session) -> None:
        """``session`` ended, however and wherever (its sign-out may come over HTTP while a
        console holds it): an end by time (idle or expired) is journaled now, before anyone
        is told (a sign-out and a change of the users file are journaled by the API), and
        the session leaves the console at once, not at its WebSocket's next message."""
        assert session.ended is not None
        if session.ended in (Ending.IDLE, Ending.EXPIRED):
            self._journal(SESSION_ENDED, session, session.ended.value)
        for client in list(self._at_console.get(session.id, ())):
            self._leave_console(client, session.ended.value)

    def _session_over(self, client: _Client) -> None:
        self.api.set_session(client.caller, None)
        self._send(client, rpc.notification("notify_session_ended", {"reason": "expired"}))

    def _journal(self, action: str, session: Session, detail: str) -> None:
        """Hand the controller an access record of ``session`` now: it takes it in order
        with the shoe's events, so a press after this is judged after it."""
        if self._final:
            return
        future = self.controller.record_access(
            action,
            user=session.user,
            role=session.role.value,
            accepted=True,
            detail=detail,
            session=session.id,
        )
        future.add_done_callback(_unjournaled)

    def _sessions_ended(self, ended: list[Session]) -> None:
        """Sessions a change of the users file ended: their WebSockets are told."""
        tokens = {session.token for session in ended}
        for client in list(self._clients):
            session = client.caller.session
            if session is not None and session.token in tokens:
                self.api.set_session(client.caller, None)
                note = {"reason": "user_changed"}
                self._send(client, rpc.notification("notify_session_ended", note))

    def _bearer(self, request: web.Request) -> Session:
        token = _token(request)
        self.api.reconcile()
        session = self.sessions.get(token) if token is not None else None
        if session is None:
            raise _unauthorized(
                "sign in first: POST /api/v1/login, then send Authorization: Bearer TOKEN"
            )
        return session

    # --- what every request passes -----------------------------------------------------------

    @web.middleware
    async def _guard(self, request: web.Request, handler: _Handler) -> web.StreamResponse:
        """Only this box's host names; from a browser, only the box's own pages may post
        or open the WebSocket; bodies only in JSON."""
        names = self.names
        assert names is not None
        if not names.host_allowed(request.headers.get("Host")):
            # DNS rebinding: a page of another name resolved to this box.
            raise _error(
                web.HTTPMisdirectedRequest,
                rpc.INVALID_REQUEST,
                f"this box answers only to {names.describe()}: use one of them, or add the "
                "name to [api] host_names",
            )
        if request.method != "GET" or request.path == PREFIX + "/ws":
            origin = request.headers.get("Origin")
            fetch_site = request.headers.get("Sec-Fetch-Site", "same-origin")
            if (origin is not None and not names.origin_allowed(origin)) or fetch_site not in (
                "same-origin",
                "none",
            ):
                # A page of another site must not act with the dealer's browser.
                raise _error(
                    web.HTTPForbidden, rpc.INVALID_REQUEST, "a request from another site is refused"
                )
        if request.method == "POST" and request.content_type != "application/json":
            raise _error(
                web.HTTPUnsupportedMediaType,
                rpc.INVALID_REQUEST,
                "send the body as JSON, with Content-Type: application/json",
            )
        return await handler(request)

    @web.middleware
    async def _busy(self, request: web.Request, handler: _Handler) -> web.StreamResponse:
        """Marks the connection busy while its request is served (a WebSocket: its whole
        life), so that the idle deadline spares it; idle again afterwards."""
        conn = self._connection(request)
        if conn is None:
            return await handler(request)
        conn.busy += 1
        try:
            return await handler(request)
        finally:
            conn.busy -= 1
            if conn.busy == 0:
                self._idle(conn)

    # --- events ------------------------------------------------------------------------------

    def _on_event(self, event: ServiceEvent) -> None:
        """On the controller's thread: serialize once, hand over to our loop, never block."""
        if isinstance(event, StateEvent):
            self._table_in(event.state)
        text = rpc.notification("notify_event", [event.to_json()])
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # our loop has closed: we are stopping
                loop.call_soon_threadsafe(self._broadcast, text)
                if isinstance(event, ConnectedEvent | LinkStatusEvent):
                    # The link has opened the shoe's port, or found it absent: the card
                    # path holds what it needs; clients may come in.
                    loop.call_soon_threadsafe(self._let_clients_in)

    def _table_in(self, state: str) -> None:
        """Tell the PIN checks the table's phase (they wait while cards leave the shoe)."""
        try:
            phase = Phase(state)
        except ValueError:  # never from the controller, whose states are the machine's
            log.error("the table is in a state %r the machine does not have", state)
            return
        self.api.pin_checks.table_in(phase)

    def _let_clients_in(self) -> None:
        if self._accepting is not None:
            self._accepting.set()

    def _broadcast(self, text: str) -> None:
        for client in list(self._clients):
            session = client.caller.session
            if not client.events or session is None:
                continue
            if not self.sessions.alive(session):
                self._session_over(client)
                continue
            self._send(client, text)

    def _send(self, client: _Client, text: str) -> None:
        try:
            client.outbox.put_nowait(text)
        except asyncio.QueueFull:
            log.warning("client %s is too slow: disconnected", client.caller.peer)
            self._close(client, 1013, "too slow")

    def _close(self, client: _Client, code: int, why: str) -> None:
        self._clients.discard(client)
        task = asyncio.ensure_future(client.ws.close(code=code, message=why.encode()))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)


_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _unjournaled(future: Future[None]) -> None:
    exc = future.exception()
    if exc is not None:
        log.error("an access record was not journaled: %s", exc)


def _bound(api: Api, caller: Caller) -> Callable[[str, rpc.Params], Awaitable[Any]]:
    return lambda method, params: api.call(caller, method, params)


@web.middleware
async def _headers(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        response = exc
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    if isinstance(response, web.HTTPException):
        raise response
    return response


def _peer(request: web.Request) -> str:
    return request.remote or "unknown"


def _token(request: web.Request) -> str | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


def _object(body: Any) -> dict[str, Any]:
    return body if isinstance(body, dict) else {}


def _error_body(code: int, message: str, data: Any = None) -> str:
    return rpc.dumps({"error": rpc.RpcError(code, message, data).to_json()})


def _json_error(status: int, code: int, message: str, data: Any = None) -> web.Response:
    return web.Response(
        status=status, text=_error_body(code, message, data), content_type="application/json"
    )


def _error(kind: type[web.HTTPException], code: int, message: str) -> web.HTTPException:
    return kind(text=_error_body(code, message), content_type="application/json")


def _unauthorized(message: str) -> web.HTTPUnauthorized:
    return web.HTTPUnauthorized(
        text=_error_body(rpc.NOT_SIGNED_IN, message),
        content_type="application/json",
        headers={"WWW-Authenticate": 'Bearer realm="shoe-controller"'},
    )


def _bind_error(listen: Listen, exc: OSError) -> ConfigError:
    if exc.errno == errno.EADDRINUSE:
        why = "another program listens there already"
    elif exc.errno in (errno.EACCES, errno.EPERM):
        why = "this user may not listen on that port"
    elif exc.errno == errno.EADDRNOTAVAIL:
        why = "this machine has no such address"
    else:
        why = exc.strerror or str(exc)
    return ConfigError(f"cannot serve the API at {listen}: {why}; choose another address")
