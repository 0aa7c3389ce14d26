"""Steps shared by the conformance tests: start a deal, let the stream settle, compare."""

from __future__ import annotations

from collections import Counter

from firmware_protocol import (
    Ack,
    Card,
    CardDrawn,
    DeckLoaded,
    GateMode,
    Message,
    SetGate,
    ShoeEmpty,
)
from tests.conformance.paths import ShoeUnderTest

WAIT = 5.0


def drawn(messages: list[Message]) -> list[CardDrawn]:
    return [m for m in messages if isinstance(m, CardDrawn)]


def open_gate(sut: ShoeUnderTest, mode: GateMode = GateMode.DEAL, limit: int = 49) -> None:
    assert sut.host.command(SetGate(mode, limit)) == [Ack()]


def start_deal(sut: ShoeUnderTest, limit: int = 49) -> None:
    """Handshake, wait for the deck, open the gate for ``limit`` cards."""
    sut.host.handshake()
    sut.host.wait_for(lambda: DeckLoaded() in sut.host.messages(), WAIT, "DeckLoaded")
    open_gate(sut, GateMode.DEAL, limit)


def wait_cards(sut: ShoeUnderTest, count: int, timeout: float = WAIT) -> list[CardDrawn]:
    sut.host.wait_for(
        lambda: len(drawn(sut.host.messages())) >= count, timeout, f"{count} cards drawn"
    )
    return drawn(sut.host.messages())


def deal_out(sut: ShoeUnderTest) -> list[CardDrawn]:
    """Open the gate with no limit and wait until the shoe is empty."""

    def empties() -> int:
        return sum(isinstance(m, ShoeEmpty) for m in sut.host.messages())

    before = empties()
    open_gate(sut, GateMode.DEAL, 0)
    sut.host.wait_for(lambda: empties() > before, WAIT, "ShoeEmpty")
    return drawn(sut.host.messages())


def settle(sut: ShoeUnderTest, timeout: float = WAIT) -> list[tuple[int, Message]]:
    """Wait until the host took every event the shoe issued and the shoe holds none
    unacknowledged; returns the shoe's own list of events."""

    def settled() -> bool:
        with sut.runner.locked() as shoe:
            return sut.host.expected_event > shoe.last_event_seq and not shoe.unacked

    sut.host.wait_for(settled, timeout, "every event delivered and acknowledged")
    with sut.runner.locked() as shoe:
        return list(shoe.events)


def composition(cards: list[Card]) -> Counter[Card]:
    return Counter(cards)
