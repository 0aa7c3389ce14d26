"""The users file under attack, against the real service: a removed or changed user's
sessions end within a second (journaled); a file others may write, with weak hashes or a
name twice is refused at start (exit 3, one line) and, while running, leaves the last good
one in use, saying why."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from argon2 import PasswordHasher

from tests.api.client import RpcFailure, WsClient
from tests.api.conftest import cheap_hasher
from tests.security.attacker import login, post
from tests.security.conftest import StartService
from tests.security.service import PEOPLE, Service, diag, users_file

#: A change of the users file takes effect within this long (seconds).
WITHIN_S = 1.0


async def clear_fault(service: Service, token: str) -> tuple[int, Any]:
    call = {"jsonrpc": "2.0", "id": 1, "method": "table.clear_fault"}
    return await post(service.url + "api/v1/rpc", call, Authorization=f"Bearer {token}")


def rewrite(path: Path, change: Any) -> None:
    """Edit the users file by hand, as an administrator would, keeping its mode."""
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


@pytest.mark.parametrize(
    "change",
    [
        ["users", "remove", "marta"],
        ["users", "reset", "marta", "--pin-stdin"],
        "role",
    ],
    ids=["removed", "reset", "role-changed"],
)
def test_a_removed_or_changed_user_is_signed_out_within_a_second(
    start_service: StartService, change: list[str] | str
) -> None:
    service = start_service()

    async def scenario() -> tuple[float, dict[str, Any], tuple[int, Any]]:
        status, session = await login(service.url, "marta", PEOPLE["marta"][1])
        assert status == 200
        console = await WsClient.open(service.url)
        await console.login("marta", PEOPLE["marta"][1])
        if isinstance(change, list):
            result = diag(*change, "--users", str(service.users), stdin="604215\n")
            assert result.returncode == 0, result.stderr
        else:

            def demote(document: dict[str, Any]) -> None:
                for user in document["users"]:
                    if user["name"] == "marta":
                        user["role"] = "dealer"

            rewrite(service.users, demote)
        # From the file's change on disk (the command's own start and PIN hash excluded).
        changed = time.monotonic()
        # The console is told, unasked, within the second.
        note = await console.next_notification(timeout=WITHIN_S + 1)
        told = time.monotonic() - changed
        await console.close()
        # Her token no longer reaches the table.
        return told, note, await clear_fault(service, session["token"])

    told, note, (status, body) = asyncio.run(scenario())
    assert note == {
        "jsonrpc": "2.0",
        "method": "notify_session_ended",
        "params": {"reason": "user_changed"},
    }
    assert told < WITHIN_S + 0.5
    assert status == 401
    assert body["error"]["code"] == -32001

    def ended() -> list[tuple[str, str]]:
        return [(a, u) for a, u, _ in service.access() if a == "session_ended"]

    # Journaled without keeping the answer waiting: soon after, not before it.
    service.wait_for(lambda: len(ended()) >= 2, 10)
    assert ended() == [("session_ended", "marta")] * 2


@pytest.mark.parametrize(
    ("spoil", "message"),
    [
        (lambda p: os.chmod(p, 0o666), "may be written by other accounts (mode 0666)"),
        (
            lambda p: rewrite(
                p,
                lambda d: d["users"].append(
                    {
                        "name": "boss",
                        "role": "supervisor",
                        "pin": PasswordHasher(time_cost=1, memory_cost=8, parallelism=1).hash("1"),
                    }
                ),
            ),
            "the PIN hash of 'boss' is weaker than allowed",
        ),
        (
            lambda p: rewrite(
                p, lambda d: d["users"].append({**d["users"][0], "role": "supervisor"})
            ),
            "user 'dana' is listed twice",
        ),
    ],
    ids=["world-writable", "weak-hash", "duplicate"],
)
def test_an_untrustworthy_users_file_stops_the_start(
    tmp_path: Path, start_service: StartService, spoil: Any, message: str
) -> None:
    directory = tmp_path / "users"
    directory.mkdir(mode=0o700)
    users = users_file(directory)
    spoil(users)
    service = start_service(served=False, users=users)
    assert service.wait(30) == 3
    service.wait_for(lambda: bool(service.err), 10)
    assert not any("Dealer console" in line for line in service.out)
    assert len(service.err) == 1, service.err
    assert service.err[0].startswith("shoe-controller: error: ")
    assert message in service.err[0]


@pytest.mark.parametrize("spoil", ["world-writable", "duplicate"])
def test_a_running_service_keeps_the_last_good_users_file(
    start_service: StartService, spoil: str
) -> None:
    service = start_service()

    async def scenario() -> None:
        assert (await login(service.url, "dana", PEOPLE["dana"][1]))[0] == 200
        if spoil == "world-writable":
            os.chmod(service.users, 0o666)
        else:
            # Someone adds a supervisor named like the dealer.
            rewrite(
                service.users,
                lambda d: d["users"].append({**d["users"][1], "name": "dana"}),
            )
        deadline = time.monotonic() + 10
        while not any(a == "users_file" for a, _, _ in service.access()):
            assert time.monotonic() < deadline, "the refusal was not journaled"
            await asyncio.sleep(0.05)
        # The last good file stays in use: dana is still the dealer she was.
        status, session = await login(service.url, "dana", PEOPLE["dana"][1])
        assert (status, session["role"]) == (200, "dealer")

    asyncio.run(scenario())
    [(_, detail)] = [(a, d) for a, _, d in service.access_details() if a == "users_file"]
    said = "may be written by other accounts" if spoil == "world-writable" else "listed twice"
    assert said in detail, detail
    assert any("stays in use" in line for line in service.err)


def test_a_weak_pin_edited_into_the_file_is_refused_at_sign_in(
    tmp_path: Path, start_service: StartService
) -> None:
    # By hand: the argon2 hash of "1234" for a supervisor (six digits at least, and a PIN
    # on the deny-list), at the floor's parameters so that the file itself is trusted.
    directory = tmp_path / "users"
    directory.mkdir(mode=0o700)
    users = users_file(directory)
    weak = cheap_hasher().hash("1234")
    rewrite(
        users,
        lambda d: d["users"].append({"name": "boss", "role": "supervisor", "pin": weak}),
    )
    service = start_service(users=users)

    async def scenario() -> tuple[tuple[int, Any], tuple[int, Any]]:
        refused = await login(service.url, "boss", "1234")
        console = await WsClient.open(service.url)
        try:
            await console.login("boss", "1234")
        except RpcFailure as failure:
            by_console = (failure.code, failure.message)
        else:
            raise AssertionError("a weak PIN signed in on the console")
        finally:
            await console.close()
        return refused, by_console

    (status, body), by_console = asyncio.run(scenario())
    said = (
        "boss's PIN breaks the PIN policy (fewer than 6 digits for a supervisor): have it "
        "reset with 'shoe-diag users reset boss'"
    )
    assert status == 401
    assert body["error"] == {
        "code": -32004,
        "message": said,
        "data": {"pin_policy": "fewer than 6 digits for a supervisor"},
    }
    assert by_console == (-32004, said)
    records = [(u, d) for a, u, d in service.access_details() if a == "sign_in"]
    assert records == [("boss", f"127.0.0.1: {said}")] * 2
    assert [ok for a, _, ok in service.access() if a == "sign_in"] == [False, False]
    # A reset with a PIN the policy takes lets the supervisor in.
    result = diag("users", "reset", "boss", "--pin-stdin", "--users", str(users),
                  stdin="604215\n")  # fmt: skip
    assert result.returncode == 0, result.stderr

    # Sign-in reads a changed file first: the new PIN is in use at once.
    assert asyncio.run(login(service.url, "boss", "604215"))[0] == 200
