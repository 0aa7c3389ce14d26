"""The table's own people can always sign in: against the real service, an attacker on
another address who locks the dealer's name, takes every connection it may, or keeps as
many sign-ins waiting as it may, refuses only its own newcomers. The dealer at the table's
console (``[api] console_addresses``, 127.0.0.1 here: ``service.CONSOLE_ADDRESSES``) still
signs in and deals a round."""

from __future__ import annotations

import asyncio
from typing import Any

from shoe_controller.api.methods import MAX_SIGN_INS_WAITING
from tests.api.client import WsClient
from tests.api.test_end_to_end import deal_rounds
from tests.security.attacker import Probe, login, probe, source, upgrade_request
from tests.security.conftest import StartService
from tests.security.service import PEOPLE, Service

DANA_PIN = PEOPLE["dana"][1]


async def dealer_deals_a_round(service: Service) -> list[dict[str, Any]]:
    """The dealer signs in at the table's console and deals one round there."""
    dealer = await WsClient.open(service.url)
    try:
        assert (await dealer.login("dana", DANA_PIN))["role"] == "dealer"
        return await deal_rounds(dealer, 1)
    finally:
        await dealer.close()


def dealt(service: Service, events: list[dict[str, Any]]) -> None:
    assert service.wait() == 0, "\n".join(service.err[-20:])
    assert "Rounds: 1 (1 dealt)." in service.out
    assert sum(e["event"] == "card" for e in events) == 49


def test_wrong_pins_from_elsewhere_lock_the_dealer_out_of_elsewhere_only(
    start_service: StartService,
) -> None:
    service = start_service(script=["--rounds", "1"])

    async def scenario() -> list[dict[str, Any]]:
        # Five machines, so that no client reaches its own limit: the name's lock.
        guesses = [await login(service.url, "dana", "918273", source(n)) for n in range(5)]
        assert [status for status, _ in guesses] == [401] * 4 + [429]
        # Elsewhere, dana is locked, even with her right PIN.
        status, body = await login(service.url, "dana", DANA_PIN, source(6))
        assert (status, body["error"]["code"]) == (429, -32005)
        events = await dealer_deals_a_round(service)
        # The attacker is still refused; the table's sign-in lifted nothing elsewhere.
        status, body = await login(service.url, "dana", "918273", source(7))
        assert (status, body["error"]["code"]) == (429, -32005)
        return events

    events = asyncio.run(scenario())
    dealt(service, events)
    details = service.access_details()
    assert [(a, u) for a, u, _ in details if a == "lockout"] == [("lockout", "dana")]
    assert ("sign_in", "dana", "127.0.0.1") in details


def test_connections_up_to_the_cap_from_elsewhere_leave_room_for_the_table(
    start_service: StartService,
) -> None:
    # 12 in all, 4 per address: the table's console keeps 4, the others share 8.
    service = start_service(
        script=["--rounds", "1"],
        api="max_connections = 12\nmax_connections_per_address = 4\nsign_in_deadline = 600",
    )

    async def scenario() -> list[dict[str, Any]]:
        held: list[Probe] = []
        try:
            for n in range(3):
                held += [await probe(service.port, source(n)) for _ in range(4)]
            # The first 8 are taken, the 9th from elsewhere is refused the moment it comes,
            # from a machine that holds none as well.
            assert [p.admitted for p in held] == [True] * 8 + [False] * 4
            newcomer = await probe(service.port, source(9), upgrade_request(service.port))
            assert not newcomer.admitted
            events = await dealer_deals_a_round(service)
            # Those the box took keep their connections: the limit refused newcomers only.
            assert all(p.writer is not None and not p.writer.is_closing() for p in held[:8])
            return events
        finally:
            for p in held:
                await p.close()

    events = asyncio.run(scenario())
    dealt(service, events)


def test_sign_ins_kept_waiting_from_elsewhere_leave_room_for_the_table(
    start_service: StartService,
) -> None:
    service = start_service(script=["--rounds", "1"])

    async def scenario() -> tuple[list[int], list[dict[str, Any]], int]:
        # The others may keep MAX_SIGN_INS_WAITING - TABLE_CONSOLE_SIGN_INS waiting.
        # Unknown names, each checked against the users file's decoy at the file's own
        # (slow) parameters, from four machines: fewer than a client's limit each, so
        # that every one is checked, one after another, at the checks' share of the time.
        sent = [
            asyncio.create_task(login(service.url, f"nobody{n}", "918273", source(n % 4)))
            for n in range(MAX_SIGN_INS_WAITING + 4)
        ]
        refused: list[int] = []
        pending = set(sent)
        while not refused:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                status, body = task.result()
                if status == 503:
                    assert body["error"]["code"] == -32006
                    assert "too many sign-ins at once" in body["error"]["message"]
                    refused.append(status)
                else:  # checked already (a slow machine sends slowly): a wrong PIN
                    assert status == 401, body
        # The others' places are all taken (a newcomer was refused): the dealer comes.
        events = await dealer_deals_a_round(service)
        still_waiting = sum(not task.done() for task in sent)
        for task in sent:
            task.cancel()
        await asyncio.gather(*sent, return_exceptions=True)
        return refused, events, still_waiting

    refused, events, still_waiting = asyncio.run(scenario())
    assert refused
    # The dealer did not wait for the attacker's sign-ins to be over.
    assert still_waiting > 0
    dealt(service, events)
