"""The API checks positions and numbers against the table's rules profile, not against a
table of 7."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from shoe_controller.api import rpc
from shoe_controller.api.server import ApiServer
from shoe_controller.procedure import TableRules
from tests.api.client import RpcFailure, WsClient
from tests.api.conftest import PEOPLE
from tests.api.fakes import FakeTable

SIX = TableRules(positions=6, cards_per_position=8, stub_size=5)


def _call(server: ApiServer, method: str, params: dict[str, Any]) -> None:
    async def scenario() -> None:
        client = await WsClient.open(server.url)
        try:
            await client.login("dana", PEOPLE["dana"][1])
            await client.call(method, params)
        finally:
            await client.close()

    asyncio.run(scenario())


@pytest.mark.rule("A3")
@pytest.mark.rule("B1")
def test_a_six_position_table_takes_positions_of_six(server: ApiServer, fake: FakeTable) -> None:
    fake.rules = SIX
    _call(server, "table.set_wagers", {"positions": [2, 6]})
    _call(server, "table.start_by_external_rng", {"number": 6})
    for method, params in [
        ("table.set_wagers", {"positions": [7]}),
        ("table.start_by_external_rng", {"number": 7}),
    ]:
        with pytest.raises(RpcFailure) as refused:
            _call(server, method, params)
        assert refused.value.code == rpc.INVALID_PARAMS
        assert "6" in refused.value.message
    assert [name for name, _, _ in fake.inputs] == ["set_wagers", "start_by_external_rng"]
