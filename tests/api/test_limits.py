"""The API's limits, in-process: who counts as one client, how many connections are taken,
which host names and origins are answered, the configuration's keys, and no client let in
before the table holds its descriptors."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from shoe_controller.api.limits import Admission, connection_budget
from shoe_controller.api.origins import HostNames
from shoe_controller.api.peers import ConsoleAddresses, client_key
from shoe_controller.errors import ConfigError
from shoe_controller.service import events as ev
from shoe_controller.service.config import parse_config
from tests.api.conftest import StartServer
from tests.api.fakes import FakeTable


@pytest.mark.parametrize(
    ("address", "key"),
    [
        ("192.0.2.7", "192.0.2.7"),
        ("::ffff:192.0.2.7", "192.0.2.7"),
        ("2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"),
        ("2001:db8:1:2:bbbb::9%eth0", "2001:db8:1:2::/64"),
        ("/run/socket", "/run/socket"),
    ],
)
def test_a_client_is_its_address_and_an_ipv6_client_its_64(address: str, key: str) -> None:
    assert client_key(address) == key


def test_connections_are_counted_in_all_and_per_client() -> None:
    admission = Admission(total=5, per_client=2)
    assert admission.reserved == 2
    assert admission.admit("a") and admission.admit("a")
    assert not admission.admit("a")
    assert admission.admit("b")
    assert not admission.admit("c")
    admission.release("a")
    assert admission.admit("c")
    assert (admission.open, admission.refused) == (3, 2)


def test_the_table_console_keeps_its_share_of_the_connections() -> None:
    # Others together hold at most total - per_client; the table's console the rest.
    admission = Admission(total=8, per_client=3)
    others = [admission.admit(f"m{n}") for n in range(8)]
    assert others == [True] * 5 + [False] * 3
    table = [admission.admit("127.0.0.1", at_table=True) for _ in range(4)]
    assert table == [True] * 3 + [False]  # its own per-client limit still holds
    assert admission.open == 8
    # A place the table's console gives back is not one another client may take.
    admission.release("127.0.0.1", at_table=True)
    assert not admission.admit("m9")
    assert admission.admit("127.0.0.1", at_table=True)
    # Half the places at most are kept: a small total still serves other clients.
    assert Admission(total=4, per_client=16).reserved == 2


@pytest.mark.parametrize(
    ("address", "table"),
    [
        ("127.0.0.1", True),
        ("127.0.1.1", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        ("::2", False),
        ("192.0.2.7", False),
        ("::ffff:192.0.2.7", False),
        ("/run/socket", False),
    ],
)
def test_the_table_console_is_loopback_by_default(address: str, table: bool) -> None:
    assert (address in ConsoleAddresses()) is table


def test_the_table_console_keeps_its_room_at_the_console_addresses() -> None:
    # One setting, [api] console_addresses, names the console for the buttons and for the
    # room kept: addresses or networks, an IPv4 client mapped into IPv6 as itself.
    config = parse_config({"api": {"console_addresses": ["10.1.2.3", "fd00:7::/64"]}})
    console = ConsoleAddresses(config.api.console_addresses)
    for address in ("10.1.2.3", "::ffff:10.1.2.3", "fd00:7::9", "fd00:7::ffff:1%eth0"):
        assert address in console, address
    for address in ("10.1.2.4", "127.0.0.1", "::1", "fd00:8::9", "box-7"):
        assert address not in console, address


def test_there_is_no_second_setting_for_the_table_console() -> None:
    with pytest.raises(ConfigError, match=r"unknown key api\.table_console"):
        parse_config({"api": {"table_console": ["127.0.0.1"]}})


def test_the_budget_keeps_descriptors_for_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    from shoe_controller.api import limits

    monkeypatch.setattr(limits, "open_descriptors", lambda: 40)
    monkeypatch.setattr(limits.resource, "getrlimit", lambda _: (1024, 4096))
    assert connection_budget(256) == 256
    assert connection_budget(10_000) == (1024 - 40 - 64) // 2
    # Above 1024 the budget stays below select()'s reach.
    monkeypatch.setattr(limits.resource, "getrlimit", lambda _: (65536, 65536))
    assert connection_budget(10_000) == (1024 - 40 - 64) // 2
    monkeypatch.setattr(limits.resource, "getrlimit", lambda _: (100, 100))
    with pytest.raises(ConfigError, match="raise it"):
        connection_budget(256)


@pytest.mark.parametrize(
    ("names", "host", "allowed"),
    [
        (HostNames("127.0.0.1", scheme="http", port=8750, loopback=True), "127.0.0.1:8750", True),
        (HostNames("127.0.0.1", scheme="http", port=8750, loopback=True), "localhost:8750", True),
        (HostNames("127.0.0.1", scheme="http", port=8750, loopback=True), "[::1]:8750", True),
        (HostNames("127.0.0.1", scheme="http", port=8750, loopback=True), "127.0.0.1:8751", False),
        (
            HostNames("127.0.0.1", scheme="http", port=8750, loopback=True),
            "evil.example:8750",
            False,
        ),
        (HostNames("127.0.0.1", scheme="http", port=80, loopback=True), "127.0.0.1", True),
        (HostNames("127.0.0.1", scheme="http", port=8750, loopback=True), "", False),
        (HostNames("127.0.0.1", scheme="http", port=8750, loopback=True), "a:b:c", False),
        (HostNames("10.0.0.7", scheme="https", port=8750), "10.0.0.7:8750", True),
        (HostNames("10.0.0.7", scheme="https", port=8750), "localhost:8750", False),
        (HostNames("0.0.0.0", scheme="https", port=8750), "10.0.0.7:8750", True),
        (HostNames("0.0.0.0", scheme="https", port=8750), "box-7.lan:8750", False),
        (
            HostNames("0.0.0.0", scheme="https", port=8750, configured=["Box-7.lan."]),
            "box-7.lan:8750",
            True,
        ),
        (
            HostNames("0.0.0.0", scheme="https", port=8750, configured=["box-7.lan"]),
            "10.0.0.7:8750",
            False,
        ),
    ],
)
def test_the_host_names_answered(names: HostNames, host: str, allowed: bool) -> None:
    assert names.host_allowed(host) is allowed


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("http://127.0.0.1:8750", True),
        ("http://localhost:8750", True),
        ("https://127.0.0.1:8750", False),
        ("http://127.0.0.1:8751", False),
        ("http://evil.example:8750", False),
        ("null", False),
        ("http://127.0.0.1:8750/page", False),
        ("http://127.0.0.1:99999", False),
    ],
)
def test_the_origins_allowed(origin: str, allowed: bool) -> None:
    names = HostNames("127.0.0.1", scheme="http", port=8750, loopback=True)
    assert names.origin_allowed(origin) is allowed


def test_the_limits_are_read_from_the_configuration() -> None:
    api = parse_config(
        {
            "api": {
                "host_names": ["box-7.casino.lan"],
                "max_connections": 64,
                "max_connections_per_address": 4,
                "sign_in_deadline": 2.5,
            }
        }
    ).api
    assert api.host_names == ("box-7.casino.lan",)
    assert (api.max_connections, api.max_connections_per_address) == (64, 4)
    assert api.sign_in_deadline == 2.5
    defaults = parse_config({}).api
    assert (defaults.max_connections, defaults.max_connections_per_address) == (256, 16)
    assert (defaults.sign_in_deadline, defaults.host_names) == (5.0, ())


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("max_connections", 0, "api.max_connections must be a whole number above 0"),
        ("max_connections_per_address", "16", "must be a whole number above 0"),
        ("sign_in_deadline", -1, "api.sign_in_deadline must be a number of seconds"),
        ("host_names", "box-7", "api.host_names must be a list of host names"),
        ("host_names", [""], "api.host_names must be a list of host names"),
    ],
)
def test_a_bad_limit_in_the_configuration_says_so(key: str, value: Any, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config({"api": {key: value}})


def test_no_client_is_let_in_before_the_shoe_has_been_seen(
    start_server: StartServer, fake: FakeTable
) -> None:
    server = start_server(fake, wait_for_link=True)

    async def scenario() -> None:
        async with aiohttp.ClientSession() as http:
            asking = asyncio.ensure_future(http.get(server.url + "api/v1/schema"))
            done, _ = await asyncio.wait([asking], timeout=0.3)
            assert not done, "served before the link had any news of the shoe"
            fake.publish(ev.LinkStatusEvent(status="reconnecting", message="no shoe yet"))
            response = await asyncio.wait_for(asking, 10)
            assert response.status == 200
            response.release()

    asyncio.run(scenario())
