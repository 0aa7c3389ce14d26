"""The published schema of the floor's payloads (``schema.json`` beside this module),
validated with jsonschema-rs.

The events are those of the box's API (shoe_controller/api/schema.json) with the bounds the
floor needs (sizes, counts, numbers); head, status and replay are the floor's own. The file
is generated from the API's by ``python tools/floor_schema.py --write`` and committed, so
that this package imports nothing of the controller.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any, Final

import jsonschema_rs

from floor_protocol.errors import SCHEMA, Rejected

DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"


@functools.cache
def document() -> dict[str, Any]:
    """The schema as published."""
    text = resources.files("floor_protocol").joinpath("schema.json").read_text("utf-8")
    value: dict[str, Any] = json.loads(text)
    return value


@functools.cache
def _validator(name: str) -> Any:
    defs = document()["$defs"]
    if name not in defs:
        return None
    return jsonschema_rs.validator_for(
        {"$schema": DIALECT, "$defs": defs, "$ref": f"#/$defs/{name}"}
    )


def known(name: str) -> bool:
    """Whether the schema defines ``name`` (e.g. ``Event.card``, ``Head``)."""
    return name in document()["$defs"]


def validate(name: str, value: object) -> None:
    """Rejected (schema) unless ``value`` is a valid ``name``."""
    validator = _validator(name)
    if validator is None:
        raise Rejected(SCHEMA, f"the schema defines no {name}")
    if validator.is_valid(value):
        return
    try:
        validator.validate(value)
    except jsonschema_rs.ValidationError as exc:
        where = "/".join(str(p) for p in exc.instance_path) or "the payload"
        raise Rejected(SCHEMA, f"{name}: {where}: {_short(exc.message)}") from None
    raise Rejected(SCHEMA, f"{name}: not valid")


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
