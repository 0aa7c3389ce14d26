"""Rule E4 at the API: "the shoe's buttons act for the dealer signed in at the table and
never for a supervisor".

The table's console is a WebSocket that declares itself the table's (``?console=table``)
from an address configured as the console's (loopback by default). The server journals a
dealer's session there (``at_console``, with the session's id) and every end of it: the
session left the console (``left_console``: signed out, idle, expired, its user changed,
the socket closed, another person signed in on it, the service stopping) or ended by time
(``session_ended``, for every session). Time is the injected clock; the server's own
housekeeping notices it."""

from __future__ import annotations

import asyncio
import ipaddress
from pathlib import Path
from typing import Any

import pytest

from shoe_controller.api import rpc
from shoe_controller.api.auth import IDLE_TIMEOUT_S, TOKEN_TTL_S
from shoe_controller.api.server import ApiServer
from shoe_controller.api.users import UsersFile
from shoe_controller.errors import ConfigError
from shoe_controller.service.config import LOOPBACK, load_config
from tests.api.client import RpcFailure, WsClient, post_json
from tests.api.conftest import PEOPLE, ManualClock, StartServer
from tests.api.fakes import Access, FakeTable
from tests.api.test_access import wait_until

pytestmark = pytest.mark.rule("E4")

#: The actions that say where the console's dealer is, and when sessions end.
CONSOLE_ACTIONS = ("at_console", "left_console", "session_ended")


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def console(fake: FakeTable) -> list[tuple[str, str, str, str | None]]:
    """(action, user, detail, session) of the console's records and sessions' ends."""
    return [
        (a.action, a.user, a.detail, a.session) for a in fake.access if a.action in CONSOLE_ACTIONS
    ]


async def at_console(server: ApiServer, name: str, **options: Any) -> WsClient:
    client = await WsClient.open(server.url, console=True, **options)
    await client.login(name, PEOPLE[name][1])
    return client


def test_a_dealer_on_the_tables_console_is_journaled_with_her_session(
    server: ApiServer, fake: FakeTable
) -> None:
    async def scenario() -> None:
        client = await at_console(server, "dana")
        await client.call("session.logout")
        await client.close()

    run(scenario())
    actions = [(a.action, a.user, a.role) for a in fake.access]
    assert actions == [
        ("sign_in", "dana", "dealer"),
        ("at_console", "dana", "dealer"),
        ("left_console", "dana", "dealer"),
        ("sign_out", "dana", "dealer"),
    ]
    [(_, _, peer, session), (_, _, why, left)] = console(fake)
    assert (peer, why) == ("127.0.0.1", "sign_out")
    # The session's id names it in the journal: nothing of the token, the secret.
    assert session == left
    assert session is not None and len(session) == 16
    int(session, 16)


def test_only_a_dealers_declared_console_websocket_is_the_tables_console(
    server: ApiServer, fake: FakeTable
) -> None:
    """A supervisor on the console, a dealer over HTTP, a WebSocket that does not declare
    itself the console: none of them is the console's dealer."""

    async def scenario() -> None:
        supervisor = await at_console(server, "sam")
        plain = await WsClient.open(server.url)
        await plain.login("dana", PEOPLE["dana"][1])
        status, _, _ = await post_json(
            server.url + "api/v1/login", {"user": "dana", "pin": PEOPLE["dana"][1]}
        )
        assert status == 200
        for client in (supervisor, plain):
            await client.call("session.logout")
            await client.close()

    run(scenario())
    assert [a.action for a in fake.access].count("sign_in") == 3
    assert console(fake) == []


def test_a_console_from_an_address_that_is_not_the_consoles_is_not_the_tables(
    start_server: StartServer, fake: FakeTable
) -> None:
    """``[api] console_addresses``: another machine that declares itself the console is
    served, but the buttons never act for whoever signs in on it."""
    server = start_server(fake, console_addresses=(ipaddress.ip_network("127.0.0.2"),))

    async def scenario() -> None:
        elsewhere = await at_console(server, "dana")
        await elsewhere.call("table.state")
        await elsewhere.close()
        there = await at_console(server, "dana", source="127.0.0.2")
        await there.close()

    run(scenario())
    wait_until(lambda: any(a.action == "left_console" for a in fake.access))
    assert [(a, u, d) for a, u, d, _ in console(fake)] == [
        ("at_console", "dana", "127.0.0.2"),
        ("left_console", "dana", "closed"),
    ]


@pytest.mark.parametrize("why", ["idle", "expired", "user_changed"])
def test_a_console_session_that_ends_leaves_the_console_at_once(
    server: ApiServer, fake: FakeTable, clock: ManualClock, users_file: UsersFile, why: str
) -> None:
    """The end is journaled by the server itself, without waiting for anyone to call: the
    console's WebSocket is told, and the console's dealer leaves."""

    async def scenario() -> None:
        client = await at_console(server, "dana")
        try:
            if why == "idle":
                clock.advance(IDLE_TIMEOUT_S)
            elif why == "expired":
                signed_in = clock.now
                while clock.now + IDLE_TIMEOUT_S / 2 < signed_in + TOKEN_TTL_S:
                    clock.advance(IDLE_TIMEOUT_S / 2)
                    await client.call("table.state")
                clock.advance(signed_in + TOKEN_TTL_S - clock.now)
            else:
                users_file.remove("dana")
            note = await client.next_notification()
            assert note["method"] == "notify_session_ended"
            with pytest.raises(RpcFailure) as refused:
                await client.call("table.state")
            assert refused.value.code == rpc.NOT_SIGNED_IN
        finally:
            await client.close()

    run(scenario())
    wait_until(lambda: any(a.action == "left_console" for a in fake.access))
    [(_, _, _, session)] = [r for r in console(fake) if r[0] == "at_console"]
    ended = [r for r in console(fake) if r[0] != "at_console"]
    if why == "user_changed":
        # The users file's change is journaled by name, as before.
        assert sorted(ended) == [
            ("left_console", "dana", why, session),
            ("session_ended", "dana", "the user was removed or changed in the users file", None),
        ]
    else:
        assert ended == [
            ("session_ended", "dana", why, session),
            ("left_console", "dana", why, session),
        ]


def test_every_session_that_ends_by_time_is_journaled(
    server: ApiServer, fake: FakeTable, clock: ManualClock
) -> None:
    """Not only the console's: a session over HTTP that idles out is journaled too, once,
    when the server finds it over (here: its housekeeping)."""

    async def scenario() -> None:
        status, session, _ = await post_json(
            server.url + "api/v1/login", {"user": "sam", "pin": PEOPLE["sam"][1]}
        )
        assert status == 200
        clock.advance(IDLE_TIMEOUT_S + 1)
        await asyncio.to_thread(
            wait_until, lambda: any(a.action == "session_ended" for a in fake.access)
        )
        status, _, _ = await post_json(
            server.url + "api/v1/rpc",
            {"jsonrpc": "2.0", "id": 1, "method": "table.state"},
            session["token"],
        )
        assert status == 401

    run(scenario())
    assert [(a, u, d) for a, u, d, _ in console(fake)] == [("session_ended", "sam", "idle")]
    assert next(a for a in fake.access if a.action == "session_ended").session is not None


def test_a_session_found_over_by_a_call_is_journaled_before_the_call_is_answered(
    start_server: StartServer, fake: FakeTable, clock: ManualClock
) -> None:
    """A token refused for its idle time: its end is already handed to the controller,
    so nothing pressed after the refusal can still act for it."""
    server = start_server(fake, idle=5.0)

    async def scenario() -> None:
        client = await at_console(server, "dana")
        try:
            clock.advance(5.0)
            with pytest.raises(RpcFailure):
                await client.call("table.state")
            assert [a for a, *_ in console(fake)] == ["at_console", "session_ended", "left_console"]
        finally:
            await client.close()

    run(scenario())


def test_the_socket_closing_or_another_sign_in_leaves_the_console(
    server: ApiServer, fake: FakeTable
) -> None:
    """A console that reconnects and resumes its session is at the console again; another
    person who signs in on the console's WebSocket replaces the dealer there."""

    async def scenario() -> None:
        first = await WsClient.open(server.url, console=True)
        session = await first.login("dana", PEOPLE["dana"][1])
        await first.close()
        await asyncio.to_thread(
            wait_until, lambda: any(a.action == "left_console" for a in fake.access)
        )
        second = await WsClient.open(server.url, console=True)
        await second.call("session.resume", {"token": session["token"]})
        await second.login("sam", PEOPLE["sam"][1])
        await second.close()

    run(scenario())
    records = console(fake)
    assert [(a, u, d) for a, u, d, _ in records] == [
        ("at_console", "dana", "127.0.0.1"),
        ("left_console", "dana", "closed"),
        ("at_console", "dana", "127.0.0.1"),
        ("left_console", "dana", "replaced"),
    ]
    assert len({s for *_, s in records}) == 1


def test_a_session_on_two_console_websockets_is_at_the_console_until_both_leave(
    server: ApiServer, fake: FakeTable
) -> None:
    """A console reconnecting may resume its session on a new WebSocket before the old
    one closes: the session stays at the console until no console WebSocket holds it."""

    async def scenario() -> None:
        old = await WsClient.open(server.url, console=True)
        session = await old.login("dana", PEOPLE["dana"][1])
        new = await WsClient.open(server.url, console=True)
        await new.call("session.resume", {"token": session["token"]})
        await old.close()
        # The server lets the old WebSocket go as its end reaches it.
        await asyncio.to_thread(wait_until, lambda: len(server._clients) == 1)
        await new.call("table.state")
        assert [a for a, *_ in console(fake)] == ["at_console"]
        await new.call("session.logout")
        await new.close()

    run(scenario())
    assert [(a, d) for a, _, d, _ in console(fake)] == [
        ("at_console", "127.0.0.1"),
        ("left_console", "sign_out"),
    ]


def test_her_session_signed_out_from_elsewhere_leaves_the_console_before_the_answer(
    server: ApiServer, fake: FakeTable
) -> None:
    """Her token signed out over HTTP (another tab, a script) while the console's WebSocket
    holds it: the session is no longer at the console by the time the sign-out is
    answered, not at the console's next message."""

    async def scenario() -> None:
        client = await WsClient.open(server.url, console=True)
        try:
            token = (await client.login("dana", PEOPLE["dana"][1]))["token"]
            call = {"jsonrpc": "2.0", "id": 1, "method": "session.logout"}
            status, _, _ = await post_json(server.url + "api/v1/rpc", call, token)
            assert status == 200
            assert [(a, d) for a, _, d, _ in console(fake)] == [
                ("at_console", "127.0.0.1"),
                ("left_console", "sign_out"),
            ]
        finally:
            await client.close()

    run(scenario())
    assert len(console(fake)) == 2


def test_a_supervisor_signing_in_and_out_leaves_the_consoles_dealer(
    server: ApiServer, fake: FakeTable
) -> None:
    """The console's one action of a supervisor: signed in over HTTP, signed out after."""

    async def scenario() -> None:
        dealer = await at_console(server, "dana")
        url = server.url + "api/v1/"
        _, session, _ = await post_json(url + "login", {"user": "sam", "pin": PEOPLE["sam"][1]})
        request = {"jsonrpc": "2.0", "id": 1, "method": "table.clear_fault"}
        await post_json(url + "rpc", request, session["token"])
        await post_json(url + "rpc", {**request, "method": "session.logout"}, session["token"])
        await dealer.call("table.state")
        await dealer.close()

    run(scenario())
    wait_until(lambda: any(a.action == "left_console" for a in fake.access))
    assert [(a, u, d) for a, u, d, _ in console(fake)] == [
        ("at_console", "dana", "127.0.0.1"),
        ("left_console", "dana", "closed"),
    ]
    assert Access("sign_out", "sam", "supervisor", True, "127.0.0.1") in fake.access


def test_the_consoles_dealer_leaves_when_the_service_stops(
    server: ApiServer, fake: FakeTable
) -> None:
    """Sessions live in memory only: before the controller stops, the console's dealer is
    journaled leaving; the WebSockets closed by the stop journal nothing more."""

    async def scenario() -> None:
        client = await at_console(server, "dana")
        await asyncio.to_thread(server.flush)
        assert [(a, d) for a, _, d, _ in console(fake)] == [
            ("at_console", "127.0.0.1"),
            ("left_console", "stopped"),
        ]
        await asyncio.to_thread(server.stop)
        await client.close()

    run(scenario())
    assert len(console(fake)) == 2


def test_the_consoles_addresses_are_loopback_unless_configured(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    assert load_config(None).api.console_addresses == LOOPBACK
    config.write_text('[api]\nconsole_addresses = ["192.0.2.17", "fd00:7::/64"]\n')
    assert load_config(config).api.console_addresses == (
        ipaddress.ip_network("192.0.2.17"),
        ipaddress.ip_network("fd00:7::/64"),
    )


@pytest.mark.parametrize(
    "value", ['"127.0.0.1"', "[]", '["console.lan"]', '["192.0.2.300"]', "[7]"]
)
def test_a_wrong_console_address_is_named_in_one_line(tmp_path: Path, value: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f"[api]\nconsole_addresses = {value}\n")
    with pytest.raises(ConfigError) as refused:
        load_config(config)
    message = str(refused.value)
    assert "api.console_addresses must be a list of IP addresses or networks" in message
    assert str(config) in message
    assert "\n" not in message
