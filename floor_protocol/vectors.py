"""Test vectors of the floor's wire format (``vectors.json`` beside this module).

- ``key``: the seed of the Ed25519 key that signed the vectors, and its public key;
- ``valid``: messages as a box (or the floor, for replay) sends them: topic, payload (UTF-8
  text), user properties with the signature last, and what parsing gives;
- ``invalid``: messages a receiver must refuse, each with the reason
  (:data:`floor_protocol.errors.REASONS`);
- ``freshness``: replay requests as one box receives them, in order, each with the time it
  arrives by the box's clock and the verdict of :mod:`floor_protocol.freshness` (``fresh``
  to answer it; ``stale``, ``future`` or ``replayed`` to refuse it), with the window it
  applies.

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

from floor_protocol import errors, freshness, messages, signing
from floor_protocol.messages import Outgoing

PATH = Path(__file__).with_name("vectors.json")
SEED = bytes(range(32))
OTHER_SEED = bytes(range(32, 64))
SITE, TABLE = "sanjuan", "PG-07"
JOURNAL = "0123456789abcdef0123456789abcdef"
MAC = "ab" * 32
TS = "2026-12-01T00:37:00.909Z"
#: The vectors' nonces: made up, as a floor's are drawn at random.
NONCES = [bytes([n] * freshness.NONCE_BYTES).hex() for n in range(0x11, 0x17)]


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
    replay = messages.encode_replay(SITE, TABLE, JOURNAL, 40, ts=TS, nonce=NONCES[0])
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
    no_nonce = messages.compact({"journal": JOURNAL, "after": 40, "ts": TS})
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
        ("a replay request without a nonce", errors.SCHEMA, _rebody(replay, no_nonce), key),
        (
            "a replay request signed by another key",
            errors.FORGED,
            messages.encode_replay(SITE, TABLE, JOURNAL, 0, ts=TS, nonce=NONCES[1]),
            other,
        ),
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
        "freshness": _freshness(key, replay),
    }


def _freshness(key: signing.SigningKey, first: Outgoing) -> dict[str, Any]:
    """Replay requests fed in order to one box, each with the time it arrives (the box's
    clock) and its verdict. Edges are tested a millisecond inside and outside the window:
    a receiver computes ages in floating point."""
    start = messages.epoch(TS)

    def request(made: float, nonce: str, after: int = 0) -> Outgoing:
        return messages.encode_replay(
            SITE, TABLE, JOURNAL, after, ts=messages.iso(start + made), nonce=nonce
        )

    steps = [
        ("a fresh request", first, 2.0, freshness.FRESH),
        ("the same request again", first, 40.0, freshness.REPLAYED),
        ("another request with a nonce seen", request(45.0, NONCES[0]), 50.0, freshness.REPLAYED),
        ("made 1 ms inside the skew ahead", request(129.999, NONCES[1]), 100.0, freshness.FRESH),
        ("from the future beyond the skew", request(130.001, NONCES[2]), 100.0, freshness.FUTURE),
        ("made 1 ms inside the window", request(10.001, NONCES[3]), 100.0, freshness.FRESH),
        ("older than the window", request(9.999, NONCES[4]), 100.0, freshness.STALE),
        ("the first request again, stale now", first, 100.0, freshness.STALE),
        # Its nonce is forgotten; its age alone would let it through on a clock set back.
        ("the first again, the box's clock set back", first, 50.0, freshness.STALE),
    ]
    sequence = [
        {
            "name": name,
            "received": messages.iso(start + received),
            "verdict": verdict,
            **_outgoing(message, key),
        }
        for name, message, received, verdict in steps
    ]
    return {
        "max_age": freshness.MAX_AGE,
        "max_skew": freshness.MAX_SKEW,
        "sequence": sequence,
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
