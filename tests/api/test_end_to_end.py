"""Rounds run through the API against the real controller and the simulated shoe: the
notification stream is the ``--json`` stream, no message carries an identity before
close, nor ever the stub's or an unwagered hand's, and every input names its actor."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from shoe_controller.service import Actor, TableController
from shoe_controller.service import events as ev
from shoe_controller.service.config import Config
from shoe_controller.simulator.transport import live_addresses, switch_off
from tests.api.client import RpcFailure, WsClient
from tests.api.conftest import StartServer
from tests.api.records import access, inputs

CARD = re.compile(r"^([A2-9TJQK][SHDC]|JK|\?\?)$")
WAGERS = [2, 4, 5]


@pytest.fixture
def table(tmp_path: Path) -> Iterator[TableController]:
    controller = TableController(
        Config(), journal_path=tmp_path / "journal.sqlite3", device="sim://?pace=0&seed=3"
    )
    yield controller
    controller.stop()
    for address in live_addresses():
        switch_off(address)


def card_strings(value: Any) -> list[str]:
    """Every string in a JSON value that reads as a card code."""
    if isinstance(value, str):
        return [value] if CARD.match(value) else []
    if isinstance(value, dict):
        return [c for v in value.values() for c in card_strings(v)]
    if isinstance(value, list):
        return [c for v in value for c in card_strings(v)]
    return []


async def answer(client: WsClient, need: str) -> None:
    """What a dealer at the console does when asked for ``need``."""
    if need == "no_more_bets":
        await client.call("table.set_wagers", {"positions": WAGERS})
        await client.call("table.no_more_bets")
    elif need == "start_position":
        await client.call("table.start_by_dice", {"dice": [2, 5, 6]})
    elif need == "wager_settled":
        await client.call("table.wager_settled")
    elif need == "close_round":
        await client.call("table.close_round")
    elif need == "confirm_shuffle":
        await client.call("table.confirm_shuffle")
    elif need == "stub_count":
        await client.call("table.stub_counted", {"count": 4})


async def deal_rounds(client: WsClient, rounds: int) -> list[dict[str, Any]]:
    """Answer every prompt as a dealer at the console would, until ``rounds`` are closed;
    return the events received. A prompt published before the client signed in is read
    from the snapshot, as the console does."""
    events: list[dict[str, Any]] = []
    # A prompt seen both in the snapshot and as an event is answered once.
    answered: set[tuple[str | None, str]] = set()
    state = await client.call("table.state")
    if state["prompt"] is not None:
        answered.add((state["round"], state["prompt"]["need"]))
        await answer(client, state["prompt"]["need"])
    closed = 0
    while closed < rounds:
        note = await client.next_notification()
        assert note["method"] == "notify_event"
        [event] = note["params"]
        events.append(event)
        if event["event"] == "prompt" and (event["round"], event["need"]) not in answered:
            answered.add((event["round"], event["need"]))
            await answer(client, event["need"])
        elif event["event"] == "round_closed":
            closed += 1
    return events


def test_the_notifications_are_the_json_stream_and_leak_nothing(
    start_server: StartServer, table: TableController
) -> None:
    stream: list[dict[str, Any]] = []
    table.subscribe(lambda event: stream.append(event.to_json()))
    server = start_server(table)

    async def scenario() -> tuple[list[dict[str, Any]], list[str], dict[str, Any]]:
        client = await WsClient.open(server.url)
        # The controller journals the sign-in: it starts while the dealer signs in.
        started = asyncio.get_running_loop().run_in_executor(None, table.start)
        await client.login("dana", "4821")
        try:
            await started
            events = await deal_rounds(client, rounds=2)
            state = await client.call("table.state")
            return events, client.raw, state
        finally:
            await client.close()

    events, raw, state = asyncio.run(scenario())
    # Exactly the --json objects of the same run, in the same order, from the moment the
    # dealer signed in (the stream may have gone on a little while the client closed).
    first = stream.index(events[0])
    assert events == stream[first : first + len(events)]
    assert len(events) > 2 * 49
    # Confidentiality: identities appear only in round_closed (and in the snapshot's last
    # round, read after its close), and there only for the banker and the wagered hands.
    for text in raw:
        message = json.loads(text)
        params = message.get("params") or [{}]
        if message.get("method") == "notify_event" and params[0].get("event") == "round_closed":
            assert set(params[0]["hands"]) == {"1", *map(str, WAGERS)}
            assert all(len(hand) == 7 for hand in params[0]["hands"].values())
            continue
        result = message.get("result")
        if isinstance(result, dict) and "last_round" in result:
            last = result.pop("last_round")
            assert (
                last is None
                or last["hands"] is None
                or set(last["hands"])
                == {
                    "1",
                    *map(str, WAGERS),
                }
            )
            message["result"] = result
        assert card_strings(message) == [], text
    assert state["last_round"]["outcome"] == "dealt"
    assert state["today"]["rounds"] == 2
    assert state["today"]["hands"] == 2 * len(WAGERS)
    # Every input reached the controller with the signed-in dealer as its actor.
    dana = Actor("dana", "dealer")
    journal = Path(table.journal_path)
    given = inputs(journal)
    assert {actor for _, actor in given} == {dana}
    # The croupier confirms the stub's count in every round (D1).
    assert [name for name, _ in given][:6] == [
        "confirm_shuffle",
        "set_wagers",
        "no_more_bets",
        "start_position",
        "stub_counted",
        "close_round",
    ]
    assert access(journal) == [("sign_in", "dana", True)]


def test_a_refusal_says_why_and_changes_nothing(
    start_server: StartServer, table: TableController
) -> None:
    server = start_server(table)
    prompts: list[ev.PromptEvent] = []
    table.subscribe(lambda e: prompts.append(e) if isinstance(e, ev.PromptEvent) else None)

    async def scenario() -> None:
        client = await WsClient.open(server.url)
        started = asyncio.get_running_loop().run_in_executor(None, table.start)
        await client.login("dana", "4821")
        try:
            await started
            # Bets open once the dealer confirms the deck's shuffle (A2).
            state = await client.call("table.state")
            while state["phase"] != "shuffle_check":
                await client.next_notification()
                state = await client.call("table.state")
            await client.call("table.confirm_shuffle")
            while True:
                note = await client.next_notification()
                event = note["params"][0]
                if event["event"] == "prompt" and event["need"] == "no_more_bets":
                    break
            # No wager entered: "no more bets" is refused and says what to do (A3).
            with pytest.raises(RpcFailure) as refused:
                await client.call("table.no_more_bets")
            assert refused.value.code == -32003
            assert "wager" in refused.value.message
            with pytest.raises(RpcFailure) as refused:
                await client.call("table.close_round")
            assert refused.value.code == -32003
            # Its reason by code too, for a client to word in its own language.
            assert refused.value.data == {"refusal": "deal_unfinished", "values": {}}
            assert refused.value.message.startswith("the deal and the stub count are not finished")
            state = await client.call("table.state")
            assert state["phase"] == "deck_loaded"
        finally:
            await client.close()

    asyncio.run(scenario())
