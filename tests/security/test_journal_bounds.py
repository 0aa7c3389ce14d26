"""Growing the journal without signing in, against the real service: what a failed sign-in
leaves in the journal is bounded, however long the names and however many the tries."""

from __future__ import annotations

import asyncio
import re

from tests.security.attacker import login, source
from tests.security.conftest import StartService

CLIENTS = 8
TRIES = 12
NAME = "\u202e\n\x1b[2J" + "x" * 60_000


def test_sixty_kilobyte_names_from_eight_clients_add_a_few_short_records(
    start_service: StartService,
) -> None:
    service = start_service()

    async def scenario() -> list[int]:
        tries = [
            login(service.url, f"{NAME}{n}", "918273", source(client))
            for client in range(CLIENTS)
            for n in range(TRIES)
        ]
        return [status for status, _ in await asyncio.gather(*tries)]

    answers = asyncio.run(scenario())
    # Refused, locked, or (past 32 sign-ins at once) asked to come back.
    assert set(answers) <= {401, 429, 503}
    service.stop()
    records = service.access_details()
    # Per client and minute: its failures in one record, its lock (ten failures) in
    # another (journaled at the stop here, else once the minute is over).
    assert len(records) <= 2 * CLIENTS, records
    assert sorted({action for action, _, _ in records}) == ["lockout", "sign_in_failures"]
    for _, user, detail in records:
        assert len(user) <= 64
        assert len(detail) <= 400
        # Escaped: nothing that would move a terminal's cursor or break a line.
        assert all(" " <= ch <= "~" for ch in user + detail), (user, detail)
    # A name cut at 32 characters, each escaped, and its length said.
    kept = re.compile(r"\\u202e\\n\\x1b\[2Jx{26}\.\.\.\[6000[78] characters\]")
    for action, _, detail in records:
        if action == "sign_in_failures":
            assert kept.search(detail), detail
    assert all(kept.fullmatch(user) for action, user, _ in records if action == "lockout")
    # The journal grew by kilobytes, not by the megabytes the names weighed.
    assert sum(len(user) + len(detail) for _, user, detail in records) < 8 * 1024
