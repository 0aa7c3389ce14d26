"""The OpenRPC document shipped in the package describes the code: every method the server
registers and nothing else, with its roles and parameters; every event class of
``shoe_controller.service.events``; and what a real run publishes validates against it."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from shoe_controller.api import rpc
from shoe_controller.api.methods import METHODS, roles_for
from shoe_controller.api.server import ApiServer, schema_text
from shoe_controller.procedure.inputs import MAX_TEXT
from shoe_controller.service import events as ev
from shoe_controller.service.public_state import PublicState
from shoe_controller.simulator.transport import live_addresses, switch_off
from tests.api.client import RpcFailure, WsClient
from tests.api.fakes import FakeTable
from tests.service.helpers import start_table

DOCS = Path(__file__).resolve().parents[2] / "docs" / "api.md"
SCHEMA: dict[str, Any] = json.loads(schema_text())


def validator(ref: str) -> Draft202012Validator:
    root = {"$ref": ref, "components": SCHEMA["components"]}
    Draft202012Validator.check_schema(root)
    return Draft202012Validator(root)


def event_classes() -> list[type[ev.ServiceEvent]]:
    return [
        cls
        for _, cls in inspect.getmembers(ev, inspect.isclass)
        if issubclass(cls, ev.ServiceEvent) and cls is not ev.ServiceEvent
    ]


#: One sample of every event class; a class without one fails the test below.
SAMPLES: dict[str, dict[str, Any]] = {
    "connected": {
        "device": "sim://",
        "model": "ES-SIM",
        "serial": "S1",
        "firmware": "1.0",
        "approved": True,
        "reason": "ok",
    },
    "link": {"status": "lost", "message": "gone"},
    "state": {"state": "dealing", "previous": "start_set"},
    "start_position": {"position": 6, "method": "dice", "dice": (2, 5, 6)},
    "card": {"index": 1, "position": 6},
    "stub": {"count": 4, "figures": {"shoe": 4, "read": 4, "deal": 4}, "agrees": True},
    "fault": {"code": "jam", "message": "a card is stuck", "rule": "F1"},
    "fault_cleared": {"by": "sam"},
    "prompt": {"id": 41, "need": "close_round", "message": "close it"},
    "round_end": {
        "outcome": "dealt",
        "reason": "ok",
        "start_position": 6,
        "cards_per_position": {"1": 7},
        "wagered": (2,),
        "collected_unseen": (3,),
    },
    "round_closed": {"hands": {"1": ("QH", "8S", "KH", "JD", "2D", "7S", "JK")}},
    "stopped": {"reason": "stopped"},
    "button": {"button": "confirm"},
    "started": {
        "version": "0.1.0",
        "profile": "pr-paigow",
        "bench": False,
        "table": {"positions": 7, "cards_per_position": 7, "stub_size": 4, "seat_labels": {}},
    },
    "wagers": {"positions": (2, 4)},
    "bets_closed": {"wagered": (2, 4)},
    "wager_settled": {},
    "determination": {"misdealt": True, "contradicts": False},
    "stub_accepted": {"count": 5, "by": "sam"},
    "notice": {"code": "stub_count_differs", "message": "the shoe counted 3"},
}


def test_every_registered_method_has_a_schema_and_vice_versa() -> None:
    described = {m["name"]: m for m in SCHEMA["methods"]}
    assert set(described) == set(METHODS)
    for name, method in METHODS.items():
        doc = described[name]
        roles = ["anyone"] if method.capability is None else [r.value for r in roles_for(method)]
        assert doc["x-roles"] == roles, name
        assert {p["name"] for p in doc["params"]} == set(method.params), name


def test_every_error_code_is_documented() -> None:
    documented = {e["code"] for e in SCHEMA["components"]["errors"].values()}
    assert documented == set(rpc.ERROR_NAMES)


def test_every_event_class_has_a_schema_and_its_sample_validates() -> None:
    schemas = SCHEMA["components"]["schemas"]
    for cls in event_classes():
        assert f"Event.{cls.NAME}" in schemas, f"no schema for the {cls.NAME!r} event"
        assert cls.NAME in SAMPLES, f"no sample of the {cls.NAME!r} event in this test"
        sample = cls(**SAMPLES[cls.NAME]).to_json()
        validator(f"#/components/schemas/Event.{cls.NAME}").validate(sample)
        validator("#/components/schemas/Event").validate(sample)
        # The schema names exactly the keys the event may have.
        keys = {"event", "ts", "round", *(f.name for f in fields(cls))}
        assert set(schemas[f"Event.{cls.NAME}"]["properties"]) == keys, cls.NAME


def test_a_card_identity_in_any_event_but_round_closed_is_refused_by_the_schema() -> None:
    bad = ev.CardEvent(index=1, position=2).to_json() | {"position": "QH"}
    assert not validator("#/components/schemas/Event").is_valid(bad)
    hands = ev.RoundClosedEvent(hands={"1": ("XX",)}).to_json()
    assert not validator("#/components/schemas/Event").is_valid(hands)


def test_what_a_real_run_publishes_and_its_snapshot_validate(tmp_path: Path) -> None:
    controller, recorder = start_table(tmp_path)
    try:
        recorder.wait_for(
            lambda events: sum(isinstance(e, ev.RoundClosedEvent) for e in events) >= 1
        )
    finally:
        controller.stop()
        for address in live_addresses():
            switch_off(address)
    events = validator("#/components/schemas/Event")
    state = PublicState()
    for event in recorder.events:
        events.validate(event.to_json())
        state.apply(event)
    validator("#/components/schemas/Snapshot").validate(state.as_json())
    assert state.as_json()["last_round"]["hands"] is not None


#: Parameters to try on every method: each either validates against the method's schema and
#: is accepted by the server, or fails both ways.
CANDIDATES: list[dict[str, Any]] = [
    {},
    {"positions": [2, 4, 5]},
    {"positions": [1]},
    {"positions": [2, 2]},
    {"positions": "2,4"},
    {"dice": [1, 2, 3]},
    {"dice": [0, 2, 3]},
    {"dice": [1, 2]},
    {"dice": [True, 2, 3]},
    {"number": 7},
    {"number": 8},
    {"number": "3"},
    {"count": 4},
    {"count": -1},
    {"misdealt": False},
    {"misdealt": "no"},
    {"prompt": 3},
    {"prompt": 0},
    {"prompt": "3"},
    {"prompt": True},
    {"prompt": 2**53},
    {"reason": "ñ" * MAX_TEXT},
    {"reason": "x" * (MAX_TEXT + 1)},
    {"reason": ""},
    {"surprise": 1},
]


def _params_schema(method: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {p["name"]: p["schema"] for p in method["params"]},
        "required": [p["name"] for p in method["params"] if p.get("required")],
        "additionalProperties": False,
    }


def test_the_server_accepts_exactly_the_parameters_the_schema_allows(
    server: ApiServer, fake: FakeTable
) -> None:
    fake.current_prompt = 3  # a prompt the fake table stands at: accepted
    table_methods = [m for m in SCHEMA["methods"] if m["name"].startswith("table.")]

    async def scenario() -> list[str]:
        client = await WsClient.open(server.url)
        await client.login("sam", "735142")
        disagreements = []
        try:
            for method in table_methods:
                check = Draft202012Validator(_params_schema(method))
                for params in CANDIDATES:
                    try:
                        await client.call(method["name"], params)
                        accepted = True
                    except RpcFailure as failure:
                        assert failure.code == rpc.INVALID_PARAMS, failure.message
                        accepted = False
                    if accepted != check.is_valid(params):
                        disagreements.append(f"{method['name']} {params}: server {accepted}")
        finally:
            await client.close()
        return disagreements

    assert asyncio.run(scenario()) == []


def test_docs_api_md_carries_the_schema_as_shipped() -> None:
    text = DOCS.read_text(encoding="utf-8")
    match = re.search(r"<!-- schema:start -->\n```json\n(.*?)```\n<!-- schema:end -->", text, re.S)
    assert match, "docs/api.md has no schema block between its markers"
    assert json.loads(match.group(1)) == SCHEMA


@pytest.mark.parametrize("code", sorted(rpc.ERROR_NAMES))
def test_docs_api_md_lists_every_error_code(code: int) -> None:
    assert f"`{code}`" in DOCS.read_text(encoding="utf-8")


def test_a_voids_reason_is_bounded_by_the_documented_maximum() -> None:
    [method] = [m for m in SCHEMA["methods"] if m["name"] == "table.void_round"]
    [reason] = [p for p in method["params"] if p["name"] == "reason"]
    assert reason["schema"]["maxLength"] == MAX_TEXT
