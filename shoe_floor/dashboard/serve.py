"""``shoe-floor serve``: the pit's dashboard over HTTP and a WebSocket (aiohttp).

- ``GET /``: the page (static files shipped in the package, no build step);
- ``POST /api/login``: sign in (``{"user", "pin"}``; the floor's own users file), a session
  cookie in return; ``POST /api/logout``;
- ``GET /api/board``: every table as JSON (the page's first load, and for scripts);
- ``GET /api/quarantine``: the latest messages the floor refused (role ``pit``);
- ``GET /ws``: a WebSocket that sends the board again whenever it changed (at most every
  half second), so the page updates by itself.

As the box's API: on loopback without TLS, anywhere else only with TLS; sign-in before
anything but the page; ``Host`` and ``Origin`` checked; JSON only; attempts and sockets
limited (:mod:`shoe_floor.dashboard.guard`).

The board follows the broker with plain subscriptions to every table's ``events`` and
``status`` (it stores nothing: the collectors do), after reading the store once.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import json
import logging
import os
import ssl
import sys
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from importlib import resources
from pathlib import Path
from typing import Any, Final

import paho.mqtt.client as mqtt
from aiohttp import WSMsgType, web
from paho.mqtt.reasoncodes import ReasonCode

import floor_protocol as fp
from floor_protocol import topics
from shoe_controller.accounts.signin import Authenticator, Verdict
from shoe_controller.errors import ConfigError, ShoeControllerError
from shoe_controller.floor.broker import BrokerSettings, make_client, user_properties
from shoe_floor import intake
from shoe_floor.dashboard.board import Board
from shoe_floor.dashboard.guard import COOKIE, Guard, Limits, error, middleware, read_json
from shoe_floor.dashboard.roles import USERS as FLOOR_USERS
from shoe_floor.dashboard.users import FloorUsers
from shoe_floor.rows import Quarantined
from shoe_floor.store import open_store

log = logging.getLogger(__name__)

#: Shortest interval between two pushes of the board to the pages (seconds).
PUSH_INTERVAL: Final = 0.5
BOARD_KEY: Final = web.AppKey("board", Board)
SOCKETS_KEY: Final = web.AppKey[set[web.WebSocketResponse]]("sockets")
GUARD_KEY: Final = web.AppKey("guard", Guard)
DB_KEY: Final = web.AppKey("db", str)


def parse_listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"--listen {text!r} is not HOST:PORT (e.g. 127.0.0.1:8780)")
    return host.strip("[]"), int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def allowed_hosts(host: str, port: int, names: list[str]) -> frozenset[str]:
    """The ``Host`` values the dashboard answers to: its address, and the names given."""
    shown = f"[{host}]" if ":" in host else host
    hosts = {shown, *names}
    if is_loopback(host):
        hosts |= {"127.0.0.1", "localhost", "[::1]"}
    return frozenset(f"{h}:{port}" for h in hosts)


def make_app(board: Board, guard: Guard, db: str = "") -> web.Application:
    """The dashboard's web application over ``board``."""
    app = web.Application(middlewares=[middleware(guard)], client_max_size=guard.limits.body_bytes)
    app[BOARD_KEY] = board
    app[SOCKETS_KEY] = set()
    app[GUARD_KEY] = guard
    app[DB_KEY] = db
    app.router.add_get("/", _page)
    app.router.add_post("/api/login", _login)
    app.router.add_post("/api/logout", _logout)
    app.router.add_get("/api/board", _board)
    app.router.add_get("/api/quarantine", _quarantine)
    app.router.add_get("/ws", _socket)
    app.router.add_get("/static/{name}", _static)
    return app


def _asset(name: str) -> bytes:
    return resources.files("shoe_floor.dashboard").joinpath("static", name).read_bytes()


_TYPES: Final = {".js": "text/javascript", ".css": "text/css", ".html": "text/html"}


async def _page(request: web.Request) -> web.Response:
    return web.Response(body=_asset("index.html"), content_type="text/html", charset="utf-8")


async def _static(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    kind = _TYPES.get(os.path.splitext(name)[1])
    if kind is None or "/" in name or name.startswith("."):
        raise web.HTTPNotFound()
    try:
        body = _asset(name)
    except FileNotFoundError:
        raise web.HTTPNotFound() from None
    return web.Response(body=body, content_type=kind, charset="utf-8")


def _client(request: web.Request) -> str:
    return request.remote or "?"


async def _login(request: web.Request) -> web.Response:
    guard = request.app[GUARD_KEY]
    body = await read_json(request)
    name, pin = (body or {}).get("user"), (body or {}).get("pin")
    if not isinstance(name, str) or not isinstance(pin, str) or len(name) > 64 or len(pin) > 64:
        return error(400, 'send {"user": NAME, "pin": PIN}')
    loop = asyncio.get_running_loop()
    result = await loop.run_in_executor(None, guard.sign_in, name, pin, _client(request))
    if result.verdict is Verdict.LOCKED:
        wait = max(1, round(result.retry_after))
        return error(429, f"too many attempts: try again in {wait} s")
    user = result.user
    if result.verdict is Verdict.WEAK_PIN and user is not None:
        # The PIN is right (only its owner or one who knows it gets here): say what to do.
        refusal = FLOOR_USERS.weak_pin_refusal(user.name, result.weak)
        log.warning("sign-in refused from %s: %s", _client(request), refusal)
        return error(403, refusal)
    # The wrong PIN that locks the name is answered as any wrong PIN: the lock shows at
    # the next attempt, for a name that exists or not.
    if result.verdict is not Verdict.ACCEPTED or user is None:
        return error(401, "unknown user or wrong PIN")
    response = web.json_response({"user": user.name, "role": user.role})
    response.set_cookie(
        COOKIE,
        guard.open(user.name, user.role),
        httponly=True,
        samesite="Strict",
        secure=guard.scheme == "https",
        path="/",
    )
    return response


async def _logout(request: web.Request) -> web.Response:
    request.app[GUARD_KEY].close(request)
    response = web.json_response({})
    response.del_cookie(COOKIE, path="/")
    return response


async def _board(request: web.Request) -> web.Response:
    if request.app[GUARD_KEY].session(request) is None:
        return error(401, "sign in first")
    return web.json_response(request.app[BOARD_KEY].snapshot())


async def _quarantine(request: web.Request) -> web.Response:
    session = request.app[GUARD_KEY].session(request)
    if session is None:
        return error(401, "sign in first")
    if session.role != "pit":
        return error(403, "the pit's role sees what the floor refused")
    loop = asyncio.get_running_loop()
    rows = await loop.run_in_executor(None, _latest_refused, request.app[DB_KEY])
    return web.json_response({"refused": rows})


def _latest_refused(db: str) -> list[dict[str, Any]]:
    with open_store(db, create=False) as store:
        return store.quarantine_rows(100)


async def _socket(request: web.Request) -> web.StreamResponse:
    guard = request.app[GUARD_KEY]
    if guard.session(request) is None:
        return error(401, "sign in first")
    client = _client(request)
    limits = guard.limits
    if sum(guard.sockets.values()) >= limits.sockets:
        return error(503, "the dashboard has all the pages it serves at once")
    if guard.sockets[client] >= limits.sockets_per_client:
        return error(503, "this client has all the pages it may have open")
    guard.sockets[client] += 1
    try:
        return await _follow(request)
    finally:
        guard.sockets[client] -= 1
        if guard.sockets[client] <= 0:
            del guard.sockets[client]


async def _follow(request: web.Request) -> web.WebSocketResponse:
    socket = web.WebSocketResponse(heartbeat=30, max_msg_size=1024)
    await socket.prepare(request)
    sockets: set[web.WebSocketResponse] = request.app[SOCKETS_KEY]
    sockets.add(socket)
    try:
        await socket.send_str(json.dumps(request.app[BOARD_KEY].snapshot()))
        async for message in socket:
            if message.type == WSMsgType.ERROR:
                break
    finally:
        sockets.discard(socket)
    return socket


class Pusher:
    """Sends the board to every page after a change, at most every PUSH_INTERVAL."""

    def __init__(self, app: web.Application, loop: asyncio.AbstractEventLoop) -> None:
        self.app = app
        self.loop = loop
        self._pending = False

    def changed(self) -> None:
        """From any thread."""
        self.loop.call_soon_threadsafe(self._schedule)

    def _schedule(self) -> None:
        if not self._pending:
            self._pending = True
            self.loop.call_later(PUSH_INTERVAL, lambda: asyncio.ensure_future(self._push()))

    async def _push(self) -> None:
        self._pending = False
        text = json.dumps(self.app[BOARD_KEY].snapshot())
        sockets = self.app[SOCKETS_KEY]
        for socket in [*sockets]:
            with contextlib.suppress(ConnectionError, RuntimeError):
                await socket.send_str(text)


def follow(board: Board, broker: BrokerSettings, name: str, keyring: intake.Keyring) -> mqtt.Client:
    """Subscribe to every table's records and status; fold what the enrolled boxes signed
    into ``board``, and count the rest as refused (the board's alarm)."""

    def on_connect(c: mqtt.Client, u: Any, f: Any, reason: ReasonCode, p: Any) -> None:
        if reason.is_failure:
            log.warning("the broker refused the dashboard: %s", reason)
            return
        c.subscribe(
            [(topics.every_table(topics.EVENTS), 1), (topics.every_table(topics.STATUS), 1)]
        )

    def on_message(c: mqtt.Client, u: Any, message: mqtt.MQTTMessage) -> None:
        properties = user_properties(getattr(message, "properties", None))
        read = intake.read(message.topic, bytes(message.payload), properties, time.time(), keyring)
        if isinstance(read, Quarantined):
            board.refused(read.site, read.table_id, read.reason)
        elif isinstance(read, fp.Records):
            for record in read.records:
                board.record(read.site, read.table, json.loads(record.body))
        elif isinstance(read, fp.Status):
            board.status(read.site, read.table, dict(read.document), read.at)

    client = make_client(broker, name)
    client.on_connect = on_connect
    client.on_message = on_message
    client.reconnect_delay_set(1, 10)
    client.connect_async(broker.host, broker.port, keepalive=30)
    client.loop_start()
    return client


#: How often the dashboard reads the enrolled keys again (seconds).
KEYS_INTERVAL: Final = 10.0


def _refresh_keys(keyring: intake.Keyring, db: str, done: threading.Event) -> None:
    """A box enrolled while the dashboard runs shows within seconds."""
    while not done.wait(KEYS_INTERVAL):
        try:
            with open_store(db, create=False) as store:
                keyring.replace(store.enrolments())
        except ShoeControllerError as exc:
            log.warning("cannot read the enrolled keys again: %s", exc)


def serve(
    args: argparse.Namespace,
    broker: object,
    stop_on_signals: Callable[[threading.Event], AbstractContextManager[None]],
) -> int:
    assert isinstance(broker, BrokerSettings)
    host, port = parse_listen(args.listen)
    tls = _tls(args.tls_cert, args.tls_key)
    if tls is None and not is_loopback(host):
        raise ConfigError(
            f"--listen {args.listen} is not a loopback address: the dashboard serves other "
            "machines only over TLS (give --tls-cert and --tls-key), or listen on 127.0.0.1"
        )
    users = FloorUsers(args.users)
    users.load(required=True)  # refused now, with its reason, rather than at a sign-in
    limits = Limits()
    guard = Guard(
        Authenticator(users, attempts=limits.attempts(), keep_last_good=False),
        allowed_hosts(host, port, list(args.host_name or [])),
        "https" if tls else "http",
        limits,
    )
    board = Board()
    keyring = intake.Keyring()
    with open_store(args.db, create=False) as store:
        board.seed(store)
        keyring.replace(store.enrolments())
    done = threading.Event()
    with stop_on_signals(done):
        return asyncio.run(
            _serve(
                board,
                guard=guard,
                tls=tls,
                broker=broker,
                keyring=keyring,
                db=args.db,
                host=host,
                port=port,
                done=done,
            )
        )


def _tls(cert: Path | None, key: Path | None) -> ssl.SSLContext | None:
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise ConfigError("TLS needs both --tls-cert and --tls-key")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(os.fspath(cert), os.fspath(key))
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"cannot use --tls-cert {cert} and --tls-key {key}: {exc}") from None
    return context


async def _serve(
    board: Board,
    *,
    guard: Guard,
    tls: ssl.SSLContext | None,
    broker: BrokerSettings,
    keyring: intake.Keyring,
    db: str,
    host: str,
    port: int,
    done: threading.Event,
) -> int:
    loop = asyncio.get_running_loop()
    app = make_app(board, guard, db)
    pusher = Pusher(app, loop)
    board.listen(pusher.changed)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, host, port, ssl_context=tls)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        raise ConfigError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}; choose another --listen"
        ) from None
    client = follow(board, broker, f"shoe-floor-dashboard-{os.getpid()}", keyring)
    refresher = threading.Thread(
        target=_refresh_keys, args=(keyring, db, done), name="dashboard-keys", daemon=True
    )
    refresher.start()
    sys.stderr.write(f"shoe-floor: dashboard on {guard.scheme}://{host}:{port}/\n")
    sys.stderr.flush()
    try:
        await loop.run_in_executor(None, done.wait)
    finally:
        client.disconnect()
        client.loop_stop()
        sockets = app[SOCKETS_KEY]
        for socket in [*sockets]:
            await socket.close()
        await runner.cleanup()
    return 0
