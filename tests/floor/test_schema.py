"""The floor's schema comes from the box API's (tools/floor_schema.py): the committed file is
what the generator makes, the floor admits no event the API refuses, every size is
bounded, positions are what a rules profile can have, and a change of the API's events
takes only a rerun of the generator."""

from __future__ import annotations

import copy
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest

from floor_protocol import Rejected, schema
from shoe_controller.errors import ConfigError
from shoe_controller.procedure.table import TableRules
from shoe_controller.service.config import Config
from tests.floor.helpers import public_records
from tests.service.helpers import start_table
from tests.service.test_positions import six_positions
from tools import floor_schema

TS = "2026-12-01T00:37:00.909Z"
ROUND = "20261201T003700Z-2"


def api_document() -> dict[str, Any]:
    value: dict[str, Any] = json.loads(floor_schema.API.read_text(encoding="utf-8"))
    return value


def validator(document: dict[str, Any], name: str) -> Any:
    return jsonschema_rs.validator_for(
        {"$schema": schema.DIALECT, "$defs": document["$defs"], "$ref": f"#/$defs/{name}"}
    )


def event(name: str, **fields: Any) -> dict[str, Any]:
    return {"event": name, "ts": TS, "round": ROUND, **fields}


def valid(name: str, value: dict[str, Any]) -> bool:
    try:
        schema.validate(name, value)
    except Rejected:
        return False
    return True


# --- one source ---------------------------------------------------------------------------


def test_the_committed_schema_is_what_the_generator_makes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert floor_schema.main(["--check"]) == 0, capsys.readouterr().err


def test_check_fails_on_a_stale_file_and_write_makes_it_current(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    committed = floor_schema.FLOOR.read_text("utf-8")
    stale = tmp_path / "schema.json"
    stale.write_text(committed.replace('"maximum": 10', '"maximum": 7'))
    assert stale.read_text("utf-8") != committed
    monkeypatch.setattr(floor_schema, "FLOOR", stale)
    assert floor_schema.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "stale" in err and "tools/floor_schema.py --write" in err
    assert err.count("\n") == 1
    assert floor_schema.main(["--write"]) == 0
    assert floor_schema.main(["--check"]) == 0
    # Written again: the committed file, which --check keeps current (the test above).
    assert stale.read_text("utf-8") == committed


def test_an_unreadable_api_schema_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(floor_schema, "API", tmp_path / "missing.json")
    assert floor_schema.main(["--check"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("floor_schema: error: ") and err.count("\n") == 1


def test_the_floor_admits_no_event_the_api_refuses() -> None:
    api = api_document()["components"]["schemas"]
    floor = schema.document()["$defs"]
    names = [n for n in api if n == "Event" or n.startswith("Event.")]
    names += ["Timestamp", "RoundId"]
    for name in names:
        assert floor_schema.looser(api[name], floor[name], name) == [], name


def test_a_bound_that_would_loosen_the_apis_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(floor_schema.BOUNDS, "Event.card/properties/position", {"maximum": 99})
    with pytest.raises(floor_schema.SchemaError, match="would loosen or replace"):
        floor_schema.build(api_document())


def test_a_bound_on_what_the_api_no_longer_has_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(floor_schema.BOUNDS, "Event.card/properties/gone", {"maxLength": 3})
    with pytest.raises(floor_schema.SchemaError, match="names nothing of the API's events"):
        floor_schema.build(api_document())


def test_a_new_key_of_the_apis_events_takes_only_a_rerun() -> None:
    """As a new field (a string chosen from a list, an object of counts and names) joins an
    event of the API, as the prompt's code and values once did: a rerun bounds it."""
    api = api_document()
    prompt = api["components"]["schemas"]["Event.prompt"]
    prompt["properties"]["hint"] = {"anyOf": [{"enum": ["look", "wait"]}, {"type": "null"}]}
    prompt["properties"]["extras"] = {
        "type": "object",
        "properties": {
            "round": {"type": "string"},
            "faults": {"type": "array", "items": {"type": "string"}},
            "count": {"type": ["integer", "null"], "minimum": 0, "maximum": 54},
        },
        "additionalProperties": False,
    }
    prompt["required"] += ["hint", "extras"]
    document = floor_schema.build(api)
    assert floor_schema.render(document) != floor_schema.FLOOR.read_text("utf-8")
    assert_bounded(document["$defs"])
    check = validator(document, "Event.prompt")
    good = event(
        "prompt",
        id=812,
        need="attendant_clear",
        message="a card is stuck",
        rule="F1",
        proposal=None,
        evidence=None,
        role="supervisor",
        options=["void_round"],
        code="attendant_clear_jam",
        values={"faults": ["jam"]},
        hint="look",
        extras={"round": ROUND, "faults": ["jam"], "count": 4},
    )
    assert check.is_valid(good)
    assert validator(document, "Event").is_valid(good)
    for bad_extras in (
        {"faults": ["jam"] * (floor_schema.MAX_ITEMS + 1)},
        {"faults": ["j" * (floor_schema.MAX_LENGTH + 1)]},
        {"round": "r" * (floor_schema.MAX_LENGTH + 1)},
        {"count": 55},
        {"surprise": 1},
    ):
        assert not check.is_valid(good | {"extras": bad_extras}), bad_extras
    assert not check.is_valid(good | {"hint": "made_up"})
    assert not check.is_valid({k: v for k, v in good.items() if k != "hint"})


# --- every size bounded -------------------------------------------------------------------


def assert_bounded(defs: dict[str, Any]) -> None:
    """Every string, list, open object and number of ``defs`` has its bound."""

    def walk(node: object, where: str) -> None:
        if isinstance(node, dict):
            kind = node.get("type")
            kinds = set(kind) if isinstance(kind, list) else {kind}
            fixed = "enum" in node or "const" in node
            if "string" in kinds and not fixed and "maxLength" not in node:
                pattern = node.get("pattern", "")
                assert re.fullmatch(r"\^[^*+]*\$", pattern), f"{where}: no length bound"
                assert not re.search(r"\{\d+,\}", pattern), f"{where}: no length bound"
            if "array" in kinds:
                assert "maxItems" in node, f"{where}: no maxItems"
            if "object" in kinds and node.get("additionalProperties") is not False:
                assert "maxProperties" in node, f"{where}: no maxProperties"
            if kinds & {"integer", "number"} and not fixed:
                assert "minimum" in node and "maximum" in node, f"{where}: not a range"
            for key, value in node.items():
                # The names under "properties" are keys, not schemas.
                if key == "properties" and isinstance(value, dict):
                    for name, sub in value.items():
                        walk(sub, f"{where}/properties/{name}")
                elif key not in ("enum", "const", "required"):
                    walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for index, item in enumerate(node):
                walk(item, f"{where}/{index}")

    walk(defs, "$defs")


def test_every_string_list_object_and_number_of_the_floor_schema_is_bounded() -> None:
    assert_bounded(schema.document()["$defs"])


def test_an_event_of_an_unknown_key_holding_a_flood_is_refused() -> None:
    card = event("card", index=1, position=3)
    assert valid("Event.card", card)
    flooded = card | {f"k{i}": i for i in range(floor_schema.MAX_PROPERTIES)}
    assert not valid("Event.card", flooded)


# --- positions: what a rules profile can have ---------------------------------------------


@cache
def profile_limits() -> tuple[int, int]:
    """The most positions, and the most cards to a position, that a rules profile can give
    (what TableRules accepts)."""
    most_positions = most_cards = 0
    for positions in range(1, 60):
        for cards in range(1, 60):
            for deck in (52, 53):
                try:
                    TableRules(
                        positions=positions,
                        cards_per_position=cards,
                        deck_size=deck,
                        stub_size=deck - positions * cards,
                    )
                except ConfigError:
                    continue
                most_positions = max(most_positions, positions)
                most_cards = max(most_cards, cards)
    return most_positions, most_cards


def test_the_schema_bounds_positions_and_hands_by_what_a_profile_can_have() -> None:
    most, cards = profile_limits()
    defs = schema.document()["$defs"]

    def at(location: str) -> Any:
        node = floor_schema._node(defs, location)
        assert node is not None, location
        return node

    for location in (
        "Event.card/properties/position",
        "Event.start_position/properties/position",
        "Event.start_position/properties/value",
        "Event.round_end/properties/start_position/anyOf/0",
        "Event.started/properties/table/properties/positions",
    ):
        assert at(location)["maximum"] == most, location
    for location in (
        "Event.wagers/properties/positions",
        "Event.bets_closed/properties/wagered",
        "Event.round_end/properties/wagered",
    ):
        assert (at(location)["items"]["minimum"], at(location)["items"]["maximum"]) == (2, most)
        assert at(location)["maxItems"] == most - 1 and at(location)["uniqueItems"] is True
    unseen = at("Event.round_end/properties/collected_unseen")
    assert unseen["items"]["maximum"] == unseen["maxItems"] == most and unseen["uniqueItems"]
    for location in (
        "Event.round_end/properties/cards_per_position",
        "Event.round_closed/properties/hands",
        "Event.started/properties/table/properties/seat_labels",
    ):
        assert at(location)["maxProperties"] == most, location
        names = re.compile(at(location)["propertyNames"]["pattern"])
        assert all(names.search(str(p)) for p in range(1, most + 1)), location
        assert not any(names.search(n) for n in ("0", str(most + 1), "01", "1 ")), location
    assert at("Event.round_closed/properties/hands/additionalProperties")["maxItems"] == cards
    assert at("Event.started/properties/table/properties/cards_per_position")["maximum"] == cards


def test_a_card_at_the_last_position_a_profile_can_have_passes_one_more_does_not() -> None:
    most, cards = profile_limits()
    assert valid("Event.card", event("card", index=1, position=most))
    assert not valid("Event.card", event("card", index=1, position=most + 1))
    hand = ["2S"] * cards
    assert valid("Event.round_closed", event("round_closed", hands={str(most): hand}))
    assert not valid("Event.round_closed", event("round_closed", hands={"1": [*hand, "3S"]}))
    assert not valid("Event.round_closed", event("round_closed", hands={str(most + 1): hand}))


def test_a_start_by_dice_showing_a_double_is_valid() -> None:
    """Three dice may show the same number twice, or three times (B1)."""
    for dice in ([2, 2, 5], [6, 6, 6]):
        assert valid(
            "Event.start_position",
            event("start_position", position=1, method="dice", dice=dice),
        )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("wagered twice", {"wagered": [2, 2]}),
        ("wagered banker", {"wagered": [1]}),
        ("one wager too many", {"wagered": list(range(2, 12))}),
    ],
)
def test_a_list_of_positions_with_repeats_or_out_of_range_is_refused(
    name: str, value: dict[str, Any]
) -> None:
    assert valid("Event.bets_closed", event("bets_closed", wagered=[2, 4]))
    assert not valid("Event.bets_closed", event("bets_closed", **value)), name


def test_a_status_names_the_procedures_states_as_the_api_does() -> None:
    states = schema.document()["$defs"]["Event.state"]["properties"]["state"]["enum"]
    status = {
        "online": True,
        "ts": TS,
        "site": "sanjuan",
        "table": "PG-07",
        "connection": "a277c80d-1",
        "version": "0.1.0",
        "shoe": None,
        "round": ROUND,
    }
    for state in states:
        assert valid("Status", status | {"state": state}), state
    assert not valid("Status", status | {"state": "stub_recount"})


def test_what_a_six_position_table_publishes_is_valid_for_the_api_and_the_floor(
    tmp_path: Path,
) -> None:
    profile = six_positions()
    config = Config(profile=profile, table=profile.rules)
    controller, recorder = start_table(tmp_path, device="sim://?seed=21&pace=0", config=config)
    try:
        recorder.wait_for(lambda _: recorder.finished_rounds() >= 2)
    finally:
        controller.stop()
    records = public_records(tmp_path / "journal.sqlite3")
    api = api_document()
    api_events = jsonschema_rs.validator_for(
        {"$ref": "#/components/schemas/Event", "components": api["components"]}
    )
    seen = set()
    for _, body in records:
        api_events.validate(body)
        schema.validate(f"Event.{body['event']}", copy.deepcopy(body))
        seen.add(body["event"])
    assert {"started", "card", "stub", "round_end", "round_closed"} <= seen
    hands = [body["hands"] for _, body in records if body["event"] == "round_closed"]
    assert hands and all(len(hand) == 8 for closed in hands for hand in closed.values())
