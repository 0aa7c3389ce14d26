"""Connection floods against the real service: nothing a client does takes the table's
descriptors or stops its rounds, a limit reached refuses the newcomer (never a client
already served, never the table), and a client that does not sign in is let go."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import aiohttp

from tests.api.client import WsClient
from tests.api.test_end_to_end import deal_rounds
from tests.security.attacker import Probe, ended, probe, source, upgrade_request
from tests.security.conftest import StartService
from tests.security.service import PEOPLE

FLOOD = 2_000
MACHINES = 100
ROUNDS = 5
#: The service's open-file limit, as systemd's default soft limit would leave it.
NOFILE = 1024


async def flood(port: int) -> list[Probe]:
    """``FLOOD`` connections from ``MACHINES`` machines, every other one asking for a
    WebSocket; each held as the server left it."""
    probes: list[Probe] = []
    # In waves, so that the attacker's own connects do not wait on the kernel's backlog.
    for start in range(0, FLOOD, 250):
        wave = [
            probe(port, source(n % MACHINES), upgrade_request(port) if n % 2 else b"")
            for n in range(start, min(start + 250, FLOOD))
        ]
        probes += await asyncio.gather(*wave)
    return probes


def test_two_thousand_sockets_do_not_stop_a_table_dealing_at_pace_0(
    start_service: StartService,
) -> None:
    # The dealer's console is signed in; then 2,000 sockets arrive, with the service
    # under ulimit -n 1024, and stay while the dealer deals every round through the API.
    # The sign-in deadline is long here, so that none of the flood is let go and another
    # let in while it lasts (a loaded machine makes the waves slow): the limit is then
    # what the count of admitted sockets shows.
    service = start_service(
        script=["--rounds", str(ROUNDS)], nofile=NOFILE, api="sign_in_deadline = 600"
    )

    async def scenario() -> tuple[int, int, list[dict[str, Any]]]:
        dealer = await WsClient.open(service.url)
        await dealer.login("dana", PEOPLE["dana"][1])
        probes = await flood(service.port)
        admitted = sum(p.admitted for p in probes)
        try:
            events = await deal_rounds(dealer, ROUNDS)
        finally:
            await dealer.close()
            for p in probes:
                await p.close()
        return admitted, len(probes) - admitted, events

    admitted, refused, events = asyncio.run(scenario())
    assert service.wait() == 0, "\n".join(service.err[-20:])
    assert f"Rounds: {ROUNDS} ({ROUNDS} dealt)." in service.out
    assert sum(e["event"] == "card" for e in events) == ROUNDS * 49
    assert not any("Traceback" in line for line in service.err)
    # The limits refused the newcomers: at most 256 connections in all, the dealer's one.
    assert admitted <= 255
    assert refused >= FLOOD - 255


def test_past_its_share_a_client_is_refused_and_the_others_still_served(
    start_service: StartService,
) -> None:
    # 10 in all, 4 per address: the table's console keeps 4, the others share 6.
    service = start_service(api="max_connections_per_address = 4\nmax_connections = 10")

    async def scenario() -> None:
        hog = [await probe(service.port, source(1)) for _ in range(4)]
        assert all(p.admitted for p in hog)
        # The fifth from the same machine is refused the moment it arrives.
        assert not (await probe(service.port, source(1))).admitted
        # Another machine is served, and a third too, until the total is reached.
        other = await probe(service.port, source(2), upgrade_request(service.port))
        assert other.answer.startswith(b"HTTP/1.1 101")
        third = await probe(service.port, source(3))
        assert third.admitted
        assert not (await probe(service.port, source(4))).admitted
        # The table's console still connects: its share is its own.
        console = await probe(service.port, "127.0.0.1", upgrade_request(service.port))
        assert console.answer.startswith(b"HTTP/1.1 101")
        await console.close()
        # Those already served keep their connections: a signed-in console loses nothing.
        for p in hog:
            assert p.writer is not None and not p.writer.is_closing()
            await p.close()
        await other.close()
        await third.close()

    asyncio.run(scenario())


def test_a_connection_that_sends_nothing_or_half_a_request_is_let_go(
    start_service: StartService,
) -> None:
    service = start_service(api="sign_in_deadline = 1")

    async def scenario() -> None:
        silent = await probe(service.port, source(1))
        assert silent.admitted
        assert await ended(silent, 10)
        # Headers that never end (a slowloris) hold no place either.
        slow = await probe(service.port, source(2))
        assert slow.writer is not None
        slow.writer.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-a: ")
        assert await ended(slow, 10)

    asyncio.run(scenario())


def test_a_websocket_that_does_not_sign_in_is_closed_and_a_signed_in_one_stays(
    start_service: StartService,
) -> None:
    service = start_service(api="sign_in_deadline = 1")

    async def scenario() -> None:
        async with aiohttp.ClientSession() as http:
            idle = await http.ws_connect(service.url + "api/v1/ws")
            signed = await http.ws_connect(service.url + "api/v1/ws")
            role, pin = PEOPLE["vic"]
            await signed.send_json(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "session.login",
                    "params": {"user": "vic", "pin": pin},
                }
            )
            reply = await signed.receive_json(timeout=10)
            assert reply["result"]["role"] == role.value
            closing = await idle.receive(timeout=10)
            assert closing.type is aiohttp.WSMsgType.CLOSE
            assert closing.data == 4001
            assert re.fullmatch(r"sign in within 1 s", closing.extra)
            # Past the deadline, the signed-in one still answers.
            await signed.send_json({"jsonrpc": "2.0", "id": 2, "method": "session.logout"})
            assert (await signed.receive_json(timeout=10))["id"] == 2
            # Signed out, it has the deadline again.
            closing = await signed.receive(timeout=10)
            assert closing.type is aiohttp.WSMsgType.CLOSE
            assert closing.data == 4001
            await idle.close()
            await signed.close()

    asyncio.run(scenario())
