"""Signing in, roles and sessions, over a real socket against a fake controller: every
method is refused to the roles that may not call it, and allowed to the others; five wrong
PINs lock a user; tokens expire; every sign-in, refusal and sign-out is journaled."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from shoe_controller.api import rpc
from shoe_controller.api.auth import IDLE_TIMEOUT_S, LOCKOUT_S, TOKEN_TTL_S
from shoe_controller.api.methods import METHODS, roles_for
from shoe_controller.api.roles import Role
from shoe_controller.api.server import ApiServer
from shoe_controller.api.users import UsersFile
from shoe_controller.service import Actor
from tests.api.client import RpcFailure, WsClient, get_json, post_json
from tests.api.conftest import PEOPLE, ManualClock
from tests.api.fakes import Access, FakeTable

#: Valid parameters of each method (what the schema's examples would give).
VALID: dict[str, dict[str, Any]] = {
    "table.set_wagers": {"positions": [2, 4, 5]},
    "table.start_by_dice": {"dice": [3, 4, 5]},
    "table.start_by_external_rng": {"number": 6},
    "table.stub_counted": {"count": 4},
    "table.misdeal_determination": {"misdealt": False},
    "table.void_round": {"reason": "a card was exposed"},
}
TABLE_METHODS = sorted(name for name in METHODS if name.startswith("table."))
INPUTS = [name for name in TABLE_METHODS if name != "table.state"]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait for something the server's loop does on its own (its housekeeping)."""
    done = threading.Event()
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the server did not get there in time")
        done.wait(0.02)


async def signed_in(server: ApiServer, name: str) -> WsClient:
    client = await WsClient.open(server.url)
    await client.login(name, PEOPLE[name][1])
    return client


@pytest.mark.parametrize("method", TABLE_METHODS)
@pytest.mark.parametrize("name", sorted(PEOPLE))
def test_every_method_is_enforced_for_every_role(
    server: ApiServer, fake: FakeTable, method: str, name: str
) -> None:
    role = PEOPLE[name][0]
    allowed = role in roles_for(METHODS[method])

    async def scenario() -> None:
        client = await signed_in(server, name)
        try:
            if allowed:
                await client.call(method, VALID.get(method, {}))
            else:
                with pytest.raises(RpcFailure) as refused:
                    await client.call(method, VALID.get(method, {}))
                assert refused.value.code == rpc.ROLE_NOT_ALLOWED
                assert refused.value.data == {"role": role.value}
        finally:
            await client.close()

    run(scenario())
    if method == "table.state":
        assert fake.inputs == []
    elif allowed:
        # The input reached the controller with the signed-in person as its actor.
        [(_, _, actor)] = fake.inputs
        assert actor == Actor(name, role.value)
    else:
        assert fake.inputs == []
        assert fake.access[-1] == Access(
            "refused", name, role.value, False, f"{method}: not for a {role.value}"
        )


def test_the_roles_are_those_of_the_issue() -> None:
    dealer = {m for m in INPUTS if Role.DEALER in roles_for(METHODS[m])}
    assert dealer == {
        "table.set_wagers",
        "table.no_more_bets",
        "table.confirm_shuffle",
        "table.start_by_dice",
        "table.start_by_rng",
        "table.start_by_external_rng",
        "table.wager_settled",
        "table.stub_counted",
        # A determination against a conclusive record is a supervisor's: the procedure
        # refuses a dealer's, on every channel (E4).
        "table.misdeal_determination",
        "table.close_round",
    }
    supervisor = {m for m in INPUTS if Role.SUPERVISOR in roles_for(METHODS[m])}
    assert supervisor == dealer | {
        "table.clear_fault",
        "table.confirm_new_deck",
        "table.accept_stub_count",
        "table.void_round",
    }
    assert not any(Role.TECHNICIAN in roles_for(METHODS[m]) for m in INPUTS)
    assert not any(Role.VIEWER in roles_for(METHODS[m]) for m in TABLE_METHODS)
    assert Role.TECHNICIAN in roles_for(METHODS["table.state"])


@pytest.mark.parametrize("method", TABLE_METHODS)
def test_nothing_before_signing_in(server: ApiServer, fake: FakeTable, method: str) -> None:
    async def scenario() -> None:
        client = await WsClient.open(server.url)
        try:
            with pytest.raises(RpcFailure) as refused:
                await client.call(method, VALID.get(method, {}))
            assert refused.value.code == rpc.NOT_SIGNED_IN
        finally:
            await client.close()

    run(scenario())
    assert fake.inputs == []


def test_a_sign_in_and_a_sign_out_are_journaled(server: ApiServer, fake: FakeTable) -> None:
    async def scenario() -> None:
        client = await signed_in(server, "dana")
        await client.call("session.logout")
        with pytest.raises(RpcFailure) as refused:
            await client.call("table.close_round")
        assert refused.value.code == rpc.NOT_SIGNED_IN
        await client.close()

    run(scenario())
    actions = [(a.action, a.user, a.role, a.accepted) for a in fake.access]
    assert actions == [
        ("sign_in", "dana", "dealer", True),
        ("sign_out", "dana", "dealer", True),
    ]


def test_a_wrong_pin_is_refused_and_journaled(
    server: ApiServer, fake: FakeTable, clock: ManualClock
) -> None:
    async def scenario() -> None:
        client = await WsClient.open(server.url)
        try:
            for name, pin in (("dana", "9999"), ("nobody", "1111")):
                with pytest.raises(RpcFailure) as refused:
                    await client.login(name, pin)
                # The same answer for a wrong PIN and an unknown name.
                assert refused.value.code == rpc.SIGN_IN_REFUSED
                assert refused.value.message == "wrong user name or PIN"
        finally:
            await client.close()

    run(scenario())
    # A client's failures are journaled together once the minute is over.
    assert fake.access == []
    clock.advance(60)
    wait_until(lambda: len(fake.access) == 1)
    [gathered] = fake.access
    assert (gathered.action, gathered.user, gathered.accepted) == ("sign_in_failures", "", False)
    assert gathered.detail == (
        "2 failed sign-ins from 127.0.0.1 in a minute (unknown user 1, wrong PIN 1); "
        "names: 'dana', 'nobody'"
    )


def test_five_wrong_pins_lock_the_user_for_five_minutes(
    server: ApiServer, fake: FakeTable, clock: ManualClock
) -> None:
    async def attempt(pin: str) -> int | None:
        client = await WsClient.open(server.url)
        try:
            await client.login("dana", pin)
        except RpcFailure as failure:
            return failure.code
        finally:
            await client.close()
        return None

    async def scenario() -> None:
        codes = [await attempt("0000") for _ in range(5)]
        assert codes == [rpc.SIGN_IN_REFUSED] * 4 + [rpc.LOCKED_OUT]
        # Locked: even the right PIN is refused, and so it stays until five minutes passed.
        assert await attempt("4821") == rpc.LOCKED_OUT
        clock.advance(LOCKOUT_S - 1)
        assert await attempt("4821") == rpc.LOCKED_OUT
        clock.advance(1)
        assert await attempt("4821") is None
        # Others were never locked out by dana's failures.
        client = await signed_in(server, "sam")
        await client.close()

    run(scenario())
    clock.advance(60)
    wait_until(lambda: any(a.action == "lockout" for a in fake.access))
    lockouts = [a for a in fake.access if a.action == "lockout"]
    assert [(a.user, a.role, a.accepted) for a in lockouts] == [("dana", "dealer", False)]


def test_a_lockout_answers_with_the_time_to_wait(server: ApiServer) -> None:
    async def scenario() -> RpcFailure:
        for _ in range(5):
            status, body, _ = await post_json(
                server.url + "api/v1/login", {"user": "sam", "pin": "0000"}
            )
        assert status == 429
        return RpcFailure(body["error"])

    failure = run(scenario())
    assert failure.code == rpc.LOCKED_OUT
    assert failure.data == {"retry_after": LOCKOUT_S}


@pytest.mark.parametrize(
    ("advance", "note"),
    [(TOKEN_TTL_S, "twelve hours after sign-in"), (IDLE_TIMEOUT_S, "thirty minutes unused")],
)
def test_a_session_expires(
    server: ApiServer, fake: FakeTable, clock: ManualClock, advance: float, note: str
) -> None:
    async def scenario() -> None:
        client = await signed_in(server, "dana")
        try:
            if advance == TOKEN_TTL_S:
                # Used all the time, the session still ends at its time to live.
                step = IDLE_TIMEOUT_S / 2
                signed_in_at = clock.now
                while clock.now + step < signed_in_at + TOKEN_TTL_S:
                    clock.advance(step)
                    await client.call("table.state")
                clock.advance(signed_in_at + TOKEN_TTL_S - clock.now)
            else:
                clock.advance(advance - 1)
                await client.call("table.state")
                clock.advance(advance)
            with pytest.raises(RpcFailure) as refused:
                await client.call("table.close_round")
            assert refused.value.code == rpc.NOT_SIGNED_IN, note
        finally:
            await client.close()

    run(scenario())
    assert fake.inputs == []


def test_a_bearer_token_reads_the_state_and_calls_methods(
    server: ApiServer, fake: FakeTable, clock: ManualClock
) -> None:
    base = server.url + "api/v1/"

    async def scenario() -> None:
        status, body, headers = await get_json(base + "state")
        assert status == 401
        assert body["error"]["code"] == rpc.NOT_SIGNED_IN
        assert headers["WWW-Authenticate"].startswith("Bearer")
        status, session, _ = await post_json(base + "login", {"user": "dana", "pin": "4821"})
        assert status == 200
        assert session["role"] == "dealer"
        assert session["expires_in"] == TOKEN_TTL_S
        token = session["token"]
        status, state, _ = await get_json(base + "state", token)
        assert status == 200
        assert state["phase"] is None
        request = {"jsonrpc": "2.0", "id": 7, "method": "table.start_by_dice"}
        status, reply, _ = await post_json(
            base + "rpc", {**request, "params": {"dice": [1, 2, 3]}}, token
        )
        assert (status, reply) == (200, {"jsonrpc": "2.0", "id": 7, "result": None})
        status, reply, _ = await post_json(
            base + "rpc", {**request, "method": "table.clear_fault"}, token
        )
        assert reply["error"]["code"] == rpc.ROLE_NOT_ALLOWED
        clock.advance(TOKEN_TTL_S)
        status, body, _ = await post_json(base + "rpc", request, token)
        assert status == 401

    run(scenario())
    assert [(name, args) for name, args, _ in fake.inputs] == [
        ("start_by_dice", {"dice": [1, 2, 3]})
    ]


def test_a_viewer_may_not_read_the_state(server: ApiServer, fake: FakeTable) -> None:
    async def scenario() -> int:
        _, session, _ = await post_json(server.url + "api/v1/login", {"user": "vic", "pin": "6047"})
        status, _, _ = await get_json(server.url + "api/v1/state", session["token"])
        return status

    assert run(scenario()) == 403
    assert fake.access[-1].action == "refused"


def test_a_session_is_resumed_with_its_token_on_a_new_connection(server: ApiServer) -> None:
    async def scenario() -> None:
        first = await WsClient.open(server.url)
        session = await first.login("dana", "4821")
        token = session["token"]
        await first.close()
        second = await WsClient.open(server.url)
        try:
            resumed = await second.call("session.resume", {"token": token})
            assert resumed["user"] == "dana"
            await second.call("table.state")
            with pytest.raises(RpcFailure) as refused:
                await second.call("session.resume", {"token": "not-a-token"})
            assert refused.value.code == rpc.NOT_SIGNED_IN
        finally:
            await second.close()

    run(scenario())


def test_events_reach_signed_in_connections_only(
    server: ApiServer, fake: FakeTable, clock: ManualClock
) -> None:
    from shoe_controller.service import events as ev

    async def scenario() -> None:
        stranger = await WsClient.open(server.url)
        viewer = await signed_in(server, "vic")
        try:
            fake.publish(ev.StubEvent(count=4, round="r1"))
            note = await viewer.next_notification()
            assert note == {
                "jsonrpc": "2.0",
                "method": "notify_event",
                "params": [
                    ev.StubEvent(count=4, round="r1").to_json() | {"ts": note["params"][0]["ts"]}
                ],
            }
            # Idle past its timeout: one notice that the session ended, then nothing.
            clock.advance(IDLE_TIMEOUT_S)
            fake.publish(ev.StubEvent(count=3, round="r1"))
            fake.publish(ev.StubEvent(count=2, round="r1"))
            ended = await viewer.next_notification()
            assert ended["method"] == "notify_session_ended"
            await asyncio.sleep(0.2)
            assert viewer.notifications.empty()
            assert stranger.notifications.empty()
        finally:
            await stranger.close()
            await viewer.close()

    run(scenario())


def test_a_websocket_from_another_origin_is_refused(server: ApiServer) -> None:
    import aiohttp

    async def scenario() -> int:
        async with aiohttp.ClientSession() as http:
            try:
                await http.ws_connect(
                    server.url + "api/v1/ws", headers={"Origin": "http://evil.example"}
                )
            except aiohttp.WSServerHandshakeError as refused:
                return refused.status
        return 101

    assert run(scenario()) == 403


def test_the_console_and_the_schema_are_served(server: ApiServer) -> None:
    async def scenario() -> None:
        status, page, headers = await get_json(server.url)
        assert status == 200
        assert 'data-i18n="sign_in"' in page
        assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
        status, schema, _ = await get_json(server.url + "api/v1/schema")
        assert status == 200
        assert {m["name"] for m in schema["methods"]} == set(METHODS)
        status, _, _ = await get_json(server.url + "console/console.js")
        assert status == 200

    run(scenario())


def test_a_removed_user_is_signed_out_before_the_next_call_reaches_the_table(
    server: ApiServer, fake: FakeTable, users_file: UsersFile
) -> None:
    async def scenario() -> None:
        client = await signed_in(server, "sam")
        try:
            users_file.remove("sam")
            # At once, not at the next look at the file: the call never reaches the table.
            with pytest.raises(RpcFailure) as refused:
                await client.call("table.clear_fault")
            assert refused.value.code == rpc.NOT_SIGNED_IN
            note = await client.next_notification()
            assert note["params"] == {"reason": "user_changed"}
        finally:
            await client.close()

    run(scenario())
    assert fake.inputs == []
    wait_until(lambda: any(a.action == "session_ended" for a in fake.access))
    ended = [(a.action, a.user, a.role) for a in fake.access if a.action == "session_ended"]
    assert ended == [("session_ended", "sam", "supervisor")]
