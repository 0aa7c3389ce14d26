"""FAST_RECOVERY (docs/protocol.md 8) over every path: the shoe announces it, answers
ResendEvents at once without taking it for an acknowledgement, times its retransmissions
from the round trip; with the option off it is a shoe of the first release."""

from __future__ import annotations

import pytest

from firmware_protocol import (
    Capability,
    CardDrawn,
    Flags,
    GateMode,
    Nak,
    NakReason,
    ResendEvents,
    ShoeEmpty,
)
from firmware_protocol.timing import RETRANSMIT_TIMEOUT, RETRANSMIT_TIMEOUT_MIN
from tests.conformance.conftest import Connect
from tests.conformance.dealing import WAIT, drawn, open_gate, settle, start_deal
from tests.conformance.paths import ShoeUnderTest

#: No retransmission by the timer while a test looks (nothing is measured before).
SLOW_TIMER = "retransmit=2&retransmit_max=2"


def resent(sut: ShoeUnderTest, first: int) -> list[int]:
    """Sequence numbers of the event frames sent again, from the ``first``-th frame on."""
    return [p.seq for p in sut.host.event_frames[first:] if p.flags & Flags.RETRANSMIT]


@pytest.mark.parametrize(("option", "announced"), [("", True), ("&fast_recovery=0", False)])
def test_the_shoe_announces_fast_recovery_unless_switched_off(
    connect: Connect, option: str, announced: bool
) -> None:
    sut = connect(f"seed=40{option}")
    hello = sut.host.handshake()
    assert bool(hello.capabilities & Capability.FAST_RECOVERY) is announced


@pytest.mark.rule("E3")
def test_resend_events_is_answered_at_once_and_acknowledges_nothing(connect: Connect) -> None:
    sut = connect(f"seed=41&{SLOW_TIMER}")
    sut.host.auto_ack = False
    start_deal(sut, limit=3)
    sut.host.wait_for(lambda: len(drawn(sut.host.messages())) == 3, WAIT, "3 cards")
    frames_before = len(sut.host.event_frames)
    sut.host.send(ResendEvents(2), seq=0)
    sut.host.wait_for(lambda: len(resent(sut, frames_before)) >= 3, 1.0, "the events asked for")
    assert resent(sut, frames_before) == [2, 3, 4]  # oldest first, from the number asked
    with sut.runner.locked() as shoe:
        assert shoe.resent_on_request == 3 and shoe.timer_retransmissions == 0
        assert shoe.unacked == [1, 2, 3, 4] and shoe.acknowledged == 0
    assert not [p for p in sut.host.responses if p.seq == 0]  # not answered


def test_the_retransmission_timer_follows_the_round_trip(connect: Connect) -> None:
    sut = connect("seed=42")
    start_deal(sut, limit=5)  # the host acknowledges every card at once
    sut.host.wait_for(lambda: len(drawn(sut.host.messages())) == 5, WAIT, "5 cards")
    settle(sut)
    with sut.runner.locked() as shoe:
        timeout = shoe.retransmit_timeout
    # Measured: between the floor and the first release's fixed timeout (the exact
    # arithmetic is the simulator's own test; real time over a path is too noisy for it).
    assert RETRANSMIT_TIMEOUT_MIN <= timeout < RETRANSMIT_TIMEOUT
    sut.host.auto_ack = False
    frames_before = len(sut.host.event_frames)
    open_gate(sut, GateMode.DEAL, 6)
    # (An event acknowledged just now may still come again: it was on its way.)
    sut.host.wait_for(lambda: 7 in resent(sut, frames_before), WAIT, "card 6 sent again")
    with sut.runner.locked() as shoe:
        assert shoe.timer_retransmissions >= 1 and shoe.resent_on_request == 0


@pytest.mark.rule("F2")
def test_a_noisy_line_with_requests_delivers_every_event_once(connect: Connect) -> None:
    sut = connect("seed=43&faults=noise=0.01")
    sut.host.ask_resend = True
    start_deal(sut, limit=0)
    sut.host.wait_for(lambda: ShoeEmpty(53) in sut.host.messages(), 10.0, "ShoeEmpty(53)")
    events = settle(sut, 10.0)
    assert sut.host.events == events
    assert [c.draw_index for c in drawn(sut.host.messages())] == list(range(1, 54))
    assert all(isinstance(m, CardDrawn | ShoeEmpty) for m in sut.host.messages()[1:])
    assert sut.host.resend_requests > 0
    with sut.runner.locked() as shoe:
        assert shoe.resend_requests == sut.host.resend_requests


def test_a_first_release_shoe_answers_resend_events_as_an_unknown_type(
    connect: Connect,
) -> None:
    sut = connect(f"seed=44&fast_recovery=0&{SLOW_TIMER}")
    sut.host.auto_ack = False
    start_deal(sut, limit=2)
    sut.host.wait_for(lambda: len(drawn(sut.host.messages())) == 2, WAIT, "2 cards")
    frames_before = len(sut.host.event_frames)
    sut.host.send(ResendEvents(1), seq=0)
    sut.host.wait_for(
        lambda: any(p.seq == 0 for p in sut.host.responses), WAIT, "the shoe's answer"
    )
    (answer,) = [p.message for p in sut.host.responses if p.seq == 0]
    assert isinstance(answer, Nak) and answer.reason is NakReason.UNKNOWN_COMMAND
    assert resent(sut, frames_before) == []
    with sut.runner.locked() as shoe:
        assert shoe.resent_on_request == 0 and shoe.unacked == [1, 2, 3]
