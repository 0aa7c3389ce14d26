"""PIN guessing against the real service: bounded per client and per name, counted
atomically, answered alike for a locked name and an unknown one, lifted by
``shoe-diag users reset``; nobody locks out the supervisor from another site."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.security.attacker import login, post, source
from tests.security.conftest import StartService
from tests.security.service import PEOPLE, diag

MARTA_PIN = PEOPLE["marta"][1]


def statuses(answers: list[tuple[int, Any]]) -> list[int]:
    return [status for status, _ in answers]


def test_a_client_that_guesses_is_stopped_whatever_the_names(
    start_service: StartService,
) -> None:
    service = start_service()

    async def scenario() -> None:
        attacker = source(7)
        # Ten failed sign-ins, each for another name: no name reaches its own limit.
        names = ["dana", "marta", "tec", "vic", "ana", "bo", "cy", "di", "ed", "fo"]
        answers = [await login(service.url, name, "918273", attacker) for name in names]
        assert statuses(answers) == [401] * 9 + [429]
        # From there, that client is refused whatever it sends, even a right PIN.
        status, body = await login(service.url, "dana", PEOPLE["dana"][1], attacker)
        assert status == 429
        assert body["error"]["data"]["retry_after"] > 0
        # The supervisor signs in from elsewhere, the dealer too.
        assert (await login(service.url, "marta", MARTA_PIN))[0] == 200
        assert (await login(service.url, "dana", PEOPLE["dana"][1], source(8)))[0] == 200

    asyncio.run(scenario())
    service.stop()  # what a minute gathered is journaled at the latest at the stop
    lockouts = [d for a, _, d in service.access_details() if a == "lockout"]
    assert lockouts == [f"client {source(7)} locked for 600 s"]


def test_five_wrong_pins_lock_a_name_and_a_reset_lifts_the_lock(
    start_service: StartService,
) -> None:
    service = start_service()

    async def scenario() -> None:
        # From five machines, so that no client reaches its own limit.
        answers = [await login(service.url, "marta", "918273", source(n)) for n in range(5)]
        assert statuses(answers) == [401] * 4 + [429]
        assert (await login(service.url, "marta", MARTA_PIN, source(9)))[0] == 429
        result = diag("users", "reset", "marta", "--pin-stdin", "--users", str(service.users),
                      stdin="604215\n")  # fmt: skip
        assert result.returncode == 0, result.stderr
        # The running service reads the file again within a second: the lock is lifted.
        for _ in range(40):
            status, _ = await login(service.url, "marta", "604215", source(10))
            if status == 200:
                break
            assert status == 429
            await asyncio.sleep(0.05)
        assert status == 200

    asyncio.run(scenario())


def test_concurrent_guesses_check_no_more_pins_than_the_limit(
    start_service: StartService,
) -> None:
    service = start_service()

    async def scenario() -> list[int]:
        guesses = [login(service.url, "marta", f"{918273 + n}", source(n)) for n in range(20)]
        return statuses(list(await asyncio.gather(*guesses)))

    answers = asyncio.run(scenario())
    # Four wrong PINs answered as such, the fifth locks; none of the others was checked.
    assert sorted(answers) == [401] * 4 + [429] * 16
    service.stop()
    details = service.access_details()
    assert [(a, u) for a, u, _ in details if a == "lockout"] == [("lockout", "marta")]
    # Every client's failure is in the journal: 4 wrong PINs, the one that locked, and 15
    # refused without a check.
    gathered = [d for a, _, d in details if a == "sign_in_failures"]
    assert sum("(wrong PIN 1)" in d for d in gathered) == 5
    assert sum("(refused while locked 1)" in d for d in gathered) == 15


def test_a_locked_name_and_an_unknown_name_are_answered_alike(
    start_service: StartService,
) -> None:
    service = start_service()

    async def scenario() -> tuple[list[tuple[int, Any]], list[tuple[int, Any]]]:
        real = [await login(service.url, "marta", "918273", source(n)) for n in range(7)]
        unknown = [await login(service.url, "nobody", "918273", source(n)) for n in range(7)]
        return real, unknown

    real, unknown = asyncio.run(scenario())
    assert statuses(real) == statuses(unknown) == [401] * 4 + [429] * 3
    # The same error objects; the time to wait counts down alike.
    for (_, mine), (_, theirs) in zip(real, unknown, strict=True):
        assert mine["error"]["code"] == theirs["error"]["code"]
        assert mine["error"]["message"] == theirs["error"]["message"]


def test_a_page_of_another_site_cannot_lock_out_the_supervisor(
    start_service: StartService,
) -> None:
    service = start_service()

    async def scenario() -> None:
        for _ in range(10):
            # What a form or fetch() on another site can send without the box's consent.
            status, _ = await post(
                service.url + "api/v1/login",
                '{"user": "marta", "pin": "918273"}',
                Content_Type="text/plain",
                Origin="https://evil.example",
            )
            assert status in (403, 415)
        assert (await login(service.url, "marta", MARTA_PIN))[0] == 200

    asyncio.run(scenario())
    assert [(a, u, ok) for a, u, ok in service.access()] == [("sign_in", "marta", True)]
