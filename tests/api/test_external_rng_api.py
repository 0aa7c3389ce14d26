"""Rule B1 through the API: ``table.start_by_external_rng`` with the value the configured
generator signed, against the real controller and the simulated shoe; a forged or replayed
value is refused and says why, and the journal says the number was signed."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from shoe_controller.api import rpc
from shoe_controller.service import TableController
from shoe_controller.service.config import load_config
from shoe_controller.simulator.transport import live_addresses, switch_off
from tests.api.client import RpcFailure, WsClient
from tests.api.conftest import StartServer
from tests.service.rng_device import Device

pytestmark = pytest.mark.rule("B1")


@pytest.fixture
def device() -> Device:
    return Device()


@pytest.fixture
def table(tmp_path: Path, device: Device) -> Iterator[TableController]:
    path = tmp_path / "config.toml"
    path.write_text(device.config(tmp_path))
    controller = TableController(
        load_config(path), journal_path=tmp_path / "journal.sqlite3", device="sim://?pace=0&seed=4"
    )
    yield controller
    controller.stop()
    for address in live_addresses():
        switch_off(address)


async def _until_prompt(client: WsClient, need: str) -> None:
    state = await client.call("table.state")
    if state["prompt"] is not None and state["prompt"]["need"] == need:
        return
    while True:
        event = (await client.next_notification())["params"][0]
        if event["event"] == "prompt" and event["need"] == need:
            return


def test_a_signed_value_through_the_api(
    start_server: StartServer, table: TableController, device: Device, tmp_path: Path
) -> None:
    server = start_server(table)
    value = device.draw(6)
    params = {"number": 6, "counter": value.counter, "signature": value.signature.hex()}

    async def scenario() -> list[str]:
        client = await WsClient.open(server.url)
        started = asyncio.get_running_loop().run_in_executor(None, table.start)
        await client.login("dana", "4821")
        refusals = []
        try:
            await started
            await _until_prompt(client, "confirm_shuffle")
            await client.call("table.confirm_shuffle")
            await _until_prompt(client, "no_more_bets")
            await client.call("table.set_wagers", {"positions": [2, 4]})
            await client.call("table.no_more_bets")
            await _until_prompt(client, "start_position")
            forged = {**params, "signature": "00" * 64}
            for attempt in (forged, {**params, "number": 5}, {"number": 6, "counter": 1}):
                with pytest.raises(RpcFailure) as refused:
                    await client.call("table.start_by_external_rng", attempt)
                refusals.append(f"{refused.value.code} {refused.value.message}")
            await client.call("table.start_by_external_rng", params)
            # The same value again: the start is set, and the value was used.
            with pytest.raises(RpcFailure) as again:
                await client.call("table.start_by_external_rng", params)
            refusals.append(f"{again.value.code} {again.value.message}")
        finally:
            await client.close()
        return refusals

    refusals = asyncio.run(scenario())
    assert refusals[0].startswith(f"{rpc.NOT_NOW} the signature is not RNG-0042's over number 6")
    assert refusals[1].startswith(f"{rpc.NOT_NOW} the signature is not RNG-0042's over number 5")
    assert refusals[2].startswith(f"{rpc.INVALID_PARAMS} 'signature' is the generator's signature")
    assert refusals[3].startswith(f"{rpc.NOT_NOW} ")
    conn = sqlite3.connect(f"file:{tmp_path / 'journal.sqlite3'}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT payload FROM records WHERE kind = 'external_rng'").fetchall()
        inputs = [
            json.loads(p)
            for (p,) in conn.execute(
                "SELECT payload FROM records WHERE kind = 'input' AND payload LIKE "
                '\'%"name":"start_position"%\' ORDER BY seq'
            )
        ]
    finally:
        conn.close()
    ((payload,),) = rows
    record = json.loads(payload)
    assert record["signed"] is True and record["counter"] == 1 and record["number"] == 6
    # Every attempt is journaled with who made it, accepted or not.
    assert [(i["by"], i["accepted"]) for i in inputs] == [
        ("dana", False),
        ("dana", False),
        ("dana", True),
        ("dana", False),
    ]
