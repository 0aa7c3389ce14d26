"""The floor protocol on its own: its test vectors, its schema against the box API's,
signatures that cover what a message claims, and replay requests usable once."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest

import floor_protocol as fp
from floor_protocol import freshness, schema, vectors
from tests.api.test_schema import SAMPLES, event_classes

VECTORS = vectors.load()
KEY = fp.VerifyKey.from_pem(VECTORS["key"]["public_pem"].encode("ascii"))


def test_the_vectors_file_is_what_the_generator_makes() -> None:
    assert vectors.main(["--check"]) == 0


def test_the_vectors_key_is_the_seeds() -> None:
    seeded = fp.SigningKey.from_seed(bytes.fromhex(VECTORS["key"]["seed"]))
    assert seeded.public == KEY
    assert KEY.fingerprint == VECTORS["key"]["fingerprint"]


def _pairs(vector: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple((name, value) for name, value in vector["properties"])


@pytest.mark.parametrize("vector", VECTORS["valid"], ids=lambda v: v["name"])
def test_each_valid_vector_verifies_and_parses(vector: dict[str, Any]) -> None:
    payload = vector["payload"].encode("utf-8")
    fp.check_signature(vector["topic"], _pairs(vector), payload, [KEY], "the vectors' key")
    message = fp.parse(vector["topic"], payload, _pairs(vector), received=0.0)
    assert type(message).__name__ == vector["parsed"]["kind"]


@pytest.mark.parametrize("vector", VECTORS["invalid"], ids=lambda v: v["name"])
def test_each_invalid_vector_is_rejected_with_its_reason(vector: dict[str, Any]) -> None:
    payload = vector["payload"].encode("utf-8")
    with pytest.raises(fp.Rejected) as caught:
        fp.check_signature(vector["topic"], _pairs(vector), payload, [KEY], "the vectors' key")
        fp.parse(vector["topic"], payload, _pairs(vector), received=0.0)
    assert caught.value.reason == vector["reason"]


def test_a_signature_covers_the_topic_every_property_and_the_payload() -> None:
    key = fp.SigningKey.generate()
    message = fp.encode_records("s", "T1", "0" * 32, 0, [(1, "0" * 64, b'{"x":1}')])
    props = key.sign(message.topic, message.properties, message.payload)
    fp.check_signature(message.topic, props, message.payload, [key.public], "T1")
    altered = [
        ("shoes/s/T2/events", props, message.payload),
        (message.topic, (("journal", "1" * 32), *props[1:]), message.payload),
        (message.topic, (*props[:1], ("seq", "2"), *props[2:]), message.payload),
        (message.topic, props, message.payload + b" "),
    ]
    for topic, properties, payload in altered:
        with pytest.raises(fp.Rejected, match="forged"):
            fp.check_signature(topic, properties, payload, [key.public], "T1")


def test_the_floor_schema_has_the_api_events_with_bounds() -> None:
    api = json.loads(
        resources.files("shoe_controller.api").joinpath("schema.json").read_text("utf-8")
    )["components"]["schemas"]
    floor = schema.document()["$defs"]
    events = [name for name in api if name.startswith("Event.")]
    assert events and all(name in floor for name in events)
    for name in events:
        assert set(floor[name]["properties"]) == set(api[name]["properties"]), name
        assert floor[name]["required"] == api[name]["required"], name
    for cls in event_classes():
        sample = cls(**SAMPLES[cls.NAME]).to_json()
        schema.validate(f"Event.{cls.NAME}", json.loads(json.dumps(sample)))


def test_every_string_and_list_of_an_event_is_bounded() -> None:
    def walk(node: object, where: str) -> None:
        if isinstance(node, dict):
            kind = node.get("type")
            kinds = kind if isinstance(kind, list) else [kind]
            if "string" in kinds:
                assert any(k in node for k in ("maxLength", "pattern", "enum", "const")), where
            if "array" in kinds:
                assert "maxItems" in node, where
            for key, value in node.items():
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for item in node:
                walk(item, where)

    walk(schema.document()["$defs"], "$defs")


def test_the_freshness_vectors_get_their_verdicts_in_order() -> None:
    window = VECTORS["freshness"]
    assert (window["max_age"], window["max_skew"]) == (freshness.MAX_AGE, freshness.MAX_SKEW)
    guard = fp.ReplayGuard(max_age=window["max_age"], max_skew=window["max_skew"])
    verdicts = []
    for step in window["sequence"]:
        payload = step["payload"].encode("utf-8")
        fp.check_signature(step["topic"], _pairs(step), payload, [KEY], "the vectors' key")
        request = fp.parse(step["topic"], payload, _pairs(step), received=0.0)
        assert isinstance(request, fp.Replay)
        verdicts.append(guard.check(request.at, request.nonce, fp.epoch(step["received"])))
    assert verdicts == [step["verdict"] for step in window["sequence"]]
    # One vector at least for a valid request, a stale one, a copy and one from the future.
    assert {"fresh", "stale", "replayed", "future"} <= set(verdicts)


def _nonce(n: int) -> str:
    return f"{n:032x}"


def test_a_request_is_fresh_once_within_the_window_and_the_skew() -> None:
    guard = fp.ReplayGuard(max_age=90.0, max_skew=30.0)
    now = 1_000_000.0
    assert guard.check(now - 89.9, _nonce(1), now) == freshness.FRESH
    assert guard.check(now - 89.9, _nonce(1), now + 0.05) == freshness.REPLAYED
    assert guard.check(now - 90.1, _nonce(2), now) == freshness.STALE
    assert guard.check(now + 29.9, _nonce(3), now) == freshness.FRESH
    assert guard.check(now + 30.1, _nonce(4), now) == freshness.FUTURE
    # Refused requests are not remembered: the one from the future is fresh in its time.
    assert guard.check(now + 30.1, _nonce(4), now + 1.0) == freshness.FRESH
    # The first is stale by then, and forgotten: its age refuses it.
    assert len(guard) == 2
    assert guard.check(now - 89.9, _nonce(1), now + 1.0) == freshness.STALE


def test_the_guard_remembers_the_window_only_and_refuses_the_newcomer_when_full() -> None:
    guard = fp.ReplayGuard(max_age=90.0, max_skew=30.0)
    # A collector asking every 5 s for a day: the memory holds the window's nonces.
    for n in range(17_280):
        assert guard.check(n * 5.0, _nonce(n), n * 5.0 + 1.0) == freshness.FRESH
        assert len(guard) <= 19
    small = fp.ReplayGuard(memory=3)
    assert [small.check(0.0, _nonce(n), 1.0) for n in range(4)] == [
        freshness.FRESH,
        freshness.FRESH,
        freshness.FRESH,
        freshness.FULL,
    ]
    # What it remembers stays refused; nothing is forgotten early to make room.
    assert small.check(0.0, _nonce(0), 2.0) == freshness.REPLAYED
    # Once the first three are stale, there is room again.
    assert small.check(50.0, _nonce(3), 91.0) == freshness.FRESH


def test_a_clock_set_back_makes_no_forgotten_request_fresh_again() -> None:
    guard = fp.ReplayGuard(max_age=90.0, max_skew=30.0)
    assert guard.check(0.0, _nonce(1), 1.0) == freshness.FRESH
    assert guard.check(95.0, _nonce(2), 100.0) == freshness.FRESH  # forgets nonce 1
    assert len(guard) == 1
    # The box's clock steps back 30 s: by its age alone the first would be fresh again.
    assert guard.check(0.0, _nonce(1), 70.0) == freshness.STALE
    assert guard.check(95.0, _nonce(2), 70.0) == freshness.REPLAYED


def test_a_replay_request_carries_its_time_and_nonce_under_the_signature() -> None:
    key = fp.SigningKey.generate()
    request = fp.encode_replay("s", "T1", "0" * 32, 0, ts=vectors.TS, nonce=_nonce(1))
    props = key.sign(request.topic, request.properties, request.payload)
    for field, value in (("ts", "2026-12-01T00:39:00.909Z"), ("nonce", _nonce(2))):
        body = json.loads(request.payload)
        body[field] = value
        with pytest.raises(fp.Rejected, match="forged"):
            fp.check_signature(
                request.topic, props, json.dumps(body).encode(), [key.public], "the floor"
            )
    parsed = fp.parse(request.topic, request.payload, props, received=0.0)
    assert isinstance(parsed, fp.Replay)
    assert (parsed.at, parsed.nonce) == (fp.epoch(vectors.TS), _nonce(1))
