"""A JSON-RPC client of the box's API for tests: WebSocket calls, notifications, HTTP."""

from __future__ import annotations

import asyncio
import itertools
import json
import ssl
from typing import Any

import aiohttp

WAIT = 20.0


class RpcFailure(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error["message"])
        self.code: int = error["code"]
        self.message: str = error["message"]
        self.data: Any = error.get("data")


class WsClient:
    """One WebSocket connection: ``call`` waits for its answer; notifications queue up."""

    def __init__(self, http: aiohttp.ClientSession, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.http = http
        self.ws = ws
        self.notifications: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.raw: list[str] = []
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def open(
        cls,
        base_url: str,
        ssl: ssl.SSLContext | None = None,
        *,
        console: bool = False,
        source: str | None = None,
        **headers: str,
    ) -> WsClient:
        """A WebSocket to the box; with ``console``, declared the table's console (as the
        console's page does); from the address ``source`` when given (127.0.0.2: another
        machine, to a box whose console is 127.0.0.1)."""
        connector = None if source is None else aiohttp.TCPConnector(local_addr=(source, 0))
        http = aiohttp.ClientSession(connector=connector)
        url = base_url + ("api/v1/ws?console=table" if console else "api/v1/ws")
        try:
            ws = await http.ws_connect(url, headers=headers or None, ssl=ssl if ssl else True)
        except BaseException:
            await http.close()
            raise
        return cls(http, ws)

    async def _read(self) -> None:
        async for message in self.ws:
            self.raw.append(message.data)
            data = json.loads(message.data)
            if "id" in data and data["id"] in self._waiting:
                self._waiting.pop(data["id"]).set_result(data)
            else:
                await self.notifications.put(data)

    async def send_text(self, text: str) -> None:
        await self.ws.send_str(text)

    async def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        ident = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = future
        request: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            request["params"] = params
        await self.ws.send_str(json.dumps(request))
        reply = await asyncio.wait_for(future, WAIT)
        if "error" in reply:
            raise RpcFailure(reply["error"])
        return reply["result"]

    async def login(self, user: str, pin: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.call("session.login", {"user": user, "pin": pin})
        return result

    async def next_notification(self, timeout: float = WAIT) -> dict[str, Any]:
        return await asyncio.wait_for(self.notifications.get(), timeout)

    async def close(self) -> None:
        await self.ws.close()
        self._reader.cancel()
        await self.http.close()


async def post_json(
    url: str, body: Any, token: str | None = None, *, source: str | None = None, **extra: str
) -> tuple[int, Any, dict[str, str]]:
    """POST ``body`` as JSON (a str or bytes ``body`` as it is), from the address ``source``
    when given; ``extra`` headers, e.g. ``Origin``, or ``Content_Type`` in place of
    application/json."""
    headers = {"Content-Type": "application/json"}
    headers.update({key.replace("_", "-"): value for key, value in extra.items()})
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = body if isinstance(body, str | bytes) else json.dumps(body)
    connector = None if source is None else aiohttp.TCPConnector(local_addr=(source, 0))
    async with (
        aiohttp.ClientSession(connector=connector) as http,
        http.post(url, data=data, headers=headers) as response,
    ):
        text = await response.text()
        try:
            parsed = json.loads(text) if text else None
        except ValueError:
            parsed = text
        return response.status, parsed, dict(response.headers)


async def get_json(url: str, token: str | None = None) -> tuple[int, Any, dict[str, str]]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers) as response:
        text = await response.text()
        try:
            body = json.loads(text)
        except ValueError:
            body = text
        return response.status, body, dict(response.headers)
