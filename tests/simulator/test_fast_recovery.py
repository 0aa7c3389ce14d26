"""The simulated shoe's FAST_RECOVERY (docs/protocol.md 8), on a hand-turned clock: it
answers ResendEvents at once, times its retransmissions from the measured round trip, and
without the option is the protocol's first release, byte for byte."""

from __future__ import annotations

import itertools

import pytest

from firmware_protocol import (
    SUPPORTED_VERSIONS,
    Ack,
    AckEvents,
    Capability,
    CardDrawn,
    Flags,
    GateMode,
    GetIdentity,
    Hello,
    Nak,
    NakReason,
    ResendEvents,
    SetGate,
    encode_frame,
)
from firmware_protocol.timing import (
    RETRANSMIT_TIMEOUT,
    RETRANSMIT_TIMEOUT_MAX,
    RETRANSMIT_TIMEOUT_MIN,
)
from tests.simulator.bench import Bench

QUIET = "heartbeat=1000"


def dealt(query: str = QUIET, cards: int = 3) -> Bench:
    """A bench whose shoe let ``cards`` cards out; events 1 (DeckLoaded) to cards + 1."""
    bench = Bench(query)
    bench.send(SetGate(GateMode.DEAL, cards), seq=2)
    bench.take()
    assert bench.shoe.unacked == list(range(1, cards + 2))
    return bench


def hello_of(bench: Bench) -> Hello:
    reply, *_ = bench.send(GetIdentity(SUPPORTED_VERSIONS), seq=40)
    assert isinstance(reply.message, Hello)
    return reply.message


@pytest.mark.parametrize(("option", "announced"), [("", True), ("fast_recovery=0", False)])
def test_hello_announces_the_capability_unless_switched_off(option: str, announced: bool) -> None:
    hello = hello_of(Bench(option))
    assert bool(hello.capabilities & Capability.FAST_RECOVERY) is announced


def test_resend_events_sends_what_is_asked_at_once_oldest_first() -> None:
    bench = dealt()
    reads = len(bench.reads)
    resent = bench.send(ResendEvents(3), seq=0)
    assert [(p.seq, p.flags) for p in resent] == [
        (3, Flags.EVENT | Flags.RETRANSMIT),
        (4, Flags.EVENT | Flags.RETRANSMIT),
    ]
    assert [type(p.message) for p in resent] == [CardDrawn, CardDrawn]
    # Each frame sent again is preceded by a delimiter: it ends any partial frame held.
    (data,) = bench.reads[reads:]
    assert data.startswith(b"\x00") and data.count(b"\x00\x00") == 1
    assert bench.shoe.resend_requests == 1 and bench.shoe.resent_on_request == 2


@pytest.mark.rule("E3")
def test_resend_events_acknowledges_nothing_and_is_not_answered() -> None:
    bench = dealt()
    resent = bench.send(ResendEvents(1), seq=0)
    assert [p.seq for p in resent] == [1, 2, 3, 4]  # events only: no reply
    assert bench.shoe.unacked == [1, 2, 3, 4] and bench.shoe.acknowledged == 0


def test_resend_events_beyond_what_is_held_sends_nothing() -> None:
    bench = dealt()
    bench.send(AckEvents(4), seq=0)
    assert bench.send(ResendEvents(5), seq=0) == []
    assert bench.send(ResendEvents(2), seq=0) == []  # acknowledged: forgotten


def test_events_asked_for_wait_a_whole_timeout_before_the_timer_sends_them() -> None:
    bench = dealt()
    bench.advance(RETRANSMIT_TIMEOUT / 2)
    bench.send(ResendEvents(1), seq=0)
    assert bench.advance(RETRANSMIT_TIMEOUT / 2) == []  # not at the first send's timeout
    assert [p.seq for p in bench.advance(RETRANSMIT_TIMEOUT / 2)] == [1, 2, 3, 4]


def test_the_retransmission_timeout_follows_the_round_trip() -> None:
    bench = Bench(QUIET)
    bench.take()
    assert bench.shoe.retransmit_timeout == RETRANSMIT_TIMEOUT  # nothing measured yet
    for index in range(1, 6):  # each card acknowledged 2 ms after it left
        bench.send(SetGate(GateMode.DEAL, index), seq=index + 1)
        bench.advance(0.002)
        bench.send(AckEvents(index + 1), seq=0)
    timeout = bench.shoe.retransmit_timeout
    assert timeout == RETRANSMIT_TIMEOUT_MIN  # 2 ms and steady: the floor
    bench.send(SetGate(GateMode.DEAL, 6), seq=10)  # card 6, event 7: its ack is lost
    assert bench.advance(timeout - 0.001) == []
    (again,) = bench.advance(0.001)
    assert (again.seq, again.flags) == (7, Flags.EVENT | Flags.RETRANSMIT)
    # Unanswered again, the wait doubles (RFC 6298, 5.5) ...
    assert bench.advance(2 * timeout - 0.001) == []
    assert [p.seq for p in bench.advance(0.001)] == [7]
    # ... and an acknowledgement of an event sent again measures nothing (Karn): the
    # wait stays doubled until a round trip is measured.
    bench.send(AckEvents(7), seq=0)
    assert bench.shoe.retransmit_timeout == 4 * timeout
    bench.send(SetGate(GateMode.DEAL, 7), seq=11)
    bench.advance(0.002)
    bench.send(AckEvents(8), seq=0)
    assert bench.shoe.retransmit_timeout == RETRANSMIT_TIMEOUT_MIN


def test_the_timeout_never_grows_past_the_maximum() -> None:
    bench = dealt()
    resent_at = []
    start = bench.now
    while bench.now - start < 12:
        if bench.advance(0.25):
            resent_at.append(bench.now - start)
    waits = [round(b - a, 2) for a, b in itertools.pairwise(resent_at)]
    assert max(waits) == RETRANSMIT_TIMEOUT_MAX


# -- a shoe of the first release ----------------------------------------------------------


def test_without_fast_recovery_the_shoe_does_not_know_resend_events() -> None:
    bench = dealt(f"{QUIET}&fast_recovery=0")
    (nak,) = bench.send(ResendEvents(1), seq=0)
    assert (nak.seq, nak.flags) == (0, Flags.RESPONSE)
    assert isinstance(nak.message, Nak) and nak.message.reason is NakReason.UNKNOWN_COMMAND
    # As any unknown type: the memory of the last command is untouched, so that a
    # SetGate repeated afterwards is answered again, not executed again.
    (again,) = bench.send(SetGate(GateMode.DEAL, 3), seq=2, flags=Flags.RETRANSMIT)
    assert (again.message, again.flags) == (Ack(), Flags.RESPONSE | Flags.RETRANSMIT)
    assert bench.shoe.resend_requests == 0


def test_without_fast_recovery_the_timeout_stays_fixed_and_frames_are_as_before() -> None:
    bench = Bench(f"{QUIET}&fast_recovery=0")
    bench.take()
    for index in range(1, 6):
        bench.send(SetGate(GateMode.DEAL, index), seq=index + 1)
        bench.advance(0.002)
        bench.send(AckEvents(index + 1), seq=0)
    assert bench.shoe.retransmit_timeout == RETRANSMIT_TIMEOUT
    bench.send(SetGate(GateMode.DEAL, 6), seq=10)
    reads = len(bench.reads)
    assert bench.advance(RETRANSMIT_TIMEOUT - 0.001) == []
    (again,) = bench.advance(0.001)
    assert again.seq == 7
    # No delimiter before it: exactly the bytes of the protocol's first release.
    (data,) = bench.reads[reads:]
    card = again.message
    assert data == encode_frame(card, 7, Flags.RETRANSMIT)
