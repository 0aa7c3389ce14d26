"""What arrives from the boxes, read from MQTT messages: records, chain heads, presence.

A message that does not read as what its topic says is rejected with the reason; the
collector logs it and stores nothing of it (it is none of a box's).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from shoe_controller.broker import split_topic


class Malformed(ValueError):
    """A message that is not what its topic promises."""


@dataclass(frozen=True, slots=True)
class FloorRecord:
    """One public record of one table's journal."""

    site: str
    table_id: str
    journal_id: str
    seq: int
    prev: int
    mac: str
    event: str
    round_id: str | None
    ts: str
    at: float
    body: str


@dataclass(frozen=True, slots=True)
class Head:
    """A journal's chain head as the box sent it."""

    site: str
    table_id: str
    journal_id: str
    seq: int
    mac: str
    public_seq: int
    at: float


@dataclass(frozen=True, slots=True)
class Presence:
    """A box came online, or went offline (its own goodbye, or its Last Will)."""

    site: str
    table_id: str
    connection: str
    online: bool
    at: float
    body: str


Message = FloorRecord | Head | Presence


def parse_message(
    topic_name: str, payload: bytes, properties: dict[str, str], received: float
) -> Message | None:
    """The message on ``topic_name``; None for a topic the floor does not store."""
    where = split_topic(topic_name)
    if where is None:
        return None
    site, table, leaf = where
    if leaf == "events":
        return _record(site, table, payload, properties)
    if leaf == "head":
        return _head(site, table, _object(payload))
    if leaf == "status":
        return _presence(site, table, _object(payload), payload, received)
    return None


def epoch(ts: str) -> float:
    """Seconds since the epoch of an ISO 8601 time with its zone (``...Z``)."""
    try:
        moment = datetime.fromisoformat(ts)
    except (TypeError, ValueError):
        raise Malformed(f"{ts!r} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        raise Malformed(f"{ts!r} has no time zone")
    return moment.timestamp()


def _object(payload: bytes) -> dict[str, Any]:
    try:
        value = json.loads(payload)
    except (ValueError, UnicodeDecodeError) as exc:
        raise Malformed(f"the payload is not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise Malformed("the payload is not a JSON object")
    return value


def _int(value: object, what: str) -> int:
    try:
        number = int(str(value))
    except ValueError:
        raise Malformed(f"{what} is {value!r}, not a number") from None
    if number < 0:
        raise Malformed(f"{what} is negative")
    return number


def _record(site: str, table: str, payload: bytes, props: dict[str, str]) -> FloorRecord:
    missing = [key for key in ("journal", "seq", "prev", "mac") if key not in props]
    if missing:
        raise Malformed(f"the record lacks the user properties {', '.join(missing)}")
    body = _object(payload)
    event, ts, round_id = body.get("event"), body.get("ts"), body.get("round")
    if not isinstance(event, str) or not isinstance(ts, str):
        raise Malformed("the record has no event name or no ts")
    if round_id is not None and not isinstance(round_id, str):
        raise Malformed("the record's round is not a string")
    seq = _int(props["seq"], "seq")
    if seq == 0:
        raise Malformed("seq is 0")
    return FloorRecord(
        site=site,
        table_id=table,
        journal_id=props["journal"],
        seq=seq,
        prev=_int(props["prev"], "prev"),
        mac=props["mac"],
        event=event,
        round_id=round_id,
        ts=ts,
        at=epoch(ts),
        body=payload.decode("utf-8"),
    )


def _head(site: str, table: str, body: dict[str, Any]) -> Head:
    journal, mac = body.get("journal"), body.get("mac")
    if not isinstance(journal, str) or not isinstance(mac, str):
        raise Malformed("the head lacks its journal or its MAC")
    ts = body.get("ts")
    return Head(
        site=site,
        table_id=table,
        journal_id=journal,
        seq=_int(body.get("seq"), "seq"),
        mac=mac,
        public_seq=_int(body.get("public_seq"), "public_seq"),
        at=epoch(ts) if isinstance(ts, str) else 0.0,
    )


def _presence(
    site: str, table: str, body: dict[str, Any], payload: bytes, received: float
) -> Presence:
    online, connection = body.get("online"), body.get("connection")
    if not isinstance(online, bool) or not isinstance(connection, str):
        raise Malformed("the status lacks online or connection")
    ts = body.get("ts")
    # A Last Will carries no time: the broker sends it when the box is gone.
    at = epoch(ts) if isinstance(ts, str) else received
    if not math.isfinite(at):
        at = received
    return Presence(site, table, connection, online, at, payload.decode("utf-8"))
