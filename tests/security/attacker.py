"""What an attacker on the table's network sends, over loopback: raw sockets from chosen
source addresses (any of 127.0.0.0/8 stands for another machine), and HTTP and WebSocket
requests with whatever headers it likes."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
from dataclasses import dataclass
from typing import Any

import aiohttp

WAIT = 20.0


def source(n: int) -> str:
    """The ``n``-th attacking machine's address (127.0.1.0 upward; 127.0.0.1 is the box's
    own console)."""
    return f"127.0.{1 + n // 250}.{1 + n % 250}"


@dataclass
class Probe:
    """One raw connection: whether the server took it, and what it answered."""

    writer: asyncio.StreamWriter | None
    reader: asyncio.StreamReader | None
    admitted: bool
    answer: bytes = b""

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(OSError):
                await self.writer.wait_closed()


def upgrade_request(port: int, host: str | None = None, origin: str | None = None) -> bytes:
    key = base64.b64encode(os.urandom(16)).decode()
    lines = [
        "GET /api/v1/ws HTTP/1.1",
        f"Host: {host or f'127.0.0.1:{port}'}",
        "Upgrade: websocket",
        "Connection: Upgrade",
        f"Sec-WebSocket-Key: {key}",
        "Sec-WebSocket-Version: 13",
    ]
    if origin is not None:
        lines.append(f"Origin: {origin}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def probe(port: int, src: str, send: bytes = b"", timeout: float = WAIT) -> Probe:
    """Connect from ``src``, send ``send``, and read the first answer: a refused connection
    is reset (or closed) before it answers anything."""
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port, local_addr=(src, 0)), timeout
        )
    except (ConnectionError, TimeoutError):
        return Probe(None, None, admitted=False)
    try:
        if send:
            writer.write(send)
            await writer.drain()
            answer = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
            return Probe(writer, reader, admitted=True, answer=answer)
        # Nothing sent: a refused connection's read ends at once; a taken one's does not.
        data = await asyncio.wait_for(reader.read(1), 0.5)
    except TimeoutError:
        return Probe(writer, reader, admitted=True)
    except (ConnectionError, asyncio.IncompleteReadError):
        writer.close()
        return Probe(None, None, admitted=False)
    if data:
        return Probe(writer, reader, admitted=True, answer=data)
    writer.close()
    return Probe(None, None, admitted=False)


async def ended(probe: Probe, timeout: float) -> bool:
    """Whether the server ends ``probe``'s connection within ``timeout`` seconds."""
    assert probe.reader is not None
    try:
        while await asyncio.wait_for(probe.reader.read(4096), timeout):
            pass
    except TimeoutError:
        return False
    except ConnectionError:
        return True
    return True


def session(src: str = "127.0.0.1") -> aiohttp.ClientSession:
    """An HTTP client whose connections leave from ``src``."""
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(local_addr=(src, 0)))


async def post(url: str, body: Any, *, src: str = "127.0.0.1", **headers: str) -> tuple[int, Any]:
    """POST ``body`` (JSON unless str or bytes) with ``headers`` (``Content_Type`` ->
    Content-Type); application/json unless told otherwise."""
    sent = {"Content-Type": "application/json"}
    sent.update({k.replace("_", "-"): v for k, v in headers.items()})
    data = body if isinstance(body, str | bytes) else json.dumps(body)
    async with session(src) as http, http.post(url, data=data, headers=sent) as response:
        text = await response.text()
        try:
            return response.status, json.loads(text)
        except ValueError:
            return response.status, text


async def login(url: str, user: str, pin: str, src: str = "127.0.0.1") -> tuple[int, Any]:
    return await post(url + "api/v1/login", {"user": user, "pin": pin}, src=src)
