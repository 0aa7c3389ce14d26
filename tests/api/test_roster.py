"""``session.roster``: the people who run this table, for the console's sign-in by touch.

Open to anyone (the sign-in screen calls it before anyone signed in), it names the users
who may deal or supervise and their roles, from the users file as it is now, and nothing
of a PIN: no hash, no parameter, no lockout."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from shoe_controller.api import rpc
from shoe_controller.api.roles import Role
from shoe_controller.api.server import ApiServer, schema_text
from shoe_controller.api.users import UsersFile
from tests.api.client import RpcFailure, WsClient, post_json
from tests.api.conftest import PEOPLE


def roster_schema() -> Draft202012Validator:
    schema = json.loads(schema_text())
    [method] = [m for m in schema["methods"] if m["name"] == "session.roster"]
    return Draft202012Validator(method["result"]["schema"])


def roster_over_ws(server: ApiServer) -> Any:
    async def scenario() -> Any:
        client = await WsClient.open(server.url)
        try:
            return await client.call("session.roster")
        finally:
            await client.close()

    return asyncio.run(scenario())


def test_the_roster_names_who_may_deal_or_supervise_before_anyone_signed_in(
    server: ApiServer,
) -> None:
    roster = roster_over_ws(server)
    roster_schema().validate(roster)
    assert roster == {
        "users": [
            {"name": name, "role": role.value}
            for name, (role, _) in sorted(PEOPLE.items())
            if role in (Role.DEALER, Role.SUPERVISOR)
        ]
    }


def test_the_roster_carries_nothing_of_a_pin(server: ApiServer, users_file: UsersFile) -> None:
    text = json.dumps(roster_over_ws(server))
    for user in users_file.load().values():
        assert user.pin_hash not in text
    assert "argon2" not in text
    for _, pin in PEOPLE.values():
        assert pin not in text


def test_the_roster_follows_the_users_file(server: ApiServer, users_file: UsersFile) -> None:
    users_file.add("ana", Role.DEALER, "4821")
    users_file.remove("dana")
    names = [user["name"] for user in roster_over_ws(server)["users"]]
    assert names == ["ana", "sam"]


def test_the_roster_over_http_needs_no_token(server: ApiServer) -> None:
    request = {"jsonrpc": "2.0", "id": 1, "method": "session.roster"}
    status, body, _ = asyncio.run(post_json(server.url + "api/v1/rpc", request))
    assert status == 200
    assert [user["name"] for user in body["result"]["users"]] == ["dana", "sam"]


def test_a_damaged_users_file_is_unavailable_not_a_crash(
    server: ApiServer, users_file: UsersFile, tmp_path: Path
) -> None:
    users_file.path.write_text('{"format": "shoe-controller-users", "version": 1}')

    async def scenario() -> RpcFailure:
        client = await WsClient.open(server.url)
        try:
            try:
                await client.call("session.roster")
            except RpcFailure as failure:
                return failure
            raise AssertionError("a damaged users file gave a roster")
        finally:
            await client.close()

    failure = asyncio.run(scenario())
    assert failure.code == rpc.UNAVAILABLE
    assert "damaged" in failure.message


def test_the_roster_takes_no_parameter(server: ApiServer) -> None:
    async def scenario() -> int:
        client = await WsClient.open(server.url)
        try:
            await client.call("session.roster", {"role": "supervisor"})
        except RpcFailure as failure:
            return failure.code
        finally:
            await client.close()
        return 0

    assert asyncio.run(scenario()) == rpc.INVALID_PARAMS


def test_a_real_misdeal_prompt_and_its_snapshot_validate_against_the_schema(
    tmp_path: Path,
) -> None:
    """A short deck's misdeal determination carries the record's proposal as the events
    name it ("no-misdeal"), and the schema says so (the console reads it from there)."""
    from shoe_controller.cli.croupier import Script
    from shoe_controller.service import events as ev
    from shoe_controller.service.public_state import PublicState
    from shoe_controller.simulator.transport import live_addresses, switch_off
    from tests.service.helpers import start_table

    schema = json.loads(schema_text())
    components = {"components": schema["components"]}
    event = Draft202012Validator({"$ref": "#/components/schemas/Event", **components})
    snapshot = Draft202012Validator({"$ref": "#/components/schemas/Snapshot", **components})
    controller, recorder = start_table(
        tmp_path,
        device="sim://?pace=0&deck=short&seed=5",
        script=Script(wagers=frozenset({2}), stub_count=3, on_review="no-misdeal"),
    )
    try:
        recorder.wait_for(
            lambda events: any(
                isinstance(e, ev.PromptEvent) and e.need == "misdeal_determination" for e in events
            )
        )
    finally:
        controller.stop()
        for address in live_addresses():
            switch_off(address)
    state = PublicState()
    for published in recorder.events:
        event.validate(published.to_json())
        state.apply(published)
        if isinstance(published, ev.PromptEvent) and published.need == "misdeal_determination":
            assert published.proposal == "no-misdeal"
            snapshot.validate(state.as_json())
