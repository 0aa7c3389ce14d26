"""The floor protocol on its own: its test vectors, its schema against the box API's, and
signatures that cover what a message claims."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest

import floor_protocol as fp
from floor_protocol import schema, vectors
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
