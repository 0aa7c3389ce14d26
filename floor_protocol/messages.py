"""The floor's messages: what a box publishes (records, chain head, presence) and what the
floor asks of a box (replay), encoded and parsed. Sans-I/O: bytes and properties in and
out; the drivers do the MQTT.

``events``: one or more consecutive public records of one journal. The payload is each
record's ``--json`` object (compact, UTF-8), one a line, so a message with one record is
exactly that record's object. User properties: ``journal`` (the journal's id), ``seq``
(the records' sequence numbers, comma-separated), ``prev`` (the public record before the
first, 0 for none: a missing record shows as a ``prev`` the floor does not hold) and
``mac`` (each record's MAC, comma-separated), then the signature.

``head``, ``status``, ``replay``: one JSON object each (schema.json), then the signature. A
replay request carries the time it was made and a nonce, so that a box answers it once and
only while it is fresh (:mod:`floor_protocol.freshness`).

Parsing checks everything a message claims, bounds included, and raises
:class:`~floor_protocol.errors.Rejected`; it never trusts a number or a size it was given.
Signatures are checked apart (:mod:`floor_protocol.signing`), before parsing.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from floor_protocol import properties as prop
from floor_protocol import schema, topics
from floor_protocol.errors import MALFORMED, Rejected
from floor_protocol.properties import UserProperties

#: The largest payload of a message, and so the largest batch of records.
MAX_PAYLOAD: Final = 64 * 1024
#: The most records in one message.
MAX_RECORDS: Final = 512
#: The largest sequence number (a signed 64-bit integer, as the stores keep it).
MAX_SEQ: Final = 2**63 - 1
_NUMBER: Final = re.compile(r"0|[1-9][0-9]{0,18}")


@dataclass(frozen=True, slots=True)
class Outgoing:
    """A message to publish: topic, payload, user properties (signature last), retain."""

    topic: str
    payload: bytes
    properties: UserProperties
    retain: bool = False


@dataclass(frozen=True, slots=True)
class PublicRecord:
    """One public record: its sequence number, the public record's before it, its MAC and
    its ``--json`` object as sent."""

    seq: int
    prev: int
    mac: str
    body: str
    event: str
    round_id: str | None
    ts: str
    at: float


@dataclass(frozen=True, slots=True)
class Records:
    site: str
    table: str
    journal: str
    records: tuple[PublicRecord, ...]


@dataclass(frozen=True, slots=True)
class Head:
    """The journal ``journal`` held ``seq`` records, the last with MAC ``mac``, and its last
    public record was ``public_seq``."""

    site: str
    table: str
    journal: str
    seq: int
    mac: str
    public_seq: int
    at: float


@dataclass(frozen=True, slots=True)
class Status:
    """Presence: a box's connection came online, or went offline (its goodbye, or its
    Last Will, which has no time of its own: ``at`` is when it arrived)."""

    site: str
    table: str
    connection: str
    online: bool
    at: float
    body: str
    document: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Replay:
    """The floor asks for the public records of ``journal`` after ``after`` again; it made
    the request at ``at``, and ``nonce`` names it alone."""

    site: str
    table: str
    journal: str
    after: int
    at: float
    nonce: str


Message = Records | Head | Status | Replay


# --- encoding ----------------------------------------------------------------------------


def compact(value: Mapping[str, Any]) -> bytes:
    """The JSON of ``value`` as the floor sends it: compact, UTF-8."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def encode_records(
    site: str,
    table: str,
    journal: str,
    prev: int,
    records: Sequence[tuple[int, str, bytes]],
) -> Outgoing:
    """An ``events`` message of consecutive public records (seq, mac, compact JSON), the
    first after public record ``prev``; unsigned."""
    if not 0 < len(records) <= MAX_RECORDS:
        raise ValueError(f"an events message carries 1 to {MAX_RECORDS} records")
    payload = b"\n".join(body for _, _, body in records)
    if len(payload) > MAX_PAYLOAD:
        raise ValueError(f"an events message carries at most {MAX_PAYLOAD} bytes")
    sep = prop.LIST_SEPARATOR
    properties = (
        (prop.JOURNAL, journal),
        (prop.SEQ, sep.join(str(seq) for seq, _, _ in records)),
        (prop.PREV, str(prev)),
        (prop.MAC, sep.join(mac for _, mac, _ in records)),
    )
    return Outgoing(topics.topic(site, table, topics.EVENTS), payload, properties)


def encode_head(
    site: str, table: str, journal: str, *, seq: int, mac: str, public_seq: int, ts: str
) -> Outgoing:
    body = {"journal": journal, "seq": seq, "mac": mac, "public_seq": public_seq, "ts": ts}
    return Outgoing(topics.topic(site, table, topics.HEAD), compact(body), (), retain=True)


def encode_status(site: str, table: str, document: Mapping[str, Any]) -> Outgoing:
    """A ``status`` message (``document`` names the site and table itself)."""
    return Outgoing(topics.topic(site, table, topics.STATUS), compact(document), (), retain=True)


def encode_replay(
    site: str, table: str, journal: str, after: int, *, ts: str, nonce: str
) -> Outgoing:
    """A replay request made at ``ts`` with ``nonce`` (random bytes in hex, never used
    before: :mod:`floor_protocol.freshness`), unsigned; the floor signs it."""
    body = {"journal": journal, "after": after, "ts": ts, "nonce": nonce}
    return Outgoing(topics.topic(site, table, topics.REPLAY), compact(body), ())


def iso(epoch_seconds: float) -> str:
    """An instant as the floor writes it: ISO 8601, UTC, milliseconds, ``Z``."""
    moment = datetime.fromtimestamp(epoch_seconds, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


# --- parsing -----------------------------------------------------------------------------


def parse(
    topic: str, payload: bytes, properties: Sequence[tuple[str, str]], received: float
) -> Message:
    """The message on a table's ``topic``; Rejected when it is not what the topic says."""
    where = topics.split_topic(topic)
    if where is None:
        raise Rejected(MALFORMED, f"{_show(topic)} is not a table's topic")
    site, table, leaf = where
    if len(payload) > MAX_PAYLOAD:
        raise Rejected(MALFORMED, f"the payload is larger than {MAX_PAYLOAD} bytes")
    mapping = prop.as_mapping(properties)
    if mapping is None:
        raise Rejected(MALFORMED, "a user property repeats, or there are too many")
    if leaf == topics.EVENTS:
        return parse_records(site, table, payload, mapping)
    if leaf == topics.HEAD:
        return _head(site, table, payload)
    if leaf == topics.STATUS:
        return _status(site, table, payload, received)
    if leaf == topics.REPLAY:
        return _replay(site, table, payload)
    raise Rejected(MALFORMED, f"{_show(leaf)} is not a kind of message the floor knows")


def parse_records(site: str, table: str, payload: bytes, props: Mapping[str, str]) -> Records:
    missing = [k for k in (prop.JOURNAL, prop.SEQ, prop.PREV, prop.MAC) if k not in props]
    if missing:
        raise Rejected(MALFORMED, f"the records lack the user properties {', '.join(missing)}")
    journal = props[prop.JOURNAL]
    schema.validate("JournalId", journal)
    seqs = [_number(s, "seq") for s in props[prop.SEQ].split(prop.LIST_SEPARATOR)]
    macs = props[prop.MAC].split(prop.LIST_SEPARATOR)
    prev = _number(props[prop.PREV], "prev")
    lines = payload.split(b"\n")
    if not len(seqs) == len(macs) == len(lines) or len(lines) > MAX_RECORDS:
        raise Rejected(MALFORMED, "the records, their seq and their mac do not pair up")
    records: list[PublicRecord] = []
    for seq, mac, line in zip(seqs, macs, lines, strict=True):
        if not prev < seq:
            raise Rejected(MALFORMED, f"record {seq} does not follow record {prev}")
        schema.validate("Mac", mac)
        body = _object(line)
        name = body.get("event")
        if not isinstance(name, str) or not schema.known(f"Event.{name}"):
            raise Rejected(MALFORMED, f"record {seq} is no event the floor knows")
        schema.validate(f"Event.{name}", body)
        records.append(
            PublicRecord(
                seq=seq,
                prev=prev,
                mac=mac,
                body=line.decode("utf-8"),
                event=name,
                round_id=body["round"],
                ts=body["ts"],
                at=epoch(body["ts"]),
            )
        )
        prev = seq
    return Records(site, table, journal, tuple(records))


def _head(site: str, table: str, payload: bytes) -> Head:
    body = _object(payload)
    schema.validate("Head", body)
    if body["public_seq"] > body["seq"]:
        raise Rejected(MALFORMED, "the head's last public record is after its last record")
    return Head(
        site,
        table,
        body["journal"],
        body["seq"],
        body["mac"],
        body["public_seq"],
        epoch(body["ts"]),
    )


def _status(site: str, table: str, payload: bytes, received: float) -> Status:
    body = _object(payload)
    schema.validate("Status", body)
    if (body["site"], body["table"]) != (site, table):
        raise Rejected(MALFORMED, "the status names another table than its topic")
    ts = body.get("ts")
    # A Last Will carries no time: the broker sends it when the box is gone.
    at = epoch(ts) if isinstance(ts, str) else received
    return Status(
        site, table, body["connection"], body["online"], at, payload.decode("utf-8"), body
    )


def _replay(site: str, table: str, payload: bytes) -> Replay:
    body = _object(payload)
    schema.validate("Replay", body)
    return Replay(site, table, body["journal"], body["after"], epoch(body["ts"]), body["nonce"])


def epoch(ts: str) -> float:
    """Seconds since the epoch of an ISO 8601 time with its zone (``...Z``)."""
    try:
        moment = datetime.fromisoformat(ts)
    except (TypeError, ValueError):
        raise Rejected(MALFORMED, f"{_show(ts)} is not an ISO 8601 time") from None
    if moment.tzinfo is None:
        raise Rejected(MALFORMED, f"{_show(ts)} has no time zone")
    at = moment.timestamp()
    if not math.isfinite(at):
        raise Rejected(MALFORMED, f"{_show(ts)} is not a time")
    return at


def _object(payload: bytes) -> dict[str, Any]:
    try:
        value = json.loads(payload)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise Rejected(MALFORMED, f"the payload is not JSON ({_show(str(exc))})") from None
    if not isinstance(value, dict):
        raise Rejected(MALFORMED, "the payload is not a JSON object")
    return value


def _number(text: str, what: str) -> int:
    if not _NUMBER.fullmatch(text) or int(text) > MAX_SEQ:
        raise Rejected(MALFORMED, f"{what} is {_show(text)}, not a number from 0 to 2**63-1")
    return int(text)


def _show(text: str, limit: int = 80) -> str:
    shown = repr(text)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."
