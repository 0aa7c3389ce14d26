"""Every fault of the plan behaves as docs/simulator.md says, over every path."""

from __future__ import annotations

import time

import pytest

from firmware_protocol import (
    UNREADABLE,
    CardDrawn,
    DeckLoaded,
    DoorClosed,
    DoorOpened,
    DoubleCard,
    Flags,
    GateMode,
    Jam,
    JamCleared,
    SetGate,
    ShoeEmpty,
)
from shoe_controller.errors import LinkLost
from shoe_controller.simulator import DrawKind
from tests.conformance.conftest import Connect
from tests.conformance.dealing import WAIT, drawn, open_gate, settle, start_deal, wait_cards
from tests.conformance.paths import ShoeUnderTest

#: Faster retransmission than the protocol's defaults, so that line faults cost little time.
FAST = "retransmit=0.05&retransmit_max=0.2"


@pytest.mark.rule("C3")
def test_misread(connect: Connect) -> None:
    sut = connect("seed=10&faults=misread@3")
    start_deal(sut)
    cards = wait_cards(sut, 49)
    assert [c.card for c in cards].count(UNREADABLE) == 1
    assert cards[2].card == UNREADABLE and cards[2].quality == 0
    with sut.runner.locked() as shoe:
        assert shoe.draws[2].kind is DrawKind.MISREAD
        assert shoe.draws[2].card != UNREADABLE  # a real card left; it was not read
        assert shoe.counters.misreads == 1


@pytest.mark.rule("C4")
@pytest.mark.rule("D2")
def test_undetected_double(connect: Connect) -> None:
    sut = connect("seed=11&faults=double@3")
    start_deal(sut, limit=0)
    sut.host.wait_for(lambda: ShoeEmpty(52) in sut.host.messages(), WAIT, "ShoeEmpty(52)")
    cards = drawn(sut.host.messages())
    # 53 cards left the shoe; it saw 52, with nothing to show for the other.
    assert [c.draw_index for c in cards] == list(range(1, 53))
    assert not any(isinstance(m, DoubleCard) for m in sut.host.messages())
    with sut.runner.locked() as shoe:
        assert shoe.cards_pulled == 53
        unseen = [d for d in shoe.draws if d.kind is DrawKind.UNSEEN]
        assert [d.number for d in unseen] == [4]
        assert unseen[0].card not in [c.card for c in cards]


@pytest.mark.rule("C4")
def test_detected_double(connect: Connect) -> None:
    sut = connect("seed=12&faults=double_detected@3")
    start_deal(sut)
    sut.host.wait_for(lambda: DoubleCard(3) in sut.host.messages(), WAIT, "DoubleCard(3)")
    cards = wait_cards(sut, 47)
    # Cards 3 and 4 left together, unread; the count goes on after them.
    assert [c.draw_index for c in cards][:3] == [1, 2, 5]
    with sut.runner.locked() as shoe:
        assert [d.kind for d in shoe.draws[2:4]] == [DrawKind.DOUBLE, DrawKind.DOUBLE]
        assert shoe.gate is GateMode.LOCKED and shoe.draw_index == 49


@pytest.mark.rule("C4")
def test_jam(connect: Connect) -> None:
    sut = connect("seed=13&faults=jam@3&jam_for=0.05")
    start_deal(sut)
    wait_cards(sut, 49)
    kinds = [type(m) for m in sut.host.messages() if not isinstance(m, DeckLoaded)]
    assert kinds[:5] == [CardDrawn, CardDrawn, Jam, JamCleared, CardDrawn]
    assert JamCleared(False) in sut.host.messages()
    assert drawn(sut.host.messages())[2].draw_index == 3  # no card left during the jam


@pytest.mark.rule("C4")
def test_door(connect: Connect) -> None:
    sut = connect("seed=14&faults=door@3&door_for=0.05")
    start_deal(sut)
    wait_cards(sut, 49)
    kinds = [type(m) for m in sut.host.messages() if not isinstance(m, DeckLoaded)]
    assert kinds[:6] == [CardDrawn, CardDrawn, CardDrawn, DoorOpened, DoorClosed, CardDrawn]
    with sut.runner.locked() as shoe:
        assert shoe.counters.door_openings == 1


@pytest.mark.rule("A3")
@pytest.mark.rule("F1")
def test_early_draw(connect: Connect) -> None:
    sut = connect("seed=15&faults=early_draw")
    sut.host.handshake()
    sut.host.wait_events(2)
    deck_loaded, card = sut.host.messages()[:2]
    assert deck_loaded == DeckLoaded()
    assert isinstance(card, CardDrawn)
    assert (card.draw_index, card.gate_mode) == (1, GateMode.LOCKED)
    with sut.runner.locked() as shoe:
        assert shoe.gate is GateMode.LOCKED and shoe.cards_left == 52


@pytest.mark.rule("F2")
def test_disconnect_and_reconnect_reach_the_same_shoe(connect: Connect) -> None:
    sut = connect("seed=16&faults=disconnect@5")
    boot_id = sut.host.handshake().boot_id
    sut.host.wait_for(lambda: DeckLoaded() in sut.host.messages(), WAIT, "DeckLoaded")
    sut.host.send(SetGate(GateMode.DEAL, 49))
    with pytest.raises(LinkLost):
        sut.host.wait_for(lambda: False, WAIT, "the link to drop")
    sut.reconnect()
    assert sut.host.handshake().boot_id == boot_id
    sut.host.wait_for(lambda: len(drawn(sut.host.messages())) == 49, WAIT, "49 cards")
    events = settle(sut)
    assert sut.host.events == events
    with sut.runner.locked() as shoe:
        assert shoe.link_drops == 1 and shoe.reboots == 0


@pytest.mark.rule("F2")
def test_reboot_keeping_events(connect: Connect) -> None:
    # A pace, so that the Ack of SetGate leaves before the reboot clears the wire.
    sut = connect("seed=17&faults=reboot@5&persist=1&pace=0.01")
    first_boot = sut.host.handshake().boot_id
    open_gate_when_loaded(sut)
    sut.host.wait_for(
        lambda: sut.host.hellos[-1].boot_id != first_boot,
        WAIT,
        "the Hello after the reboot",
    )
    events = settle(sut)
    assert sut.host.events == events and not sut.host.gaps
    cards = drawn(sut.host.messages())
    assert [c.draw_index for c in cards] == [1, 2, 3, 4, 5]
    with sut.runner.locked() as shoe:
        # The firmware restarted with the gate locked, the deal stopped at card 5.
        assert shoe.gate is GateMode.LOCKED and shoe.cards_left == 48


@pytest.mark.rule("F2")
def test_reboot_losing_events(connect: Connect) -> None:
    sut = connect("seed=18&faults=reboot@5&persist=0&pace=0.01")
    first_boot = sut.host.handshake().boot_id
    open_gate_when_loaded(sut)
    sut.host.wait_for(lambda: bool(sut.host.gaps), WAIT, "the lost events")
    hello = sut.host.hellos[-1]
    assert hello.boot_id != first_boot
    with sut.runner.locked() as shoe:
        issued = shoe.last_event_seq
        assert shoe.unacked == []
    # The events not yet acknowledged at the reboot were lost, the fifth card's among
    # them; their sequence numbers are not reused, so the host sees the gap.
    assert hello.next_event_seq == issued + 1
    assert sut.host.gaps[0].last == issued
    assert 5 not in [c.draw_index for c in drawn(sut.host.messages())]


@pytest.mark.rule("F1")
def test_silent(connect: Connect) -> None:
    sut = connect("seed=19&faults=silent@3&silent_for=0.4&heartbeat=0.1")
    start_deal(sut)
    sut.host.wait_for(lambda: len(drawn(sut.host.messages())) >= 3, WAIT, "3 cards")
    with sut.runner.locked() as shoe:
        assert shoe.stalled
    frames_before = len(sut.host.event_frames) + len(sut.host.heartbeats)
    started = time.monotonic()
    sut.host.wait_for(
        lambda: len(sut.host.event_frames) + len(sut.host.heartbeats) > frames_before,
        WAIT,
        "the shoe to speak again",
    )
    assert time.monotonic() - started >= 0.3
    cards = wait_cards(sut, 49)
    assert [c.draw_index for c in cards] == list(range(1, 50))


def test_noise(connect: Connect) -> None:
    sut = connect(f"seed=20&faults=noise=0.01&{FAST}")
    deal_through_line_faults(sut)
    stats = sut.host.decoder.stats
    with sut.runner.locked() as shoe:
        assert shoe.line_stats.corrupted_bytes > 0
    assert stats.crc_errors + stats.malformed + stats.bytes_discarded > 0


def test_drop(connect: Connect) -> None:
    sut = connect(f"seed=21&faults=drop=0.2&{FAST}")
    deal_through_line_faults(sut)
    with sut.runner.locked() as shoe:
        assert shoe.line_stats.dropped > 0


def test_dup(connect: Connect) -> None:
    sut = connect(f"seed=22&faults=dup=0.3&{FAST}")
    deal_through_line_faults(sut)
    seqs = [p.seq for p in sut.host.event_frames if not p.flags & Flags.RETRANSMIT]
    assert len(seqs) > len(set(seqs))  # the same frame arrived twice


def test_split(connect: Connect) -> None:
    sut = connect(f"seed=23&faults=split=0.5&{FAST}")
    deal_through_line_faults(sut)
    with sut.runner.locked() as shoe:
        assert shoe.line_stats.split > 0


# --- helpers -----------------------------------------------------------------------------


def open_gate_when_loaded(sut: ShoeUnderTest) -> None:
    sut.host.wait_for(lambda: DeckLoaded() in sut.host.messages(), WAIT, "DeckLoaded")
    open_gate(sut)


def deal_through_line_faults(sut: ShoeUnderTest) -> None:
    """A whole deck over a faulty line: every event arrives once, in order."""
    start_deal(sut, limit=0)
    sut.host.wait_for(lambda: ShoeEmpty(53) in sut.host.messages(), 10.0, "ShoeEmpty(53)")
    events = settle(sut, 10.0)
    assert sut.host.events == events
    assert [c.draw_index for c in drawn(sut.host.messages())] == list(range(1, 54))
