"""Test vectors of the floor's wire format (``vectors.json`` beside this module).

- ``key``: the seed of the Ed25519 key that signed the vectors, and its public key;
- ``valid``: messages as a box (or the floor, for replay) sends them: topic, payload (UTF-8
  text), user properties with the signature last, and what parsing gives;
- ``invalid``: messages a receiver must refuse, each with the reason
  (:data:`floor_protocol.errors.REASONS`).

Ed25519 signatures are deterministic, so the same key and message always give the same
signature. ``python -m floor_protocol.vectors --check`` verifies the file is what
:func:`generate` makes; without ``--check`` it writes it again.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from floor_protocol import errors, messages, signing
from floor_protocol.messages import Outgoing

PATH = Path(__file__).with_name("vectors.json")
SEED = bytes(range(32))
OTHER_SEED = bytes(range(32, 64))
SITE, TABLE = "sanjuan", "PG-07"
JOURNAL = "0123456789abcdef0123456789abcdef"
MAC = "ab" * 32
TS = "2026-12-01T00:37:00.909Z"


def _card(index: int, position: int) -> bytes:
    return messages.compact(
        {
            "event": "card",
            "ts": TS,
            "round": "20261201T003700Z-2",
            "index": index,
            "position": position,
        }
    )


def _outgoing(message: Outgoing, key: signing.SigningKey) -> dict[str, Any]:
    props = key.sign(message.topic, message.properties, message.payload)
    return {
        "topic": message.topic,
        "payload": message.payload.decode("utf-8"),
        "properties": [list(p) for p in props],
        "retain": message.retain,
    }


def _parsed(vector: dict[str, Any]) -> dict[str, Any]:
    message = messages.parse(
        vector["topic"],
        vector["payload"].encode("utf-8"),
        [tuple(p) for p in vector["properties"]],
        received=0.0,
    )
    parsed = asdict(message)
    parsed.pop("document", None)
    parsed["kind"] = type(message).__name__
    return json.loads(json.dumps(parsed))  # type: ignore[no-any-return]


def generate() -> dict[str, Any]:
    key = signing.SigningKey.from_seed(SEED)
    other = signing.SigningKey.from_seed(OTHER_SEED)
    one = messages.encode_records(SITE, TABLE, JOURNAL, 40, [(41, MAC, _card(1, 3))])
    batch = messages.encode_records(
        SITE, TABLE, JOURNAL, 41, [(43, MAC, _card(2, 4)), (44, "cd" * 32, _card(3, 5))]
    )
    head = messages.encode_head(SITE, TABLE, JOURNAL, seq=44, mac="cd" * 32, public_seq=44, ts=TS)
    status = messages.encode_status(
        SITE,
        TABLE,
        {
            "online": True,
            "ts": TS,
            "site": SITE,
            "table": TABLE,
            "connection": "a277c80d-1",
            "version": "0.1.0",
            "shoe": {"model": "ES-7", "serial": "A123", "firmware": "1.4.2", "approved": True},
            "state": "dealing",
            "round": "20261201T003700Z-2",
        },
    )
    replay = messages.encode_replay(SITE, TABLE, JOURNAL, 40, TS)
    valid = []
    for name, message in (
        ("one record", one),
        ("two records", batch),
        ("head", head),
        ("status", status),
        ("replay (signed by the floor's key)", replay),
    ):
        vector = {"name": name, **_outgoing(message, key)}
        vector["parsed"] = _parsed(vector)
        valid.append(vector)
    huge = messages.compact(
        {
            "event": "round_end",
            "ts": TS,
            "round": "20261201T003700Z-2",
            "outcome": "dealt",
            "reason": "",
            "start_position": 1,
            "cards_per_position": {},
            "wagered": [2] * 1000,
            "collected_unseen": [],
        }
    )
    big_head = messages.compact(
        {"journal": JOURNAL, "seq": 2**64, "mac": MAC, "public_seq": 1, "ts": TS}
    )
    invalid = [
        ("unsigned", errors.UNSIGNED, Outgoing(one.topic, one.payload, one.properties), None),
        ("signed by another key", errors.FORGED, one, other),
        ("another table's record", errors.FORGED, _retopic(one, "PG-08"), "resign-as-other-topic"),
        ("seq 2**64 in a head", errors.SCHEMA, Outgoing(head.topic, big_head, ()), key),
        ("1,000 wagered positions", errors.SCHEMA, _rebody(one, huge), key),
        # No rules profile has more than 10 positions.
        ("a card at position 11", errors.SCHEMA, _rebody(one, _card(1, 11)), key),
        ("not JSON", errors.MALFORMED, _rebody(one, b"{"), key),
    ]
    invalid_vectors = []
    for name, reason, message, signer in invalid:
        if signer is None:
            vector = {
                "topic": message.topic,
                "payload": message.payload.decode("utf-8"),
                "properties": [list(p) for p in message.properties],
                "retain": message.retain,
            }
        elif signer == "resign-as-other-topic":
            # Signed for PG-07's topic, published on PG-08's: the signature covers the topic.
            signed = key.sign(one.topic, one.properties, one.payload)
            vector = {
                "topic": message.topic,
                "payload": message.payload.decode("utf-8"),
                "properties": [list(p) for p in signed],
                "retain": False,
            }
        else:
            assert isinstance(signer, signing.SigningKey)
            vector = _outgoing(message, signer)
        invalid_vectors.append({"name": name, "reason": reason, **vector})
    return {
        "format": 1,
        "key": {
            "seed": SEED.hex(),
            "public_pem": key.public.to_pem().decode("ascii"),
            "fingerprint": key.public.fingerprint,
        },
        "valid": valid,
        "invalid": invalid_vectors,
    }


def _retopic(message: Outgoing, table: str) -> Outgoing:
    return Outgoing(
        message.topic.replace(f"/{TABLE}/", f"/{table}/"), message.payload, message.properties
    )


def _rebody(message: Outgoing, payload: bytes) -> Outgoing:
    return Outgoing(message.topic, payload, message.properties, message.retain)


def load() -> dict[str, Any]:
    value: dict[str, Any] = json.loads(PATH.read_text("utf-8"))
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="only check the file is current")
    args = parser.parse_args(argv)
    text = json.dumps(generate(), indent=2, ensure_ascii=False) + "\n"
    if args.check:
        return 0 if PATH.read_text("utf-8") == text else 1
    PATH.write_text(text, "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
