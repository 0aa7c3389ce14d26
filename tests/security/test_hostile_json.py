"""Malformed messages against the real service: whatever is sent is answered with JSON-RPC's
parse error (or invalid request), never a server error, and the WebSocket stays open."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp

from tests.security.attacker import post
from tests.security.conftest import StartService

DEEP = b"[" * 30_000 + b"]" * 30_000
DEEP_OBJECT = b'{"a":' * 10_000 + b"1" + b"}" * 10_000
NOT_UTF8 = b'{"jsonrpc": "2.0", "id": 1, "method": "\xff\xfe"}'
PARSE_ERROR = -32700
INVALID_REQUEST = -32600


def test_hostile_messages_on_the_websocket_keep_it_open(start_service: StartService) -> None:
    service = start_service()

    async def scenario() -> list[dict[str, Any]]:
        answers = []
        async with (
            aiohttp.ClientSession() as http,
            http.ws_connect(service.url + "api/v1/ws") as ws,
        ):
            for message in (DEEP, DEEP_OBJECT):
                await ws.send_str(message.decode())
                answers.append(await ws.receive_json(timeout=10))
            # Text frames that are not UTF-8, and binary frames of anything.
            await ws.send_frame(NOT_UTF8, aiohttp.WSMsgType.TEXT)
            answers.append(await ws.receive_json(timeout=10))
            for message in (NOT_UTF8, b"\x00\x01garbage", DEEP):
                await ws.send_bytes(message)
                answers.append(await ws.receive_json(timeout=10))
            calls = [{"jsonrpc": "2.0", "id": n, "method": "table.state"} for n in range(33)]
            await ws.send_str(json.dumps(calls))
            answers.append(await ws.receive_json(timeout=10))
            # Still open, still answering.
            await ws.send_str('{"jsonrpc": "2.0", "id": 7, "method": "session.logout"}')
            answers.append(await ws.receive_json(timeout=10))
            assert not ws.closed
        return answers

    answers = asyncio.run(scenario())
    codes = [a.get("error", {}).get("code") for a in answers]
    assert codes == [PARSE_ERROR] * 6 + [INVALID_REQUEST, None]
    assert answers[-1] == {"jsonrpc": "2.0", "id": 7, "result": None}
    assert not any("Traceback" in line for line in service.err)


def test_hostile_bodies_over_http_are_answered_not_failed(start_service: StartService) -> None:
    service = start_service()

    async def scenario() -> list[tuple[int, Any]]:
        answers = []
        for path in ("api/v1/rpc", "api/v1/login"):
            for body in (DEEP, DEEP_OBJECT, NOT_UTF8, b"\xc3\x28"):
                answers.append(await post(service.url + path, body))
        return answers

    answers = asyncio.run(scenario())
    rpc, login = answers[:4], answers[4:]
    # JSON-RPC over HTTP: the error object, as on the WebSocket.
    assert [(status, body["error"]["code"]) for status, body in rpc] == [(200, PARSE_ERROR)] * 4
    assert [(status, body["error"]["code"]) for status, body in login] == [(400, PARSE_ERROR)] * 4
    assert not any("Traceback" in line for line in service.err)
