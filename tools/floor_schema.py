"""The floor's payload schema, ``floor_protocol/schema.json``, built from the box API's.

A box publishes to the floor exactly the events of its API, so the floor's event schemas
are the API's (``shoe_controller/api/schema.json``: ``Event``, every ``Event.*`` and the
definitions they refer to), taken as they are, with the floor's bounds added:

- :data:`BOUNDS`, a small overlay: keywords added to one node of a definition. It may add
  a bound the API leaves open or tighten one it has, never loosen or replace one: a bound
  every consumer should know (positions, the lists of positions) goes in the API itself;
- then, wherever the API and the overlay leave a size open, the floor's defaults: a string
  of at most :data:`MAX_LENGTH` characters, a list of at most :data:`MAX_ITEMS` items, an
  open object of at most :data:`MAX_PROPERTIES` keys, a number within a signed 64-bit
  integer (the databases' integers).

Head, status and replay are the floor's own messages (:data:`FLOOR_DEFS`); a status names
the procedure's state with the API's own list of states.

    python tools/floor_schema.py            print the schema
    python tools/floor_schema.py --write    write floor_protocol/schema.json
    python tools/floor_schema.py --check    exit 1 when floor_protocol/schema.json is stale

When the API's events change (a new event, a new key, a new value of an enumeration), run
``--write`` and commit the result: that is all it takes, the defaults bounding whatever new
string, list or object the change brings. The tests fail while the committed file is stale.
``floor_protocol`` imports nothing of the controller: the file is committed, not built at
run time. Exit status: 0 done (or up to date), 1 stale (``--check``), 2 a file cannot be
read or written, or the API's schema and the bounds do not combine (the message says where).
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import jsonschema_rs

from floor_protocol.freshness import NONCE_HEX, REPLAY_REFUSALS

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "shoe_controller" / "api" / "schema.json"
FLOOR = ROOT / "floor_protocol" / "schema.json"
TOOL = "tools/floor_schema.py"
PROG = f"python {TOOL}"

DIALECT: Final = "https://json-schema.org/draft/2020-12/schema"
API_PREFIX: Final = "#/components/schemas/"
FLOOR_PREFIX: Final = "#/$defs/"

#: Defaults for what neither the API nor the overlay bounds: generous for any genuine
#: record, small enough that no field can carry a flood.
MAX_LENGTH: Final = 4096
MAX_ITEMS: Final = 64
MAX_PROPERTIES: Final = 64
#: SQLite's and PostgreSQL's integers: a number outside them cannot reach a row.
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
#: The shoe counts the cards it let out in 16 bits (firmware_protocol's ShoeEmpty.drawn).
SHOE_COUNTER_MAX: Final = 2**16 - 1

#: The floor's bounds on the API's events: "Definition/json/pointer" -> keywords to add.
BOUNDS: Final[dict[str, dict[str, Any]]] = {
    # A round id names rows of the floor's store and of its dashboard: one short token.
    "RoundId": {"pattern": "^[0-9A-Za-z][0-9A-Za-z._:-]{0,63}$"},
    # The figures a croupier's stub count is checked against (D1) are there to show a
    # disagreement, so they may be far from the stub's size: the shoe's count and the stub
    # cards read stay within the shoe's 16-bit count of cards drawn; the deal's figure is
    # the deck's size (at most 53) minus the cards dealt.
    "Event.stub/properties/figures/properties/shoe": {"minimum": 0, "maximum": SHOE_COUNTER_MAX},
    "Event.stub/properties/figures/properties/read": {"minimum": 0, "maximum": SHOE_COUNTER_MAX},
    "Event.stub/properties/figures/properties/deal": {"minimum": 0, "maximum": 53},
}

#: The floor's own messages: the journal's chain head, the box's presence, a replay request.
FLOOR_DEFS: Final[dict[str, Any]] = {
    "Name": {
        "type": "string",
        "pattern": "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
        "description": "a site or a table: one topic level",
    },
    "JournalId": {
        "type": "string",
        "pattern": "^[0-9a-f]{32}$",
        "description": "a journal's id: 32 hex digits",
    },
    "Mac": {
        "type": "string",
        "pattern": "^[0-9a-f]{64}$",
        "description": "a record's MAC, the journal's chain head at it: 64 hex digits",
    },
    "Seq": {
        "type": "integer",
        "minimum": 1,
        "maximum": INT64_MAX,
        "description": "a journal record's sequence number",
    },
    "SeqOrZero": {
        "type": "integer",
        "minimum": 0,
        "maximum": INT64_MAX,
        "description": "a sequence number, or 0 for none",
    },
    "Head": {
        "title": "head",
        "description": "The journal's chain head (retained on shoes/SITE/TABLE/head).",
        "type": "object",
        "properties": {
            "journal": {"$ref": "#/$defs/JournalId"},
            "seq": {"$ref": "#/$defs/Seq"},
            "mac": {"$ref": "#/$defs/Mac"},
            "public_seq": {"$ref": "#/$defs/SeqOrZero"},
            "ts": {"$ref": "#/$defs/Timestamp"},
        },
        "required": ["journal", "seq", "mac", "public_seq", "ts"],
        "additionalProperties": False,
    },
    "Shoe": {
        "type": "object",
        "properties": {
            "model": {"type": "string", "maxLength": 64},
            "serial": {"type": "string", "maxLength": 64},
            "firmware": {"type": "string", "maxLength": 64},
            "approved": {"type": "boolean"},
        },
        "required": ["model", "serial", "firmware", "approved"],
        "additionalProperties": False,
    },
    "Status": {
        "title": "status",
        "description": "Presence (retained on shoes/SITE/TABLE/status): the box's own while "
        "connected, its goodbye, or its Last Will (no ts: the floor times it).",
        "type": "object",
        "properties": {
            "online": {"type": "boolean"},
            "ts": {"$ref": "#/$defs/Timestamp"},
            "site": {"$ref": "#/$defs/Name"},
            "table": {"$ref": "#/$defs/Name"},
            "connection": {"type": "string", "pattern": "^[0-9a-f]{8}-[0-9]{1,10}$"},
            "version": {"type": "string", "maxLength": 64},
            "shoe": {"anyOf": [{"$ref": "#/$defs/Shoe"}, {"type": "null"}]},
            # The procedure's state as its state events name it: the API's list, not a copy.
            "state": {
                "anyOf": [{"$ref": "#/$defs/Event.state/properties/state"}, {"type": "null"}]
            },
            "round": {"$ref": "#/$defs/RoundId"},
            "reason": {"enum": ["connection lost", "stopped"]},
            "replays_refused": {"$ref": "#/$defs/ReplayRefusals"},
        },
        "required": ["online", "site", "table", "connection", "version"],
        "additionalProperties": False,
    },
    "ReplayRefusals": {
        "type": "object",
        "description": "the replay requests a box refused since it started, by reason",
        "propertyNames": {"enum": list(REPLAY_REFUSALS)},
        "additionalProperties": {"type": "integer", "minimum": 1, "maximum": INT64_MAX},
        "maxProperties": len(REPLAY_REFUSALS),
    },
    "Nonce": {
        "type": "string",
        "pattern": f"^[0-9a-f]{{{NONCE_HEX}}}$",
        "description": "a replay request's nonce: random, used once",
    },
    "Replay": {
        "title": "replay",
        "description": "The floor asks a box for the public records after `after` again "
        "(shoes/SITE/TABLE/replay), signed by the floor's key; made at `ts`, answered once "
        "and only while fresh (`nonce`).",
        "type": "object",
        "properties": {
            "journal": {"$ref": "#/$defs/JournalId"},
            "after": {"$ref": "#/$defs/SeqOrZero"},
            "ts": {"$ref": "#/$defs/Timestamp"},
            "nonce": {"$ref": "#/$defs/Nonce"},
        },
        "required": ["journal", "after", "ts", "nonce"],
        "additionalProperties": False,
    },
}

#: Keywords whose subschemas a walk visits: one schema, a name -> schema map, a list.
_ONE = (
    "items",
    "additionalProperties",
    "propertyNames",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_MAPS = ("properties", "patternProperties", "dependentSchemas", "$defs")
_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
#: A bound is tighter the smaller (or the larger) it is.
_UPPER = frozenset({"maxLength", "maxItems", "maxProperties", "maximum", "exclusiveMaximum"})
_LOWER = frozenset({"minLength", "minItems", "minProperties", "minimum", "exclusiveMinimum"})
#: A repetition without an upper bound: ``*``, ``+`` or ``{n,}`` not escaped.
_UNBOUNDED_REPEAT = re.compile(r"(?<!\\)[*+]|(?<!\\)\{\d+,\}")


class SchemaError(ValueError):
    """The API's schema and the floor's bounds do not combine; the message says where."""


def subschemas(node: dict[str, Any], where: str) -> Iterator[tuple[dict[str, Any], str]]:
    """The schemas directly inside ``node`` (a JSON Schema object), with their paths."""
    for key in _ONE:
        value = node.get(key)
        if isinstance(value, dict):
            yield value, f"{where}/{key}"
    for key in _MAPS:
        for name, value in (node.get(key) or {}).items():
            if isinstance(value, dict):
                yield value, f"{where}/{key}/{name}"
    for key in _LISTS:
        for index, value in enumerate(node.get(key) or ()):
            if isinstance(value, dict):
                yield value, f"{where}/{key}/{index}"


def walk(node: dict[str, Any], where: str) -> Iterator[tuple[dict[str, Any], str]]:
    """``node`` and every schema inside it, depth first."""
    yield node, where
    for child, path in subschemas(node, where):
        yield from walk(child, path)


def types(node: dict[str, Any]) -> set[str]:
    kind = node.get("type")
    if isinstance(kind, list):
        return set(kind)
    return {kind} if isinstance(kind, str) else set()


def bounded_pattern(pattern: str) -> bool:
    """Whether ``pattern`` alone bounds a string's length: anchored at both ends, with no
    repetition lacking an upper bound."""
    return (
        pattern.startswith("^") and pattern.endswith("$") and not _UNBOUNDED_REPEAT.search(pattern)
    )


def unbounded(node: dict[str, Any]) -> list[str]:
    """What ``node`` (one schema, not its subschemas) leaves unbounded: "string", "array",
    "object" or "number"."""
    kinds = types(node)
    open_: list[str] = []
    if "enum" in node or "const" in node:
        return open_
    if "string" in kinds and "maxLength" not in node:
        pattern = node.get("pattern")
        if not (isinstance(pattern, str) and bounded_pattern(pattern)):
            open_.append("string")
    if "array" in kinds and "maxItems" not in node:
        open_.append("array")
    if "object" in kinds and "maxProperties" not in node:
        closed = node.get("additionalProperties") is False and "patternProperties" not in node
        if not closed:
            open_.append("object")
    if kinds & {"integer", "number"} and not (
        ({"maximum", "exclusiveMaximum"} & node.keys())
        and ({"minimum", "exclusiveMinimum"} & node.keys())
    ):
        open_.append("number")
    return open_


def _bound_by_default(node: dict[str, Any]) -> None:
    for kind in unbounded(node):
        if kind == "string":
            node["maxLength"] = MAX_LENGTH
        elif kind == "array":
            node["maxItems"] = MAX_ITEMS
        elif kind == "object":
            node["maxProperties"] = MAX_PROPERTIES
        else:
            if not {"minimum", "exclusiveMinimum"} & node.keys():
                node["minimum"] = INT64_MIN
            if not {"maximum", "exclusiveMaximum"} & node.keys():
                node["maximum"] = INT64_MAX


def _at_least_as_tight(key: str, bound: Any, other: Any) -> bool:
    """Whether the numeric bound ``key=bound`` admits no more than ``key=other``."""
    if key in _UPPER:
        return bool(bound <= other)
    if key in _LOWER:
        return bool(bound >= other)
    return False


def _tighten(node: dict[str, Any], keywords: dict[str, Any], where: str) -> None:
    for key, value in keywords.items():
        if key not in node:
            node[key] = copy.deepcopy(value)
        elif _at_least_as_tight(key, value, node[key]):
            node[key] = value
        elif node[key] != value:
            raise SchemaError(
                f"the floor's bound {key}={value!r} at {where} would loosen or replace the "
                f"API's {key}={node[key]!r}: change the API's schema instead"
            )


def _node(defs: dict[str, Any], location: str) -> dict[str, Any] | None:
    """The schema at ``location`` ("Definition/json/pointer"), or None."""
    name, _, pointer = location.partition("/")
    node: Any = defs.get(name)
    for part in pointer.split("/") if pointer else ():
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            node = node.get(part) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def _rebase(node: Any) -> Any:
    """``node`` with its references to the API's components made the floor's $defs."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                if not value.startswith(API_PREFIX):
                    raise SchemaError(f"an event refers to {value}, outside the API's schemas")
                out[key] = FLOOR_PREFIX + value.removeprefix(API_PREFIX)
            else:
                out[key] = _rebase(value)
        return out
    if isinstance(node, list):
        return [_rebase(item) for item in node]
    return node


def event_defs(api: dict[str, Any]) -> dict[str, Any]:
    """The API's ``Event`` and ``Event.*`` schemas with every definition they refer to, in
    the API's order, referring to each other as the floor's ``$defs``."""
    schemas: dict[str, Any] = api["components"]["schemas"]
    wanted = [name for name in schemas if name == "Event" or name.startswith("Event.")]
    if "Event" not in wanted:
        raise SchemaError(f"{API.name} defines no Event")
    chosen: set[str] = set()
    pending = list(wanted)
    while pending:
        name = pending.pop()
        if name in chosen:
            continue
        if name not in schemas:
            raise SchemaError(f"an event refers to {API_PREFIX}{name}, which is not defined")
        chosen.add(name)
        for ref in _refs(schemas[name]):
            if ref.startswith(API_PREFIX):
                pending.append(ref.removeprefix(API_PREFIX).split("/")[0])
    return {name: _rebase(schemas[name]) for name in schemas if name in chosen}


def build(api: dict[str, Any]) -> dict[str, Any]:
    """The floor's schema document for the API's schema ``api``."""
    defs = copy.deepcopy(event_defs(api))
    for location, keywords in BOUNDS.items():
        node = _node(defs, location)
        if node is None:
            raise SchemaError(
                f"the floor's bound on {location} names nothing of the API's events: "
                f"update BOUNDS in {TOOL}"
            )
        _tighten(node, keywords, location)
    for name, schema in defs.items():
        for node, _ in walk(schema, name):
            _bound_by_default(node)
    clash = sorted(set(defs) & set(FLOOR_DEFS))
    if clash:
        raise SchemaError(f"the API now defines {', '.join(clash)}, a name of the floor's own")
    shared = {name: schema for name, schema in defs.items() if not name.startswith("Event")}
    events = {name: schema for name, schema in defs.items() if name.startswith("Event")}
    document = {
        "$schema": DIALECT,
        "title": "shoe-controller floor messages",
        "description": (
            "The payloads of the floor's MQTT messages (docs/floor.md): each public record of "
            "an events message is one Event; head, status and replay are one object each. "
            "The events are the box API's (shoe_controller/api/schema.json) with the floor's "
            f"bounds: generated by {PROG} --write, do not edit."
        ),
        "version": 1,
        "x-api": {"title": api["info"]["title"], "version": api["info"]["version"]},
        "$defs": {**shared, **copy.deepcopy(FLOOR_DEFS), **events},
    }
    _check(document)
    return document


def _check(document: dict[str, Any]) -> None:
    """Every reference resolves, and every definition is a valid schema."""
    for ref in _refs(document["$defs"]):
        if (
            not ref.startswith(FLOOR_PREFIX)
            or _node(document["$defs"], ref.removeprefix(FLOOR_PREFIX)) is None
        ):
            raise SchemaError(f"the reference {ref} resolves to nothing")
    for name in document["$defs"]:
        root = {"$schema": DIALECT, "$defs": document["$defs"], "$ref": FLOOR_PREFIX + name}
        try:
            jsonschema_rs.meta.validate(root)
            jsonschema_rs.validator_for(root)
        except (jsonschema_rs.ValidationError, ValueError) as exc:
            raise SchemaError(f"{name} is not a valid schema: {exc}") from None


def looser(api: dict[str, Any], floor: dict[str, Any], where: str) -> list[str]:
    """Where the floor's schema ``floor`` drops or loosens a keyword of the API's ``api``
    (the same definition as the API has it): empty when the floor admits no more."""
    found: list[str] = []
    nested = {*_ONE, *_MAPS, *_LISTS}
    for key, value in api.items():
        if key in nested:
            continue
        if key in floor and _at_least_as_tight(key, floor[key], value):
            continue
        if key not in floor or floor[key] != _rebase({key: value})[key]:
            found.append(f"{where}/{key}")
    floor_children = {path: child for child, path in subschemas(floor, where)}
    for child, path in subschemas(api, where):
        if path in floor_children:
            found += looser(child, floor_children[path], path)
        else:
            found.append(path)
    return found


def _shown(path: Path) -> str:
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def render(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", action="store_true", help=f"write {_shown(FLOOR)}")
    action.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 when the file is stale"
    )
    args = parser.parse_args(argv)
    try:
        text = render(build(json.loads(API.read_text(encoding="utf-8"))))
        current = FLOOR.read_text(encoding="utf-8") if FLOOR.exists() else None
    except (SchemaError, OSError, ValueError, KeyError) as exc:
        print(f"floor_schema: error: {exc}", file=sys.stderr)
        return 2
    if not (args.write or args.check):
        sys.stdout.write(text)
        return 0
    if current == text:
        return 0
    if args.check:
        print(
            f"floor_schema: {_shown(FLOOR)} is stale against {_shown(API)}: run {PROG} "
            "--write and commit the result",
            file=sys.stderr,
        )
        return 1
    try:
        FLOOR.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"floor_schema: error: cannot write {_shown(FLOOR)}: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {_shown(FLOOR)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
