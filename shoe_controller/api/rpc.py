"""JSON-RPC 2.0 (https://www.jsonrpc.org/specification): requests in, responses out.

Sans-I/O: :func:`handle` takes the text of one message (a request, a notification or a
batch) and a coroutine that runs one call; it returns the text to send back, or None when
nothing is owed (notifications only). The WebSocket and ``POST /api/v1/rpc`` share it.

Whatever a client sends is answered: bytes that are not UTF-8, JSON nested deeper than the
parser goes, anything that is not JSON get the parse error (-32700); a batch of more than
:data:`MAX_BATCH` calls is an invalid request.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

log = logging.getLogger(__name__)

# The specification's codes.
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
# Ours, in the range the specification leaves to servers (docs/api.md, "Errors").
NOT_SIGNED_IN: Final = -32001
ROLE_NOT_ALLOWED: Final = -32002
NOT_NOW: Final = -32003
SIGN_IN_REFUSED: Final = -32004
LOCKED_OUT: Final = -32005
UNAVAILABLE: Final = -32006
MOVED_ON: Final = -32007

ERROR_NAMES: Final = {
    PARSE_ERROR: "parse error",
    INVALID_REQUEST: "invalid request",
    METHOD_NOT_FOUND: "method not found",
    INVALID_PARAMS: "invalid params",
    INTERNAL_ERROR: "internal error",
    NOT_SIGNED_IN: "not signed in",
    ROLE_NOT_ALLOWED: "role not allowed",
    NOT_NOW: "not now",
    SIGN_IN_REFUSED: "sign-in refused",
    LOCKED_OUT: "locked out",
    UNAVAILABLE: "unavailable",
    MOVED_ON: "moved on",
}

#: Calls in one batch at most.
MAX_BATCH: Final = 32

Params = dict[str, Any]
Call = Callable[[str, Params], Awaitable[Any]]


class RpcError(Exception):
    """A call that fails with a JSON-RPC error object."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_json(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


@dataclass(frozen=True)
class Request:
    method: str
    params: Params
    id: str | int | None
    notification: bool


def notification(method: str, params: list[Any] | dict[str, Any]) -> str:
    """The text of a server-to-client notification (no id: nothing is answered)."""
    return dumps({"jsonrpc": "2.0", "method": method, "params": params})


def dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def loads(text: str | bytes) -> Any:
    """The JSON value of ``text`` (bytes: UTF-8 only); RpcError(PARSE_ERROR) for anything
    else, however malformed or deep."""
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        return json.loads(text)
    except UnicodeDecodeError:
        raise RpcError(PARSE_ERROR, "the message is not valid UTF-8") from None
    except RecursionError:
        raise RpcError(PARSE_ERROR, "the message is nested too deeply") from None
    except ValueError:
        raise RpcError(PARSE_ERROR, "the message is not valid JSON") from None


async def handle(text: str | bytes, call: Call) -> str | None:
    """Answer one message. Errors of the message itself are answered as the specification
    says (parse error, invalid request); a call's own failure is its RpcError."""
    try:
        message = loads(text)
    except RpcError as exc:
        return dumps(_error(None, exc))
    if isinstance(message, list):
        if not message:
            return dumps(_error(None, RpcError(INVALID_REQUEST, "an empty batch")))
        if len(message) > MAX_BATCH:
            error = RpcError(INVALID_REQUEST, f"a batch holds {MAX_BATCH} calls at most")
            return dumps(_error(None, error))
        replies = [r for r in [await _one(m, call) for m in message] if r is not None]
        return dumps(replies) if replies else None
    reply = await _one(message, call)
    return dumps(reply) if reply is not None else None


async def _one(message: Any, call: Call) -> dict[str, Any] | None:
    try:
        request = parse_request(message)
    except RpcError as exc:
        ident = message.get("id") if isinstance(message, dict) else None
        return _error(ident if isinstance(ident, str | int) else None, exc)
    try:
        result = await call(request.method, request.params)
    except RpcError as exc:
        return None if request.notification else _error(request.id, exc)
    except Exception:
        log.exception("method %s failed", request.method)
        error = RpcError(INTERNAL_ERROR, "the server failed to run the method; see its log")
        return None if request.notification else _error(request.id, error)
    if request.notification:
        return None
    return {"jsonrpc": "2.0", "id": request.id, "result": result}


def parse_request(message: Any) -> Request:
    """One request object, checked against the specification. Parameters are by name (an
    object) or absent."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise RpcError(INVALID_REQUEST, 'a request is an object with "jsonrpc": "2.0"')
    method = message.get("method")
    if not isinstance(method, str):
        raise RpcError(INVALID_REQUEST, 'a request names its "method" as a string')
    ident = message.get("id")
    if "id" in message and not (ident is None or isinstance(ident, str | int)):
        raise RpcError(INVALID_REQUEST, 'a request\'s "id" is a string, a number or null')
    params = message.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, "parameters are given by name, as an object")
    return Request(method, params, ident, notification="id" not in message)


def _error(ident: str | int | None, error: RpcError) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": error.to_json()}
