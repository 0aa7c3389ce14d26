"""JSON-RPC 2.0 as the specification says: parse errors, invalid requests, unknown methods,
notifications without an answer, batches."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from shoe_controller.api import rpc


async def echo(method: str, params: rpc.Params) -> Any:
    if method == "fail":
        raise rpc.RpcError(rpc.NOT_NOW, "not now")
    if method == "bug":
        raise RuntimeError("boom")
    return {"method": method, "params": params}


def answer(text: str) -> Any:
    reply = asyncio.run(rpc.handle(text, echo))
    return None if reply is None else json.loads(reply)


def test_a_call_and_its_result() -> None:
    assert answer('{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":1}}') == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"method": "m", "params": {"a": 1}},
    }


def test_errors_of_the_message_itself() -> None:
    assert answer("{nope")["error"]["code"] == rpc.PARSE_ERROR
    assert answer('{"id":1,"method":"m"}')["error"]["code"] == rpc.INVALID_REQUEST
    assert answer('{"jsonrpc":"2.0","id":1,"method":5}')["error"]["code"] == rpc.INVALID_REQUEST
    reply = answer('{"jsonrpc":"2.0","id":1,"method":"m","params":[1]}')
    assert (reply["id"], reply["error"]["code"]) == (1, rpc.INVALID_PARAMS)
    assert answer("[]")["error"]["code"] == rpc.INVALID_REQUEST


def test_a_method_error_and_a_bug_are_error_objects() -> None:
    assert answer('{"jsonrpc":"2.0","id":"x","method":"fail"}') == {
        "jsonrpc": "2.0",
        "id": "x",
        "error": {"code": rpc.NOT_NOW, "message": "not now"},
    }
    assert answer('{"jsonrpc":"2.0","id":2,"method":"bug"}')["error"]["code"] == rpc.INTERNAL_ERROR


def test_a_notification_gets_no_answer() -> None:
    assert answer('{"jsonrpc":"2.0","method":"m"}') is None
    assert answer('{"jsonrpc":"2.0","method":"fail"}') is None


def test_a_batch_answers_its_calls_in_order() -> None:
    batch = [
        {"jsonrpc": "2.0", "id": 1, "method": "a"},
        {"jsonrpc": "2.0", "method": "b"},
        {"jsonrpc": "2.0", "id": 3, "method": "fail"},
        42,
    ]
    replies = answer(json.dumps(batch))
    assert [r["id"] for r in replies] == [1, 3, None]
    assert replies[2]["error"]["code"] == rpc.INVALID_REQUEST
