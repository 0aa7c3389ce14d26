"""The floor's wire format, shared by the box and the floor: topics, MQTT properties,
records, chain heads, presence and replay requests, their signatures and their schema, and
the freshness that makes a replay request usable once.

Sans-I/O, like :mod:`firmware_protocol`: bytes and properties in and out, no broker, no
clock, nothing of ``shoe_controller``. ``vectors.json`` beside it holds test vectors any
implementation can check itself against (docs/floor.md).
"""

from floor_protocol.errors import REASONS, InvalidName, Rejected
from floor_protocol.freshness import NONCE_BYTES, REPLAY_REFUSALS, ReplayGuard
from floor_protocol.messages import (
    MAX_PAYLOAD,
    MAX_RECORDS,
    MAX_SEQ,
    Head,
    Message,
    Outgoing,
    PublicRecord,
    Records,
    Replay,
    Status,
    encode_head,
    encode_records,
    encode_replay,
    encode_status,
    epoch,
    iso,
    parse,
)
from floor_protocol.signing import BadKey, SigningKey, VerifyKey, check_signature, fingerprint
from floor_protocol.topics import check_name, split_topic, topic

__all__ = [
    "MAX_PAYLOAD",
    "MAX_RECORDS",
    "MAX_SEQ",
    "NONCE_BYTES",
    "REASONS",
    "REPLAY_REFUSALS",
    "BadKey",
    "Head",
    "InvalidName",
    "Message",
    "Outgoing",
    "PublicRecord",
    "Records",
    "Rejected",
    "Replay",
    "ReplayGuard",
    "SigningKey",
    "Status",
    "VerifyKey",
    "check_name",
    "check_signature",
    "encode_head",
    "encode_records",
    "encode_replay",
    "encode_status",
    "epoch",
    "fingerprint",
    "iso",
    "parse",
    "split_topic",
    "topic",
]
