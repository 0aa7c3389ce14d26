"""The simulated shoe speaks firmware_protocol the same way over every path: identity,
verification, commands, a whole deck through the gate, and every deck variant."""

from __future__ import annotations

import hashlib
from collections import Counter

import pytest

from firmware_protocol import (
    DECK_53,
    SUPPORTED_VERSIONS,
    Ack,
    Counters,
    DeckLoaded,
    Flags,
    GateMode,
    GetCounters,
    Nak,
    NakReason,
    Ping,
    RunSelfTest,
    SelfTestReport,
    SetGate,
    ShoeEmpty,
    Verify,
    VerifyResult,
)
from shoe_controller.simulator import DeckVariant, DrawKind, firmware
from tests.conformance.conftest import Connect
from tests.conformance.dealing import WAIT, deal_out, drawn, open_gate, settle, start_deal


@pytest.mark.rule("A1")
def test_identity_and_seeded_verification(connect: Connect) -> None:
    sut = connect("seed=1&serial=CONF-1")
    hello = sut.host.handshake()
    assert (hello.model, hello.serial_number) == ("ES-SIM", "CONF-1")
    assert (hello.hardware_revision, hello.firmware_version) == ("sim-1", "1.0.0")
    assert hello.firmware_digest == hashlib.sha256(firmware.IMAGE).digest()
    assert hello.protocol_versions == SUPPORTED_VERSIONS
    (reply,) = [p for p in sut.host.responses if p.message == hello]
    assert reply.flags & Flags.RESPONSE and reply.seq == 1
    with sut.runner.locked() as shoe:
        assert hello.boot_id == shoe.boot_id

    seed = bytes(range(32))
    assert sut.host.command(Verify(seed)) == [VerifyResult(seed, firmware.keyed_digest(seed))]
    (nak,) = sut.host.command(Verify(b"short"))
    assert isinstance(nak, Nak) and nak.reason is NakReason.BAD_ARGUMENT


def test_commands_are_answered(connect: Connect) -> None:
    sut = connect("seed=2")
    sut.host.handshake()
    assert sut.host.command(Ping()) == [Ack()]
    reports = sut.host.command(RunSelfTest())
    assert [r.step for r in reports if isinstance(r, SelfTestReport)] == [1, 2, 3, 4]
    assert all(isinstance(r, SelfTestReport) and r.passed for r in reports)
    (counters,) = sut.host.command(GetCounters())
    assert isinstance(counters, Counters) and counters.power_cycles == 1


@pytest.mark.rule("C2")
@pytest.mark.rule("D1")
def test_a_whole_deck_through_the_gate(connect: Connect) -> None:
    sut = connect("seed=3")
    start_deal(sut, limit=49)
    sut.host.wait_for(lambda: len(drawn(sut.host.messages())) >= 49, WAIT, "49 cards")
    with sut.runner.locked() as shoe:
        # The gate locked by itself at the limit: the stub is still in the shoe.
        assert shoe.gate is GateMode.LOCKED
        assert shoe.cards_left == 4
    open_gate(sut, GateMode.STUB, 0)
    sut.host.wait_for(lambda: ShoeEmpty(53) in sut.host.messages(), WAIT, "ShoeEmpty(53)")
    events = settle(sut)
    assert sut.host.events == events  # each once, in order

    cards = drawn(sut.host.messages())
    assert [c.draw_index for c in cards] == list(range(1, 54))
    assert [c.gate_mode for c in cards] == [GateMode.DEAL] * 49 + [GateMode.STUB] * 4
    assert Counter(c.card for c in cards) == Counter(DECK_53)
    with sut.runner.locked() as shoe:
        assert [c.card for c in cards] == [d.card for d in shoe.draws]
        assert shoe.unacked == []

    # Empty and locked: the croupier loads the next deck.
    assert sut.host.command(SetGate(GateMode.LOCKED)) == [Ack()]
    sut.host.wait_for(lambda: sut.host.messages().count(DeckLoaded()) == 2, WAIT, "the next deck")


@pytest.mark.rule("D2")
@pytest.mark.rule("D3")
@pytest.mark.parametrize(
    ("variant", "size", "distinct"),
    [("standard", 53, 53), ("short", 52, 52), ("long", 54, 53), ("duplicate", 53, 52)],
)
def test_deck_variants(connect: Connect, variant: str, size: int, distinct: int) -> None:
    sut = connect(f"seed=4&deck={variant}")
    start_deal(sut, limit=0)
    sut.host.wait_for(lambda: ShoeEmpty(size) in sut.host.messages(), WAIT, "ShoeEmpty")
    cards = [c.card for c in drawn(sut.host.messages())]
    assert len(cards) == size
    assert len(set(cards)) == distinct
    assert set(cards) <= set(DECK_53)
    if DeckVariant(variant) is DeckVariant.STANDARD:
        assert Counter(cards) == Counter(DECK_53)
    with sut.runner.locked() as shoe:
        assert all(d.kind is DrawKind.READ for d in shoe.draws)


def test_later_decks_are_standard(connect: Connect) -> None:
    sut = connect("seed=5&deck=short")
    start_deal(sut, limit=0)
    sut.host.wait_for(lambda: ShoeEmpty(52) in sut.host.messages(), WAIT, "the short deck")
    assert sut.host.command(SetGate(GateMode.LOCKED)) == [Ack()]
    sut.host.wait_for(lambda: sut.host.messages().count(DeckLoaded()) == 2, WAIT, "deck 2")
    deal_out(sut)
    second = drawn(sut.host.messages())[52:]
    assert Counter(c.card for c in second) == Counter(DECK_53)
