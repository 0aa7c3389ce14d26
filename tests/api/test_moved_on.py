"""Every table input takes ``prompt``, the prompt it answers (its ``id`` in the events and
the snapshot). The API checks its form alone; whether the table is still at that prompt
is the controller's to decide, in order with the table's other inputs, and a refusal is
its own JSON-RPC error (-32007), journaled with who gave the input. Without ``prompt``,
an input answers whatever the table asks when it is taken."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shoe_controller.api import rpc
from shoe_controller.api.methods import METHODS
from shoe_controller.api.server import ApiServer
from shoe_controller.service import TableController
from shoe_controller.service.config import Config
from shoe_controller.service.controller import MOVED_ON
from shoe_controller.simulator.transport import live_addresses, switch_off
from tests.api.client import RpcFailure, WsClient, post_json
from tests.api.conftest import StartServer
from tests.api.fakes import FakeTable

pytestmark = pytest.mark.rule("E4")

#: Every table input with parameters it takes as valid, but for ``prompt``.
INPUTS: dict[str, dict[str, Any]] = {
    "table.set_wagers": {"positions": [2, 4]},
    "table.no_more_bets": {},
    "table.confirm_shuffle": {},
    "table.start_by_dice": {"dice": [1, 2, 3]},
    "table.start_by_rng": {},
    "table.start_by_external_rng": {"number": 3},
    "table.wager_settled": {},
    "table.stub_counted": {"count": 4},
    "table.close_round": {},
    "table.accept_stub_count": {},
    "table.misdeal_determination": {"misdealt": False},
    "table.confirm_new_deck": {},
    "table.clear_fault": {},
    "table.void_round": {"reason": "a dispute at the table"},
}


def test_every_table_input_takes_a_prompt() -> None:
    inputs = {name for name in METHODS if name.startswith("table.") and name != "table.state"}
    assert inputs == set(INPUTS)
    assert all("prompt" in METHODS[name].params for name in inputs)
    assert "prompt" not in METHODS["table.state"].params


@pytest.mark.parametrize("prompt", ["12", 0, -1, True, 1.5, 2**53, None, [12]], ids=repr)
def test_a_prompt_that_is_not_a_prompt_number_is_invalid(
    server: ApiServer, fake: FakeTable, prompt: Any
) -> None:
    fake.current_prompt = 12

    async def scenario() -> list[int]:
        client = await WsClient.open(server.url)
        codes = []
        try:
            await client.login("sam", "735142")
            for method, params in INPUTS.items():
                with pytest.raises(RpcFailure) as refused:
                    await client.call(method, {**params, "prompt": prompt})
                assert "'prompt' is a whole number" in refused.value.message
                codes.append(refused.value.code)
        finally:
            await client.close()
        return codes

    assert asyncio.run(scenario()) == [rpc.INVALID_PARAMS] * len(INPUTS)
    assert fake.inputs == []


def test_the_prompt_reaches_the_controller_and_its_refusal_has_its_own_code(
    server: ApiServer, fake: FakeTable
) -> None:
    fake.current_prompt = 12

    async def scenario() -> None:
        client = await WsClient.open(server.url)
        try:
            await client.login("sam", "735142")
            for method, params in INPUTS.items():
                assert await client.call(method, {**params, "prompt": 12}) is None
                with pytest.raises(RpcFailure) as refused:
                    await client.call(method, {**params, "prompt": 11})
                assert (refused.value.code, refused.value.message) == (rpc.MOVED_ON, MOVED_ON)
                # Without a prompt, as before.
                assert await client.call(method, params) is None
        finally:
            await client.close()

    asyncio.run(scenario())
    assert fake.prompts == [12, 11, None] * len(INPUTS)


def test_over_http_the_refusal_is_a_json_rpc_error(server: ApiServer, fake: FakeTable) -> None:
    fake.current_prompt = 12
    base = server.url + "api/v1/"

    async def scenario() -> tuple[int, Any]:
        _, session, _ = await post_json(base + "login", {"user": "sam", "pin": "735142"})
        request = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "table.clear_fault",
            "params": {"prompt": 7},
        }
        status, reply, _ = await post_json(base + "rpc", request, session["token"])
        return status, reply

    status, reply = asyncio.run(scenario())
    assert status == 200
    assert reply == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {"code": rpc.MOVED_ON, "message": MOVED_ON},
    }


# --- against the real controller --------------------------------------------------------------


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    return tmp_path / "journal.sqlite3"


@pytest.fixture
def tables(journal: Path) -> Iterator[list[TableController]]:
    """The controllers a test starts on one journal, each stopped at its end."""
    started: list[TableController] = []
    yield started
    for controller in started:
        controller.stop()
    for address in live_addresses():
        switch_off(address)


def _table(journal: Path, tables: list[TableController]) -> TableController:
    controller = TableController(Config(), journal_path=journal, device="sim://?pace=0&seed=41")
    tables.append(controller)
    return controller


def _refusals(journal: Path) -> list[tuple[str, str, str, int, str]]:
    conn = sqlite3.connect(f"file:{journal}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT payload FROM records WHERE kind = 'input' ORDER BY seq")
        payloads = [json.loads(payload) for (payload,) in rows]
    finally:
        conn.close()
    return [
        (p["name"], p["by"], p["role"], p["prompt"], p["refused"])
        for p in payloads
        if not p["accepted"]
    ]


async def _prompt_now(client: WsClient, need: str) -> dict[str, Any]:
    """The snapshot's prompt, once the table asks for ``need``."""
    while True:
        state = await client.call("table.state")
        prompt = state["prompt"]
        if prompt is not None and prompt["need"] == need:
            return dict(prompt)
        await client.next_notification()


def test_a_foreign_or_stale_prompt_is_refused_by_the_table_and_journaled(
    start_server: StartServer, journal: Path, tables: list[TableController]
) -> None:
    table = _table(journal, tables)
    server = start_server(table)

    async def scenario() -> tuple[int, int]:
        client = await WsClient.open(server.url)
        started = asyncio.get_running_loop().run_in_executor(None, table.start)
        await client.login("dana", "4821")
        try:
            await started
            shuffle = await _prompt_now(client, "confirm_shuffle")
            # The number of a record that is no prompt (the service's start), and one the
            # journal has not reached: neither is the table's prompt.
            for foreign in (1, shuffle["id"] + 1_000_000):
                with pytest.raises(RpcFailure) as refused:
                    await client.call("table.confirm_shuffle", {"prompt": foreign})
                assert refused.value.code == rpc.MOVED_ON
            await client.call("table.confirm_shuffle", {"prompt": shuffle["id"]})
            bets = await _prompt_now(client, "no_more_bets")
            assert bets["id"] > shuffle["id"]
            # The shuffle's prompt is answered: the table has moved on from it.
            with pytest.raises(RpcFailure) as refused:
                await client.call("table.set_wagers", {"positions": [2], "prompt": shuffle["id"]})
            assert (refused.value.code, refused.value.message) == (rpc.MOVED_ON, MOVED_ON)
            state = await client.call("table.state")
            assert (state["phase"], state["wagers"]) == ("deck_loaded", [])
            await client.call("table.set_wagers", {"positions": [2], "prompt": bets["id"]})
            return shuffle["id"], bets["id"]
        finally:
            await client.close()

    shuffle, _ = asyncio.run(scenario())
    assert _refusals(journal) == [
        ("confirm_shuffle", "dana", "dealer", 1, MOVED_ON),
        ("confirm_shuffle", "dana", "dealer", shuffle + 1_000_000, MOVED_ON),
        ("set_wagers", "dana", "dealer", shuffle, MOVED_ON),
    ]


def test_a_prompt_of_another_run_is_refused(
    start_server: StartServer, journal: Path, tables: list[TableController]
) -> None:
    first = _table(journal, tables)
    server = start_server(first)

    async def before_the_restart() -> int:
        client = await WsClient.open(server.url)
        started = asyncio.get_running_loop().run_in_executor(None, first.start)
        await client.login("dana", "4821")
        try:
            await started
            return int((await _prompt_now(client, "confirm_shuffle"))["id"])
        finally:
            await client.close()

    old = asyncio.run(before_the_restart())
    first.stop()
    second = _table(journal, tables)
    second.start()
    server = start_server(second)

    async def after_the_restart() -> None:
        client = await WsClient.open(server.url)
        await client.login("dana", "4821")
        try:
            now = await _prompt_now(client, "confirm_shuffle")
            assert now["id"] > old
            with pytest.raises(RpcFailure) as refused:
                await client.call("table.confirm_shuffle", {"prompt": old})
            assert refused.value.code == rpc.MOVED_ON
            await client.call("table.confirm_shuffle", {"prompt": now["id"]})
            await _prompt_now(client, "no_more_bets")
        finally:
            await client.close()

    asyncio.run(after_the_restart())
    assert _refusals(journal) == [("confirm_shuffle", "dana", "dealer", old, MOVED_ON)]
